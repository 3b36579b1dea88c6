// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_ENVELOPE_IPP
#define BATON_RECIPE_IMPL_ENVELOPE_IPP

// Layer: recipes, internal. The compiled part of recipe/detail/envelope.hpp: the strict parsing
// the recipes' record formats share.
#include <baton/recipe/detail/envelope.hpp>

namespace baton::detail {

BATON_DECL error_code foreign_record(diagnostics& d, char const* what, std::string const& why) {
    d.message = std::string("not a ") + what + " record: " + why;
    return errc::foreign_record;
}

BATON_DECL bool parse_canonical_u64(std::string_view digits, std::uint64_t& out) noexcept {
    if (digits.empty() || digits.size() > 20 || (digits.size() > 1 && digits[0] == '0') ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return false;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    return ec == std::errc() && p == digits.data() + digits.size();
}

BATON_DECL bool is_nonce(std::string_view s) noexcept {
    return !s.empty() && s.size() <= 64 &&
           std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

BATON_DECL error_code split_record(std::string_view body, std::string_view magic, char const* what,
                                   std::string_view& header, std::string_view& rest, diagnostics& d) {
    if (body.substr(0, magic.size()) != magic)
        return foreign_record(d, what, "it does not start with \"" + std::string(magic) + "\"");
    body.remove_prefix(magic.size());
    auto const eol = body.find('\n');
    if (eol == std::string_view::npos) return foreign_record(d, what, "its header line has no end");
    header = body.substr(0, eol);
    rest = body.substr(eol + 1);
    return {};
}

} // namespace baton::detail

#endif
