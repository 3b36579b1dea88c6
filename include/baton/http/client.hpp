// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_HTTP_CLIENT_HPP
#define BATON_HTTP_CLIENT_HPP

/** @file
    Layer: wire (http). The HTTP(S) client that the S3 and DynamoDB backends speak through.

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

#include <baton/http/detail/pool.hpp>
#include <baton/http/detail/request_op.hpp>
#include <baton/http/endpoint.hpp>
#include <baton/http/options.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>

namespace baton::http {

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
        @param token the completion token (default: `asio::deferred`)

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
        - `errc::invalid_argument`: `ep` has no host or port, `ro` is invalid, or the request
          has both `Content-Length` and `Transfer-Encoding: chunked`
          (or, for a TLS endpoint, OpenSSL could not make the client's TLS context).
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

    /** Sends one request with the client's options: the four-argument overload without overrides.

        @param ep where to send (see `parse_endpoint`)
        @param req the request, already signed
        @param info filled at completion with what happened to the request. Must stay valid until
               the handler runs.
        @param token the completion token (default: `asio::deferred`); the handler's signature,
               errors, executor and cancellation are those of the four-argument overload
    */
    template <class Token = boost::asio::deferred_t>
    auto async_request(endpoint const& ep, request req, request_info& info, Token&& token = {}) {
        return initiate(ep, std::move(req), request_options{}, &info, std::forward<Token>(token));
    }

    /** Sends one request with the client's options, without the side channel.

        A caller that must know whether a failed request may have taken effect uses an overload
        with `request_info` instead.

        @param ep where to send (see `parse_endpoint`)
        @param req the request, already signed
        @param token the completion token (default: `asio::deferred`); the handler's signature,
               errors, executor and cancellation are those of the four-argument overload
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
