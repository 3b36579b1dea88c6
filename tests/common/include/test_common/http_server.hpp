// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_TEST_COMMON_HTTP_SERVER_HPP
#define BATON_TEST_COMMON_HTTP_SERVER_HPP

// The one scripted HTTP server of the tests: on 127.0.0.1 (an ephemeral port), plain or TLS,
// it answers each request as the suite's function says, or plays the replies queued with
// `then` in order. What the real servers cannot show (a hang, a close without an answer,
// bytes that are no HTTP, an exact error body) is scripted here.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace test_common {

using server_request = boost::beast::http::request<boost::beast::http::string_body>;
using server_response = boost::beast::http::response<boost::beast::http::string_body>;

/// What the server does with one request.
struct reply {
    enum kind_t {
        respond,        ///< write `msg`; close afterwards when it says Connection: close
        respond_close,  ///< write `msg` (whatever it says), then close
        raw_then_close, ///< write `raw` bytes, then close
        hang,           ///< never answer; wait for the client to close
        close_now,      ///< close without answering
    } kind = respond;
    server_response msg;
    std::string raw;
};

/// An HTTP/1.1 answer with `status`, `body` and `headers`, kept alive.
inline reply answer(unsigned status, std::string body = {},
                    std::vector<std::pair<std::string, std::string>> const& headers = {}) {
    reply r;
    r.msg.version(11);
    r.msg.result(status);
    for (auto const& [name, value] : headers) r.msg.set(name, value);
    r.msg.body() = std::move(body);
    r.msg.keep_alive(true);
    r.msg.prepare_payload();
    return r;
}

/// A reply of kind `k` (a hang, a close) with no message.
inline reply reply_of(reply::kind_t k) {
    reply r;
    r.kind = k;
    return r;
}

class http_server {
public:
    /// How the server answers request `req` on connection number `conn` (0, 1, ... in accept order).
    using behaviour = std::function<reply(server_request const& req, int conn)>;

    /// What the server has done so far.
    struct stats_t {
        std::atomic<int> accepted{0}, open_now{0}, max_open{0}, requests{0}, peer_closed{0}, handshake_failures{0};
        std::vector<server_request> seen; // every request, in order (read it with the io_context stopped)
    };

    /// Answers as `behave` says.
    http_server(boost::asio::io_context& ioc, behaviour behave) : st_(std::make_shared<state>(ioc)) {
        st_->behave = std::move(behave);
        boost::asio::co_spawn(ioc, accept_loop(st_, static_cast<plain*>(nullptr)), boost::asio::detached);
    }

    /// The same over TLS with `tls` (an `ssl::context` the caller keeps), plain when it is null.
    /// A template, so that only a suite that serves TLS compiles the TLS path.
    template <class SslContext>
    http_server(boost::asio::io_context& ioc, behaviour behave, SslContext* tls) : st_(std::make_shared<state>(ioc)) {
        st_->behave = std::move(behave);
        if (tls != nullptr) boost::asio::co_spawn(ioc, accept_loop(st_, tls), boost::asio::detached);
        else boost::asio::co_spawn(ioc, accept_loop(st_, static_cast<plain*>(nullptr)), boost::asio::detached);
    }

    /// Plays the replies queued with `then`, in order; `when_done` once they have run out.
    http_server(boost::asio::io_context& ioc, reply when_done)
        : http_server(ioc, behaviour{}) {
        st_->behave = [st = st_.get(), when_done = std::move(when_done)](server_request const&, int) {
            if (st->script.empty()) return when_done;
            reply r = std::move(st->script.front());
            st->script.pop_front();
            return r;
        };
    }

    ~http_server() {
        boost::system::error_code ignored;
        st_->acceptor.close(ignored);
    }
    http_server(http_server const&) = delete;
    http_server& operator=(http_server const&) = delete;

    /// Queues the next reply of a scripted server.
    void then(reply r) {
        std::lock_guard lock(st_->m);
        st_->script.push_back(std::move(r));
    }

    std::uint16_t port() const { return st_->acceptor.local_endpoint().port(); }
    /// `http://127.0.0.1:PORT` followed by `path`.
    std::string url(std::string_view path = {}) const {
        return "http://127.0.0.1:" + std::to_string(port()) + std::string(path);
    }
    stats_t const& stats() const { return st_->stats; }
    int requests() const { return st_->stats.requests.load(); }
    /// The requests seen so far (a copy: the server may run on other threads).
    std::vector<server_request> seen() const {
        std::lock_guard lock(st_->m);
        return st_->stats.seen;
    }

private:
    struct state {
        explicit state(boost::asio::io_context& ioc)
            : acceptor(ioc, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)) {}
        boost::asio::ip::tcp::acceptor acceptor;
        behaviour behave;
        mutable std::mutex m; // `seen` and `script`, for servers whose io_context runs on several threads
        std::deque<reply> script;
        stats_t stats;
    };

    template <class Stream>
    static boost::asio::awaitable<void> exchange(std::shared_ptr<state> st, Stream& s, int conn) {
        namespace net = boost::asio;
        namespace bhttp = boost::beast::http;
        boost::beast::flat_buffer buf;
        for (;;) {
            bhttp::request_parser<bhttp::string_body> parser;
            parser.body_limit(64 << 20);
            auto [ec, n] = co_await bhttp::async_read(s, buf, parser, net::as_tuple(net::use_awaitable));
            if (ec) {
                ++st->stats.peer_closed;
                co_return;
            }
            server_request req = parser.release();
            ++st->stats.requests;
            reply r;
            {
                std::lock_guard lock(st->m);
                st->stats.seen.push_back(req);
                r = st->behave(req, conn);
            }
            switch (r.kind) {
            case reply::respond:
            case reply::respond_close: {
                auto [wec, wn] = co_await bhttp::async_write(s, r.msg, net::as_tuple(net::use_awaitable));
                if (wec || r.kind == reply::respond_close || !r.msg.keep_alive()) co_return;
                break;
            }
            case reply::raw_then_close:
                co_await net::async_write(s, net::buffer(r.raw), net::as_tuple(net::use_awaitable));
                co_return;
            case reply::hang: {
                char c = 0;
                co_await s.async_read_some(net::buffer(&c, 1), net::as_tuple(net::use_awaitable));
                ++st->stats.peer_closed;
                co_return;
            }
            case reply::close_now: co_return;
            }
        }
    }

    struct plain {}; // the TLS context of a plain server: none

    template <class Tls>
    static boost::asio::awaitable<void> serve(std::shared_ptr<state> st, boost::asio::ip::tcp::socket sock, int conn, Tls* tls) {
        namespace net = boost::asio;
        int const open = ++st->stats.open_now;
        int seen_max = st->stats.max_open.load();
        while (open > seen_max && !st->stats.max_open.compare_exchange_weak(seen_max, open)) {}
        if constexpr (std::is_same_v<Tls, plain>) {
            co_await exchange(st, sock, conn);
        } else {
            net::ssl::stream<net::ip::tcp::socket> s(std::move(sock), *tls);
            auto [ec] = co_await s.async_handshake(net::ssl::stream_base::server, net::as_tuple(net::use_awaitable));
            if (ec)
                ++st->stats.handshake_failures;
            else
                co_await exchange(st, s, conn);
        }
        --st->stats.open_now;
    }

    template <class Tls>
    static boost::asio::awaitable<void> accept_loop(std::shared_ptr<state> st, Tls* tls) {
        namespace net = boost::asio;
        for (int conn = 0;; ++conn) {
            auto [ec, sock] = co_await st->acceptor.async_accept(net::as_tuple(net::use_awaitable));
            if (ec) co_return;
            ++st->stats.accepted;
            net::co_spawn(st->acceptor.get_executor(), serve(st, std::move(sock), conn, tls), net::detached);
        }
    }

    std::shared_ptr<state> st_;
};

} // namespace test_common

#endif
