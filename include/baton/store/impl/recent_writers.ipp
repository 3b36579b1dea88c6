// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_IMPL_RECENT_WRITERS_IPP
#define BATON_STORE_IMPL_RECENT_WRITERS_IPP

// Layer: store, internal. The compiled part of store/detail/recent_writers.hpp: the recent
// lists and the fate of a write in doubt.
#include <baton/store/detail/recent_writers.hpp>

namespace baton::detail {

BATON_DECL std::string_view writer_prefix(std::string_view nonce) {
    if (nonce.size() < writer_prefix_digits || nonce.substr(0, writer_prefix_digits) == origin_writer) return {};
    return nonce.substr(0, writer_prefix_digits);
}

BATON_DECL bool is_recent_list(std::string_view list) {
    std::size_t n = 0;
    for (;;) {
        auto const comma = list.find(',');
        std::string_view const p = list.substr(0, comma);
        if (p.size() != writer_prefix_digits || !is_lower_hex(p) || ++n > recent_writers_kept) return false;
        if (comma == std::string_view::npos) return true;
        list.remove_prefix(comma + 1);
    }
}

BATON_DECL std::string recent_after(std::string_view nonce, std::string_view recent) {
    std::string_view const head = writer_prefix(nonce);
    if (head.empty()) return {};
    std::string out(head);
    std::size_t kept = 1;
    while (!recent.empty() && kept < recent_writers_kept) {
        auto const comma = recent.find(',');
        out += ',';
        out += recent.substr(0, comma);
        ++kept;
        recent = comma == std::string_view::npos ? std::string_view() : recent.substr(comma + 1);
    }
    return out;
}

BATON_DECL std::string_view recent_at(std::string_view recent, std::size_t n) {
    for (; n > 0 && !recent.empty(); --n) {
        auto const comma = recent.find(',');
        recent = comma == std::string_view::npos ? std::string_view() : recent.substr(comma + 1);
    }
    return recent.substr(0, recent.find(','));
}

BATON_DECL std::optional<std::size_t> chain_index(std::string_view nonce, std::string_view recent,
                                                  std::string_view prefix) {
    if (prefix.empty()) return std::nullopt;
    if (writer_prefix(nonce) == prefix) return 0;
    for (std::size_t i = 1; !recent.empty(); ++i) {
        auto const comma = recent.find(',');
        if (recent.substr(0, comma) == prefix) return i;
        recent = comma == std::string_view::npos ? std::string_view() : recent.substr(comma + 1);
    }
    return std::nullopt;
}

BATON_DECL doubt_fate chain_fate(std::string_view attempt_nonce, std::string_view anchor, bool found,
                                 std::string_view nonce, std::string_view recent) {
    if (!found) return anchor == origin_writer ? doubt_fate::pending : doubt_fate::unsure;
    if (nonce == attempt_nonce) return doubt_fate::landed;
    if (auto mine = chain_index(nonce, recent, writer_prefix(attempt_nonce)); mine && *mine > 0) return doubt_fate::landed;
    auto const at = chain_index(nonce, recent, anchor);
    if (!at) return doubt_fate::unsure;
    return *at == 0 ? doubt_fate::pending : doubt_fate::never;
}

} // namespace baton::detail

#endif
