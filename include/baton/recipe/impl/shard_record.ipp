// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_SHARD_RECORD_IPP
#define BATON_RECIPE_IMPL_SHARD_RECORD_IPP

// Layer: recipes, internal. The compiled part of recipe/detail/shard_record.hpp: the shard record
// format.
#include <baton/recipe/detail/shard_record.hpp>

namespace baton::detail {

BATON_DECL void shard_body::clear_request() {
    requested_by.clear();
    requested_term = 0;
    requested_count = 0;
}

BATON_DECL std::string encode_shard_body(shard_body const& b) {
    std::string out;
    out.reserve(128 + b.owner.size() + b.requested_by.size() + (b.checkpoint ? b.checkpoint->size() : 0));
    char digits[24];
    auto number = [&](std::uint64_t v) {
        auto const r = std::to_chars(digits, digits + sizeof digits, v);
        out.append(digits, r.ptr);
    };
    out += R"({"baton":"shard/1","token":)";
    number(b.token);
    out += R"(,"owner":)";
    append_json_string(out, b.owner);
    out += R"(,"term":)";
    number(b.term);
    if (!b.owner.empty() && b.owner_ttl_ms != 0) {
        out += R"(,"owner_ttl":)";
        number(b.owner_ttl_ms);
    }
    out += b.retired ? R"(,"retired":true)" : R"(,"retired":false)";
    if (b.checkpoint) {
        out += R"(,"checkpoint":)";
        append_json_string(out, *b.checkpoint);
    }
    if (!b.requested_by.empty()) {
        out += R"(,"requested_by":)";
        append_json_string(out, b.requested_by);
        out += R"(,"requested_term":)";
        number(b.requested_term);
        out += R"(,"requested_count":)";
        number(b.requested_count);
    }
    out += R"(,"nonce":)";
    append_json_string(out, b.nonce);
    if (!b.recent.empty()) {
        out += R"(,"recent":)";
        append_json_string(out, b.recent);
    }
    out += '}';
    return out;
}

BATON_DECL error_code decode_shard_body(std::string_view text, shard_body& out, diagnostics& diag) {
    auto fail = [&](char const* why) {
        diag.message = std::string("shard record: ") + why;
        return error_code(errc::foreign_record);
    };
    if (text.size() > max_shard_body_bytes) return fail("body larger than 64 KiB");
    unsigned char buffer[2048];
    boost::json::monotonic_resource mr(buffer, sizeof buffer);
    boost::system::error_code jec;
    boost::json::value v = boost::json::parse(text, jec, &mr);
    if (jec) return fail("body is not JSON");
    auto const* obj = v.if_object();
    if (obj == nullptr) return fail("body is not a JSON object");
    auto str = [&](char const* name, std::string& dst) {
        auto const* p = obj->if_contains(name);
        if (p == nullptr || !p->is_string()) return false;
        dst.assign(p->get_string().data(), p->get_string().size());
        return true;
    };
    auto uint = [&](char const* name, std::uint64_t& dst) {
        auto const* p = obj->if_contains(name);
        if (p == nullptr) return false;
        if (p->is_uint64()) { dst = p->get_uint64(); return true; }
        if (p->is_int64() && p->get_int64() >= 0) { dst = static_cast<std::uint64_t>(p->get_int64()); return true; }
        return false;
    };
    shard_body b;
    std::string format;
    if (!str("baton", format) || format != shard_format) return fail("missing or unknown \"baton\" format tag");
    if (!uint("token", b.token)) return fail("\"token\" missing or not a non-negative integer");
    if (!str("owner", b.owner)) return fail("\"owner\" missing or not a string");
    if (!uint("term", b.term)) return fail("\"term\" missing or not a non-negative integer");
    auto const* retired = obj->if_contains("retired");
    if (retired == nullptr || !retired->is_bool()) return fail("\"retired\" missing or not a boolean");
    b.retired = retired->get_bool();
    if (obj->contains("checkpoint")) {
        std::string cp;
        if (!str("checkpoint", cp)) return fail("\"checkpoint\" is not a string");
        b.checkpoint = std::move(cp);
    }
    if (obj->contains("requested_by")) {
        if (!str("requested_by", b.requested_by) || b.requested_by.empty())
            return fail("\"requested_by\" is not a non-empty string");
        if (!uint("requested_term", b.requested_term)) return fail("\"requested_term\" missing with \"requested_by\"");
        if (obj->contains("requested_count") && !uint("requested_count", b.requested_count))
            return fail("\"requested_count\" is not a non-negative integer");
    }
    if (obj->contains("owner_ttl") && !uint("owner_ttl", b.owner_ttl_ms))
        return fail("\"owner_ttl\" is not a non-negative integer");
    if (!str("nonce", b.nonce)) return fail("\"nonce\" missing or not a string");
    if (obj->contains("recent") && (!str("recent", b.recent) || !is_recent_list(b.recent)))
        return fail("\"recent\" is not a list of at most 16 nonce prefixes");
    out = std::move(b);
    return {};
}

} // namespace baton::detail

#endif
