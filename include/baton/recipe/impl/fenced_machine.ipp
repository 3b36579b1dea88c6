// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_FENCED_MACHINE_IPP
#define BATON_RECIPE_IMPL_FENCED_MACHINE_IPP

// Layer: recipes, internal. The compiled part of recipe/detail/fenced_machine.hpp: the fenced
// record format.
#include <baton/recipe/detail/fenced_machine.hpp>

namespace baton::detail {

BATON_DECL std::string encode_fenced(std::uint64_t token, std::string_view nonce, std::string_view value,
                                     std::string_view recent, unsigned format) {
    std::string s;
    s.reserve(fenced_magic_v2.size() + 21 + nonce.size() + 8 + recent.size() + 1 + value.size());
    s += format == 1 ? fenced_magic_v1 : fenced_magic_v2;
    s += std::to_string(token);
    s += ' ';
    s += nonce;
    if (format != 1 && !recent.empty()) {
        s += " recent=";
        s += recent;
    }
    s += '\n';
    s += value;
    return s;
}

BATON_DECL error_code decode_fenced(std::string_view body, fenced_body& out, diagnostics& d) {
    auto foreign = [&](char const* why) { return foreign_record(d, "fenced", why); };
    bool const v1 = body.substr(0, fenced_magic_v1.size()) == fenced_magic_v1;
    std::string_view header, rest;
    if (auto ec = split_record(body, v1 ? fenced_magic_v1 : fenced_magic_v2, "fenced", header, rest, d)) return ec;
    auto const space = header.find(' ');
    if (space == std::string_view::npos) return foreign("its header has no nonce");
    std::string_view digits = header.substr(0, space), nonce = header.substr(space + 1), recent;
    if (!v1) {
        if (auto const more = nonce.find(' '); more != std::string_view::npos) {
            std::string_view const field = nonce.substr(more + 1);
            nonce = nonce.substr(0, more);
            if (!field.starts_with("recent=") || !is_recent_list(field.substr(7)))
                return foreign("its recent writers are not a list of at most 16 nonce prefixes");
            recent = field.substr(7);
        }
    }
    std::uint64_t token = 0;
    if (!parse_canonical_u64(digits, token)) return foreign("its token is not a decimal number of 64 bits");
    if (!is_nonce(nonce)) return foreign("its nonce is not lowercase hex");
    out.token = token;
    out.nonce = std::string(nonce);
    out.recent = std::string(recent);
    out.value = std::string(rest);
    out.format = v1 ? 1 : 2;
    return {};
}

} // namespace baton::detail

#endif
