// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_SIGV4_PRIMITIVES_IPP
#define BATON_AWS_IMPL_SIGV4_PRIMITIVES_IPP

// Layer: wire (aws), internal. The compiled primitives of the SigV4 signer: HMAC under a
// cached signing key (on the SHA-256 of http/detail/crypto.hpp), the checks on credentials
// and scope names, dates, and percent-encoding. aws/impl/sigv4.ipp builds the canonical request on them.

#include <baton/aws/sigv4.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/http/detail/crypto.hpp>

#include <boost/beast/http/field.hpp>
#include <boost/system/errc.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/grammar/string_token.hpp>
#include <boost/url/pct_string_view.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

namespace baton::aws {
namespace detail {

namespace bhttp = boost::beast::http;

inline constexpr std::string_view algorithm = "AWS4-HMAC-SHA256";
inline constexpr std::string_view unsigned_payload_literal = "UNSIGNED-PAYLOAD";
inline constexpr std::string_view scope_terminator = "aws4_request";
inline constexpr std::string_view security_token_header = "X-Amz-Security-Token";
inline constexpr std::string_view date_header = "X-Amz-Date";
inline constexpr std::string_view content_sha256_header = "x-amz-content-sha256";

inline std::string_view sv(boost::core::string_view s) noexcept { return {s.data(), s.size()}; }

// ---------------------------------------------------------------- crypto

// SHA-256, HMAC and wiping are shared with every signer (http/detail/crypto.hpp).
using baton::detail::hmac_sha256;
using baton::detail::sha256;
using baton::detail::wipe;
using digest = baton::detail::sha256_digest;

// HMAC-SHA256 under a 32-byte signing key, with the key's padded blocks kept per
// thread: a signer uses one key per day, region and service, so rebuilding the pads
// for every request is wasted work. They are wiped when the thread ends.
struct hmac_pads {
    bool valid = false;
    unsigned char key[32] = {};
    unsigned char ipad[64] = {};
    unsigned char opad[64] = {};
    hmac_pads() = default;
    hmac_pads(hmac_pads const&) = delete;
    hmac_pads& operator=(hmac_pads const&) = delete;
    ~hmac_pads() {
        OPENSSL_cleanse(key, sizeof key);
        OPENSSL_cleanse(ipad, sizeof ipad);
        OPENSSL_cleanse(opad, sizeof opad);
    }
};

BATON_DECL bool hmac_sha256_key32(unsigned char const* key, std::string_view msg, unsigned char* out) noexcept {
    thread_local hmac_pads pads;
    std::uint64_t diff = 0; // branch-free compare, as CRYPTO_memcmp but without the call
    for (std::size_t i = 0; i < 32; i += 8) {
        std::uint64_t a, b;
        std::memcpy(&a, pads.key + i, 8);
        std::memcpy(&b, key + i, 8);
        diff |= a ^ b;
    }
    if (!pads.valid || diff != 0) {
        std::memcpy(pads.key, key, 32);
        for (std::size_t i = 0; i < 64; ++i) {
            unsigned char const k = i < 32 ? key[i] : 0;
            pads.ipad[i] = static_cast<unsigned char>(k ^ 0x36);
            pads.opad[i] = static_cast<unsigned char>(k ^ 0x5c);
        }
        pads.valid = true;
    }
    unsigned char inner[32];
    return sha256({reinterpret_cast<char const*>(pads.ipad), 64}, msg, inner) &&
           sha256({reinterpret_cast<char const*>(pads.opad), 64}, {reinterpret_cast<char const*>(inner), 32}, out);
}

// One hex encoder for the whole library (core/detail/text.hpp).
using baton::detail::to_hex;

inline error_code crypto_failure() noexcept {
    return boost::system::errc::make_error_code(boost::system::errc::not_supported);
}

// ---------------------------------------------------------------- validation and dates

inline bool is_ws(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Character classes for validation, one table lookup per character.
enum : unsigned char { scope_char = 1, visible_char = 2, key_id_char = 4, hash_char = 8, unreserved_char = 16 };
inline constexpr auto char_classes = [] {
    std::array<unsigned char, 256> t{};
    for (int c = 0x21; c <= 0x7e; ++c) {
        bool const alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        unsigned char v = visible_char;
        if (c != '/' && c != ',') v |= key_id_char;
        if (alnum || c == '-' || c == '_' || c == '.') v |= scope_char;
        if (alnum || c == '-') v |= hash_char;
        if (alnum || c == '-' || c == '.' || c == '_' || c == '~') v |= unreserved_char; // RFC 3986
        t[static_cast<std::size_t>(c)] = v;
    }
    return t;
}();

inline bool all_of_class(std::string_view s, unsigned char cls) noexcept {
    unsigned char all = cls;
    for (char c : s) all &= char_classes[static_cast<unsigned char>(c)];
    return all == cls;
}

// Characters safe inside the credential scope: no separators, no control bytes.
inline bool is_scope_name(std::string_view s) noexcept { return !s.empty() && all_of_class(s, scope_char); }

inline bool is_visible_ascii(std::string_view s) noexcept { return all_of_class(s, visible_char); }

inline bool is_key_id(std::string_view s) noexcept { return !s.empty() && all_of_class(s, key_id_char); }

inline bool is_payload_hash(std::string_view s) noexcept { return !s.empty() && all_of_class(s, hash_char); }

inline error_code invalid() noexcept { return make_error_code(errc::invalid_argument); }

BATON_DECL error_code validate(credentials const& creds, signing_params const& params) noexcept {
    if (!is_scope_name(params.region) || !is_scope_name(params.service)) return invalid();
    if (!is_key_id(creds.access_key_id) || creds.secret_access_key.empty()) return invalid();
    if (!creds.session_token.empty() && !is_visible_ascii(creds.session_token)) return invalid();
    if (params.payload == payload_mode::precomputed && !is_payload_hash(params.payload_hash)) return invalid();
    return {};
}

// Writes YYYYMMDDTHHMMSSZ (16 chars); false outside years 0-9999.
BATON_DECL bool format_amz_date(std::chrono::system_clock::time_point now, char* out) noexcept {
    // Qualified names: a `seconds` or `days` of the includer's, at global scope, must not change them.
    namespace chr = std::chrono;
    auto const secs = chr::floor<chr::seconds>(now);
    // Requests signed in the same second share a date; civil-date arithmetic is not free.
    thread_local struct {
        bool valid = false;
        chr::seconds at{};
        char text[16];
    } last;
    if (last.valid && secs.time_since_epoch() == last.at) {
        std::memcpy(out, last.text, 16);
        return true;
    }
    char* const start = out;
    auto const day = chr::floor<chr::days>(secs);
    chr::year_month_day const ymd{day};
    int const y = static_cast<int>(ymd.year());
    if (y < 0 || y > 9999) return false;
    chr::hh_mm_ss const hms{secs - day};
    auto put = [&out](unsigned v, int width) {
        for (int i = width - 1; i >= 0; --i) {
            out[i] = static_cast<char>('0' + v % 10);
            v /= 10;
        }
        out += width;
    };
    put(static_cast<unsigned>(y), 4);
    put(static_cast<unsigned>(ymd.month()), 2);
    put(static_cast<unsigned>(ymd.day()), 2);
    *out++ = 'T';
    put(static_cast<unsigned>(hms.hours().count()), 2);
    put(static_cast<unsigned>(hms.minutes().count()), 2);
    put(static_cast<unsigned>(hms.seconds().count()), 2);
    *out++ = 'Z';
    std::memcpy(last.text, start, 16);
    last.at = secs.time_since_epoch();
    last.valid = true;
    return true;
}

BATON_DECL void append_scope(std::string& out, std::string_view date8, std::string_view region,
                             std::string_view service) {
    out.append(date8);
    out += '/';
    out.append(region);
    out += '/';
    out.append(service);
    out += '/';
    out.append(scope_terminator);
}

// ---------------------------------------------------------------- encoding

// Appends the AWS encoding of `in`: RFC 3986 unreserved kept, every other byte upper-case %XX.
BATON_DECL void append_encoded(std::string& out, std::string_view in) {
    namespace urls = boost::urls;
    std::size_t const n = urls::encoded_size(in, urls::unreserved_chars);
    if (n == in.size()) {
        out.append(in);
        return;
    }
    std::size_t const old = out.size();
    out.resize(old + n);
    urls::encode(out.data() + old, n, in, urls::unreserved_chars);
}

using baton::detail::hex_value;

// Appends `in` percent-decoded (`+` stays `+`). Malformed escapes are kept as literal
// characters, as AWS does, instead of failing the signature.
BATON_DECL void append_decoded(std::string& out, std::string_view in) {
    if (in.find('%') == std::string_view::npos) {
        out.append(in);
        return;
    }
    namespace urls = boost::urls;
    auto const pv = urls::make_pct_string_view(urls::string_view(in.data(), in.size()));
    if (pv) {
        pv->decode({}, urls::string_token::append_to(out));
        return;
    }
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] == '%' && i + 2 < in.size()) {
            int const hi = hex_value(in[i + 1]);
            int const lo = hex_value(in[i + 2]);
            if (hi >= 0 && lo >= 0) {
                out += static_cast<char>(hi * 16 + lo);
                i += 2;
                continue;
            }
        }
        out += in[i];
    }
}

} // namespace detail
} // namespace baton::aws

#endif
