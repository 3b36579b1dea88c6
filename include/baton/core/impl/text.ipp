// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_IMPL_TEXT_IPP
#define BATON_CORE_IMPL_TEXT_IPP

// Layer: core, internal. The compiled part of core/detail/text.hpp: the word-at-a-time scans,
// JSON string escaping and hex digits.
#include <baton/core/detail/text.hpp>

namespace baton::detail {

BATON_DECL std::size_t ascii_prefix(std::string_view s) noexcept {
    std::size_t i = 0;
    while (s.size() - i >= 8 && (load_word(s.data() + i) & 0x8080808080808080u) == 0) i += 8;
    return i;
}

BATON_DECL bool json_plain_word(std::uint64_t w) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    // The exact tests for "some byte is below n" and "some byte is zero" (the last two, after
    // an XOR that makes a `"` or `\\` zero): each leaves a high bit set only when a byte matches.
    auto const control = (w - ones * 0x20) & ~w;
    auto const quote = w ^ (ones * '"');
    auto const backslash = w ^ (ones * '\\');
    auto const zero_quote = (quote - ones) & ~quote;
    auto const zero_backslash = (backslash - ones) & ~backslash;
    return ((control | zero_quote | zero_backslash) & highs) == 0;
}

BATON_DECL std::size_t json_plain_prefix(std::string_view s) noexcept {
    std::size_t i = 0;
    while (s.size() - i >= 8 && json_plain_word(load_word(s.data() + i))) i += 8;
    return i;
}

BATON_DECL std::size_t json_quoted_size(std::string_view s) noexcept {
    std::size_t n = s.size() + 2;
    for (std::size_t i = 0; i < s.size();) {
        i += json_plain_prefix(s.substr(i));
        // The word with something to escape, or the tail shorter than a word, byte by byte.
        for (std::size_t const end = std::min(s.size(), i + 8); i < end; ++i)
            n += json_escape_extra[static_cast<unsigned char>(s[i])];
    }
    return n;
}

BATON_DECL text_writer::text_writer(std::string& out, std::size_t expected) : out_(out), start_(out.size()) {
    std::size_t const len = out.size();
    out.resize(len + expected);
    p_ = out.data() + len;
    end_ = out.data() + out.size();
}

BATON_DECL void text_writer::json_quoted(std::string_view s) {
    if (static_cast<std::size_t>(end_ - p_) / 6 > s.size() + 1)
        escape(s, p_);
    else
        json_quoted(s, json_quoted_size(s));
}

BATON_DECL void text_writer::json_quoted(std::string_view s, std::size_t quoted_size) {
    char* p = room(quoted_size);
    if (quoted_size != s.size() + 2) return escape(s, p);
    *p++ = '"'; // nothing to escape
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    p += s.size();
    *p++ = '"';
    p_ = p;
}

BATON_DECL void text_writer::escape(std::string_view s, char* p) {
    *p++ = '"';
    for (char ch : s) {
        auto const c = static_cast<unsigned char>(ch);
        if (json_escape_extra[c] == 0) {
            *p++ = ch;
            continue;
        }
        *p++ = '\\';
        switch (c) {
        case '"': *p++ = '"'; break;
        case '\\': *p++ = '\\'; break;
        case '\b': *p++ = 'b'; break;
        case '\f': *p++ = 'f'; break;
        case '\n': *p++ = 'n'; break;
        case '\r': *p++ = 'r'; break;
        case '\t': *p++ = 't'; break;
        default:
            *p++ = 'u';
            *p++ = '0';
            *p++ = '0';
            *p++ = hex_digit(c >> 4u);
            *p++ = hex_digit(c);
        }
    }
    *p++ = '"';
    p_ = p;
}

BATON_DECL void text_writer::grow(std::size_t n) {
    std::size_t const len = size();
    std::size_t const half = (out_.size() - start_) / 2;
    out_.resize(len + (n > half ? n : half));
    p_ = out_.data() + len;
    end_ = out_.data() + out_.size();
}

BATON_DECL void append_json_quoted(std::string& out, std::string_view s) {
    text_writer w(out);
    w.json_quoted(s);
}

// Two output characters per byte from one table lookup.
BATON_DECL void to_hex(unsigned char const* p, std::size_t n, char* out) noexcept {
    static constexpr auto pairs = [] {
        std::array<char, 512> t{};
        for (unsigned b = 0; b < 256; ++b) {
            t[2 * b] = hex_digit(b >> 4);
            t[2 * b + 1] = hex_digit(b);
        }
        return t;
    }();
    unsigned char const* const end = p + n;
    for (; end - p >= 4; p += 4, out += 8) { // four bytes to eight characters, one store
        char chunk[8];
        std::memcpy(chunk + 0, pairs.data() + 2 * p[0], 2);
        std::memcpy(chunk + 2, pairs.data() + 2 * p[1], 2);
        std::memcpy(chunk + 4, pairs.data() + 2 * p[2], 2);
        std::memcpy(chunk + 6, pairs.data() + 2 * p[3], 2);
        std::memcpy(out, chunk, 8);
    }
    for (; p != end; ++p, out += 2) std::memcpy(out, pairs.data() + 2 * *p, 2);
}

BATON_DECL std::string to_hex(unsigned char const* p, std::size_t n) {
    std::string out(2 * n, '0');
    to_hex(p, n, out.data());
    return out;
}

BATON_DECL std::string to_hex(std::uint64_t v) {
    std::string out(16, '0');
    put_hex16(v, out.data());
    return out;
}

BATON_DECL std::string uri_encode(std::string_view s, bool keep_slash) {
    std::string out;
    out.reserve(s.size() + s.size() / 2);
    for (char c : s) {
        bool const unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                                c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/');
        if (unreserved) {
            out += c;
        } else {
            append_percent_encoded(out, static_cast<unsigned char>(c));
        }
    }
    return out;
}

} // namespace baton::detail

#endif
