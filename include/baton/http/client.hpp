// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_HTTP_CLIENT_HPP
#define BATON_HTTP_CLIENT_HPP

/** @file
    The HTTP(S) client that the S3 and DynamoDB backends speak through.

    A lease is only as safe as its view of each write's fate, so this client
    is built to say exactly what happened to a request and nothing more:

    - One attempt per call. The client never retries, never follows
      redirects and never resends on a stale keep-alive connection; the
      record-store layer decides, because only it knows whether a request
      is safe to repeat (a conditional write is; its result may not be).
    - **Outcome unknown.** `request_info::request_sent` says whether the
      whole request was handed to the connection. When an error arrives
      with `request_sent == false`, the server cannot have received a
      complete request, so it was not applied and resending is safe. When
      `request_sent == true` and no complete response came
      (`request_info::outcome_unknown()`), the server may or may not have
      applied it: a timeout then is still `errc::timeout` (and a reset still
      `connection_reset`), because the error says *what* failed while the
      side channel says *whether it may have taken effect*. The backend
      resolves the ambiguity by reading back and reports
      `errc::unknown_outcome` only when that fails.
    - Keep-alive pools per endpoint (scheme, host, port), capped at
      `client_options::max_connections_per_endpoint` connections (idle and
      in use together). Requests beyond the cap **queue** in FIFO order
      and wait for a connection to come back or close; the wait counts
      against the attempt timeout and ends in `errc::timeout` with
      `request_sent == false` and diagnostics naming the cap.
    - Limits on what a server may send (`max_response_body_bytes`,
      `max_response_header_bytes`): oversized, truncated or malformed
      responses give `errc::invalid_response` with diagnostics that say
      which rule was broken.
    - TLS verifies the peer and its name by default (system trust store,
      or `client_options::ca_file`), sends SNI for host names, and refuses
      TLS below 1.2.
    - A clock-skew estimate from the `Date` header of every response, for
      the SigV4 signer (S3 refuses requests more than 15 minutes off).

    Everything runs on the executor given at construction; the client
    starts no threads and owns no `io_context`.
*/

#include <baton/detail/config.hpp>
#include <baton/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/system/result.hpp>
#include <boost/system/system_error.hpp>
#include <boost/url/parse.hpp>

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

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
inline boost::system::result<endpoint> parse_endpoint(std::string_view url, diagnostics& diag) {
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

/// Parses an endpoint URL, dropping the explanation. @copydetails parse_endpoint(std::string_view, diagnostics&)
inline boost::system::result<endpoint> parse_endpoint(std::string_view url) {
    diagnostics ignored;
    return parse_endpoint(url, ignored);
}

inline endpoint endpoint::from_url(std::string_view url) {
    diagnostics d;
    auto r = parse_endpoint(url, d);
    if (!r) throw config_error(d.message);
    return *r;
}

/** Parses an HTTP `Date` value in IMF-fixdate form (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 7231 §7.1.1.1).

    Every current server sends this form; the two obsolete forms are not
    accepted, so a response carrying one simply does not update the skew
    estimate. The weekday name is checked for shape but not against the
    date.

    @returns the instant (whole seconds, UTC), or nothing when `value` is not an IMF-fixdate.
*/
inline std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view value) noexcept {
    using namespace std::chrono;
    if (value.size() != 29) return std::nullopt;
    auto digits = [&](std::size_t pos, std::size_t n, int& out) {
        out = 0;
        for (std::size_t i = pos; i < pos + n; ++i) {
            if (value[i] < '0' || value[i] > '9') return false;
            out = out * 10 + (value[i] - '0');
        }
        return true;
    };
    static constexpr std::string_view days[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
    static constexpr std::string_view months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
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
    year_month_day const ymd{year{y}, month{static_cast<unsigned>(m - std::begin(months) + 1)},
                             day{static_cast<unsigned>(d)}};
    if (!ymd.ok()) return std::nullopt;
    return time_point_cast<system_clock::duration>(sys_days{ymd} + hours{hh} + minutes{mm} + seconds{ss});
}

/** How the client connects, waits and trusts. Defaults suit AWS and local test servers.

    Timeouts bound each attempt, so that a lease's renew deadline is never
    spent waiting on one dead connection; size limits bound what a hostile
    or broken server can make the client hold in memory.
*/
struct client_options {
    /// Time to open a new connection: DNS resolution, TCP connect and the TLS handshake together. Default 3 s.
    std::chrono::milliseconds connect_timeout{3000};
    /** Time for one whole attempt, from the call until the complete response (or the error). Default 10 s.

        Includes waiting for a pooled connection and the connect phase (which
        also obeys `connect_timeout`).
    */
    std::chrono::milliseconds attempt_timeout{10000};
    /// Largest response body accepted; a larger one fails with `errc::invalid_response`. Default 8 MiB.
    std::uint64_t max_response_body_bytes = 8u * 1024u * 1024u;
    /// Largest response header (status line and fields) accepted; beyond it `errc::invalid_response`. Default 64 KiB.
    std::uint32_t max_response_header_bytes = 64u * 1024u;
    /** Most connections to one endpoint, idle and in use together. Default 16.

        Requests beyond it queue until a connection is free (see the file comment).
    */
    std::size_t max_connections_per_endpoint = 16;
    /** How long an idle connection may wait for reuse before it is closed. Default 15 s.

        Below the usual server keep-alive limits, so the client rarely sends
        on a connection the server is about to drop (which would make the
        outcome of that request unknown). Idle connections are retired
        lazily, when a request starts or by `client::close_idle()`, so no
        timer keeps the user's `io_context` busy. Before reuse, a connection
        that the server has closed (or that has unexpected bytes pending) is
        dropped without sending on it.
    */
    std::chrono::milliseconds idle_timeout{15000};
    /** A PEM file of CA certificates to trust instead of the system store.

        Empty (default): the system trust store
        (`ssl::context::set_default_verify_paths()`, which honours
        `SSL_CERT_FILE` / `SSL_CERT_DIR`). Set it for private CAs; the
        file is loaded when the client is constructed.
    */
    std::string ca_file;
    /** Skip TLS certificate and host-name verification. Default false. **Dangerous.**

        Anyone on the path can then impersonate the server and read or alter
        every request, signatures and session tokens included. Only for
        local test servers with throw-away certificates. A client
        constructed with it records a warning in `client::warnings()` and
        sends it to `warning_sink` once.
    */
    bool insecure_skip_verify = false;
    /** Where the client's warnings go (once each), besides `client::warnings()`.

        Empty (default): standard error, prefixed `baton: WARNING: `.
    */
    std::function<void(std::string_view)> warning_sink;

    /// The longest any timeout may be (connect, attempt, idle; `request_options::attempt_timeout` too).
    static constexpr std::chrono::milliseconds max_timeout = std::chrono::hours(24);

    /// Checks the rules above. @throws config_error naming the field that breaks one.
    void validate() const {
        // Upper bounds keep every deadline (now + timeout, in nanoseconds) far from overflow.
        if (connect_timeout <= std::chrono::milliseconds::zero() || connect_timeout > max_timeout)
            throw config_error("client_options::connect_timeout must be positive and at most 24 hours");
        if (attempt_timeout <= std::chrono::milliseconds::zero() || attempt_timeout > max_timeout)
            throw config_error("client_options::attempt_timeout must be positive and at most 24 hours");
        if (idle_timeout < std::chrono::milliseconds::zero() || idle_timeout > max_timeout)
            throw config_error("client_options::idle_timeout must be from 0 to 24 hours");
        if (max_connections_per_endpoint == 0)
            throw config_error("client_options::max_connections_per_endpoint must be at least 1");
        if (max_response_body_bytes == 0)
            throw config_error("client_options::max_response_body_bytes must be positive");
        if (max_response_header_bytes == 0)
            throw config_error("client_options::max_response_header_bytes must be positive");
    }
};

/** Per-call settings that override `client_options` for one request.

    Exists because a caller with a deadline of its own (a lease renewal
    before its renew deadline) must not wait the client-wide attempt
    timeout; cancelling would also work but would report `operation_aborted`
    instead of `errc::timeout`.
*/
struct request_options {
    /// Overrides `client_options::attempt_timeout` for this call; when set, positive and at most `client_options::max_timeout`.
    std::optional<std::chrono::milliseconds> attempt_timeout;
};

/** What happened to one request, beyond its error code: the side channel of `client::async_request`.

    Exists because "timed out" alone cannot tell a backend whether a
    conditional write may have been applied; `request_sent` can.
*/
struct request_info {
    /** The whole request was handed to the connection.

        False: the server cannot have received a complete request; resending
        is safe. True: it may have been received and applied.
    */
    bool request_sent = false;
    /// A complete response was read (the completion then carries no error).
    bool response_received = false;
    /// The request went over a kept-alive connection rather than a new one.
    bool reused_connection = false;
    /** The HTTP status when a response header arrived, and baton's explanation of a failure.

        The message names the phase (queue, resolve, connect, TLS, send,
        receive), the endpoint's origin and, for limits, the option to raise.
        TLS verification failures read `TLS certificate verification failed:
        <OpenSSL's reason>`.
    */
    diagnostics diag;

    /// The request may or may not have taken effect: it was sent and no complete response came.
    bool outcome_unknown() const noexcept { return request_sent && !response_received; }
};

#ifndef BATON_DOXYGEN
namespace detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;

// One pooled connection: a plain or a TLS stream, and the read buffer that belongs to it.
struct connection {
    connection(asio::any_io_executor const& ex, asio::ssl::context* tls_ctx) {
        if (tls_ctx != nullptr)
            tls.emplace(ex, *tls_ctx);
        else
            plain.emplace(ex);
    }

    std::optional<beast::tcp_stream> plain;
    std::optional<asio::ssl::stream<beast::tcp_stream>> tls;
    beast::flat_buffer buffer;
    std::chrono::steady_clock::time_point idle_since{};

    beast::tcp_stream& tcp() noexcept { return tls ? tls->next_layer() : *plain; }

    template <class F>
    void with_stream(F&& f) {
        if (tls)
            f(*tls);
        else
            f(*plain);
    }

    void close() noexcept {
        error_code ignored;
        tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
        tcp().close();
    }

    // An idle connection is usable when nothing at all is waiting on its socket:
    // end of stream means the server closed it, and bytes (a 408, a TLS close_notify)
    // mean the server said something unasked. Either way, sending on it could
    // make a request's outcome unknown for no reason.
    bool usable_when_idle() noexcept {
        auto& sock = tcp().socket();
        if (!sock.is_open()) return false;
        error_code ec;
        sock.non_blocking(true, ec);
        if (ec) return false;
        char byte = 0;
        sock.receive(asio::buffer(&byte, 1), tcp::socket::message_peek, ec);
        error_code ignored;
        sock.non_blocking(false, ignored);
        return ec == asio::error::would_block;
    }
};

struct request_op;

struct pool {
    std::vector<std::unique_ptr<connection>> idle; // back: most recently used
    std::size_t in_use = 0;                        // checked out, or being opened
    std::list<std::weak_ptr<request_op>> waiting;  // FIFO; the op's timer keeps it alive
};

struct client_state {
    client_state(asio::any_io_executor e, client_options o)
        : ex(std::move(e)), opts(std::move(o)), tls_ctx(asio::ssl::context::tls_client) {
        opts.validate();
        SSL_CTX_set_min_proto_version(tls_ctx.native_handle(), TLS1_2_VERSION);
        if (opts.insecure_skip_verify) {
            tls_ctx.set_verify_mode(asio::ssl::verify_none);
            warn("TLS certificate verification is disabled (client_options::insecure_skip_verify): anyone on the "
                 "network path can impersonate the server and read or alter every request. Use it only against "
                 "local test servers.");
        } else {
            tls_ctx.set_verify_mode(asio::ssl::verify_peer);
        }
        try {
            if (opts.ca_file.empty())
                tls_ctx.set_default_verify_paths();
            else
                tls_ctx.load_verify_file(opts.ca_file);
        } catch (boost::system::system_error const& e) {
            if (!opts.ca_file.empty())
                throw config_error("client_options::ca_file: cannot load CA certificates from '" + opts.ca_file +
                                   "' (" + e.code().message() + ")");
            // No system trust store: every verified handshake will fail, and say so.
        }
    }

    void warn(std::string text) {
        if (opts.warning_sink)
            opts.warning_sink(text);
        else
            std::fprintf(stderr, "baton: WARNING: %s\n", text.c_str());
        warnings.push_back(std::move(text));
    }

    void sweep_idle(std::chrono::steady_clock::time_point now) {
        for (auto& [key, p] : pools) {
            auto keep = std::remove_if(p.idle.begin(), p.idle.end(), [&](std::unique_ptr<connection>& c) {
                if (now - c->idle_since < opts.idle_timeout) return false;
                c->close();
                return true;
            });
            p.idle.erase(keep, p.idle.end());
        }
    }

    void close_idle() {
        for (auto& [key, p] : pools) {
            for (auto& c : p.idle) c->close();
            p.idle.clear();
        }
    }

    std::size_t idle_count() const noexcept {
        std::size_t n = 0;
        for (auto const& [key, p] : pools) n += p.idle.size();
        return n;
    }

    // An op is done with its place in the pool (and with `c`, if it has one).
    inline void give_back(std::string const& key, std::unique_ptr<connection> c, bool reusable);

    asio::any_io_executor ex;
    client_options opts;
    asio::ssl::context tls_ctx;
    std::unordered_map<std::string, pool> pools;
    std::vector<std::string> warnings;
    std::atomic<std::int64_t> skew{0}; // system_clock::duration ticks
    std::atomic<bool> has_skew{false};
    std::uint64_t connections_opened = 0;
};

struct request_op : std::enable_shared_from_this<request_op> {
    using handler_type = asio::any_completion_handler<void(error_code, response)>;
    using clock = std::chrono::steady_clock;
    enum class phase { start, queued, resolving, connecting, handshaking, writing, reading, done };

    request_op(std::shared_ptr<client_state> s, endpoint e, request r, request_options const& ro, request_info* o)
        : st(std::move(s)), ep(std::move(e)), key(ep.origin()), req(std::move(r)), out(o), timer(st->ex),
          attempt_timeout(ro.attempt_timeout.value_or(st->opts.attempt_timeout)) {}

    std::shared_ptr<client_state> st;
    endpoint ep;
    std::string key;
    request req;
    request_info* out;
    request_info info;
    std::optional<handler_type> handler; // emplaced, never move-assigned (Boost 1.81)
    asio::cancellation_slot slot;
    asio::steady_timer timer;
    std::optional<tcp::resolver> resolver;
    std::unique_ptr<connection> conn;
    std::optional<bhttp::response_parser<bhttp::string_body>> parser;
    phase ph = phase::start;
    bool holds_place = false; // counted in pool::in_use
    bool cancelled = false;
    bool resolve_timed_out = false;
    clock::time_point deadline{}, connect_deadline{};
    std::chrono::system_clock::time_point sent_at{};
    std::chrono::milliseconds attempt_timeout;

    template <class Handler>
    void start(Handler&& h) {
        slot = asio::get_associated_cancellation_slot(h);
        handler.emplace(std::forward<Handler>(h));
        auto const now = clock::now();
        if (attempt_timeout <= std::chrono::milliseconds::zero() || attempt_timeout > client_options::max_timeout) {
            deadline = now;
            return finish(errc::invalid_argument, "request_options::attempt_timeout must be positive and at most 24 hours");
        }
        deadline = now + attempt_timeout;
        if (ep.host.empty() || ep.port == 0)
            return finish(errc::invalid_argument, "the endpoint has no host or no port (use parse_endpoint)");
        if (req.find(bhttp::field::host) == req.end()) req.set(bhttp::field::host, ep.host_header());
        if (!req.has_content_length() && !req.chunked()) req.prepare_payload();
        if (slot.is_connected()) {
            std::weak_ptr<request_op> weak = weak_from_this();
            asio::any_io_executor e = st->ex;
            slot.assign([weak, e](asio::cancellation_type) {
                asio::post(e, [weak] {
                    if (auto self = weak.lock()) self->on_cancel();
                });
            });
        }
        st->sweep_idle(now);
        acquire();
    }

    static std::string ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }
    std::string attempt_limit() const { return "attempt timeout, " + ms(attempt_timeout); }

    void arm_timer(clock::time_point when) {
        timer.expires_at(when);
        timer.async_wait([self = shared_from_this()](error_code ec) {
            if (!ec) self->on_timer();
        });
    }

    // ---- pool ----------------------------------------------------------------
    void acquire() {
        auto& p = st->pools[key];
        while (!p.idle.empty()) {
            auto c = std::move(p.idle.back());
            p.idle.pop_back();
            if (c->usable_when_idle()) {
                ++p.in_use;
                holds_place = true;
                conn = std::move(c);
                info.reused_connection = true;
                return send();
            }
            c->close();
        }
        if (p.in_use < st->opts.max_connections_per_endpoint) {
            ++p.in_use;
            holds_place = true;
            return open();
        }
        ph = phase::queued;
        p.waiting.push_back(weak_from_this());
        arm_timer(deadline);
    }

    void leave_queue() {
        auto& w = st->pools[key].waiting;
        w.remove_if([this](std::weak_ptr<request_op> const& x) {
            auto s = x.lock();
            return !s || s.get() == this;
        });
    }

    // Another op hands over its place in the pool: a live connection, or room to open one.
    void adopt(std::unique_ptr<connection> c) {
        holds_place = true;
        timer.cancel();
        if (c) {
            conn = std::move(c);
            info.reused_connection = true;
            return send();
        }
        open();
    }

    // ---- connect -------------------------------------------------------------
    void open() {
        auto const now = clock::now();
        connect_deadline = std::min(deadline, now + st->opts.connect_timeout);
        conn = std::make_unique<connection>(st->ex, ep.is_tls() ? &st->tls_ctx : nullptr);
        error_code ec;
        auto const addr = asio::ip::make_address(ep.host, ec);
        if (!ec) {
            ph = phase::connecting;
            conn->tcp().expires_at(connect_deadline);
            conn->tcp().async_connect(tcp::endpoint(addr, ep.port),
                                      [self = shared_from_this()](error_code e) { self->on_connect(e); });
            return;
        }
        ph = phase::resolving;
        resolver.emplace(st->ex);
        arm_timer(connect_deadline);
        resolver->async_resolve(ep.host, std::to_string(ep.port), tcp::resolver::numeric_service,
                                [self = shared_from_this()](error_code e, tcp::resolver::results_type r) {
                                    self->on_resolve(e, std::move(r));
                                });
    }

    std::string connect_limit() const {
        return connect_deadline == deadline ? attempt_limit()
                                            : "client_options::connect_timeout, " + ms(st->opts.connect_timeout);
    }

    void on_resolve(error_code ec, tcp::resolver::results_type results) {
        if (ph == phase::done) return;
        timer.cancel();
        if (cancelled) return finish(asio::error::operation_aborted, "cancelled while resolving " + ep.host);
        if (resolve_timed_out)
            return finish(errc::timeout, "resolving " + ep.host + " timed out (" + connect_limit() + ")");
        if (ec) return finish(ec, "cannot resolve " + ep.host + ": " + ec.message());
        ph = phase::connecting;
        conn->tcp().expires_at(connect_deadline);
        std::weak_ptr<request_op> weak = weak_from_this();
        conn->tcp().async_connect(
            results,
            [weak](error_code const&, tcp::endpoint const&) {
                auto self = weak.lock();
                return self && !self->cancelled;
            },
            [self = shared_from_this()](error_code e, tcp::endpoint const&) { self->on_connect(e); });
    }

    void on_connect(error_code ec) {
        if (ph == phase::done) return;
        if (cancelled) return finish(asio::error::operation_aborted, "cancelled while connecting to " + key);
        if (ec == beast::error::timeout)
            return finish(errc::timeout, "connecting to " + key + " timed out (" + connect_limit() + ")");
        if (ec) return finish(ec, "cannot connect to " + key + ": " + ec.message());
        ++st->connections_opened;
        error_code ignored;
        conn->tcp().socket().set_option(tcp::no_delay(true), ignored);
        if (!conn->tls) return send();
        handshake();
    }

    void handshake() {
        SSL* ssl = conn->tls->native_handle();
        error_code ec;
        asio::ip::make_address(ep.host, ec);
        bool const is_ip = !ec;
        bool ok = true;
        if (!is_ip) ok = SSL_set_tlsext_host_name(ssl, ep.host.c_str()) == 1; // SNI is for names only (RFC 6066)
        if (ok && !st->opts.insecure_skip_verify) {
            if (is_ip) {
                ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), ep.host.c_str()) == 1;
            } else {
                SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
                ok = SSL_set1_host(ssl, ep.host.c_str()) == 1;
            }
        }
        if (!ok) return finish(errc::invalid_argument, "cannot use '" + ep.host + "' as a TLS server name");
        ph = phase::handshaking;
        conn->tcp().expires_at(connect_deadline);
        conn->tls->async_handshake(asio::ssl::stream_base::client,
                                   [self = shared_from_this()](error_code e) { self->on_handshake(e); });
    }

    void on_handshake(error_code ec) {
        if (ph == phase::done) return;
        if (cancelled) return finish(asio::error::operation_aborted, "cancelled during the TLS handshake with " + key);
        if (ec == beast::error::timeout)
            return finish(errc::timeout, "the TLS handshake with " + key + " timed out (" + connect_limit() + ")");
        if (ec) {
            long const v = SSL_get_verify_result(conn->tls->native_handle());
            if (v != X509_V_OK)
                return finish(ec, std::string("TLS certificate verification failed: ") +
                                      X509_verify_cert_error_string(v) + " (" + key + ")");
            return finish(ec, "the TLS handshake with " + key + " failed: " + ec.message());
        }
        send();
    }

    // ---- exchange ------------------------------------------------------------
    void send() {
        ph = phase::writing;
        conn->tcp().expires_at(deadline);
        sent_at = std::chrono::system_clock::now();
        conn->with_stream([&](auto& s) {
            bhttp::async_write(s, req, [self = shared_from_this()](error_code e, std::size_t) { self->on_write(e); });
        });
    }

    std::string via() const { return info.reused_connection ? " (on a reused connection)" : ""; }

    void on_write(error_code ec) {
        if (ph == phase::done) return;
        if (cancelled)
            return finish(asio::error::operation_aborted,
                          "cancelled while sending the request to " + key + "; it was not completely sent");
        if (ec == beast::error::timeout)
            return finish(errc::timeout, "sending the request to " + key + " timed out (" + attempt_limit() +
                                             "); it was not completely sent");
        if (ec) return finish(ec, "sending the request to " + key + " failed" + via() + ": " + ec.message());
        info.request_sent = true;
        receive();
    }

    void receive() {
        ph = phase::reading;
        parser.emplace();
        parser->body_limit(st->opts.max_response_body_bytes);
        parser->header_limit(st->opts.max_response_header_bytes);
        if (req.method() == bhttp::verb::head) parser->skip(true);
        conn->with_stream([&](auto& s) {
            bhttp::async_read(s, conn->buffer, *parser,
                              [self = shared_from_this()](error_code e, std::size_t) { self->on_read(e); });
        });
    }

    void on_read(error_code ec) {
        if (ph == phase::done) return;
        if (parser->is_header_done()) info.diag.http_status = parser->get().result_int();
        std::string const unknown = "; the request was sent, so its outcome is unknown";
        if (cancelled)
            return finish(asio::error::operation_aborted,
                          "cancelled while waiting for the response from " + key + unknown);
        if (ec == beast::error::timeout)
            return finish(errc::timeout,
                          "no complete response from " + key + " in time (" + attempt_limit() + ")" + unknown);
        if (ec == bhttp::error::body_limit)
            return finish(errc::invalid_response, "the response body from " + key +
                                                      " exceeds client_options::max_response_body_bytes (" +
                                                      std::to_string(st->opts.max_response_body_bytes) + " bytes)");
        if (ec == bhttp::error::header_limit)
            return finish(errc::invalid_response, "the response header from " + key +
                                                      " exceeds client_options::max_response_header_bytes (" +
                                                      std::to_string(st->opts.max_response_header_bytes) + " bytes)");
        bool const closed = ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
                            ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
        if (closed && !parser->got_some())
            return finish(asio::error::eof,
                          "the connection to " + key + " closed before any response arrived" + via() + unknown);
        if (closed)
            return finish(errc::invalid_response, "the response from " + key +
                                                      " was truncated: the connection closed before the message "
                                                      "was complete");
        if (ec && ec.category() == bhttp::make_error_code(bhttp::error::bad_version).category())
            return finish(errc::invalid_response, "malformed response from " + key + ": " + ec.message());
        if (ec)
            return finish(ec, "receiving the response from " + key + " failed" + via() + ": " + ec.message() + unknown);

        info.response_received = true;
        note_date(parser->get());
        bool const reusable = parser->keep_alive() && req.keep_alive() && conn->buffer.size() == 0;
        complete(error_code{}, parser->release(), reusable);
    }

    void note_date(response const& res) {
        auto const it = res.find(bhttp::field::date);
        if (it == res.end()) return;
        auto const server = parse_http_date(it->value());
        if (!server) return;
        auto const received = std::chrono::system_clock::now();
        auto const midpoint = sent_at + (received - sent_at) / 2;
        // Date is truncated to whole seconds: the server's clock read somewhere in [Date, Date + 1 s).
        auto const skew = (*server + std::chrono::milliseconds(500)) - midpoint;
        st->skew.store(std::chrono::duration_cast<std::chrono::system_clock::duration>(skew).count());
        st->has_skew.store(true);
    }

    // ---- cancellation and timers ---------------------------------------------
    void on_cancel() {
        if (ph == phase::done || cancelled) return;
        cancelled = true;
        switch (ph) {
        case phase::queued:
            leave_queue();
            return finish(asio::error::operation_aborted, "cancelled while waiting for a connection to " + key);
        case phase::resolving:
            if (resolver) resolver->cancel();
            return;
        case phase::connecting:
        case phase::handshaking:
        case phase::writing:
        case phase::reading:
            conn->tcp().close(); // the pending operation completes with an error and sees `cancelled`
            return;
        default: return;
        }
    }

    void on_timer() {
        if (ph == phase::queued) {
            leave_queue();
            return finish(errc::timeout,
                          "no connection to " + key + " became free in time (" + attempt_limit() + "): all " +
                              std::to_string(st->opts.max_connections_per_endpoint) +
                              " connections allowed by client_options::max_connections_per_endpoint are in use; "
                              "the request was not sent");
        }
        if (ph == phase::resolving && resolver) {
            resolve_timed_out = true;
            resolver->cancel();
        }
    }

    // ---- completion ----------------------------------------------------------
    void finish(error_code ec, std::string message) {
        if (ph == phase::done) return;
        info.diag.message = std::move(message);
        complete(ec, response{}, false);
    }

    void complete(error_code ec, response res, bool reusable) {
        if (ph == phase::done) return;
        ph = phase::done;
        timer.cancel();
        if (resolver) resolver->cancel();
        if (slot.is_connected()) slot.clear();
        if (holds_place) {
            holds_place = false;
            st->give_back(key, std::move(conn), !ec && reusable);
        } else if (conn) {
            conn->close();
        }
        if (out != nullptr) *out = info;
        handler_type h(std::move(*handler));
        handler.reset();
        // Never inline: the handler runs later, through its associated executor.
        asio::post(st->ex, asio::append(std::move(h), ec, std::move(res)));
    }
};

inline void client_state::give_back(std::string const& key, std::unique_ptr<connection> c, bool reusable) {
    auto& p = pools[key];
    auto next_waiter = [&p]() -> std::shared_ptr<request_op> {
        while (!p.waiting.empty()) {
            auto w = p.waiting.front().lock();
            p.waiting.pop_front();
            if (w && w->ph == request_op::phase::queued) return w;
        }
        return nullptr;
    };
    if (c && reusable) {
        if (auto w = next_waiter()) return w->adopt(std::move(c));
        c->idle_since = std::chrono::steady_clock::now();
        p.idle.push_back(std::move(c));
        --p.in_use;
        return;
    }
    if (c) c->close();
    c.reset();
    if (auto w = next_waiter()) return w->adopt(nullptr);
    --p.in_use;
}

} // namespace detail
#endif

/** An HTTP/1.1 client with keep-alive pools, TLS and per-attempt timeouts.

    A handle: copies share one pool, one TLS context and one skew estimate,
    so backends can hold it by value. See the file comment for what a
    completion tells about a request's fate. Any number of requests may be
    outstanding at once (that is what the pool is for), so unlike the
    recipes there is no `operation_in_progress` here.

    Connections are closed without a TLS `close_notify`: a request is
    never sent on a connection the client is about to drop, so there is
    nothing to protect from truncation, and a graceful shutdown could hang.

    @par Thread safety
    Distinct clients: safe. Copies of one client and their operations:
    unsafe; run them on one thread or one strand (pass a strand as the
    executor). `skew_estimate()` may be read from any thread.

    @par Object lifetimes
    Operations keep the shared state alive; destroying every copy of a
    client does not abort them. Idle connections close when the last
    operation and the last copy are gone, or at `close_idle()`.
*/
class client {
public:
    /// Where connections, timers and (by default) completions run.
    using executor_type = boost::asio::any_io_executor;

    /** Creates a client; nothing is connected until the first request.

        @throws config_error when `opts` breaks a rule or `opts.ca_file` cannot be loaded.
    */
    explicit client(executor_type ex, client_options opts = {})
        : state_(std::make_shared<detail::client_state>(std::move(ex), std::move(opts))) {}

    /// The executor given at construction.
    executor_type get_executor() const noexcept { return state_->ex; }

    /// The options in force.
    client_options const& options() const noexcept { return state_->opts; }

    /** Sends one request and reads its response: one attempt, never retried.

        Uses an idle kept-alive connection to `ep` when one is healthy, opens
        a new one while under `max_connections_per_endpoint`, and otherwise
        queues. Sets `Host` from `ep` when the request has none, and
        `Content-Length` when it has neither that nor `Transfer-Encoding`
        (set them yourself before signing if the signature must cover
        them). Any HTTP status is a success here: mapping 4xx/5xx to errors
        is the backend's job (`baton::aws::classify_s3`,
        `classify_dynamodb`). After the response, the connection returns
        to the pool unless either side said `Connection: close`, the
        response ended at end of stream, or bytes followed it.

        @param ep where to send (see `parse_endpoint`)
        @param req the request, already signed; its target is sent as is (no normalisation)
        @param ro per-call overrides (the attempt timeout)
        @param info filled at completion with `request_sent`, `response_received`,
               `reused_connection` and diagnostics. Must stay valid until the handler runs.

        @par Handler signature
        `void(error_code, response)`. Errors (the response is then empty):
        - `errc::timeout`: the attempt or connect timeout passed, or no
          pooled connection became free in time; `info.request_sent` tells
          whether the outcome is unknown.
        - connection errors passed through (`connection_refused`,
          `connection_reset`, `broken_pipe`, `host_not_found`, ...);
          `asio::error::eof` when the server closed the connection before
          any response. Transient ones satisfy `baton::is_retryable`.
        - TLS errors in the `asio.ssl` category, passed through so callers
          can tell them apart; when the peer's certificate or name was
          refused, `info.diag.message` starts with `TLS certificate
          verification failed:`. They are not retryable.
        - `errc::invalid_response`: a response over a size limit, truncated
          or malformed; the message names the limit or the fault.
        - `errc::invalid_argument`: `ep` has no host or port, or `ro` is invalid.
        - `asio::error::operation_aborted`: cancelled.

        @par Executor
        Completes through the handler's associated executor (default: the
        client's), never from within this call.

        @par Per-Operation Cancellation
        All types (terminal, partial, total) are handled as terminal: the
        connection in use is closed and not returned to the pool, and the
        operation completes with `operation_aborted`; `info.request_sent`
        tells whether the request may have reached the server.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_request(endpoint const& ep, request req, request_options const& ro, request_info& info,
                       Token&& token = {}) {
        return initiate(ep, std::move(req), ro, &info, std::forward<Token>(token));
    }

    /** Sends one request with the client's options.
        @copydetails async_request(endpoint const&, request, request_options const&, request_info&, Token&&)
    */
    template <class Token = boost::asio::deferred_t>
    auto async_request(endpoint const& ep, request req, request_info& info, Token&& token = {}) {
        return initiate(ep, std::move(req), request_options{}, &info, std::forward<Token>(token));
    }

    /** Sends one request, without the side channel.
        @copydetails async_request(endpoint const&, request, request_options const&, request_info&, Token&&)
    */
    template <class Token = boost::asio::deferred_t>
        requires(!std::is_same_v<std::remove_cvref_t<Token>, request_info>)
    auto async_request(endpoint const& ep, request req, Token&& token = {}) {
        return initiate(ep, std::move(req), request_options{}, nullptr, std::forward<Token>(token));
    }

    /** Server time minus local time, from the last response that carried a `Date` header.

        Measured against the local midpoint between sending the request and
        receiving the response, with the server's whole-second `Date` taken
        as its middle (+0.5 s); good to about a second. Zero until a `Date`
        was seen (see `has_skew_estimate`). For the SigV4 signer to correct
        `X-Amz-Date`; never for lease timing, which uses monotonic clocks.
    */
    std::chrono::system_clock::duration skew_estimate() const noexcept {
        return std::chrono::system_clock::duration(state_->skew.load());
    }

    /// True once a response with a parseable `Date` header arrived.
    bool has_skew_estimate() const noexcept { return state_->has_skew.load(); }

    /// Warnings recorded since construction (e.g. about `insecure_skip_verify`), oldest first.
    std::vector<std::string> const& warnings() const noexcept { return state_->warnings; }

    /// Connections successfully opened so far (TCP connected), across all endpoints: a reuse gauge.
    std::uint64_t connections_opened() const noexcept { return state_->connections_opened; }

    /// Idle connections currently kept for reuse, across all endpoints.
    std::size_t idle_connections() const noexcept { return state_->idle_count(); }

    /// Closes every idle connection now (in-flight requests are unaffected), e.g. before a long pause.
    void close_idle() { state_->close_idle(); }

private:
    template <class Token>
    auto initiate(endpoint const& ep, request req, request_options const& ro, request_info* info, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, response)>(
            [](auto handler, std::shared_ptr<detail::client_state> st, endpoint e, request r, request_options o,
               request_info* out) {
                auto op = std::make_shared<detail::request_op>(std::move(st), std::move(e), std::move(r), o, out);
                op->start(std::move(handler));
            },
            token, state_, ep, std::move(req), ro, info);
    }

    std::shared_ptr<detail::client_state> state_;
};

} // namespace baton::http

#endif
