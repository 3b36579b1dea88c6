// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_FENCED_HPP
#define BATON_RECIPE_FENCED_HPP

/** @file
    Layer: recipes. `basic_fenced`: writes that the store itself refuses when their fencing
    token is stale.

    A lease's fencing token is only as good as the place that checks it.
    Here the target record keeps the highest token it has accepted, and a
    write carrying a lower one is refused by the store's own conditional
    write (`errc::fenced`), so a holder that was paused past its lease and
    taken over cannot overwrite its successor's work, whatever it believes.
    Equal tokens are accepted: one holder writes as often as it likes.

    Cost: one request when this object already knows the key's version (its
    last read or write of the key), or on a store with a fenced-write hook
    (DynamoDB: a condition on the token it keeps, `fenced_put_hook`); a read
    plus a conditional write otherwise. An ambiguous answer (timeout, 5xx, S3 409, throttled, a
    cancellation after sending) is settled by reading the record back and
    looking for the write's nonce before anything is retried or reported.
*/

#include <baton/core/clock.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/detail/default_token.hpp>
#include <baton/core/detail/erased_compose.hpp>
#include <baton/recipe/detail/envelope.hpp>
#include <baton/recipe/detail/fenced_machine.hpp>
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

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>

namespace baton {

/** A Backend with a fenced-write hook: one conditional write that the store itself checks
    against the fencing token it keeps (`dynamodb_backend`). `b.async_put_fenced(key, body,
    token, known_version, h)`, completion `void(error_code, put_result)`: applied when the key
    is absent, its stored token is below `token`, or it is still `known_version` (when given)
    with a stored token of at most `token`; `precondition_failed` otherwise. `basic_fenced`
    uses it when present (detected at compile time): a first write costs one request.
*/
template <class B>
concept fenced_put_hook = requires(B& b, std::string s, std::uint64_t t, std::optional<std::string> v,
                                   detail::archetype_handler<void(error_code, put_result)> h) {
    b.async_put_fenced(s, s, t, v, std::move(h));
};

/// A fenced record as read: its value, the highest token it accepted, and its store version.
struct fenced_value {
    /// The value of the last accepted write.
    std::string value;
    /// The token of that write: the highest this key has accepted.
    std::uint64_t token = 0;
    /// The store's version of the record (opaque).
    std::string version;
};

/** How a fenced-write handle writes.

    The record format: 2, the default, names in each record the writes before
    it, so that a write whose answer was lost is known to have landed even
    after others wrote over it (format 1 cannot tell, and reports
    `errc::unknown_outcome` instead). Every version of baton that writes format
    2 reads both; earlier versions read only format 1 and refuse format 2 as
    `errc::foreign_record`. A fleet upgrades in two steps: first deploy the new
    version with `record_format = 1`, then, once no process of the old version
    is left, switch to 2 (a rolling restart is safe at each step).
*/
struct fenced_options {
    /// The record format written: 1 or 2.
    unsigned record_format = 2;

    /// @throws config_error when `record_format` is neither 1 nor 2.
    void validate() const {
        if (record_format != 1 && record_format != 2) throw config_error("fenced_options: record_format must be 1 or 2");
    }
};

/// What a fenced write reports.
struct fenced_write_result {
    /// On success, the record's version with this write; empty when the write landed and was
    /// overwritten before a read could see it (its answer was lost).
    std::string version;
    /// On `errc::fenced`: the token the record had accepted, above the write's.
    std::uint64_t winning_token = 0;
    /// Requests sent (reads included).
    unsigned requests = 0;
    /// True when the write's answer was lost or ambiguous and reading the record back showed it had landed.
    bool settled_by_read = false;
    /// What the store (or baton) said, on failure.
    diagnostics diag;
};

/** Fenced writes and reads on any record store.

    @tparam Backend a `record_store` (memory, file, S3, DynamoDB, or a wrapper).
    @tparam Clock the Clock policy that backoff waits run on (the sim kit's for simulations).
    @tparam RetryPolicy spaces retries of transient failures; copies share a budget.
    @tparam Executor names the default completion token's executor.
    @tparam Observer sees every write call (`<baton/recipe/write_observer.hpp>`: fencing
            refusals, retries, settlements); the default `no_write_observer` costs nothing.

    A `basic_fenced` is a cheap handle: copies share one cache of the
    versions last seen per key (at most `max_cached_keys`; it only saves a
    read). Operations on different keys, or on the same key, may run
    concurrently: the store arbitrates.

    @par Thread safety
    Distinct objects: safe. Shared objects: safe when every operation runs
    on one strand or thread; the version cache is locked.
*/
template <record_store Backend, clock_policy Clock = steady_clock, retry_policy RetryPolicy = standard_retry,
          class Executor = boost::asio::any_io_executor, class Observer = no_write_observer>
class basic_fenced {
public:
    /// The executor that completions run on by default.
    using executor_type = Executor;
    /// The same fenced-write handle with completions defaulting to `Executor1`'s token (`as_default_on_t`).
    template <class Executor1>
    struct rebind_executor {
        /// The fenced-write handle type when rebound to `Executor1`.
        using other = basic_fenced<Backend, Clock, RetryPolicy, Executor1, Observer>;
    };
    /// The record store.
    using backend_type = Backend;
    /// The observer type.
    using observer_type = Observer;

    /// Keys whose version is remembered (beyond it the cache starts over).
    static constexpr std::size_t max_cached_keys = 4096;

    /// Writes and reads through `backend`; retries per `retry`; waits on `clock`. Nonces and jitter
    /// come from `random_seed` when given (reproducible simulations: a handle replays under its
    /// seed when no other handle of its process was given that seed first), else from kernel
    /// randomness.
    /// `observer` is told of every write call.
    basic_fenced(executor_type ex, Backend backend, RetryPolicy retry = {}, Clock clock = {},
             std::optional<std::uint64_t> random_seed = std::nullopt, Observer observer = {})
        : basic_fenced(std::move(ex), std::move(backend), fenced_options{}, std::move(retry), std::move(clock), random_seed,
                       std::move(observer)) {}

    /// The same, writing as `options` say. @throws config_error when `options` break a rule.
    basic_fenced(executor_type ex, Backend backend, fenced_options options, RetryPolicy retry = {}, Clock clock = {},
             std::optional<std::uint64_t> random_seed = std::nullopt, Observer observer = {})
        : ex_(ex), options_((options.validate(), options)),
          st_(std::make_shared<state>(std::move(ex), std::move(backend), std::move(retry), std::move(clock), random_seed,
                                      max_cached_keys, std::move(observer))) {}

    /// The executor.
    executor_type get_executor() const noexcept { return ex_; }
    /// The record store.
    Backend& backend() noexcept { return st_->backend; }
    /// How this handle writes.
    fenced_options const& options() const noexcept { return options_; }

    /** Writes `value` to `key` with fencing token `token`.

        Refused with `errc::fenced` when the record has accepted a higher
        token (`fenced_write_result::winning_token` names it); accepted when
        the record is absent or its token is at most `token`.

        Every outcome but `errc::unknown_outcome` is the truth: a write
        reported written landed (once), and one reported failed, fenced or
        cancelled never landed and never will.

        @par Handler signature
        `void(error_code, fenced_write_result)`. Errors: `errc::fenced`;
        `errc::foreign_record` (the key holds something this recipe did not
        write; nothing is overwritten); `errc::precondition_failed` (the
        record changed under 64 attempts in a row); `errc::unknown_outcome`
        (a write of this call may have landed, or may still land: its answer
        was lost and no read could tell, or the call had to stop while the
        record was still as the write found it); store errors
        (`invalid_argument` for a bad key or an oversized value, auth,
        `not_found` for a missing bucket or table, transient ones once the
        retry policy gives up and nothing sent can land).

        @par Per-Operation Cancellation
        Terminal: no further write is sent. A write already sent is settled
        first by one read that is not cancelled: if it landed the operation
        succeeds; if it can no longer land (the record moved on without it),
        it completes with `operation_aborted`; otherwise with
        `errc::unknown_outcome`.
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_write(std::string key, std::string value, std::uint64_t token, Token&& tok = {}) {
        return detail::async_compose_erased<void(error_code, fenced_write_result)>(
            detail::settled_write_op<state, write_spec>(st_, std::move(key), write_spec{std::move(value), token, options_.record_format}),
            std::forward<Token>(tok), st_->ex);
    }

    /** Reads `key`.

        @par Handler signature
        `void(error_code, std::optional<fenced_value>)`: empty when the key
        is absent. `errc::foreign_record` when it holds something else.
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_read(std::string key, Token&& tok = {}) {
        return detail::async_compose_erased<void(error_code, std::optional<fenced_value>)>(
            detail::machine_op<state, read_spec>(st_, std::move(key), read_spec{}), std::forward<Token>(tok), st_->ex);
    }

    /// Forgets the cached version of `key` (the next write reads first).
    void forget(std::string const& key) { st_->versions.forget(key); }

private:
    using state = detail::recipe_state<Backend, Clock, RetryPolicy, detail::fenced_seen, Observer>;

    // What a fenced write adds to the settled-write driver: its machine, the store's fenced-write
    // hook when there is one, and its result.
    struct write_spec {
        using machine = detail::fenced_write_machine<RetryPolicy, std::mt19937_64>;
        using result_type = fenced_write_result;
        static constexpr std::string_view recipe = "fenced";

        std::string value;
        std::uint64_t token_;
        unsigned format;

        std::string_view operation() const noexcept { return "write"; }
        std::uint64_t token() const noexcept { return token_; }

        error_code check(result_type&) const { return {}; }
        std::unique_ptr<machine> make(state& st, std::string const& key) {
            return std::make_unique<machine>(std::move(value), token_, st.versions.find(key), st.retry, st.rng,
                                             fenced_put_hook<Backend>, format);
        }
        template <class Self>
        static void send(state& st, std::string key, detail::machine_step& a, machine& m, Self&& self) {
            if constexpr (fenced_put_hook<Backend>) {
                if (m.hooked()) {
                    std::optional<std::string> known;
                    if (a.pc.which() == precondition::kind::matches) known = a.pc.version();
                    return st.backend.async_put_fenced(std::move(key), std::move(a.body), m.token(), std::move(known),
                                                       std::forward<Self>(self));
                }
            }
            st.backend.async_put(std::move(key), std::move(a.body), std::move(a.pc), std::forward<Self>(self));
        }
        static result_type result(machine const& m, error_code) {
            result_type r;
            r.version = m.version();
            r.winning_token = m.winning_token();
            return r;
        }
    };

    // A read on the one driver: the record as the store answers it, decoded here.
    struct read_spec : detail::one_read_spec<std::optional<fenced_value>> {
        static result_type finish(state& st, std::string const& key, machine& m, error_code& ec) {
            auto& r = m.result();
            if (ec) return std::nullopt;
            if (!r.found) {
                st.versions.forget(key);
                return std::nullopt;
            }
            detail::fenced_body b;
            diagnostics d;
            if (auto dec = detail::decode_fenced(r.found->body, b, d)) {
                st.versions.forget(key);
                ec = dec;
                return std::nullopt;
            }
            st.versions.remember(key, detail::fenced_seen{r.found->version, b.token, b.nonce, b.recent, b.format});
            return fenced_value{std::move(b.value), b.token, r.found->version};
        }
    };

    executor_type ex_;
    fenced_options options_;
    std::shared_ptr<state> st_;
};

} // namespace baton

#endif
