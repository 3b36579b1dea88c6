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
    request_counts counts() const {
        std::lock_guard lock(bound_->st->mutex);
        return bound_->st->counts;
    }

    /// What is stored at `key` now, read at once and not counted (simulations check the truth with it).
    std::optional<record> peek(std::string_view key) const {
        std::lock_guard lock(bound_->st->mutex);
        auto it = bound_->st->records.find(key);
        if (it == bound_->st->records.end()) return std::nullopt;
        return record{std::string(key), it->second.body, it->second.version};
    }

    /// Number of records stored.
    std::size_t size() const {
        std::lock_guard lock(bound_->st->mutex);
        return bound_->st->records.size();
    }

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

        error_code get(std::string const& key, get_result& r) {
            std::lock_guard lock(mutex);
            ++counts.gets;
            if (auto ec = store_limits::check_key(key, r.diag)) return ec;
            auto it = records.find(key);
            if (it != records.end()) r.found = record{key, it->second.body, it->second.version};
            return {};
        }

        error_code put(std::string const& key, std::string body, precondition const& pc, put_result& r, bool counted = true) {
            std::lock_guard lock(mutex);
            if (counted) ++counts.puts;
            if (auto ec = store_limits::check_key(key, r.diag)) return ec;
            if (body.size() > params.max_body_bytes) {
                r.diag.message = "body of " + std::to_string(body.size()) + " bytes exceeds the store's limit of " +
                                 std::to_string(params.max_body_bytes);
                return errc::invalid_argument;
            }
            auto it = records.find(key);
            if (!holds(it, pc)) {
                if (counted) ++counts.refused;
                if (it != records.end()) r.current = record{key, it->second.body, it->second.version};
                return errc::precondition_failed;
            }
            // A fresh version on every put, even for identical bytes (no ETag ABA).
            std::string version = "m" + std::to_string(next_version++);
            r.version = version;
            if (it == records.end())
                records.emplace(key, stored{std::move(body), std::move(version)});
            else
                it->second = stored{std::move(body), std::move(version)};
            return {};
        }

        error_code erase(std::string const& key, precondition const& pc, diagnostics& diag, bool counted = true) {
            std::lock_guard lock(mutex);
            if (counted) ++counts.erases;
            if (auto ec = store_limits::check_key(key, diag)) return ec;
            auto it = records.find(key);
            if (!holds(it, pc)) {
                if (counted) ++counts.refused;
                return it == records.end() && pc.which() == precondition::kind::matches
                           ? error_code(errc::not_found)
                           : error_code(errc::precondition_failed);
            }
            if (it != records.end()) records.erase(it);
            return {};
        }

        error_code list(std::string const& prefix, std::string const& after, std::size_t limit, list_page& r) {
            std::lock_guard lock(mutex);
            ++counts.lists;
            if (limit == 0) {
                r.diag.message = "list limit must be at least 1";
                return errc::invalid_argument;
            }
            auto it = after.empty() || after < prefix ? records.lower_bound(prefix) : records.upper_bound(after);
            for (; it != records.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
                if (r.entries.size() == limit) {
                    r.truncated = true;
                    break;
                }
                r.entries.push_back({it->first, it->second.version});
            }
            return {};
        }

        capabilities probe() {
            {
                std::lock_guard lock(mutex);
                ++counts.probes;
            }
            // The same checks a remote store gets, run on a scratch key (not counted as requests).
            capabilities c;
            std::string const key = "baton-probe/" + std::to_string(reinterpret_cast<std::uintptr_t>(this));
            detail::probe_by_writes(
                key, [&](auto const& k, std::string b, precondition pc, put_result& r) { return put(k, std::move(b), pc, r, false); },
                [&](auto const& k, precondition pc, diagnostics& d) { return erase(k, pc, d, false); }, c);
            return c;
        }

        bool holds(std::map<std::string, stored, std::less<>>::iterator it, precondition const& pc) const {
            switch (pc.which()) {
            case precondition::kind::none: return true;
            case precondition::kind::absent: return it == records.end();
            case precondition::kind::matches: return it != records.end() && it->second.version == pc.version();
            }
            return false;
        }
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

#endif
