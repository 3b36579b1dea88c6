// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AZURE_IMPL_SHARED_KEY_IPP
#define BATON_AZURE_IMPL_SHARED_KEY_IPP
// Layer: wire (azure), internal. The compiled part of azure/shared_key.hpp: the string to sign
// (headers, resource) and signing.
#include <baton/azure/impl/account.ipp>
#include <baton/azure/shared_key.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/http/detail/crypto.hpp>
#include <baton/http/detail/xml.hpp>

#include <boost/beast/http/field.hpp>
#include <boost/system/errc.hpp>

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

namespace baton::azure {
namespace detail {

namespace bhttp = boost::beast::http;

inline std::string_view sv(boost::core::string_view s) noexcept { return {s.data(), s.size()}; }

// The order in which the service sorts header names (en-US culture, as the SDKs reproduce it):
// the weight of each character that a header name may hold, case-insensitive; '-' and '\'' weigh
// nothing and only break ties.
inline constexpr auto header_weights = [] {
    std::array<unsigned char, 256> t{};
    constexpr std::string_view order = "!#$%&*.^_`|~+0123456789abcdefghijklmnopqrstuvwxyz";
    for (std::size_t i = 0; i < order.size(); ++i) t[static_cast<unsigned char>(order[i])] = static_cast<unsigned char>(i + 1);
    for (int c = 'A'; c <= 'Z'; ++c) t[static_cast<std::size_t>(c)] = t[static_cast<std::size_t>(c + 32)];
    return t;
}();

inline unsigned header_weight(char c) noexcept { return header_weights[static_cast<unsigned char>(c)]; }
inline bool is_tie_breaker(char c) noexcept { return c == '-' || c == '\''; }

// True when `a` sorts before `b` among canonicalized header names (lower-case tokens).
BATON_DECL bool header_name_less(std::string_view a, std::string_view b) noexcept {
    std::size_t i = 0;
    std::size_t j = 0;
    for (;;) {
        while (i < a.size() && header_weight(a[i]) == 0) ++i;
        while (j < b.size() && header_weight(b[j]) == 0) ++j;
        bool const a_done = i == a.size();
        bool const b_done = j == b.size();
        if (a_done || b_done) {
            if (a_done != b_done) return a_done;
            break;
        }
        if (header_weight(a[i]) != header_weight(b[j])) return header_weight(a[i]) < header_weight(b[j]);
        ++i;
        ++j;
    }
    // The same letters and digits: the first place where the names differ decides. There one has
    // a '-' or '\'' where the other has a letter (which sorts first) or has ended (which sorts
    // first), or both have one ('\'' first).
    for (std::size_t k = 0;; ++k) {
        bool const a_done = k == a.size();
        bool const b_done = k == b.size();
        if (a_done || b_done) return a_done && !b_done;
        if (a[k] == b[k]) continue;
        bool const a_tie = is_tie_breaker(a[k]);
        bool const b_tie = is_tie_breaker(b[k]);
        if (a_tie && b_tie) return a[k] == '\'';
        if (a_tie != b_tie) return b_tie;
        return a[k] < b[k];
    }
}

// Characters of an HTTP token (RFC 9110): what a header name may hold.
inline bool is_token(std::string_view s) noexcept {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return header_weight(c) != 0 || is_tie_breaker(c);
    });
}

inline bool ascii_starts_with_ci(std::string_view s, std::string_view lower_prefix) noexcept {
    if (s.size() < lower_prefix.size()) return false;
    for (std::size_t i = 0; i < lower_prefix.size(); ++i) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
        if (c != lower_prefix[i]) return false;
    }
    return true;
}

inline void ascii_lower(std::string& s) noexcept {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
}

// A header value as the service receives it: HTTP drops white space around it. Line breaks would
// let one value pass for several headers.
inline bool header_value(std::string_view raw, std::string_view& out) noexcept {
    if (raw.find_first_of("\r\n") != std::string_view::npos) return false;
    out = baton::detail::trim(raw);
    return true;
}

// The standard headers of the string to sign, in its order.
inline constexpr bhttp::field standard_headers[] = {
    bhttp::field::content_encoding,  bhttp::field::content_language,    bhttp::field::content_length,
    bhttp::field::content_md5,       bhttp::field::content_type,        bhttp::field::date,
    bhttp::field::if_modified_since, bhttp::field::if_match,            bhttp::field::if_none_match,
    bhttp::field::if_unmodified_since, bhttp::field::range,
};

// Writes the canonicalized `x-ms-*` headers ("name:value\n" each) to `out`.
BATON_DECL bool append_canonical_headers(bhttp::fields const& fields, std::string& out, std::string& why) {
    std::vector<std::pair<std::string, std::string_view>> headers;
    for (auto const& f : fields) {
        std::string_view const name = sv(f.name_string());
        if (!ascii_starts_with_ci(name, "x-ms-")) continue;
        if (!is_token(name)) {
            why = "a header name that is not an HTTP token";
            return false;
        }
        std::string_view value;
        if (!header_value(sv(f.value()), value)) {
            why = "a line break in the value of " + std::string(name);
            return false;
        }
        headers.emplace_back(std::string(name), value);
        ascii_lower(headers.back().first);
    }
    std::sort(headers.begin(), headers.end(),
              [](auto const& a, auto const& b) { return header_name_less(a.first, b.first); });
    for (std::size_t i = 0; i < headers.size(); ++i) {
        if (i > 0 && headers[i].first == headers[i - 1].first) {
            why = "the header " + headers[i].first + " appears twice";
            return false;
        }
        out += headers[i].first;
        out += ':';
        out += headers[i].second;
        out += '\n';
    }
    return true;
}

// Writes the query part of the canonicalized resource ("\nname:value" per name, sorted).
BATON_DECL bool append_canonical_query(std::string_view query, std::string& out, std::string& why) {
    std::vector<std::pair<std::string, std::string>> params;
    for (std::size_t i = 0; i <= query.size();) {
        std::size_t amp = query.find('&', i);
        if (amp == std::string_view::npos) amp = query.size();
        std::string_view const piece = query.substr(i, amp - i);
        i = amp + 1;
        if (piece.empty()) continue;
        auto const eq = piece.find('=');
        if (eq == std::string_view::npos || eq == 0 || eq + 1 == piece.size()) {
            why = "a query parameter without a name, '=' or value (leave out empty parameters)";
            return false;
        }
        std::string_view const raw_name = piece.substr(0, eq);
        std::string_view const raw_value = piece.substr(eq + 1);
        if (raw_name.find_first_of("%+") != std::string_view::npos) {
            why = "a query parameter name with '%' or '+'";
            return false;
        }
        if (raw_value.find_first_of("=+") != std::string_view::npos) {
            why = "a raw '=' or '+' in a query value (send %3D, %2B, and %20 for a space)";
            return false;
        }
        auto value = baton::detail::xml::url_decode(raw_value);
        if (!value) {
            why = "a malformed percent escape in a query value";
            return false;
        }
        params.emplace_back(std::string(raw_name), std::move(*value));
        ascii_lower(params.back().first);
    }
    std::sort(params.begin(), params.end());
    for (std::size_t i = 0; i < params.size(); ++i) {
        if (i > 0 && params[i].first == params[i - 1].first) {
            // The SDKs, Azurite and the service each treat a repeated parameter differently.
            why = "the query parameter " + params[i].first + " appears twice";
            return false;
        }
        out += '\n';
        out += params[i].first;
        out += ':';
        out += params[i].second;
    }
    return true;
}

BATON_DECL bool build_string_to_sign(http::request const& req, std::string_view account_name, std::string& out,
                                     std::string& why) {
    out.clear();
    std::string_view const target = sv(req.target());
    for (char c : target) {
        auto const u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f || c == '#') {
            why = "the target holds white space, a control, '#' or a byte that is not ASCII (percent-encode it)";
            return false;
        }
    }
    auto const q = target.find('?');
    std::string_view const path = target.substr(0, q);
    std::string_view const query = q == std::string_view::npos ? std::string_view{} : target.substr(q + 1);
    if (path.empty() || path.front() != '/') {
        why = "the target's path does not start with '/'";
        return false;
    }

    out += sv(req.method_string());
    out += '\n';
    bool const has_ms_date = req.find("x-ms-date") != req.end();
    for (bhttp::field f : standard_headers) {
        if (req.count(f) > 1) {
            why = "the header " + std::string(sv(bhttp::to_string(f))) + " appears twice";
            return false;
        }
        std::string_view value;
        if (!header_value(sv(req[f]), value)) {
            why = "a line break in the value of " + std::string(sv(bhttp::to_string(f)));
            return false;
        }
        if (f == bhttp::field::content_length && value == "0") value = {};
        if (f == bhttp::field::date && has_ms_date) value = {};
        out += value;
        out += '\n';
    }
    if (!append_canonical_headers(req.base(), out, why)) return false;
    out += '/';
    out += account_name;
    out += path;
    return append_canonical_query(query, out, why);
}

BATON_DECL error_code sign_in_place(http::request& req, account const& acct, std::chrono::system_clock::time_point now,
                                    diagnostics& diag) {
    std::string const date = http::format_http_date(now);
    if (date.empty()) return refuse(diag, "the signing time is outside years 1 to 9999");
    std::string sas;
    if (!acct.key.empty()) {
        if (auto ec = check_account_name("the account name", acct.name, diag)) return ec;
    } else if (!acct.sas.empty()) {
        if (auto ec = take_sas("the account's SAS", acct.sas, sas, diag)) return ec;
    }
    auto const length = req.find(bhttp::field::content_length);
    if (length == req.end() ? !req.body().empty() : sv(length->value()) != std::to_string(req.body().size()))
        return refuse(diag, "Content-Length does not match the body (call prepare_payload() before signing)");

    req.set("x-ms-date", date);
    if (req.find("x-ms-version") == req.end()) req.set("x-ms-version", api_version);
    req.erase(bhttp::field::date);

    if (!acct.key.empty()) {
        std::string key;
        if (!baton::detail::base64_decode(acct.key, key) || key.empty()) {
            baton::detail::wipe(key.data(), key.size());
            return refuse(diag, "the account key is not base64");
        }
        std::string sts;
        std::string why;
        bool const built = build_string_to_sign(req, acct.name, sts, why);
        baton::detail::sha256_digest mac{};
        bool const signed_ok =
            built && baton::detail::hmac_sha256(reinterpret_cast<unsigned char const*>(key.data()), key.size(), sts,
                                                mac.data());
        baton::detail::wipe(key.data(), key.size());
        if (!built) return refuse(diag, "the request cannot be signed: " + why);
        if (!signed_ok) {
            diag.message = "OpenSSL could not compute HMAC-SHA256";
            return boost::system::errc::make_error_code(boost::system::errc::not_supported);
        }
        std::string authorization = "SharedKey ";
        authorization += acct.name;
        authorization += ':';
        authorization += baton::detail::base64_encode(
            std::string_view(reinterpret_cast<char const*>(mac.data()), mac.size()));
        req.set(bhttp::field::authorization, authorization);
    } else if (!sas.empty()) {
        std::string_view const target = sv(req.target());
        std::size_t const q = target.find('?');
        bool const appended = target.size() > sas.size() && target.ends_with(sas) &&
                              (target[target.size() - sas.size() - 1] == '?' ||
                               target[target.size() - sas.size() - 1] == '&');
        if (!appended) {
            std::string t(target);
            if (q == std::string_view::npos)
                t += '?';
            else if (t.back() != '?' && t.back() != '&')
                t += '&';
            t += sas;
            req.target(t);
        }
    }
    return {};
}

} // namespace detail

BATON_DECL std::string string_to_sign(http::request const& req, std::string_view account_name) {
    std::string out;
    std::string why;
    if (!detail::build_string_to_sign(req, account_name, out, why)) out.clear();
    return out;
}

BATON_DECL error_code sign(http::request& req, account const& acct, std::chrono::system_clock::time_point now,
                           diagnostics& diag) {
    req.erase(boost::beast::http::field::authorization);
    return detail::sign_in_place(req, acct, now, diag);
}

BATON_DECL error_code sign(http::request& req, account const& acct, std::chrono::system_clock::time_point now) {
    diagnostics ignored;
    return sign(req, acct, now, ignored);
}

} // namespace baton::azure

#endif
