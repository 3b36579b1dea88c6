// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_KV_HPP
#define BATON_RECIPE_KV_HPP

/** @file
    Layer: recipes. `basic_kv`: a versioned key-value store with optimistic concurrency on
    any record store (docs/design.md §10).

    Every key has a logical version, a `u64` that each write raises by one.
    Writes carry a condition (none, absent, or a version) that the store's
    own conditional write enforces. An erase leaves a tombstone, so versions
    keep rising across delete and re-create and a writer holding a version
    from before the erase can never bring the key back.

    Cost, in requests: `get` 1; `put` and `erase` 1 when this object's last
    read or write of the key lets it name the version to replace (a put with
    `version(v)` after reading v, a put with `absent` of a new key, a second
    unconditional put of this object), otherwise a read plus a write;
    `update` a read plus a write, one more of each per concurrent writer that
    got in first; `list` 1 per page plus one read per key. An ambiguous answer
    (timeout, 5xx, S3's 409, throttled, a cancellation after sending) is
    settled by reading the record back and looking for the write's nonce
    before anything is retried or reported: an update is never applied twice
    and never reported lost when it landed.

    Record format (readable with `cat`): a first line
    `baton-kv 1 <version> <nonce>[ fence=<token>][ recent=<p>,...][ tombstone]`
    (`recent` names the writes before this one by their nonces' first 16 hex
    digits, so that a write that landed and was overwritten is still known as
    landed), then the value's bytes.
    Tombstones are never removed by this recipe (removing one would let
    versions restart); a key's history costs one small record after erase.
*/

#include <baton/core/clock.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/detail/default_token.hpp>
#include <baton/core/detail/erased_compose.hpp>
#include <baton/recipe/detail/envelope.hpp>
#include <baton/recipe/detail/kv_machine.hpp>
#include <baton/recipe/detail/settled_write_op.hpp>
#include <baton/store/detail/read_machines.hpp>
#include <baton/recipe/write_observer.hpp>
#include <baton/core/error.hpp>
#include <baton/core/retry.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/deferred.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace baton {

/** The condition a kv write holds to: applied only if it holds when the store writes.

    A condition may also carry a fencing token (`with_fence`): the key keeps
    the highest token a write carried, and a write with a lower one is
    refused by the store's conditional write (`errc::fenced`), so a lease
    holder that was taken over cannot overwrite its successor's writes.
    Writes without a token keep the key's fence as it is.
*/
class kv_condition {
public:
    /// Which condition.
    enum class kind {
        none,    ///< unconditional
        absent,  ///< the key has no value (never written, or erased); put only
        version, ///< the key's value has version `version()`
    };

    /// Unconditional.
    static kv_condition none() noexcept { return kv_condition{kind::none, 0}; }
    /// Only if the key has no value.
    static kv_condition absent() noexcept { return kv_condition{kind::absent, 0}; }
    /// Only if the key's value has version `v` (versions start at 1).
    static kv_condition version(std::uint64_t v) noexcept { return kv_condition{kind::version, v}; }

    /// This condition, and also: refused when the key accepted a fencing token above `token`.
    kv_condition with_fence(std::uint64_t token) const noexcept {
        kv_condition c = *this;
        c.fence_ = token;
        return c;
    }

    /// Which condition this is.
    kind which() const noexcept { return kind_; }
    /// The version named by `version(v)`; 0 otherwise.
    std::uint64_t version() const noexcept { return version_; }
    /// The fencing token the write carries, if any.
    std::optional<std::uint64_t> fence() const noexcept { return fence_; }

    /// Two conditions are equal when they name the same condition and token.
    friend bool operator==(kv_condition const&, kv_condition const&) = default;

private:
    kv_condition(kind k, std::uint64_t v) noexcept : kind_(k), version_(v) {}
    kind kind_;
    std::uint64_t version_;
    std::optional<std::uint64_t> fence_;
};

/// A value as read, with its logical version.
struct kv_entry {
    /// The value's bytes.
    std::string value;
    /// Its version: 1 for the first write of a key, one more for each write after (erases included).
    std::uint64_t version = 0;
    /// The highest fencing token a write to the key carried (0: none).
    std::uint64_t fence = 0;
};

/// What a kv write (`put`, `erase`, `update`) reports.
struct kv_write_result {
    /// On success: the version written (for an erase, the tombstone's), or, when nothing needed
    /// writing (an erase of a missing key, an update that changed nothing), the current one (0: no value).
    std::uint64_t version = 0;
    /// True when this call wrote the record.
    bool written = false;
    /// On `errc::precondition_failed` from a condition: the version the key has (0: no value).
    std::uint64_t current_version = 0;
    /// On `errc::fenced`: the token the key had accepted, above the write's.
    std::uint64_t winning_token = 0;
    /// Requests sent (reads included).
    unsigned requests = 0;
    /// True when the write's answer was lost or ambiguous and reading the record back showed it had landed.
    bool settled_by_read = false;
    /// What the store (or baton) said, on failure.
    diagnostics diag;
};

/// One key of a kv listing, with its value.
struct kv_list_entry {
    /// The key.
    std::string key;
    /// Its value and version.
    kv_entry entry;
};

/// A page of a kv listing: the keys that have a value, in key order.
struct kv_list_page {
    /// Keys with values in this page, ascending (erased keys are left out).
    std::vector<kv_list_entry> entries;
    /// True when more keys may follow: list again with `after` = `next_after`.
    bool truncated = false;
    /// Where the next page starts (the last key this page looked at, erased or not).
    std::string next_after;
    /// What the store said, on failure.
    diagnostics diag;
};

/** A versioned key-value store on any record store.

    @tparam Backend a `record_store` (memory, file, S3, DynamoDB, or a wrapper).
    @tparam Clock the Clock policy that backoff waits run on (the sim kit's for simulations).
    @tparam RetryPolicy spaces retries of transient failures; copies share a budget.
    @tparam Executor names the default completion token's executor.
    @tparam Observer sees every write call (`<baton/recipe/write_observer.hpp>`: failed
            conditions, fencing refusals, retries, settlements); the default `no_write_observer` costs nothing.

    A `basic_kv` is a cheap handle: copies share one cache of the versions
    last seen per key (at most `max_cached_keys`; it only saves a read, and a
    stale entry costs one refused write and a read, never a wrong answer).
    Any number of operations may run at once, on the same key or not: the
    store arbitrates.

    @par Thread safety
    Distinct objects: safe. Shared objects: safe when every operation runs
    on one strand or thread; the version cache is locked.
*/
template <record_store Backend, clock_policy Clock = steady_clock, retry_policy RetryPolicy = standard_retry,
          class Executor = boost::asio::any_io_executor, class Observer = no_write_observer>
class basic_kv {
public:
    /// The executor that completions run on by default.
    using executor_type = Executor;
    /// The same kv handle with completions defaulting to `Executor1`'s token (`as_default_on_t`).
    template <class Executor1>
    struct rebind_executor {
        /// The kv handle type when rebound to `Executor1`.
        using other = basic_kv<Backend, Clock, RetryPolicy, Executor1, Observer>;
    };
    /// The record store.
    using backend_type = Backend;
    /// The observer type.
    using observer_type = Observer;

    /// Keys whose version is remembered (beyond it the cache starts over).
    static constexpr std::size_t max_cached_keys = 4096;
    /// Rounds of contention a `put` without condition or an `update` rides out before `precondition_failed`.
    static constexpr unsigned max_contention_rounds = detail::kv_write_machine<RetryPolicy, std::mt19937_64>::max_contention_rounds;

    /// Reads and writes through `backend`; retries per `retry`; waits on `clock`. Nonces and jitter
    /// come from `random_seed` when given (reproducible simulations: a handle replays under its
    /// seed when no other handle of its process was given that seed first), else from kernel
    /// randomness.
    /// `observer` is told of every write call (put, erase, update).
    basic_kv(executor_type ex, Backend backend, RetryPolicy retry = {}, Clock clock = {},
             std::optional<std::uint64_t> random_seed = std::nullopt, Observer observer = {})
        : ex_(ex), st_(std::make_shared<state>(std::move(ex), std::move(backend), std::move(retry), std::move(clock),
                                      random_seed, max_cached_keys,
                                      std::move(observer))) {}

    /// The executor.
    executor_type get_executor() const noexcept { return ex_; }
    /// The record store.
    Backend& backend() noexcept { return st_->backend; }

    /** Reads `key`.

        @par Handler signature
        `void(error_code, std::optional<kv_entry>)`: empty when the key has no
        value (never written, or erased). `errc::foreign_record` when the key
        holds something this recipe did not write.
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_get(std::string key, Token&& tok = {}) {
        return detail::async_compose_erased<void(error_code, std::optional<kv_entry>)>(
            detail::machine_op<state, get_spec>(st_, std::move(key), get_spec{}), std::forward<Token>(tok), st_->ex);
    }

    /** Writes `value` to `key` if `cond` holds.

        @par Handler signature
        `void(error_code, kv_write_result)`. Errors:
        `errc::precondition_failed` (the condition does not hold:
        `current_version` tells what the key has; or, with `none`, the record
        changed under `max_contention_rounds` writes in a row);
        `errc::fenced` (the condition's fencing token is below one the key
        accepted: `winning_token` names it); `errc::foreign_record` (nothing
        is overwritten); `errc::unknown_outcome`
        (a write may have landed and reading back failed, or it may still land);
        `errc::invalid_argument` (`version(0)`, a bad key, a value over the
        store's limit: nothing is written); store errors once the retry policy
        gives up.

        @par Per-Operation Cancellation
        Terminal: no further write is sent. A write already sent is settled
        first by one read that is not cancelled: if it landed the operation
        succeeds; if it can never land (the record moved on without it) it
        completes with `operation_aborted`; while it still may land (a request
        delayed in the network, the record unchanged since) it completes with
        `errc::unknown_outcome`, never `operation_aborted`.
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_put(std::string key, std::string value, kv_condition cond = kv_condition::none(), Token&& tok = {}) {
        return start_write(detail::kv_op::put, std::move(key), std::move(value), cond, no_update{}, std::forward<Token>(tok));
    }

    /** Erases `key` if `cond` (`none` or `version(v)`, with or without a fence) holds, leaving a tombstone.

        An erase of a key without value succeeds without writing (`written`
        false). Errors and cancellation as `async_put`; `absent` is
        `errc::invalid_argument`.

        @par Handler signature
        `void(error_code, kv_write_result)`.
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_erase(std::string key, kv_condition cond = kv_condition::none(), Token&& tok = {}) {
        return start_write(detail::kv_op::erase, std::move(key), std::string(), cond, no_update{}, std::forward<Token>(tok));
    }

    /** Read-modify-write: reads `key`, calls `fn` with its value, writes what `fn` returns
        if the key has not changed meanwhile, and starts over if it has.

        `fn` is called as `std::optional<std::string>(std::optional<kv_entry> const&)`,
        with the current value (empty when the key has none), on this
        operation's executor, once per round; it returns the new value, or
        nothing to leave the key as it is. `cond` is `none`, with or without
        a fencing token (`errc::invalid_argument` otherwise). It may run several times and
        must not assume that the value it returns is written until the
        operation succeeds. Under contention, rounds after the second wait
        a jittered, doubling pause (at most 1 s); after
        `max_contention_rounds` the operation fails with
        `errc::precondition_failed`.

        @par Handler signature
        `void(error_code, kv_write_result)`. Errors and cancellation as `async_put`.
    */
    template <class Fn, class Token = detail::default_token_t<executor_type>>
        requires std::invocable<Fn&, std::optional<kv_entry> const&> &&
                 std::convertible_to<std::invoke_result_t<Fn&, std::optional<kv_entry> const&>, std::optional<std::string>>
    auto async_update(std::string key, Fn fn, kv_condition cond, Token&& tok = {}) {
        return start_write(detail::kv_op::update, std::move(key), std::string(), cond, std::move(fn), std::forward<Token>(tok));
    }

    /// `async_update(key, fn, kv_condition::none(), tok)`.
    template <class Fn, class Token = detail::default_token_t<executor_type>>
        requires(!std::same_as<std::decay_t<Token>, kv_condition>) && std::invocable<Fn&, std::optional<kv_entry> const&> &&
                std::convertible_to<std::invoke_result_t<Fn&, std::optional<kv_entry> const&>, std::optional<std::string>>
    auto async_update(std::string key, Fn fn, Token&& tok = {}) {
        return start_write(detail::kv_op::update, std::move(key), std::string(), kv_condition::none(), std::move(fn),
                           std::forward<Token>(tok));
    }

    /** Lists the keys starting with `prefix` that have a value, strictly after `after`,
        with their values: one listing request of at most `limit` keys, then one read per key.

        @par Handler signature
        `void(error_code, kv_list_page)`. `errc::foreign_record` when a key
        under `prefix` holds something this recipe did not write (the
        diagnostics name it).
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_list(std::string prefix, std::string after = {}, std::size_t limit = 1000, Token&& tok = {}) {
        return detail::async_compose_erased<void(error_code, kv_list_page)>(
            detail::machine_op<state, list_spec>(st_, std::move(prefix), list_spec{std::move(after), limit}),
            std::forward<Token>(tok), st_->ex);
    }

    /// Forgets the cached version of `key` (the next conditional write reads first).
    void forget(std::string const& key) { st_->versions.forget(key); }

private:
    struct no_update {
        std::optional<std::string> operator()(std::optional<kv_entry> const&) const { return std::nullopt; }
    };

    using state = detail::recipe_state<Backend, Clock, RetryPolicy, detail::kv_seen, Observer>;
    using machine = detail::kv_write_machine<RetryPolicy, std::mt19937_64>;

    template <class Fn, class Token>
    auto start_write(detail::kv_op op, std::string key, std::string value, kv_condition cond, Fn fn, Token&& tok) {
        detail::kv_expect e;
        e.which = cond.which() == kv_condition::kind::none     ? detail::kv_expect::kind::none
                  : cond.which() == kv_condition::kind::absent ? detail::kv_expect::kind::absent
                                                               : detail::kv_expect::kind::version;
        e.version = cond.version();
        e.fence = cond.fence();
        return detail::async_compose_erased<void(error_code, kv_write_result)>(
            detail::settled_write_op<state, write_spec<Fn>>(st_, std::move(key), write_spec<Fn>{op, std::move(value), e, std::move(fn)}),
            std::forward<Token>(tok), st_->ex);
    }

    // What a kv write adds to the settled-write driver: its conditions, its machine, the
    // update's function, and its result.
    template <class Fn>
    struct write_spec {
        using machine = basic_kv::machine;
        using result_type = kv_write_result;
        static constexpr std::string_view recipe = "kv";

        detail::kv_op op;
        std::string value;
        detail::kv_expect expect;
        Fn fn;

        std::string_view operation() const noexcept {
            return op == detail::kv_op::put ? "put" : op == detail::kv_op::erase ? "erase" : "update";
        }
        std::uint64_t token() const noexcept { return expect.fence.value_or(0); }

        error_code check(result_type& r) const {
            if (op == detail::kv_op::erase && expect.which == detail::kv_expect::kind::absent) {
                r.diag.message = "an erase takes no 'absent' condition (none or version(v))";
                return errc::invalid_argument;
            }
            if (op == detail::kv_op::update && expect.which != detail::kv_expect::kind::none) {
                r.diag.message = "an update takes no 'absent' or 'version' condition (its function sees the value)";
                return errc::invalid_argument;
            }
            return {};
        }
        std::unique_ptr<machine> make(state& st, std::string const& key) {
            return std::make_unique<machine>(op, std::move(value), expect, st.versions.find(key), st.retry, st.rng);
        }
        detail::machine_step compute(machine& m) {
            std::optional<kv_entry> current;
            if (m.current()) current = kv_entry{*m.current(), m.current_version(), m.current_fence()};
            return m.on_computed(fn(std::as_const(current)));
        }
        static result_type result(machine const& m, error_code ec) {
            result_type r;
            r.version = ec ? 0 : m.version();
            r.written = !ec && m.written();
            if (ec == errc::precondition_failed) r.current_version = m.current_version();
            if (ec == errc::fenced) r.winning_token = m.winning_token();
            return r;
        }
    };

    // Decodes a kv record: the entry (empty for a tombstone), or foreign_record.
    static error_code decode(record const& found, std::optional<kv_entry>& out, detail::kv_seen& seen, diagnostics& d) {
        detail::kv_body b;
        if (auto ec = detail::decode_kv(found.body, b, d)) {
            d.message += " (key " + found.key + ")";
            return ec;
        }
        seen = detail::kv_seen{found.version, b.version, b.live, b.fence, b.nonce, b.recent};
        if (b.live) out = kv_entry{std::move(b.value), b.version, b.fence};
        return {};
    }

    // Reads on the one driver: records as the store answers them, decoded here.
    struct get_spec : detail::one_read_spec<std::optional<kv_entry>> {
        static result_type finish(state& st, std::string const& key, machine& m, error_code& ec) {
            auto& r = m.result();
            std::optional<kv_entry> out;
            if (ec) return out;
            if (!r.found) {
                st.versions.forget(key);
                return out;
            }
            detail::kv_seen seen;
            diagnostics d;
            if (auto dec = decode(*r.found, out, seen, d)) {
                st.versions.forget(key);
                ec = dec;
                return std::nullopt;
            }
            st.versions.remember(key, seen);
            return out;
        }
    };

    // Each listed record decoded as it arrives; one this recipe did not write ends the page.
    struct list_accept {
        state* st; // the driver's host: it outlives the machine
        std::vector<kv_list_entry> entries;
        error_code operator()(record& r, diagnostics& diag) {
            std::optional<kv_entry> e;
            detail::kv_seen seen;
            diagnostics d;
            if (auto dec = decode(r, e, seen, d)) {
                diag = std::move(d);
                return dec;
            }
            st->versions.remember(r.key, seen);
            if (e) entries.push_back(kv_list_entry{r.key, std::move(*e)});
            return {};
        }
    };
    struct list_spec {
        using machine = detail::listed_reads<list_accept>;
        using result_type = kv_list_page;
        static constexpr bool passes_store_aborts = true; // reads: the store's answers as they are
        std::string after;
        std::size_t limit;
        std::unique_ptr<machine> make(state& st, std::string const&) {
            return std::make_unique<machine>(std::move(after), limit, list_accept{&st, {}});
        }
        static result_type finish(state&, std::string const&, machine& m, error_code ec) {
            kv_list_page page;
            if (m.listed()) {
                page.truncated = m.truncated();
                page.next_after = m.next_after();
            }
            if (ec) page.diag = std::move(m.diag());
            else page.entries = std::move(m.accepted().entries);
            return page;
        }
    };

    executor_type ex_;
    std::shared_ptr<state> st_;
};

} // namespace baton

#endif
