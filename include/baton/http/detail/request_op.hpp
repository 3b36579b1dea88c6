// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_HTTP_DETAIL_REQUEST_OP_HPP
#define BATON_HTTP_DETAIL_REQUEST_OP_HPP

// Layer: wire (http), internal. One request from start to answer: a pooled or
// new connection, TLS handshake, write, read, per-attempt timeouts, and what the
// caller learns about the request's fate. The exchange on a connection has one deadline, armed
// once for the write and the read together (Beast's stream timeouts re-arm the reactor's timer
// around every socket operation), and it is an entry in the timer queue the executor's leases
// share (core/detail/timer_queue.hpp), not a timer of its own. An op leaves that queue after its
// handler was handed over: a handler that starts the next request at once queues that one's
// deadline first, so the queue's timer, already armed no later, is neither re-armed nor
// cancelled, and a chain of requests costs no timer system call and no cancelled wait.

#include <baton/http/detail/pool.hpp>
#include <baton/http/detail/request_bytes.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/detail/post_completion.hpp>
#include <baton/core/error.hpp>

#ifndef BATON_DOXYGEN
namespace baton::http::detail {

// A template only so that its bodies are compiled where a request is made (async_request's
// instantiation), not in every unit that includes the client: they instantiate Beast's read
// and Asio's socket and TLS operations, most of what sending a request costs to compile.
// Only basic_request_op<void> exists: the pool's queue holds request_op.
template <class Unused>
struct basic_request_op : std::enable_shared_from_this<basic_request_op<Unused>> {
    static_assert(std::is_void_v<Unused>, "use request_op (basic_request_op<void>)");

    using handler_type = asio::any_completion_handler<void(error_code, response)>;
    using clock = std::chrono::steady_clock;
    using deadline_queue = baton::detail::timer_queue<clock>;
    enum class phase { start, queued, resolving, connecting, handshaking, writing, reading, done };

    basic_request_op(std::shared_ptr<client_state> s, endpoint e, request r, request_options const& ro, request_info* o)
        : st(std::move(s)), ep(std::move(e)), key(ep.origin()), req(std::move(r)), out(o),
          attempt_timeout(ro.attempt_timeout.value_or(st->opts.attempt_timeout)) {
        deadline_entry.owner = this;
        deadline_entry.lock = [](void* op) -> std::shared_ptr<void> {
            return static_cast<basic_request_op*>(op)->weak_from_this().lock();
        };
        deadline_entry.fire = [](void* op, clock::time_point) { static_cast<basic_request_op*>(op)->on_timer(); };
    }

    ~basic_request_op() { st->deadlines->remove(deadline_entry); }

    basic_request_op(basic_request_op const&) = delete;
    basic_request_op& operator=(basic_request_op const&) = delete;

    std::shared_ptr<client_state> st;
    endpoint ep;
    std::string key;
    request req;
    request_info* out;
    request_info info;
    std::optional<handler_type> handler; // emplaced, never move-assigned (Boost 1.81)
    asio::cancellation_slot slot;
    deadline_queue::entry deadline_entry; // resolving, writing, reading: the op's deadline in the shared queue
    std::optional<asio::steady_timer> queue_timer; // waiting for a connection: its pending wait keeps the op alive
    std::optional<tcp::resolver> resolver;
    std::unique_ptr<connection> conn;
    std::optional<bhttp::response_parser<bhttp::string_body>> parser;
    phase ph = phase::start;
    bool holds_place = false; // counted in pool::in_use
    bool cancelled = false;
    bool resolve_timed_out = false;
    bool exchange_timed_out = false; // the deadline passed while writing or reading: the socket was closed
    clock::time_point deadline{}, connect_deadline{};
    std::chrono::system_clock::time_point sent_at{};
    std::chrono::milliseconds attempt_timeout;

    // While true, the op is inside `client::async_request`: a completion then must be posted.
    bool initiating = false;

    template <class Handler>
    void start(Handler&& h) {
        initiating = true;
        begin(std::forward<Handler>(h));
        initiating = false;
    }

    template <class Handler>
    void begin(Handler&& h) {
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
        if (req.chunked() && req.has_content_length())
            return finish(errc::invalid_argument, "the request has both Content-Length and Transfer-Encoding: "
                                                  "chunked, which a server may read as two different requests "
                                                  "(RFC 9112, section 6.2); the request was not sent");
        if (!req.has_content_length() && !req.chunked()) req.prepare_payload();
        if (slot.is_connected()) {
            std::weak_ptr<basic_request_op> weak = this->weak_from_this();
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

    // Runs on_timer at `when`, unless disarmed first (the socket and resolver operations then
    // pending hold the op; the queue only finds it through a weak reference).
    void arm_timer(clock::time_point when) { st->deadlines->schedule(deadline_entry, when, when); }
    void disarm_timer() { st->deadlines->remove(deadline_entry); }

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
        p.waiting.push_back(this->weak_from_this());
        queue_timer.emplace(st->ex);
        queue_timer->expires_at(deadline);
        queue_timer->async_wait([self = this->shared_from_this()](error_code ec) {
            if (!ec) self->on_timer();
        });
    }

    void leave_queue() {
        auto& w = st->pools[key].waiting;
        w.remove_if([this](std::weak_ptr<basic_request_op> const& x) {
            auto s = x.lock();
            return !s || s.get() == this;
        });
    }

    // Another op hands over its place in the pool: a live connection, or room to open one. This
    // runs inside that op's completion, so the rest is posted: a write that fails at once, or a
    // deadline found passed, completes this op, and its handler must not run inside another's.
    void adopt(std::unique_ptr<connection> c) {
        holds_place = true;
        queue_timer->cancel();
        ph = phase::start; // neither queued nor on the wire: a cancellation now is seen when it goes on
        if (c) {
            conn = std::move(c);
            info.reused_connection = true;
        }
        asio::post(st->ex, [self = this->shared_from_this()] { self->go_on_adopted(); });
    }

    void go_on_adopted() {
        if (ph == phase::done) return;
        if (cancelled)
            return finish(asio::error::operation_aborted,
                          "cancelled while waiting for a connection to " + key + "; the request was not sent");
        if (conn) return send();
        open();
    }

    // ---- connect -------------------------------------------------------------
    void open() {
        // The client's first TLS connection loads the trust store first (tens of ms): not out
        // of the connect timeout, which starts after it.
        asio::ssl::context* tls = nullptr;
        if (ep.is_tls()) {
            try {
                tls = &st->tls();
            } catch (std::exception const& e) { // OpenSSL could not make a context (out of memory)
                return finish(errc::invalid_argument, std::string("cannot set up TLS: ") + e.what());
            }
        }
        auto const now = clock::now();
        connect_deadline = std::min(deadline, now + st->opts.connect_timeout);
        conn = std::make_unique<connection>(st->ex, tls);
        error_code ec;
        auto const addr = asio::ip::make_address(ep.host, ec);
        if (!ec) {
            ph = phase::connecting;
            conn->tcp().expires_at(connect_deadline);
            conn->tcp().async_connect(tcp::endpoint(addr, ep.port),
                                      [self = this->shared_from_this()](error_code e) { self->on_connect(e); });
            return;
        }
        ph = phase::resolving;
        resolver.emplace(st->ex);
        arm_timer(connect_deadline);
        resolver->async_resolve(ep.host, std::to_string(ep.port), tcp::resolver::numeric_service,
                                [self = this->shared_from_this()](error_code e, tcp::resolver::results_type r) {
                                    self->on_resolve(e, std::move(r));
                                });
    }

    std::string connect_limit() const {
        return connect_deadline == deadline ? attempt_limit()
                                            : "client_options::connect_timeout, " + ms(st->opts.connect_timeout);
    }

    void on_resolve(error_code ec, tcp::resolver::results_type results) {
        if (ph == phase::done) return;
        disarm_timer();
        if (cancelled) return finish(asio::error::operation_aborted, "cancelled while resolving " + ep.host);
        if (resolve_timed_out)
            return finish(errc::timeout, "resolving " + ep.host + " timed out (" + connect_limit() + ")");
        if (ec) return finish(ec, "cannot resolve " + ep.host + ": " + ec.message());
        ph = phase::connecting;
        conn->tcp().expires_at(connect_deadline);
        std::weak_ptr<basic_request_op> weak = this->weak_from_this();
        conn->tcp().async_connect(
            results,
            [weak](error_code const&, tcp::endpoint const&) {
                auto self = weak.lock();
                return self && !self->cancelled;
            },
            [self = this->shared_from_this()](error_code e, tcp::endpoint const&) { self->on_connect(e); });
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
        // Non-blocking in the user's sense too, so that send() may write at once (one ioctl per connection).
        if (!conn->tls) conn->tcp().socket().non_blocking(true, ignored);
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
                                   [self = this->shared_from_this()](error_code e) { self->on_handshake(e); });
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
        // A queued op's expired wait may already be on its way when a connection is handed over:
        // sending now would make the outcome unknown where "timed out, not sent" is still true.
        if (clock::now() >= deadline)
            return finish(errc::timeout, "no time was left to send the request to " + key + " (" + attempt_limit() +
                                             "); the request was not sent");
        ph = phase::writing;
        conn->tcp().expires_never(); // the exchange's deadline is this op's entry in the queue
        arm_timer(deadline);
        sent_at = std::chrono::system_clock::now();
        write_request_head(req, conn->out);
        std::array<asio::const_buffer, 3> bytes{asio::buffer(conn->out), asio::buffer(req.body()),
                                                 asio::buffer(request_tail(req))};
        if (!conn->tls && conn->tcp().socket().non_blocking()) {
            // A plain socket nearly always takes a request at once: one sendmsg now, and no trip
            // through the scheduler (Asio would post the completion of a write that did not wait).
            error_code ec;
            std::size_t const n = conn->tcp().socket().write_some(bytes, ec);
            if (!ec && n == asio::buffer_size(bytes)) return on_write(error_code{});
            if (ec && ec != asio::error::would_block) return on_write(ec);
            for (std::size_t done = ec ? 0 : n; auto& b : bytes) { // skip what was sent
                std::size_t const skip = std::min(done, b.size());
                b += skip;
                done -= skip;
            }
        }
        asio::async_write(*conn, bytes,
                          [self = this->shared_from_this()](error_code e, std::size_t) { self->on_write(e); });
    }

    std::string via() const { return info.reused_connection ? " (on a reused connection)" : ""; }

    void on_write(error_code ec) {
        if (ph == phase::done) return;
        // A write that completed sent everything, even when a cancellation or the deadline closed
        // the socket after it (its completion was queued behind theirs): the outcome is unknown.
        if (!ec) info.request_sent = true;
        if (cancelled)
            return finish(asio::error::operation_aborted,
                          info.request_sent ? "cancelled after the request was sent to " + key +
                                                  "; the request was sent, so its outcome is unknown"
                                            : "cancelled while sending the request to " + key +
                                                  "; it was not completely sent");
        if (exchange_timed_out && ec)
            return finish(errc::timeout, "sending the request to " + key + " timed out (" + attempt_limit() +
                                             "); it was not completely sent");
        if (ec) return finish(ec, "sending the request to " + key + " failed" + via() + ": " + ec.message());
        receive();
    }

    void receive() {
        ph = phase::reading;
        parser.emplace();
        parser->body_limit(st->opts.max_response_body_bytes);
        parser->header_limit(st->opts.max_response_header_bytes);
        if (req.method() == bhttp::verb::head) parser->skip(true);
        bhttp::async_read(*conn, conn->buffer, *parser,
                          [self = this->shared_from_this()](error_code e, std::size_t) { self->on_read(e); });
    }

    void on_read(error_code ec) {
        if (ph == phase::done) return;
        if (parser->is_header_done()) info.diag.http_status = parser->get().result_int();
        static constexpr char unknown[] = "; the request was sent, so its outcome is unknown"; // not built per response
        if (cancelled)
            return finish(asio::error::operation_aborted,
                          "cancelled while waiting for the response from " + key + unknown);
        if (exchange_timed_out && (ec || !parser->is_done()))
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
        bool const reusable =
            !exchange_timed_out && parser->keep_alive() && req.keep_alive() && conn->buffer.size() == 0;
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
        if ((ph == phase::writing || ph == phase::reading) && !cancelled) {
            exchange_timed_out = true;
            conn->tcp().close(); // the pending write or read completes with an error and sees the flag
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
        if (queue_timer) queue_timer->cancel();
        if (resolver) resolver->cancel();
        if (slot.is_connected()) slot.clear();
        if (holds_place) {
            holds_place = false;
            give_back(*st, key, std::move(conn), !ec && reusable);
        } else if (conn) {
            conn->close();
        }
        if (out != nullptr) *out = info;
        handler_type h(std::move(*handler));
        handler.reset();
        // Never inline: from within async_request the handler is posted. Every other path gets
        // here from a completion of its own (a socket's, the timer's, a posted cancellation, the
        // posted step of an op that adopted a connection: see adopt), so the handler may run
        // now, through its associated executor: one hop less per request.
        if (initiating) {
            disarm_timer();
            return baton::detail::post_completion(st->ex, std::move(h), ec, std::move(res));
        }
        // The deadline leaves the queue once the handler has run or been queued, also when it throws.
        struct disarm_on_exit {
            basic_request_op& op;
            ~disarm_on_exit() { op.disarm_timer(); }
        } const disarm{*this};
        baton::detail::dispatch_completion(st->ex, std::move(h), ec, std::move(res));
    }

    // An op is done with its place in the pool (and with `c`, if it has one). A reusable
    // connection goes to the next op waiting for one, else to the idle ones; any other is closed,
    // and its place goes to the next op waiting (which opens a connection), else is freed.
    static void give_back(client_state& s, std::string const& key, std::unique_ptr<connection> c, bool reusable) {
        auto& p = s.pools[key];
        auto next_waiter = [&p]() -> std::shared_ptr<basic_request_op> {
            while (!p.waiting.empty()) {
                auto w = p.waiting.front().lock();
                p.waiting.pop_front();
                if (w && w->ph == phase::queued) return w;
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
};

} // namespace baton::http::detail
#endif

#endif
