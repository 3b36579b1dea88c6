// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_HTTP_ENDPOINT_HPP
#define BATON_HTTP_ENDPOINT_HPP

/** @file
    Layer: wire (http). Where a request goes (`endpoint`, `parse_endpoint`),
    the message types the client sends and receives, and the HTTP date
    format (`parse_http_date`, for the clock-skew estimate; `format_http_date`).
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/result.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton::http {

/// The request type the client sends: backends build it, the signer signs it.
using request = boost::beast::http::request<boost::beast::http::string_body>;
/// The response type the client delivers, whatever its status.
using response = boost::beast::http::response<boost::beast::http::string_body>;

/// Plain TCP or TLS; part of a connection's identity in the pool.
enum class scheme {
    /// Plain TCP (local test servers, dynalite, DynamoDB Local).
    http,
    /// TLS over TCP, verified by default.
    https,
};

/** Where requests go: the part of a URL that decides which connection to use.

    Kept apart from the request target because pooling, TLS names and the
    `Host` header depend only on these three fields; paths and queries
    belong to each request.
*/
struct endpoint {
    /// `http` or `https`.
    baton::http::scheme scheme = baton::http::scheme::http;
    /// Host name (lower-case) or IP literal, without brackets; also the TLS name checked against the certificate.
    std::string host;
    /// TCP port; 80 or 443 when the URL gives none.
    std::uint16_t port = 80;

    /// True for `https`.
    bool is_tls() const noexcept { return scheme == baton::http::scheme::https; }

    /// The `Host` header value: the default port is omitted and IPv6 literals are bracketed, as signers expect.
    std::string host_header() const {
        bool const v6 = host.find(':') != std::string::npos;
        std::string out = v6 ? "[" + host + "]" : host;
        if (port != (is_tls() ? 443 : 80)) out += ":" + std::to_string(port);
        return out;
    }

    /// `scheme://host:port`, for logs and diagnostics (never carries credentials).
    std::string origin() const {
        bool const v6 = host.find(':') != std::string::npos;
        return std::string(is_tls() ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" +
               std::to_string(port);
    }

    /// Endpoints are equal when they would share a connection pool.
    friend bool operator==(endpoint const&, endpoint const&) = default;

    /** Parses `scheme://host[:port][/]`, throwing on anything else.

        For configuration code, where a bad URL is a setup error.
        @throws config_error whose message says what is wrong with the URL.
    */
    static endpoint from_url(std::string_view url);
};

/** Parses an endpoint URL (`http://127.0.0.1:8000`, `https://s3.eu-west-1.amazonaws.com`).

    Accepts only `http` and `https` with a host, an optional port (1-65535)
    and an empty or `/` path. Refuses user info (credentials do not belong
    in endpoint URLs, and this keeps them out of every message), queries,
    fragments and paths, because a silently ignored part would send
    requests somewhere the user did not mean. Host names are lower-cased.

    @returns the endpoint, or `errc::invalid_argument` with `diag.message`
    saying what is wrong. Messages never repeat the URL itself, which might
    carry a secret.
*/
BATON_DECL boost::system::result<endpoint> parse_endpoint(std::string_view url, diagnostics& diag);

/** Parses an endpoint URL by the rules of the overload with `diagnostics`, dropping the explanation.

    @returns the endpoint, or `errc::invalid_argument`.
*/
BATON_DECL boost::system::result<endpoint> parse_endpoint(std::string_view url);


/** Parses an HTTP `Date` value in IMF-fixdate form (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 7231 §7.1.1.1).

    Every current server sends this form; the two obsolete forms are not
    accepted, so a response carrying one simply does not update the skew
    estimate. The weekday name is checked for shape but not against the
    date.

    @returns the instant (whole seconds, UTC), or nothing when `value` is not an IMF-fixdate.
*/
BATON_DECL std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view value) noexcept;

/** Formats `t` as an HTTP `Date` value in IMF-fixdate form (`Sun, 06 Nov 1994 08:49:37 GMT`).

    The form `parse_http_date` reads, and the one request signers that carry the time in a
    header (Azure's `x-ms-date`) send. Whole seconds, rounded down.

    @returns the 29 characters, or an empty string for a time outside years 1 to 9999.
*/
BATON_DECL std::string format_http_date(std::chrono::system_clock::time_point t);

/** How the client connects, waits and trusts. Defaults suit AWS and local test servers.

    Timeouts bound each attempt, so that a lease's renew deadline is never
    spent waiting on one dead connection; size limits bound what a hostile
    or broken server can make the client hold in memory.
*/

} // namespace baton::http

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/http/impl/endpoint.ipp>
#endif

#endif
