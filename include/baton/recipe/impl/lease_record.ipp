// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_LEASE_RECORD_IPP
#define BATON_RECIPE_IMPL_LEASE_RECORD_IPP
// Layer: recipes, internal. The compiled part of recipe/detail/lease_record.hpp: the lease record format.
#include <baton/recipe/detail/lease_record.hpp>

namespace baton::detail {

BATON_DECL void append_json_string(std::string& out, std::string_view s) { append_json_quoted(out, s); }

BATON_DECL std::string encode_lease_body(std::string_view owner, std::string_view value, std::string_view nonce,
                                     std::uint64_t token, bool released, std::chrono::milliseconds ttl,
                                     std::chrono::milliseconds turn) {
    // Sized exactly: the record is kept, by the lease and by the memory store, and its
    // capacity counts in the bytes per held lease.
    char digits[3][24];
    auto format = [&digits](int k, auto v) {
        return std::string_view(digits[k], static_cast<std::size_t>(std::to_chars(digits[k], digits[k] + 24, v).ptr - digits[k]));
    };
    std::string_view const token_text = format(0, token);
    std::string_view const ttl_text = format(1, ttl.count());
    std::string_view const turn_text = format(2, turn.count());
    std::string out;
    {
        constexpr std::size_t fixed = 80; // the literals below, held and without a turn
        std::size_t const optional_part = (released ? 4 : 0) + (turn.count() > 0 ? 11 + turn_text.size() : 0);
        std::size_t const owner_size = json_quoted_size(owner);
        std::size_t const value_size = json_quoted_size(value);
        std::size_t const nonce_size = json_quoted_size(nonce);
        text_writer w(out, fixed + optional_part + token_text.size() + ttl_text.size() + owner_size + value_size +
                               nonce_size);
        w.literal(R"({"baton":"lease/1","owner":)");
        w.json_quoted(owner, owner_size); // counted once, above
        w.literal(R"(,"token":)");
        w.raw(token_text);
        w.literal(R"(,"nonce":)");
        w.json_quoted(nonce, nonce_size); // counted once, above
        if (released)
            w.literal(R"(,"state":"released")");
        else
            w.literal(R"(,"state":"held")");
        w.literal(R"(,"ttl_ms":)");
        w.raw(ttl_text);
        if (turn.count() > 0) {
            w.literal(R"(,"turn_ms":)");
            w.raw(turn_text);
        }
        w.literal(R"(,"value":)");
        w.json_quoted(value, value_size); // counted once, above
        w.put('}');
    }
    return out;
}

BATON_DECL std::string encode_lease_body(lease_body const& b) {
    return encode_lease_body(b.owner, b.value, b.nonce, b.token, b.released, b.ttl, b.turn);
}

BATON_DECL error_code decode_lease_body(std::string_view text, lease_body& out, diagnostics& diag) {
    auto fail = [&](char const* why) {
        diag.message = std::string("lease record: ") + why;
        return error_code(errc::foreign_record);
    };
    if (text.size() > max_lease_body_bytes) return fail("body larger than 64 KiB");
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
    std::string format, state;
    if (!str("baton", format) || format != lease_format) return fail("missing or unknown \"baton\" format tag");
    if (!str("owner", out.owner)) return fail("\"owner\" missing or not a string");
    if (!str("nonce", out.nonce)) return fail("\"nonce\" missing or not a string");
    if (!str("value", out.value)) return fail("\"value\" missing or not a string");
    if (!uint("token", out.token)) return fail("\"token\" missing or not a non-negative integer");
    if (!str("state", state) || (state != "held" && state != "released")) return fail("\"state\" must be \"held\" or \"released\"");
    out.released = state == "released";
    std::uint64_t ttl_ms = 0;
    if (!uint("ttl_ms", ttl_ms) || ttl_ms == 0) return fail("\"ttl_ms\" missing or not a positive integer");
    if (ttl_ms > static_cast<std::uint64_t>(max_declared_ttl.count())) return fail("\"ttl_ms\" exceeds 24 hours");
    out.ttl = std::chrono::milliseconds(static_cast<std::int64_t>(ttl_ms));
    // Advice only: a turn that is not a non-negative integer of at most 24 hours reads as none
    // (a record older readers accept must not become foreign over it).
    std::uint64_t turn_ms = 0;
    if (!uint("turn_ms", turn_ms) || turn_ms > static_cast<std::uint64_t>(max_declared_ttl.count())) turn_ms = 0;
    out.turn = std::chrono::milliseconds(static_cast<std::int64_t>(turn_ms));
    return {};
}

} // namespace baton::detail

#endif
