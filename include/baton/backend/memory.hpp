// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_MEMORY_HPP
#define BATON_BACKEND_MEMORY_HPP

/** @file
    Layer: backends. `memory_backend`: the record store in this process's memory.

    For deterministic simulation, demos and benchmarks: it enforces every
    precondition exactly, gives every put a fresh version, and counts
    requests by kind so tests and benchmarks can assert round trips. It is
    not a substitute for a real server in integration tests.
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/store/detail/local_probe.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/async_result.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace baton {

/// Settings of a `memory_backend`.
struct memory_backend_params {
    /// Puts with larger bodies fail with `errc::invalid_argument` (S3 and DynamoDB have limits too).
    std::size_t max_body_bytes = 1024 * 1024;
};

/** The record store in memory.

    @par Thread safety
    Copies share one store; all operations may be called from any thread.
*/
class memory_backend {
public:
    /// Completions run here unless the handler has an executor of its own.
    using executor_type = boost::asio::any_io_executor;

    /// Requests served, by kind.
    using request_counts = detail::local_request_counts;

    /// An empty store whose completions run on `ex`.
    explicit memory_backend(executor_type ex, memory_backend_params p = {})
        : bound_(std::make_shared<bound const>(bound{std::move(ex), std::make_shared<state>(p)})) {}

    /// The default completion executor.
    executor_type get_executor() const noexcept { return bound_->ex; }

    /// Another handle on the same store whose completions run on `ex`.
    memory_backend rebind(executor_type ex) const {
        return memory_backend(std::make_shared<bound const>(bound{std::move(ex), bound_->st}));
    }

    /// Reads `key`. Completion: `void(error_code, get_result)`.
    template <class Token = boost::asio::deferred_t>
    auto async_get(std::string key, Token&& token = {}) {
        return detail::async_at_once<get_result>(bound_->ex, std::forward<Token>(token), [st = bound_->st, key = std::move(key)](get_result& r) {
            return st->get(key, r);
        });
    }

    /// Writes `key` if `pc` holds. Completion: `void(error_code, put_result)`.
    template <class Token = boost::asio::deferred_t>
    auto async_put(std::string key, std::string body, precondition pc, Token&& token = {}) {
        return detail::async_at_once<put_result>(bound_->ex, std::forward<Token>(token), [st = bound_->st, key = std::move(key), body = std::move(body), pc = std::move(pc)](put_result& r) mutable {
            return st->put(key, std::move(body), pc, r);
        });
    }

    /// Deletes `key` if `pc` holds. Completion: `void(error_code, erase_result)`.
    template <class Token = boost::asio::deferred_t>
    auto async_erase(std::string key, precondition pc, Token&& token = {}) {
        return detail::async_at_once<erase_result>(bound_->ex, std::forward<Token>(token), [st = bound_->st, key = std::move(key), pc = std::move(pc)](erase_result& r) {
            return st->erase(key, pc, r.diag);
        });
    }

    /// Lists keys with `prefix` strictly after `after`. Completion: `void(error_code, list_page)`.
    template <class Token = boost::asio::deferred_t>
    auto async_list(std::string prefix, std::string after, std::size_t limit, Token&& token = {}) {
        return detail::async_at_once<list_page>(bound_->ex, std::forward<Token>(token), [st = bound_->st, prefix = std::move(prefix), after = std::move(after), limit](list_page& r) {
            return st->list(prefix, after, limit, r);
        });
    }

    /// Checks what the store honours on a scratch key. Completion: `void(error_code, capabilities)`.
    template <class Token = boost::asio::deferred_t>
    auto async_probe(Token&& token = {}) {
        return detail::async_at_once<capabilities>(bound_->ex, std::forward<Token>(token), [st = bound_->st](capabilities& c) {
            c = st->probe();
            return error_code{};
        });
    }

    /// Requests served so far by this store (all handles).
    request_counts counts() const;

    /// What is stored at `key` now, read at once and not counted (simulations check the truth with it).
    std::optional<record> peek(std::string_view key) const;

    /// Number of records stored.
    std::size_t size() const;

private:
    struct stored {
        std::string body;
        std::string version;
    };

    struct state {
        explicit state(memory_backend_params p) : params(p) {}

        memory_backend_params params;
        mutable std::mutex mutex;
        std::map<std::string, stored, std::less<>> records;
        std::uint64_t next_version = 1;
        request_counts counts;

        error_code get(std::string const& key, get_result& r);

        error_code put(std::string const& key, std::string body, precondition const& pc, put_result& r, bool counted = true);

        error_code erase(std::string const& key, precondition const& pc, diagnostics& diag, bool counted = true);

        error_code list(std::string const& prefix, std::string const& after, std::size_t limit, list_page& r);

        capabilities probe();

        bool holds(std::map<std::string, stored, std::less<>>::iterator it, precondition const& pc) const;
    };

    // The executor and the records, shared by every copy of a handle: a copy (a lease's, say) costs
    // one pointer, not an executor (every held lease keeps a copy: bytes per lease).
    struct bound {
        executor_type ex;
        std::shared_ptr<state> st;
    };
    explicit memory_backend(std::shared_ptr<bound const> b) : bound_(std::move(b)) {}

    std::shared_ptr<bound const> bound_;
};

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/backend/impl/memory.ipp>
#endif

#endif
