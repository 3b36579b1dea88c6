// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_SIGV4_CANONICAL_IPP
#define BATON_AWS_IMPL_SIGV4_CANONICAL_IPP

// Layer: wire (aws), internal. The canonical request of SigV4 (see aws/sigv4.hpp), one
// algorithm of the spec kept in one place to read against it: headers (trimmed, folded,
// lower-cased, sorted), the query (decoded, re-encoded, sorted), the URI (S3's as sent, every
// other service's normalised and encoded twice), and their assembly. Signing is in sigv4.ipp.
#include <baton/aws/impl/sigv4_primitives.ipp>
#include <baton/aws/sigv4.hpp>

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

// ---------------------------------------------------------------- canonicalisation

struct header_entry {
    std::uint32_t name_off;
    std::uint32_t name_len;
    std::uint32_t seq;
    std::string_view value;
};

struct param_entry {
    std::uint32_t name_off;
    std::uint32_t name_len;
    std::uint32_t value_off;
    std::uint32_t value_len;
};

// Per-thread buffers: after warm-up, signing allocates only what it hands out.
struct scratch {
    std::string names;
    std::vector<header_entry> headers;
    std::string canonical_headers;
    std::string signed_headers;
    std::string folded;
    std::string params_buf;
    std::vector<param_entry> params;
    std::string canonical_query;
    std::string decoded;
    std::vector<std::string_view> segments;
    std::string creq;
    std::string sts;
    std::string out;
};

BATON_DECL scratch& thread_scratch() {
    thread_local scratch s;
    return s;
}

// True when trimming and folding would change nothing: no byte below '!' at all
// (space, tab, CR, LF and other controls). Almost every header value is like this,
// so it is checked eight bytes at a time.
inline bool is_folded(std::string_view v) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101ull;
    constexpr std::uint64_t highs = 0x8080808080808080ull;
    std::size_t i = 0;
    std::uint64_t found = 0;
    for (; i + 8 <= v.size(); i += 8) {
        std::uint64_t w;
        std::memcpy(&w, v.data() + i, 8);
        found |= (w - ones * 0x21) & ~w & highs; // some byte < 0x21 (exact for bytes < 0x80; others never match)
    }
    for (; i < v.size(); ++i) found |= static_cast<unsigned char>(v[i]) < 0x21;
    return found == 0;
}

inline void append_canonical_value(std::string& out, std::string_view v) {
    if (is_folded(v)) {
        out.append(v);
        return;
    }
    std::size_t b = 0;
    std::size_t e = v.size();
    while (b < e && is_ws(v[b])) ++b;
    while (e > b && is_ws(v[e - 1])) --e;
    std::size_t i = b;
    while (i < e) {
        std::size_t j = i;
        while (j < e && !is_ws(v[j])) ++j;
        out.append(v.data() + i, j - i);
        if (j == e) break;
        out += ' ';
        while (j < e && is_ws(v[j])) ++j;
        i = j;
    }
}

// Lower-cases ASCII letters of `in` into `out` (same length), eight bytes at a time;
// other bytes, including non-ASCII ones, are copied unchanged.
inline void ascii_lower(std::string_view in, char* out) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101ull;
    constexpr std::uint64_t highs = 0x8080808080808080ull;
    std::size_t i = 0;
    for (; i + 8 <= in.size(); i += 8) {
        std::uint64_t w;
        std::memcpy(&w, in.data() + i, 8);
        std::uint64_t const low7 = w & ~highs;
        std::uint64_t const above_z = low7 + ones * (0x80 - 'Z' - 1); // high bit set where byte > 'Z'
        std::uint64_t const from_a = low7 + ones * (0x80 - 'A');      // high bit set where byte >= 'A'
        std::uint64_t const upper = (from_a & ~above_z) & ~w & highs; // ASCII 'A'..'Z'
        w |= upper >> 2;                                              // 0x80 >> 2 == 0x20
        std::memcpy(out + i, &w, 8);
    }
    for (; i < in.size(); ++i) {
        char const c = in[i];
        out[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
    }
}

// A header the signer sets itself: any copy already in the request is left out (it will be
// replaced), and `value` is signed in its place when `signed_value`.
struct owned_header {
    std::string_view lower_name;
    std::string_view value;
    bool signed_value = false;
    bool was_present = false; // out: the request carried one
};

// Fills s.canonical_headers ("name:value\n"...) and s.signed_headers from the request's fields
// and the signer's own headers, without touching the request; false when there is no host.
BATON_DECL bool build_canonical_headers(scratch& s, bhttp::fields const& fields, owned_header* owned = nullptr,
                                        std::size_t owned_count = 0) {
    s.names.clear();
    s.headers.clear();
    std::uint32_t seq = 0;
    bool has_host = false;
    auto is_owned = [&](std::string_view lower) {
        for (std::size_t k = 0; k < owned_count; ++k) {
            if (owned[k].lower_name == lower) {
                owned[k].was_present = true;
                return true;
            }
        }
        return false;
    };
    for (auto const& f : fields) {
        std::string_view const name = sv(f.name_string());
        std::size_t const off = s.names.size();
        s.names.resize(off + name.size());
        ascii_lower(name, s.names.data() + off);
        std::string_view const lower(s.names.data() + off, name.size());
        if (is_owned(lower) || is_unsigned_header(lower)) {
            s.names.resize(off);
            continue;
        }
        if (lower == "host") has_host = true;
        s.headers.push_back({static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(name.size()), seq++,
                             sv(f.value())});
    }
    if (!has_host) return false;
    for (std::size_t k = 0; k < owned_count; ++k) {
        if (!owned[k].signed_value) continue;
        std::size_t const off = s.names.size();
        s.names.append(owned[k].lower_name);
        s.headers.push_back({static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(owned[k].lower_name.size()),
                             seq++, owned[k].value});
    }
    char const* const base = s.names.data();
    auto name_of = [base](header_entry const& h) { return std::string_view(base + h.name_off, h.name_len); };
    std::sort(s.headers.begin(), s.headers.end(), [&](header_entry const& a, header_entry const& b) {
        int const c = name_of(a).compare(name_of(b));
        return c < 0 || (c == 0 && a.seq < b.seq);
    });
    // Written through pointers into buffers sized for the worst case (folding only
    // shrinks values): per-character appends were a visible share of signing time.
    std::size_t bound = 0;
    for (header_entry const& h : s.headers) bound += h.name_len + h.value.size() + 2;
    s.canonical_headers.resize(bound);
    s.signed_headers.resize(s.names.size() + s.headers.size());
    char* ch = s.canonical_headers.data();
    char* sh = s.signed_headers.data();
    for (std::size_t i = 0; i < s.headers.size(); ++i) {
        std::string_view const name = name_of(s.headers[i]);
        bool const same_as_previous = i > 0 && name_of(s.headers[i - 1]) == name;
        if (same_as_previous) {
            *ch++ = ',';
        } else {
            if (i > 0) {
                *ch++ = '\n';
                *sh++ = ';';
            }
            std::memcpy(ch, name.data(), name.size());
            ch += name.size();
            *ch++ = ':';
            std::memcpy(sh, name.data(), name.size());
            sh += name.size();
        }
        std::string_view const value = s.headers[i].value;
        if (is_folded(value)) {
            std::memcpy(ch, value.data(), value.size());
            ch += value.size();
        } else {
            s.folded.clear();
            append_canonical_value(s.folded, value);
            std::memcpy(ch, s.folded.data(), s.folded.size());
            ch += s.folded.size();
        }
    }
    if (!s.headers.empty()) *ch++ = '\n';
    s.canonical_headers.resize(static_cast<std::size_t>(ch - s.canonical_headers.data()));
    s.signed_headers.resize(static_cast<std::size_t>(sh - s.signed_headers.data()));
    return true;
}

BATON_DECL void add_param(scratch& s, std::string_view raw_name, std::string_view raw_value, bool decode) {
    param_entry p{};
    p.name_off = static_cast<std::uint32_t>(s.params_buf.size());
    if (decode) {
        s.decoded.clear();
        append_decoded(s.decoded, raw_name);
        append_encoded(s.params_buf, s.decoded);
    } else {
        append_encoded(s.params_buf, raw_name);
    }
    p.name_len = static_cast<std::uint32_t>(s.params_buf.size() - p.name_off);
    p.value_off = static_cast<std::uint32_t>(s.params_buf.size());
    if (decode) {
        s.decoded.clear();
        append_decoded(s.decoded, raw_value);
        append_encoded(s.params_buf, s.decoded);
    } else {
        append_encoded(s.params_buf, raw_value);
    }
    p.value_len = static_cast<std::uint32_t>(s.params_buf.size() - p.value_off);
    s.params.push_back(p);
}

BATON_DECL void parse_query(scratch& s, std::string_view query) {
    std::size_t i = 0;
    while (i <= query.size()) {
        std::size_t amp = query.find('&', i);
        if (amp == std::string_view::npos) amp = query.size();
        std::string_view const piece = query.substr(i, amp - i);
        if (!piece.empty()) {
            std::size_t const eq = piece.find('=');
            if (eq == std::string_view::npos)
                add_param(s, piece, {}, true);
            else
                add_param(s, piece.substr(0, eq), piece.substr(eq + 1), true);
        }
        i = amp + 1;
    }
}

// Sorts s.params and writes them into s.canonical_query.
BATON_DECL void finish_query(scratch& s) {
    char const* const base = s.params_buf.data();
    auto name_of = [base](param_entry const& p) { return std::string_view(base + p.name_off, p.name_len); };
    auto value_of = [base](param_entry const& p) { return std::string_view(base + p.value_off, p.value_len); };
    std::sort(s.params.begin(), s.params.end(), [&](param_entry const& a, param_entry const& b) {
        int const c = name_of(a).compare(name_of(b));
        return c < 0 || (c == 0 && value_of(a) < value_of(b));
    });
    s.canonical_query.clear();
    for (std::size_t i = 0; i < s.params.size(); ++i) {
        if (i > 0) s.canonical_query += '&';
        s.canonical_query.append(name_of(s.params[i]));
        s.canonical_query += '=';
        s.canonical_query.append(value_of(s.params[i]));
    }
}

BATON_DECL void append_segment(std::string& out, std::string_view seg, bool encode_as_sent, std::string& tmp) {
    if (all_of_class(seg, unreserved_char)) { // nothing to decode or encode: the usual key
        out.append(seg);
        return;
    }
    if (encode_as_sent) {
        append_encoded(out, seg);
    } else {
        tmp.clear();
        append_decoded(tmp, seg);
        append_encoded(out, tmp);
    }
}

BATON_DECL void append_canonical_uri(std::string& out, std::string_view path, signing_params const& params,
                                     scratch& s) {
    bool const normalize = params.normalize_path && !params.s3_rules;
    bool const encode_as_sent = params.double_encode && !params.s3_rules;
    if (path.empty()) {
        out += '/';
        return;
    }
    if (!normalize) {
        // Segment by segment, so an encoded "%2F" inside a key stays "%2F".
        std::size_t i = 0;
        while (true) {
            std::size_t slash = path.find('/', i);
            if (slash == std::string_view::npos) slash = path.size();
            append_segment(out, path.substr(i, slash - i), encode_as_sent, s.decoded);
            if (slash == path.size()) break;
            out += '/';
            i = slash + 1;
        }
        return;
    }
    // botocore's remove_dot_segments: drop "" and ".", ".." pops, keep a trailing "/".
    s.segments.clear();
    std::size_t i = 0;
    while (i <= path.size()) {
        std::size_t slash = path.find('/', i);
        if (slash == std::string_view::npos) slash = path.size();
        std::string_view const seg = path.substr(i, slash - i);
        if (seg == "..") {
            if (!s.segments.empty()) s.segments.pop_back();
        } else if (!seg.empty() && seg != ".") {
            s.segments.push_back(seg);
        }
        i = slash + 1;
    }
    out += '/';
    for (std::size_t k = 0; k < s.segments.size(); ++k) {
        if (k > 0) out += '/';
        append_segment(out, s.segments[k], encode_as_sent, s.decoded);
    }
    if (path.back() == '/' && !s.segments.empty()) out += '/';
}

BATON_DECL void split_target(std::string_view target, std::string_view& path, std::string_view& query) noexcept {
    std::size_t const q = target.find('?');
    if (q == std::string_view::npos) {
        path = target;
        query = {};
    } else {
        path = target.substr(0, q);
        query = target.substr(q + 1);
    }
}

// Assembles s.creq from the method, the canonical URI and what is already in s.
BATON_DECL void assemble_canonical_request(scratch& s, std::string_view method, std::string_view path,
                                           signing_params const& params, std::string_view payload_hash) {
    s.creq.clear();
    s.creq.reserve(method.size() + path.size() * 3 + s.canonical_query.size() + s.canonical_headers.size() +
                   s.signed_headers.size() + payload_hash.size() + 8);
    s.creq.append(method);
    s.creq += '\n';
    append_canonical_uri(s.creq, path, params, s);
    s.creq += '\n';
    s.creq.append(s.canonical_query);
    s.creq += '\n';
    s.creq.append(s.canonical_headers);
    s.creq += '\n';
    s.creq.append(s.signed_headers);
    s.creq += '\n';
    s.creq.append(payload_hash);
}

} // namespace detail
} // namespace baton::aws

#endif
