// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_HTTP_OPTIONS_HPP
#define BATON_HTTP_OPTIONS_HPP

/** @file
    Layer: wire (http). The client's settings (`client_options`), one
    request's settings (`request_options`), and what the client tells about
    one request's fate (`request_info`: sent? answered?).
*/

#include <baton/http/endpoint.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace baton::http {
/** The settings of one `client`, fixed at its construction: timeouts, limits on what a server
    may send, the pool's size and TLS trust.

    Every field has a working default; `validate()`, which the client's constructor calls,
    rejects zero or out-of-range values.
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
        `SSL_CERT_FILE` / `SSL_CERT_DIR`), loaded at the client's first
        TLS connection: a client of plain-HTTP endpoints never pays for
        it, and the first TLS request waits for it (tens of ms, on the
        thread that starts it; not counted against `connect_timeout`). The
        store and those variables are read then, not when the client is
        made: a program that chroots or drops access to `/etc/ssl` after
        making its clients should set `ca_file`. Set it for private CAs
        too; the file is loaded when the client is constructed, so that a
        bad one throws there.
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

} // namespace baton::http

#endif
