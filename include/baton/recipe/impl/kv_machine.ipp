// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_KV_MACHINE_IPP
#define BATON_RECIPE_IMPL_KV_MACHINE_IPP

// Layer: recipes, internal. The compiled part of recipe/detail/kv_machine.hpp: the kv record
// format.
#include <baton/recipe/detail/kv_machine.hpp>

namespace baton::detail {

BATON_DECL std::string encode_kv(kv_body const& b) {
    std::string s;
    s.reserve(kv_magic.size() + 64 + b.nonce.size() + b.recent.size() + 1 + b.value.size());
    s += kv_magic;
    s += std::to_string(b.version);
    s += ' ';
    s += b.nonce;
    if (b.fence != 0) {
        s += " fence=";
        s += std::to_string(b.fence);
    }
    if (!b.recent.empty()) {
        s += " recent=";
        s += b.recent;
    }
    if (!b.live) s += " tombstone";
    s += '\n';
    if (b.live) s += b.value;
    return s;
}

BATON_DECL error_code decode_kv(std::string_view body, kv_body& out, diagnostics& d) {
    auto foreign = [&](char const* why) { return foreign_record(d, "kv", why); };
    std::string_view header, rest;
    if (auto ec = split_record(body, kv_magic, "kv", header, rest, d)) return ec;
    if (header.ends_with(' ')) return foreign("its header has a field it should not");
    auto next_field = [&header]() {
        auto const space = header.find(' ');
        std::string_view f = header.substr(0, space);
        header = space == std::string_view::npos ? std::string_view() : header.substr(space + 1);
        return f;
    };
    kv_body b;
    if (!parse_canonical_u64(next_field(), b.version) || b.version == 0)
        return foreign("its version is not a decimal number from 1 to 2^64-1");
    std::string_view const nonce = next_field();
    if (!is_nonce(nonce)) return foreign("its nonce is not lowercase hex");
    b.nonce = std::string(nonce);
    enum { start, had_fence, had_recent, had_tombstone } at = start; // fields come in this order, each once
    while (!header.empty()) {
        std::string_view const f = next_field();
        if (f.starts_with("fence=") && at < had_fence) {
            if (!parse_canonical_u64(f.substr(6), b.fence) || b.fence == 0)
                return foreign("its fence is not a decimal number from 1 to 2^64-1");
            at = had_fence;
        } else if (f.starts_with("recent=") && at < had_recent) {
            if (!is_recent_list(f.substr(7))) return foreign("its recent writers are not a list of at most 16 nonce prefixes");
            b.recent = std::string(f.substr(7));
            at = had_recent;
        } else if (f == "tombstone" && at < had_tombstone) {
            b.live = false;
            at = had_tombstone;
        } else {
            return foreign("its header has a field it should not");
        }
    }
    if (!b.live && !rest.empty()) return foreign("its tombstone carries a value");
    if (b.live) b.value = std::string(rest);
    out = std::move(b);
    return {};
}

} // namespace baton::detail

#endif
