// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_DETAIL_TEXT_HPP
#define BATON_CORE_DETAIL_TEXT_HPP

// Layer: core, internal. Small text helpers every layer needs, written once:
// UTF-8 decoding and validation, trimming ASCII white space, hex digits, JSON strings.

#include <baton/core/detail/config.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace baton::detail {

/// What is wrong with a UTF-8 sequence, if anything.
enum class utf8_problem { none, lead_byte, truncated, continuation_byte, overlong, out_of_range };

/// One decoded code point: its value and length in bytes (`problem` says when there is none).
struct utf8_char {
    std::uint32_t code_point = 0;
    std::size_t length = 1;
    utf8_problem problem = utf8_problem::none;
};

/// Decodes the code point that starts at `s[i]` (`i < s.size()`): no overlongs, surrogates or values above U+10FFFF.
constexpr utf8_char decode_utf8_at(std::string_view s, std::size_t i) noexcept {
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char const c = byte(i);
    utf8_char out;
    if (c < 0x80) {
        out.code_point = c;
        return out;
    }
    if ((c & 0xE0) == 0xC0) {
        out.length = 2;
        out.code_point = c & 0x1Fu;
    } else if ((c & 0xF0) == 0xE0) {
        out.length = 3;
        out.code_point = c & 0x0Fu;
    } else if ((c & 0xF8) == 0xF0) {
        out.length = 4;
        out.code_point = c & 0x07u;
    } else {
        out.problem = utf8_problem::lead_byte;
        return out;
    }
    if (out.length > s.size() - i) {
        out.problem = utf8_problem::truncated;
        return out;
    }
    for (std::size_t k = 1; k < out.length; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) {
            out.problem = utf8_problem::continuation_byte;
            return out;
        }
        out.code_point = (out.code_point << 6) | (byte(i + k) & 0x3Fu);
    }
    auto const cp = out.code_point;
    if ((out.length == 2 && cp < 0x80) || (out.length == 3 && cp < 0x800) || (out.length == 4 && cp < 0x10000))
        out.problem = utf8_problem::overlong;
    else if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        out.problem = utf8_problem::out_of_range;
    return out;
}

/// Eight bytes of `p` as one word, for the scans below that test a word at a time.
inline std::uint64_t load_word(char const* p) noexcept {
    std::uint64_t w;
    std::memcpy(&w, p, sizeof w);
    return w;
}

/// How many of the first bytes of `s` are ASCII, counted eight at a time: a multiple of eight.
BATON_DECL std::size_t ascii_prefix(std::string_view s) noexcept;

/// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
constexpr bool is_utf8(std::string_view s) noexcept {
    std::size_t i = 0;
    if (!std::is_constant_evaluated()) i = ascii_prefix(s); // records are ASCII: a word at a time
    for (; i < s.size();) {
        if (static_cast<unsigned char>(s[i]) < 0x80) { // ASCII, nearly every byte of a record: no decoding
            ++i;
            continue;
        }
        auto const c = decode_utf8_at(s, i);
        if (c.problem != utf8_problem::none) return false;
        i += c.length;
    }
    return true;
}

/// `s` without leading and trailing spaces, tabs, CR and LF.
constexpr std::string_view trim(std::string_view s) noexcept {
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
}

/// The lower-case hex digit of `v & 15`.
constexpr char hex_digit(unsigned v) noexcept { return "0123456789abcdef"[v & 15]; }

/// Writes `v` as 16 lower-case hex digits at `out`, most significant first.
constexpr void put_hex16(std::uint64_t v, char* out) noexcept {
    for (int i = 15; i >= 0; --i, v >>= 4) out[i] = hex_digit(static_cast<unsigned>(v));
}

/// Appends byte `c` percent-encoded: `%` and two upper-case hex digits (RFC 3986 §2.1).
inline void append_percent_encoded(std::string& out, unsigned char c) {
    out.push_back('%');
    out.push_back("0123456789ABCDEF"[c >> 4]);
    out.push_back("0123456789ABCDEF"[c & 15]);
}

/// Percent-encodes every byte outside RFC 3986's unreserved set (upper-case hex); keeps '/' when
/// asked (object keys in a path). What S3 and Azure Blob expect of keys in a URL.
BATON_DECL std::string uri_encode(std::string_view s, bool keep_slash);

/// True when every character of `s` is a lowercase hex digit (an empty `s` included).
constexpr bool is_lower_hex(std::string_view s) noexcept {
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

/// How many bytes the JSON escape of each byte adds: 1 for `"` and `\\`, 5 for other control
/// bytes (`\u00XX`) except the five with a short form, 0 for the rest (UTF-8 passes as is).
inline constexpr std::array<unsigned char, 256> json_escape_extra = [] {
    std::array<unsigned char, 256> t{};
    for (unsigned c = 0; c < 0x20; ++c) t[c] = 5;
    for (unsigned char c : {'\b', '\f', '\n', '\r', '\t', '"', '\\'}) t[c] = 1;
    return t;
}();

/** True when none of the eight bytes of `w` is escaped in a JSON string: no control byte
    (below 0x20), `"` or `\\`. Bytes from 0x80 up pass (UTF-8 is written as it is). */
BATON_DECL bool json_plain_word(std::uint64_t w) noexcept;

/// How many of the first bytes of `s` need no escape in a JSON string, eight at a time.
BATON_DECL std::size_t json_plain_prefix(std::string_view s) noexcept;

/// The size of `s` written as a JSON string, quotes included (see `text_writer::json_quoted`).
BATON_DECL std::size_t json_quoted_size(std::string_view s) noexcept;

/** Writes text at the end of a string through a pointer, with plain stores: `room(n)` makes
    space for `n` more bytes (the string grows, zero-filled; see grow()), and the
    destructor trims the string to what was written. A request written with an `append` per
    piece spent most of its time in the capacity checks and calls. The string must not be used
    by anything else while the writer lives. */
class text_writer {
public:
    /// Writes after what `out` holds, with room for `expected` bytes before the first growth.
    explicit text_writer(std::string& out, std::size_t expected = 0);
    text_writer(text_writer const&) = delete;
    text_writer& operator=(text_writer const&) = delete;
    ~text_writer() { out_.resize(size()); }

    /// Bytes in the string so far (what was there before, and what was written).
    std::size_t size() const noexcept { return static_cast<std::size_t>(p_ - out_.data()); }
    /// Drops what was written after `size() == mark`.
    void rewind(std::size_t mark) noexcept { p_ = out_.data() + mark; }

    /// Writes a string literal, without its terminating NUL.
    template <std::size_t N>
    void literal(char const (&s)[N]) {
        std::memcpy(room(N - 1), s, N - 1);
        p_ += N - 1;
    }
    /// Writes `s` as it is.
    void raw(std::string_view s) {
        if (s.empty()) return;
        std::memcpy(room(s.size()), s.data(), s.size());
        p_ += s.size();
    }
    /// Writes one byte.
    void put(char c) {
        *room(1) = c;
        ++p_;
    }

    /** Writes `s` as a JSON string, quotes included, escaped as `boost::json::serialize`
        escapes it: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, other control bytes as
        `\u00XX`, every other byte as it is. In one pass when there is room for the worst
        case (six bytes a byte); else the escaped size is counted first, and only the room it
        needs is made. */
    void json_quoted(std::string_view s);
    /// The same when `quoted_size == json_quoted_size(s)` is known already: `s` is not counted again.
    void json_quoted(std::string_view s, std::size_t quoted_size);

    /// A pointer to `n` writable bytes at the end; advance past what was used with `advance`.
    char* room(std::size_t n) {
        if (static_cast<std::size_t>(end_ - p_) < n) grow(n);
        return p_;
    }
    /// Marks the bytes up to `p` (from `room`) as written.
    void advance(char* p) noexcept { p_ = p; }

private:
    // Writes `s` quoted and escaped from `p`, where there is room for it.
    void escape(std::string_view s, char* p);

    // Room for n, and for half as much again as this writer has had: a run of small writes grows
    // it geometrically, one large write by what it needs. Only this writer's part counts, so an
    // append to a long string zero-fills no more than the append (the string's capacity grows
    // geometrically on its own).
    void grow(std::size_t n);

    std::string& out_;
    std::size_t start_; // out_.size() when the writer was made
    char* p_;
    char* end_;
};

/// Appends `s` as a JSON string, quotes included, as `text_writer::json_quoted` writes it.
BATON_DECL void append_json_quoted(std::string& out, std::string_view s);

/// Writes `n` bytes at `out` as 2n lower-case hex digits (a digest in a signature: one table lookup per byte).
BATON_DECL void to_hex(unsigned char const* p, std::size_t n, char* out) noexcept;

/// `n` bytes as 2n lower-case hex digits.
BATON_DECL std::string to_hex(unsigned char const* p, std::size_t n);

/// `v` as 16 lower-case hex digits, most significant first.
BATON_DECL std::string to_hex(std::uint64_t v);

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/core/impl/text.ipp>
#endif

#endif
