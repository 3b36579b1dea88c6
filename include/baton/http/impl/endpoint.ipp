// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_HTTP_IMPL_ENDPOINT_IPP
#define BATON_HTTP_IMPL_ENDPOINT_IPP
// Layer: wire (http), internal. The compiled part of http/endpoint.hpp: parsing endpoints and HTTP dates.
#include <baton/http/endpoint.hpp>

#include <boost/url/parse.hpp>

#include <algorithm>
#include <cctype>

namespace baton::http {

BATON_DECL boost::system::result<endpoint> parse_endpoint(std::string_view url, diagnostics& diag) {
    auto fail = [&](std::string why) -> boost::system::result<endpoint> {
        diag.message = "invalid endpoint URL: " + std::move(why);
        return error_code(errc::invalid_argument);
    };
    if (url.find("://") == std::string_view::npos)
        return fail("it needs a scheme and a host, e.g. http://127.0.0.1:8000 or https://host");
    auto parsed = boost::urls::parse_uri(url);
    if (!parsed) return fail("not a valid URI (" + parsed.error().message() + ")");
    auto const& u = *parsed;
    endpoint ep;
    switch (u.scheme_id()) {
    case boost::urls::scheme::http: ep.scheme = scheme::http; break;
    case boost::urls::scheme::https: ep.scheme = scheme::https; break;
    default: return fail("unsupported scheme '" + std::string(u.scheme()) + "' (use http or https)");
    }
    if (!u.has_authority()) return fail("it has no host");
    if (u.has_userinfo()) return fail("it must not carry user information (credentials come from the signer)");
    switch (u.host_type()) {
    case boost::urls::host_type::ipv4: ep.host = u.host_ipv4_address().to_string(); break;
    case boost::urls::host_type::ipv6: ep.host = u.host_ipv6_address().to_string(); break;
    case boost::urls::host_type::name: {
        ep.host = u.host_name();
        for (char& c : ep.host) {
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
            bool const ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
            if (!ok) return fail("the host name contains a character that is not allowed in DNS names");
        }
        break;
    }
    default: return fail("it has no host (only names, IPv4 and IPv6 literals are accepted)");
    }
    if (ep.host.empty()) return fail("it has no host");
    ep.port = ep.is_tls() ? 443 : 80;
    if (u.has_port()) {
        auto const p = u.port();
        if (p.empty() || p.size() > 5) return fail("the port must be a number from 1 to 65535");
        unsigned long n = 0;
        for (char c : p) {
            if (c < '0' || c > '9') return fail("the port must be a number from 1 to 65535");
            n = n * 10 + static_cast<unsigned long>(c - '0');
        }
        if (n == 0 || n > 65535) return fail("the port must be a number from 1 to 65535");
        ep.port = static_cast<std::uint16_t>(n);
    }
    if (!u.encoded_path().empty() && u.encoded_path().front() != '/')
        return fail("unexpected characters after the host (expected ':port' or '/')");
    if (!u.encoded_path().empty() && u.encoded_path() != "/")
        return fail("it must not have a path ('" + std::string(u.encoded_path()) +
                    "'): give scheme://host[:port] and put paths in requests");
    if (u.has_query()) return fail("it must not have a query");
    if (u.has_fragment()) return fail("it must not have a fragment");
    return ep;
}

BATON_DECL boost::system::result<endpoint> parse_endpoint(std::string_view url) {
    diagnostics ignored;
    return parse_endpoint(url, ignored);
}

BATON_DECL endpoint endpoint::from_url(std::string_view url) {
    diagnostics d;
    auto r = parse_endpoint(url, d);
    if (!r) throw config_error(d.message);
    return *r;
}

namespace detail {
// IMF-fixdate's names, weekdays from Monday (ISO order).
inline constexpr std::string_view http_date_days[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
inline constexpr std::string_view http_date_months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
} // namespace detail

BATON_DECL std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view value) noexcept {
    namespace chr = std::chrono; // qualified: an includer's global `seconds` must not change them
    if (value.size() != 29) return std::nullopt;
    auto digits = [&](std::size_t pos, std::size_t n, int& out) {
        out = 0;
        for (std::size_t i = pos; i < pos + n; ++i) {
            if (value[i] < '0' || value[i] > '9') return false;
            out = out * 10 + (value[i] - '0');
        }
        return true;
    };
    auto const& days = detail::http_date_days;
    auto const& months = detail::http_date_months;
    if (std::find(std::begin(days), std::end(days), value.substr(0, 3)) == std::end(days)) return std::nullopt;
    if (value.substr(3, 2) != ", " || value[7] != ' ' || value[11] != ' ' || value[16] != ' ' || value[19] != ':' ||
        value[22] != ':' || value.substr(25) != " GMT")
        return std::nullopt;
    auto const m = std::find(std::begin(months), std::end(months), value.substr(8, 3));
    if (m == std::end(months)) return std::nullopt;
    int d = 0, y = 0, hh = 0, mm = 0, ss = 0;
    if (!digits(5, 2, d) || !digits(12, 4, y) || !digits(17, 2, hh) || !digits(20, 2, mm) || !digits(23, 2, ss))
        return std::nullopt;
    if (hh > 23 || mm > 59 || ss > 60) return std::nullopt; // 60: a leap second
    chr::year_month_day const ymd{chr::year{y}, chr::month{static_cast<unsigned>(m - std::begin(months) + 1)},
                                  chr::day{static_cast<unsigned>(d)}};
    if (!ymd.ok()) return std::nullopt;
    return chr::time_point_cast<chr::system_clock::duration>(chr::sys_days{ymd} + chr::hours{hh} + chr::minutes{mm} +
                                                             chr::seconds{ss});
}

BATON_DECL std::string format_http_date(std::chrono::system_clock::time_point t) {
    namespace chr = std::chrono; // qualified: an includer's global `seconds` must not change them
    auto const secs = chr::floor<chr::seconds>(t);
    auto const day = chr::floor<chr::days>(secs);
    chr::year_month_day const ymd{day};
    int const y = static_cast<int>(ymd.year());
    if (y < 1 || y > 9999) return {};
    chr::hh_mm_ss const hms{secs - day};
    std::string out;
    out.reserve(29);
    out += detail::http_date_days[chr::weekday{day}.iso_encoding() - 1];
    out += ", ";
    auto two = [&out](unsigned v) {
        out += static_cast<char>('0' + v / 10 % 10);
        out += static_cast<char>('0' + v % 10);
    };
    two(static_cast<unsigned>(ymd.day()));
    out += ' ';
    out += detail::http_date_months[static_cast<unsigned>(ymd.month()) - 1];
    out += ' ';
    two(static_cast<unsigned>(y) / 100);
    two(static_cast<unsigned>(y) % 100);
    out += ' ';
    two(static_cast<unsigned>(hms.hours().count()));
    out += ':';
    two(static_cast<unsigned>(hms.minutes().count()));
    out += ':';
    two(static_cast<unsigned>(hms.seconds().count()));
    out += " GMT";
    return out;
}

} // namespace baton::http

#endif
