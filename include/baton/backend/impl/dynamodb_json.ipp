// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_IMPL_DYNAMODB_JSON_IPP
#define BATON_BACKEND_IMPL_DYNAMODB_JSON_IPP
// Layer: backends, internal. The compiled part of backend/detail/dynamodb_json.hpp, first half:
// DynamoDB's JSON requests built with Boost.JSON (and the CRC they need). The replies
// are parsed in dynamodb_replies.ipp.
#include <baton/backend/detail/dynamodb_json.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>


namespace baton::detail::dynamodb {

BATON_DECL std::uint32_t crc32(std::string_view data) noexcept {
    static constexpr auto table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    std::uint32_t c = 0xFFFFFFFFu;
    for (char ch : data) c = table[(c ^ static_cast<unsigned char>(ch)) & 0xFFu] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

BATON_DECL bool crc32_matches(std::string_view header, std::string_view body) noexcept {
    if (header.empty() || header.size() > 10) return false;
    std::uint64_t v = 0;
    for (char c : header) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return v <= 0xFFFFFFFFu && static_cast<std::uint32_t>(v) == crc32(body);
}

BATON_DECL std::string version_from_s(std::string_view s) {
    if (s.starts_with("N:") || s.starts_with("S:")) return "S:" + std::string(s);
    return std::string(s);
}

BATON_DECL json::object version_value(std::string_view version, json::storage_ptr sp) {
    json::object v(std::move(sp));
    if (version.starts_with("N:"))
        v["N"] = version.substr(2);
    else if (version.starts_with("S:"))
        v["S"] = version.substr(2);
    else
        v["S"] = version;
    return v;
}

BATON_DECL json::object string_value(std::string_view s, json::storage_ptr sp) {
    json::object v(std::move(sp));
    v["S"] = s;
    return v;
}

BATON_DECL json::object key_of(table_ref t, std::string_view key, json::storage_ptr sp) {
    json::object k(sp);
    k[t.pk] = string_value(key, sp);
    return k;
}

BATON_DECL void add_condition(json::object& req, table_ref t, precondition const& pc) {
    switch (pc.which()) {
    case precondition::kind::none: return;
    case precondition::kind::absent: {
        req["ConditionExpression"] = "attribute_not_exists(#k)";
        json::object names(req.storage());
        names["#k"] = t.pk;
        req["ExpressionAttributeNames"] = std::move(names);
        break;
    }
    case precondition::kind::matches: {
        req["ConditionExpression"] = "#v = :v";
        json::object names(req.storage());
        names["#v"] = version_attribute;
        req["ExpressionAttributeNames"] = std::move(names);
        json::object values(req.storage());
        values[":v"] = version_value(pc.version(), req.storage());
        req["ExpressionAttributeValues"] = std::move(values);
        break;
    }
    }
    // The failure then carries the current item (AWS; emulators may ignore it).
    req["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD";
}

BATON_DECL std::string get_item_request(table_ref t, std::string_view key) {
    json::object req;
    req["TableName"] = t.table;
    req["Key"] = key_of(t, key);
    req["ConsistentRead"] = true;
    req["ProjectionExpression"] = "#v,#b";
    json::object names;
    names["#v"] = version_attribute;
    names["#b"] = body_attribute;
    req["ExpressionAttributeNames"] = std::move(names);
    return json::serialize(req);
}

BATON_DECL json::object typed_attributes(table_ref t, std::string_view body, json::storage_ptr sp) {
    json::object out(sp);
    if (body.empty() || body.size() > max_typed_source_bytes || body.front() != '{') return out;
    boost::system::error_code ec;
    json::value v = json::parse(body, ec, sp);
    if (ec || !v.is_object()) return out;
    for (auto const& field : v.get_object()) {
        if (out.size() == max_typed_attributes) break;
        std::string_view const name(field.key().data(), field.key().size());
        if (name.empty() || name.size() > max_typed_name_bytes || name == t.pk || name == version_attribute ||
            name == body_attribute || name == fence_attribute || out.contains(name))
            continue;
        json::value const& x = field.value();
        json::object typed(sp);
        if (x.is_string()) {
            if (x.get_string().size() > max_typed_string_bytes) continue;
            typed["S"] = x.get_string();
        } else if (x.is_int64()) {
            typed["N"] = std::to_string(x.get_int64());
        } else if (x.is_uint64()) {
            typed["N"] = std::to_string(x.get_uint64());
        } else if (x.is_bool()) {
            typed["BOOL"] = x.get_bool();
        } else {
            continue;
        }
        out[name] = std::move(typed);
    }
    return out;
}

BATON_DECL json::object record_item(table_ref t, std::string_view key, std::string_view body, std::string_view version,
                                   json::storage_ptr sp) {
    json::object item(sp);
    item[t.pk] = string_value(key, sp);
    item[version_attribute] = version_value(version, sp);
    json::object b(sp);
    if (is_utf8(body))
        b["S"] = body;
    else
        b["B"] = base64_encode(body);
    item[body_attribute] = std::move(b);
    return item;
}

namespace writer {

// PutItem, the request of every lease write, is written straight into its string, byte for byte
// what boost::json::serialize makes of the same tree (a unit test compares them): building the
// tree, parsing the body back for its typed attributes and serializing cost a sixth of a lease
// cycle's client CPU. It is written through a text_writer (plain stores into room made ahead)
// instead of an append call per piece: 28.5k -> 22.0k instructions per lease cycle.

// {"S":...} or {"N":...}, as version_value().
inline void version(text_writer& w, std::string_view v) {
    if (v.starts_with("N:")) {
        w.literal(R"({"N":)");
        v.remove_prefix(2);
    } else {
        w.literal(R"({"S":)");
        if (v.starts_with("S:")) v.remove_prefix(2);
    }
    w.json_quoted(v);
    w.put('}');
}

// The condition members, as add_condition().
inline void condition(text_writer& w, table_ref t, precondition const& pc) {
    switch (pc.which()) {
    case precondition::kind::none: return;
    case precondition::kind::absent:
        w.literal(R"j(,"ConditionExpression":"attribute_not_exists(#k)","ExpressionAttributeNames":{"#k":)j");
        w.json_quoted(t.pk);
        w.put('}');
        break;
    case precondition::kind::matches:
        w.literal(R"(,"ConditionExpression":"#v = :v","ExpressionAttributeNames":{"#v":)");
        w.json_quoted(version_attribute);
        w.literal(R"(},"ExpressionAttributeValues":{":v":)");
        version(w, pc.version());
        w.put('}');
        break;
    }
    w.literal(R"(,"ReturnValuesOnConditionCheckFailure":"ALL_OLD")");
}

// The typed attributes of `body` as members `,"name":{...}`, in one pass, when `body` is what
// encode_lease_body and most writers make: one flat object, no whitespace, strings without
// escapes, integers of up to 18 digits, booleans, each name once. Anything else (or more than
// 64 fields) returns false with nothing written, and typed_attributes() decides.
inline bool typed_flat(text_writer& w, table_ref t, std::string_view body) {
    std::size_t const start = w.size();
    auto fail = [&] {
        w.rewind(start);
        return false;
    };
    if (body.size() < 2 || body.front() != '{' || body.back() != '}') return false;
    std::string_view names[64];
    std::size_t fields = 0, written = 0, i = 1;
    auto string_at = [&](std::string_view& s) { // a string without escapes or control bytes at i
        if (i >= body.size() || body[i] != '"') return false;
        std::size_t const from = ++i;
        while (i < body.size() && body[i] != '"') {
            auto const c = static_cast<unsigned char>(body[i]);
            if (c < 0x20 || c == '\\') return false;
            ++i;
        }
        if (i >= body.size()) return false;
        s = body.substr(from, i - from);
        ++i;
        return true;
    };
    if (body.size() == 2) return true;
    for (;;) {
        std::string_view name;
        if (!string_at(name) || i >= body.size() || body[i] != ':') return fail();
        ++i;
        for (std::size_t k = 0; k < fields; ++k)
            if (names[k] == name) return fail(); // a repeated name: the general path settles which counts
        if (fields == std::size(names)) return fail();
        names[fields++] = name;
        enum { str, num, boolean } kind;
        std::string_view value;
        if (i < body.size() && body[i] == '"') {
            if (!string_at(value)) return fail();
            kind = str;
        } else if (body.substr(i).starts_with("true") || body.substr(i).starts_with("false")) {
            value = body.substr(i, body[i] == 't' ? 4 : 5);
            i += value.size();
            kind = boolean;
        } else {
            std::size_t const from = i;
            if (i < body.size() && body[i] == '-') ++i;
            std::size_t const digits = i;
            while (i < body.size() && body[i] >= '0' && body[i] <= '9') ++i;
            std::size_t const n = i - digits;
            // Not "-0", no leading zeros, within int64: exactly what the general path reads as an integer.
            if (n == 0 || n > 18 || (body[digits] == '0' && (n > 1 || digits != from))) return fail();
            value = body.substr(from, i - from);
            kind = num;
        }
        if (i >= body.size() || (body[i] != ',' && body[i] != '}')) return fail();
        bool const skipped = name.empty() || name.size() > max_typed_name_bytes || name == t.pk ||
                             name == version_attribute || name == body_attribute || name == fence_attribute ||
                             (kind == str && value.size() > max_typed_string_bytes);
        if (!skipped && written < max_typed_attributes) {
            ++written;
            // The name and value need no escape (checked above): copied as they are, quoted.
            //   ,"name":{"BOOL":value}  is the longest shape: 13 bytes besides name and value.
            char* p = w.room(name.size() + value.size() + 14);
            *p++ = ',';
            *p++ = '"';
            std::memcpy(p, name.data(), name.size());
            p += name.size();
            auto put = [&p](std::string_view lit) {
                std::memcpy(p, lit.data(), lit.size());
                p += lit.size();
            };
            switch (kind) {
            case str: put(R"(":{"S":")"); break;
            case num: put(R"(":{"N":")"); break;
            case boolean: put(R"(":{"BOOL":)"); break;
            }
            std::memcpy(p, value.data(), value.size());
            p += value.size();
            put(kind == boolean ? std::string_view("}") : std::string_view(R"("})"));
            w.advance(p);
        }
        if (body[i] == '}') return i + 1 == body.size() ? true : fail();
        ++i;
    }
}

} // namespace writer

BATON_DECL std::string put_item_request(table_ref t, std::string_view key, std::string_view body,
                                    std::string_view version, precondition const& pc) {
    bool const utf8 = is_utf8(body);
    std::size_t const small = t.table.size() + t.pk.size() + key.size() + version.size() +
                              (pc.which() == precondition::kind::matches ? pc.version().size() : 0);
    // Room for what a request usually becomes (the string keeps this capacity while the request
    // is in flight): the body escaped (a lease record grows by a third) and its typed attributes
    // (by half). A string without room for its worst case (six bytes a byte) is counted first,
    // and a body that needs more makes the writer grow.
    std::size_t const expected = 256 + 2 * small + body.size() * 3;
    std::string out;
    {
        text_writer w(out, expected);
        w.literal(R"({"TableName":)");
        w.json_quoted(t.table);
        w.literal(R"(,"Item":{)");
        w.json_quoted(t.pk);
        w.literal(R"(:{"S":)");
        w.json_quoted(key);
        w.literal(R"(},"ver":)");
        writer::version(w, version);
        if (utf8) {
            w.literal(R"(,"body":{"S":)");
            w.json_quoted(body);
        } else {
            w.literal(R"(,"body":{"B":")");
            w.raw(base64_encode(body));
            w.put('"');
        }
        w.put('}');
        if (utf8 && body.size() <= max_typed_source_bytes && !writer::typed_flat(w, t, body)) {
            // The general path: the body parsed with Boost.JSON, its arena on the stack while it fits.
            unsigned char arena[8 * 1024];
            json::monotonic_resource mr(arena, sizeof arena);
            for (auto const& field : typed_attributes(t, body, json::storage_ptr(&mr))) {
                w.put(',');
                w.json_quoted(std::string_view(field.key().data(), field.key().size()));
                w.put(':');
                w.raw(json::serialize(field.value()));
            }
        }
        w.put('}');
        writer::condition(w, t, pc);
        w.put('}');
    }
    return out;
}

BATON_DECL std::string fenced_put_item_request(table_ref t, std::string_view key, std::string_view body, std::string_view version,
                                           std::uint64_t token, std::optional<std::string_view> known_version) {
    unsigned char arena[12 * 1024];
    json::monotonic_resource mr(arena, sizeof arena);
    json::storage_ptr const sp(&mr);
    json::object item = record_item(t, key, body, version, sp);
    json::object n(sp);
    n["N"] = std::to_string(token);
    item[fence_attribute] = n;
    json::object req(sp);
    req["TableName"] = t.table;
    req["Item"] = std::move(item);
    json::object names(sp);
    names["#k"] = t.pk;
    names["#f"] = fence_attribute;
    json::object values(sp);
    values[":t"] = std::move(n);
    std::string cond = "attribute_not_exists(#k) OR #f < :t";
    if (known_version) {
        cond += " OR (#v = :v AND (attribute_not_exists(#f) OR #f <= :t))";
        names["#v"] = version_attribute;
        values[":v"] = version_value(*known_version, sp);
    }
    req["ConditionExpression"] = std::move(cond);
    req["ExpressionAttributeNames"] = std::move(names);
    req["ExpressionAttributeValues"] = std::move(values);
    req["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD";
    return json::serialize(req);
}

BATON_DECL std::string delete_item_request(table_ref t, std::string_view key, precondition const& pc) {
    json::object req;
    req["TableName"] = t.table;
    req["Key"] = key_of(t, key);
    add_condition(req, t, pc);
    return json::serialize(req);
}

BATON_DECL std::string scan_request(table_ref t, std::string_view prefix, std::string_view after,
                                std::optional<std::string> const& start_key) {
    json::object req;
    req["TableName"] = t.table;
    req["ConsistentRead"] = true;
    req["ProjectionExpression"] = "#k,#v";
    std::string filter;
    json::object values;
    if (!prefix.empty()) {
        filter = "begins_with(#k, :p)";
        values[":p"] = string_value(prefix);
    }
    if (!after.empty()) {
        if (!filter.empty()) filter += " AND ";
        filter += "#k > :a";
        values[":a"] = string_value(after);
    }
    if (!filter.empty()) req["FilterExpression"] = filter;
    json::object names;
    names["#k"] = t.pk;
    names["#v"] = version_attribute;
    req["ExpressionAttributeNames"] = std::move(names);
    if (!values.empty()) req["ExpressionAttributeValues"] = std::move(values);
    if (start_key) req["ExclusiveStartKey"] = key_of(t, *start_key);
    return json::serialize(req);
}

BATON_DECL std::string create_table_request(table_ref t) {
    json::object def;
    def["AttributeName"] = t.pk;
    def["AttributeType"] = "S";
    json::object key;
    key["AttributeName"] = t.pk;
    key["KeyType"] = "HASH";
    json::object req;
    req["TableName"] = t.table;
    json::array defs;
    defs.emplace_back(std::move(def));
    json::array schema;
    schema.emplace_back(std::move(key));
    req["AttributeDefinitions"] = std::move(defs);
    req["KeySchema"] = std::move(schema);
    req["BillingMode"] = "PAY_PER_REQUEST";
    return json::serialize(req);
}

BATON_DECL std::string describe_table_request(std::string_view table) {
    json::object req;
    req["TableName"] = table;
    return json::serialize(req);
}

} // namespace baton::detail::dynamodb

#endif
