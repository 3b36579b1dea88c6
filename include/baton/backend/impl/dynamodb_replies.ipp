// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_IMPL_DYNAMODB_REPLIES_IPP
#define BATON_BACKEND_IMPL_DYNAMODB_REPLIES_IPP
// Layer: backends, internal. The compiled part of backend/detail/dynamodb_json.hpp, second half:
// DynamoDB's replies parsed strictly with Boost.JSON (errors, items, scans, table descriptions).
// The requests are built in dynamodb_json.ipp.
#include <baton/backend/detail/dynamodb_json.hpp>

#include <boost/json/parse.hpp>

namespace baton::detail::dynamodb {

BATON_DECL std::string shorten(std::string_view s, std::size_t max) {
    if (s.size() <= max) return std::string(s);
    return std::string(s.substr(0, max)) + "...";
}

BATON_DECL error_code malformed(diagnostics& diag, std::string what) {
    diag.message = "malformed DynamoDB response: " + std::move(what);
    return errc::invalid_response;
}

BATON_DECL error_code parse_object(std::string_view body, json::value& out, diagnostics& diag) {
    boost::system::error_code ec;
    out = json::parse(body, ec);
    if (ec)
        return malformed(diag, "not JSON (" + ec.message() + ") in a body of " + std::to_string(body.size()) +
                                   " bytes");
    if (!out.is_object()) return malformed(diag, "the body is JSON but not an object");
    return {};
}

BATON_DECL error_code parse_error(unsigned status, std::string_view body, std::string_view error_type_header,
                              diagnostics& diag) {
    diag.http_status = status;
    std::string type(error_type_header);
    json::value v;
    diagnostics parse_diag;
    bool const parsed = !body.empty() && !parse_object(body, v, parse_diag);
    if (parsed) {
        auto const& obj = v.get_object();
        if (auto const* t = obj.if_contains("__type"); t != nullptr && t->is_string())
            type.assign(t->get_string().data(), t->get_string().size());
        for (char const* name : {"message", "Message"}) {
            if (auto const* m = obj.if_contains(name); m != nullptr && m->is_string()) {
                diag.message = shorten(std::string_view(m->get_string().data(), m->get_string().size()), 1024);
                break;
            }
        }
    }
    diag.service_code = std::string(aws::dynamodb_error_name(type));
    auto ec = aws::classify_dynamodb(status, type);
    if (!ec) ec = errc::invalid_response; // an error status must not read as success
    if (!parsed && diag.service_code.empty()) {
        // Not DynamoDB's words (a proxy, a load balancer, a cut connection): the status alone
        // speaks for 5xx, 401/403, 408 and 429; a plain 4xx then says nothing usable.
        std::string const what = "HTTP " + std::to_string(status) +
                                  (body.empty() ? std::string(" with an empty body")
                                                : " with a body that is not a DynamoDB error (" + parse_diag.message + ")");
        if (ec == errc::invalid_argument || ec == errc::invalid_response) return malformed(diag, what);
        diag.message = what;
    }
    return ec;
}

BATON_DECL bool is_key_schema_message(std::string_view message) noexcept {
    return message.find("key element does not match the schema") != std::string_view::npos ||
           message.find("Missing the key") != std::string_view::npos ||
           message.find("Type mismatch for key") != std::string_view::npos ||
           message.find("key schema") != std::string_view::npos;
}

BATON_DECL error_code attribute_string(json::value const& v, std::string_view name, char const* type,
                                   std::optional<std::string>& out, diagnostics& diag) {
    out.reset();
    if (!v.is_object()) return malformed(diag, "attribute '" + shorten(name, 64) + "' is not an AttributeValue object");
    auto const& o = v.get_object();
    if (o.empty()) return malformed(diag, "attribute '" + shorten(name, 64) + "' has no type");
    if (auto const* p = o.if_contains(type)) {
        if (!p->is_string())
            return malformed(diag, "attribute '" + shorten(name, 64) + "' has a " + type + " value that is not a string");
        out.emplace(p->get_string().data(), p->get_string().size());
    }
    return {};
}

BATON_DECL error_code record_version(json::value const& ver, std::optional<std::string>& out, diagnostics& diag) {
    std::optional<std::string> s;
    if (auto ec = attribute_string(ver, version_attribute, "S", s, diag)) return ec;
    if (s) {
        out = version_from_s(*s);
        return {};
    }
    if (auto ec = attribute_string(ver, version_attribute, "N", s, diag)) return ec;
    if (s) out = "N:" + *s;
    return {};
}

BATON_DECL error_code parse_item(json::value const& item_value, std::string_view key, record& out, diagnostics& diag) {
    if (!item_value.is_object()) return malformed(diag, "'Item' is not an object");
    auto const& item = item_value.get_object();
    out.key.assign(key.data(), key.size());
    auto const* ver = item.if_contains(version_attribute);
    auto const* body = item.if_contains(body_attribute);
    if (ver == nullptr || body == nullptr) {
        diag.message = "the item for key '" + shorten(key, 128) + "' has no '" +
                       std::string(ver == nullptr ? version_attribute : body_attribute) +
                       "' attribute: it was not written by baton's dynamodb_backend";
        return errc::foreign_record;
    }
    std::optional<std::string> v;
    if (auto ec = record_version(*ver, v, diag)) return ec;
    if (!v) {
        diag.message = "the item for key '" + shorten(key, 128) +
                       "' has a 'ver' attribute that is neither S nor N: it was not written by baton";
        return errc::foreign_record;
    }
    out.version = std::move(*v);
    std::optional<std::string> s;
    if (auto ec = attribute_string(*body, body_attribute, "S", s, diag)) return ec;
    if (s) {
        out.body = std::move(*s);
        return {};
    }
    if (auto ec = attribute_string(*body, body_attribute, "B", s, diag)) return ec;
    if (!s) {
        diag.message = "the item for key '" + shorten(key, 128) +
                       "' has a 'body' attribute that is neither S nor B: it was not written by baton";
        return errc::foreign_record;
    }
    if (!base64_decode(*s, out.body)) return malformed(diag, "the B value of 'body' is not valid base64");
    return {};
}

BATON_DECL error_code parse_get_item(std::string_view body, std::string_view key, std::optional<record>& found,
                                 diagnostics& diag) {
    found.reset();
    json::value v;
    if (auto ec = parse_object(body, v, diag)) return ec;
    auto const* item = v.get_object().if_contains("Item");
    if (item == nullptr) return {};
    record r;
    if (auto ec = parse_item(*item, key, r, diag)) return ec;
    found = std::move(r);
    return {};
}

BATON_DECL error_code parse_condition_failure(std::string_view body, std::string_view key, std::optional<record>& found,
                                          diagnostics& diag) {
    found.reset();
    json::value v;
    if (auto ec = parse_object(body, v, diag)) return ec;
    auto const* item = v.get_object().if_contains("Item");
    if (item == nullptr || (item->is_object() && item->get_object().empty())) return {};
    record r;
    if (auto ec = parse_item(*item, key, r, diag)) return ec;
    found = std::move(r);
    return {};
}

BATON_DECL error_code item_key(json::value const& item, table_ref t, std::string& out, diagnostics& diag) {
    if (!item.is_object()) return malformed(diag, "an item is not an object");
    auto const* k = item.get_object().if_contains(t.pk);
    if (k == nullptr) {
        diag.message = "an item has no '" + shorten(t.pk, 64) + "' attribute: table '" + shorten(t.table, 255) +
                       "' does not have the key schema dynamodb_backend expects (one HASH key '" + shorten(t.pk, 64) +
                       "' of type S)";
        return errc::invalid_argument;
    }
    std::optional<std::string> s;
    if (auto ec = attribute_string(*k, t.pk, "S", s, diag)) return ec;
    if (!s) {
        diag.message = "the key attribute '" + shorten(t.pk, 64) + "' of table '" + shorten(t.table, 255) +
                       "' is not of type S, as dynamodb_backend expects";
        return errc::invalid_argument;
    }
    out = std::move(*s);
    return {};
}

BATON_DECL error_code parse_scan(std::string_view body, table_ref t, scan_page& out, diagnostics& diag) {
    out = scan_page{};
    json::value v;
    if (auto ec = parse_object(body, v, diag)) return ec;
    auto const& obj = v.get_object();
    auto const* items = obj.if_contains("Items");
    if (items != nullptr) {
        if (!items->is_array()) return malformed(diag, "'Items' is not an array");
        out.entries.reserve(items->get_array().size());
        for (auto const& item : items->get_array()) {
            list_entry e;
            if (auto ec = item_key(item, t, e.key, diag)) return ec;
            if (auto const* ver = item.get_object().if_contains(version_attribute)) {
                std::optional<std::string> v;
                if (auto ec = record_version(*ver, v, diag)) return ec;
                if (v) e.version = std::move(*v);
            }
            out.entries.push_back(std::move(e));
        }
    }
    if (auto const* sc = obj.if_contains("ScannedCount"); sc != nullptr && sc->is_number()) {
        boost::system::error_code ec;
        auto const n = sc->to_number<std::uint64_t>(ec);
        if (!ec) out.scanned = static_cast<std::size_t>(n);
    }
    if (auto const* last = obj.if_contains("LastEvaluatedKey")) {
        std::string k;
        if (auto ec = item_key(*last, t, k, diag)) return ec == errc::invalid_argument ? malformed(diag, "'LastEvaluatedKey' lacks the key attribute") : ec;
        out.last_key = std::move(k);
    }
    return {};
}

BATON_DECL error_code parse_table_description(std::string_view body, table_ref t, table_description& out,
                                          diagnostics& diag) {
    out = table_description{};
    json::value v;
    if (auto ec = parse_object(body, v, diag)) return ec;
    auto const& obj = v.get_object();
    json::value const* table = obj.if_contains("Table");
    if (table == nullptr) table = obj.if_contains("TableDescription");
    if (table == nullptr || !table->is_object()) return malformed(diag, "no 'Table' object");
    auto const& tab = table->get_object();
    auto const* status = tab.if_contains("TableStatus");
    if (status == nullptr || !status->is_string()) return malformed(diag, "'TableStatus' missing or not a string");
    out.status.assign(status->get_string().data(), status->get_string().size());
    auto const* schema = tab.if_contains("KeySchema");
    if (schema == nullptr || !schema->is_array()) return malformed(diag, "'KeySchema' missing or not an array");
    json::array const* defs = nullptr;
    if (auto const* d = tab.if_contains("AttributeDefinitions"); d != nullptr && d->is_array()) defs = &d->get_array();
    auto type_of = [&](std::string_view name) -> std::string {
        if (defs == nullptr) return "?";
        for (auto const& d : *defs) {
            if (!d.is_object()) continue;
            auto const* n = d.get_object().if_contains("AttributeName");
            auto const* ty = d.get_object().if_contains("AttributeType");
            if (n != nullptr && n->is_string() && ty != nullptr && ty->is_string() && n->get_string() == name)
                return std::string(ty->get_string().data(), ty->get_string().size());
        }
        return "?";
    };
    std::size_t hash_keys = 0, elements = 0;
    bool pk_is_hash_s = false;
    for (auto const& e : schema->get_array()) {
        if (!e.is_object()) return malformed(diag, "a 'KeySchema' element is not an object");
        auto const* n = e.get_object().if_contains("AttributeName");
        auto const* kt = e.get_object().if_contains("KeyType");
        if (n == nullptr || !n->is_string() || kt == nullptr || !kt->is_string())
            return malformed(diag, "a 'KeySchema' element lacks AttributeName or KeyType");
        std::string_view const name(n->get_string().data(), n->get_string().size());
        std::string_view const kind(kt->get_string().data(), kt->get_string().size());
        std::string const type = type_of(name);
        if (!out.key_schema.empty()) out.key_schema += ", ";
        out.key_schema += shorten(name, 64) + " (" + shorten(type, 8) + ", " + shorten(kind, 16) + ")";
        ++elements;
        if (kind == "HASH") {
            ++hash_keys;
            pk_is_hash_s = name == t.pk && type == "S";
        }
    }
    out.key_schema_matches = elements == 1 && hash_keys == 1 && pk_is_hash_s;
    return {};
}

} // namespace baton::detail::dynamodb

#endif
