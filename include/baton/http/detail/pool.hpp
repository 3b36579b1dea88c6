// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_HTTP_DETAIL_POOL_HPP
#define BATON_HTTP_DETAIL_POOL_HPP

// Layer: wire (http), internal. The client's shared state: pooled connections
// (plain or TLS) per endpoint, the TLS context, the skew estimate.

#include <baton/http/options.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/detail/timer_queue.hpp>
#include <baton/core/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/recycling_allocator.hpp>
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
#include <boost/asio/write.hpp>
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
#include <boost/system/result.hpp>
#include <boost/system/system_error.hpp>
#include <boost/url/parse.hpp>

#include <cerrno>
#if !defined(_WIN32)
#include <sys/socket.h>
#endif

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>
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

#ifndef BATON_DOXYGEN
namespace baton::http::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;

// What one write hands to the socket: a write may take less than it is given, and what the
// client writes (a request's head, body and framing) fits in far fewer.
struct write_buffers {
    static constexpr std::size_t capacity = 16;
    std::array<asio::const_buffer, capacity> items{};
    std::size_t count = 0;

    asio::const_buffer const* begin() const noexcept { return items.data(); }
    asio::const_buffer const* end() const noexcept { return items.data() + count; }
};

using io_handler = asio::any_completion_handler<void(error_code, std::size_t)>;

// One pooled connection: a plain or a TLS stream, and the read buffer that belongs to it.
//
// It is itself the stream the request is read and written on, plain or TLS alike, so that
// Beast's HTTP read and Asio's composed write compile once, not once per stream type, and the
// TCP and TLS operations under them once each, for one erased handler type: a fifth of what a
// unit that sends a request cost to compile. At run time a read or a write pays a branch and
// one handler allocation from Asio's recycling cache, nothing next to a round trip.
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
    std::string out; // the head (and chunk size line) of the request being sent, its capacity kept for the next
    std::chrono::steady_clock::time_point idle_since{};

    beast::tcp_stream& tcp() noexcept { return tls ? tls->next_layer() : *plain; }

    // ---- AsyncReadStream, AsyncWriteStream ----------------------------------
    using executor_type = asio::any_io_executor;

    executor_type get_executor() noexcept { return tcp().get_executor(); }

    template <class MutableBufferSequence, class Token>
    auto async_read_some(MutableBufferSequence const& buffers, Token&& token) {
        // A read may fill less than it is given: the first buffer with room is enough.
        asio::mutable_buffer first;
        for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers); ++it) {
            first = asio::mutable_buffer(*it);
            if (first.size() != 0) break;
        }
        return asio::async_initiate<Token, void(error_code, std::size_t)>(
            [](auto handler, connection* c, asio::mutable_buffer b) { start_read(*c, b, recycled(std::move(handler))); },
            token, this, first);
    }

    template <class ConstBufferSequence, class Token>
    auto async_write_some(ConstBufferSequence const& buffers, Token&& token) {
        // Empty buffers are left out: a TLS stream given an empty first buffer reports success
        // with nothing written, which would end a composed write early.
        write_buffers w;
        for (auto it = asio::buffer_sequence_begin(buffers);
             it != asio::buffer_sequence_end(buffers) && w.count < write_buffers::capacity; ++it) {
            asio::const_buffer const b(*it);
            if (b.size() != 0) w.items[w.count++] = b;
        }
        return asio::async_initiate<Token, void(error_code, std::size_t)>(
            [](auto handler, connection* c, write_buffers const& b) {
                start_write(*c, b, recycled(std::move(handler)));
            },
            token, this, w);
    }

    // Erasing a handler allocates with its allocator: with the default one, that is Asio's
    // thread-local recycling cache, as for Asio's own operations, instead of the heap.
    template <class Handler>
    static auto recycled(Handler&& h) {
        if constexpr (std::is_same_v<asio::associated_allocator_t<std::decay_t<Handler>>, std::allocator<void>>)
            return asio::bind_allocator(asio::recycling_allocator<void>(), std::forward<Handler>(h));
        else
            return std::forward<Handler>(h);
    }

    // The connection is a template parameter so that these compile where a request is sent,
    // not in every unit that includes the client. The erased handler runs on the stream's
    // executor, which is where the handler it stands for (Beast's or Asio's composed
    // operation's) runs too: Asio 1.81's TLS stream cannot post to the erased handler's own
    // executor type.
    template <class Connection>
    static void start_read(Connection& c, asio::mutable_buffer b, io_handler h) {
        auto bound = asio::bind_executor(c.get_executor(), std::move(h));
        if (c.tls)
            c.tls->async_read_some(b, std::move(bound));
        else
            c.plain->async_read_some(b, std::move(bound));
    }

    template <class Connection>
    static void start_write(Connection& c, write_buffers const& b, io_handler h) {
        auto bound = asio::bind_executor(c.get_executor(), std::move(h));
        if (c.tls)
            c.tls->async_write_some(b, std::move(bound));
        else
            c.plain->async_write_some(b, std::move(bound));
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
        char byte = 0;
#if defined(MSG_DONTWAIT)
        // One system call: a non-blocking peek, without switching the socket's mode twice.
        for (;;) {
            auto const n = ::recv(sock.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
            if (n < 0 && errno == EINTR) continue;
            return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
        }
#else
        error_code ec;
        bool const was_non_blocking = sock.non_blocking(); // plain connections stay so (request_op::send)
        sock.non_blocking(true, ec);
        if (ec) return false;
        sock.receive(asio::buffer(&byte, 1), tcp::socket::message_peek, ec);
        error_code ignored;
        if (!was_non_blocking) sock.non_blocking(false, ignored);
        return ec == asio::error::would_block;
#endif
    }
};

template <class Unused = void>
struct basic_request_op;
using request_op = basic_request_op<>;

struct pool {
    std::vector<std::unique_ptr<connection>> idle; // back: most recently used
    std::size_t in_use = 0;                        // checked out, or being opened
    std::list<std::weak_ptr<request_op>> waiting;  // FIFO; the op's queue timer keeps it alive
};

struct client_state {
    client_state(asio::any_io_executor e, client_options o)
        : ex(std::move(e)), opts(std::move(o)),
          deadlines(baton::detail::timer_queues<std::chrono::steady_clock>::of(ex)) {
        opts.validate();
        if (opts.insecure_skip_verify)
            warn("TLS certificate verification is disabled (client_options::insecure_skip_verify): anyone on the "
                 "network path can impersonate the server and read or alter every request. Use it only against "
                 "local test servers.");
        // A CA file of the caller's is loaded now, so that a bad one is an error here; the system
        // store waits for the first TLS connection (see tls()).
        if (!opts.ca_file.empty()) make_tls_context();
    }

    // The TLS context, made on first use: loading the system trust store costs ~20 ms of CPU,
    // which a client of plain-HTTP endpoints (local servers, and each `baton` command run
    // against them) never needs.
    asio::ssl::context& tls() {
        if (!tls_ctx) make_tls_context();
        return *tls_ctx;
    }

    void make_tls_context() {
        asio::ssl::context ctx(asio::ssl::context::tls_client);
        SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
        ctx.set_verify_mode(opts.insecure_skip_verify ? asio::ssl::verify_none : asio::ssl::verify_peer);
        try {
            if (!opts.ca_file.empty())
                ctx.load_verify_file(opts.ca_file);
            else if (!opts.insecure_skip_verify) // nothing is verified: no store to load
                ctx.set_default_verify_paths();
        } catch (boost::system::system_error const& e) {
            if (!opts.ca_file.empty())
                throw config_error("client_options::ca_file: cannot load CA certificates from '" + opts.ca_file +
                                   "' (" + e.code().message() + ")");
            // No system trust store: every verified handshake will fail, and say so.
        }
        tls_ctx.emplace(std::move(ctx));
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

    asio::any_io_executor ex;
    client_options opts;
    std::optional<asio::ssl::context> tls_ctx; // see tls()
    // Resolve and exchange deadlines of every op, on the timer the executor's leases share.
    std::shared_ptr<baton::detail::timer_queue<std::chrono::steady_clock>> deadlines;
    std::unordered_map<std::string, pool> pools;
    std::vector<std::string> warnings;
    std::atomic<std::int64_t> skew{0}; // system_clock::duration ticks
    std::atomic<bool> has_skew{false};
    std::uint64_t connections_opened = 0;
};

} // namespace baton::http::detail
#endif

#endif
