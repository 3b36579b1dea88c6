// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_LEASE_HPP
#define BATON_RECIPE_LEASE_HPP

/** @file
    Layer: recipes. `basic_lease`: a lease with a fencing token on any record store.

    Acquire waits (or tries once) for the lease, renews it in the background
    on the user's executor while held, and delivers a loss as a completion
    of `async_wait_lost` at the renew deadline, before the lease could
    expire. Release writes a released marker that keeps the fencing token,
    so the next holder gets a larger one and can take over at once.

    The four lanes (acquire, renew, release, waiters) share one private
    state whose term and generation checks keep an older term's answers away
    from a newer one: recipe/impl/lease.hpp (the state, its timers and the
    loss) and recipe/impl/lease_lanes.hpp (each lane's rules, run by the
    one driver of every machine, store/detail/machine_op.hpp).
*/

#include <baton/core/clock.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/detail/default_token.hpp>
#include <baton/core/detail/random.hpp>
#include <baton/recipe/detail/lease_machine.hpp>
#include <baton/recipe/detail/pending_op.hpp>
#include <baton/core/detail/timer_queue.hpp>
#include <baton/core/error.hpp>
#include <baton/recipe/lease_observer.hpp>
#include <baton/recipe/lease_options.hpp>
#include <baton/core/retry.hpp>
#include <baton/core/signer.hpp>
#include <baton/store/record_store.hpp>

#include <boost/assert.hpp>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace baton {

namespace detail {
// Microseconds since 1970 by the wall clock, and above every floor handed out before in this
// process (two creations within one microsecond, or a clock stepped back, still get distinct floors).
BATON_DECL std::uint64_t wall_clock_token_floor();

// The least token a record created now by a participant on `clock` starts at: the microseconds
// since 1970 by its own wall clock when the Clock policy has one (a simulation's, which must
// replay exactly, so nothing process-wide takes part), the process-wide floor above otherwise.
template <class Clock>
std::uint64_t wall_clock_token_floor(Clock const& clock) {
    if constexpr (has_wall_clock<Clock>) {
        auto const wall = clock.wall_now();
        static_assert(std::is_same_v<typename decltype(wall)::clock, std::chrono::system_clock>,
                      "a Clock's wall_now() returns a std::chrono::system_clock time point");
        auto const us = std::chrono::duration_cast<std::chrono::microseconds>(wall.time_since_epoch()).count();
        return static_cast<std::uint64_t>(std::max<std::int64_t>(1, us));
    } else {
        return wall_clock_token_floor();
    }
}

/// Tag for constructors that skip validation (tests of the checker only).
struct unchecked_t {
    explicit unchecked_t() = default;
};
inline constexpr unchecked_t unchecked{};

/// Whether a lease's state was closed (the lease destroyed): safe to ask after the lease object is gone.
template <class Impl>
struct lease_closed_watch {
    std::weak_ptr<Impl const> state;
    bool operator()() const {
        auto s = state.lock();
        return !s || s->closed;
    }
};

// For composed operations on a lease (run_while_held): an operation that completed with
// operation_aborted may mean the lease was destroyed, after which it must not be touched.
// For the recipes built on a lease (the lease table's worker): why its last term was lost.
struct lease_access {
    template <class Lease>
    static auto closed_watch(Lease const& l) -> lease_closed_watch<typename decltype(l.impl_)::element_type> {
        return {l.impl_};
    }
    template <class Lease>
    static lease_machine::loss_cause last_loss(Lease const& l) noexcept {
        return l.impl_->m.last_loss();
    }
};
} // namespace detail

/** A lease on one key of a record store, with a fencing token.

    @tparam Backend a record store (`memory_backend`, `file_backend`, `s3_backend`, `dynamodb_backend`)
    @tparam Clock the participant's monotonic clock (`steady_clock`; `sim::manual_clock` in simulations)
    @tparam RetryPolicy how failed requests are retried (`standard_retry`, `no_retry`)
    @tparam Signer how the backend authenticates (default `backend_signer`: the backend keeps its own; `aws::sigv4_signer`, `anonymous_signer`)
    @tparam Executor the executor type (`rebind_executor` changes it)
    @tparam Observer sees acquisitions, renewals, losses, releases and every store answer
            (`<baton/recipe/lease_observer.hpp>`); the default `no_lease_observer` costs nothing

    @par Time model
    While held, the lease is valid until `t_send + ttl` on this object's
    own clock, where `t_send` is when the last successful write was sent.
    Protected work must stop at the renew deadline (`t_send +
    renew_deadline`): `async_wait_lost` completes then, with
    `errc::lease_lost`, unless a renewal succeeded first. A contender takes
    over a lease whose holder stopped renewing only after seeing the same
    version for `ttl × max_clock_rate_skew` on its own clock.

    @par Timers
    All leases on one executor (compared with `==`) share one Asio timer: a
    service of the executor's execution context keeps their waits in one
    queue, and the lease runs its timers and completions on that queue's
    executor, which compares equal to its own (Asio: interchangeable; a
    strand compares equal whatever work-tracking its inner executor has). A renew deadline is never late on its account; renewals due close
    together share a wake-up (10,000 held leases cost one reactor timer).

    @par Thread safety
    Distinct objects: safe. Shared objects: unsafe; all calls and completions
    must be serialized, e.g. by constructing the lease on a strand.

    @par Object lifetimes
    Destroying a lease abandons it: outstanding operations complete with
    `operation_aborted`, renewal stops, and the record stays until another
    contender's wait expires. Call `async_release` first to hand over at once.
*/
template <record_store Backend, clock_policy Clock = steady_clock, retry_policy RetryPolicy = standard_retry,
          signer_policy Signer = backend_signer, class Executor = boost::asio::any_io_executor,
          class Observer = no_lease_observer>
class basic_lease {
    // The state the lanes share, private (recipe/impl/lease.hpp).
    struct impl;
    friend struct detail::lease_access;

public:
    /// The executor that renewals and completions run on by default.
    using executor_type = Executor;
    /// The same lease with completions defaulting to `Executor1`'s token (`as_default_on_t`).
    template <class Executor1>
    struct rebind_executor {
        /// The lease type when rebound to `Executor1`.
        using other = basic_lease<Backend, Clock, RetryPolicy, Signer, Executor1, Observer>;
    };
    /// The record store.
    using backend_type = Backend;
    /// The Clock policy.
    using clock_type = Clock;
    /// The observer type.
    using observer_type = Observer;
    /// A reading of this participant's clock.
    using time_point = typename Clock::time_point;

    /** Creates a lease object; nothing is sent until `async_acquire`.

        @throws config_error when `opts` breaks a rule (the message names it).
    */
    basic_lease(executor_type ex, Backend backend, lease_options opts, RetryPolicy retry = {}, Signer signer = {},
                Clock clock = {}, Observer observer = {})
        : ex_(ex), impl_(std::make_shared<impl>(std::move(ex), std::move(backend), validated(std::move(opts)), std::move(retry),
                                                std::move(signer), std::move(clock), std::move(observer))) {}

    /** Creates a lease without validating `opts`. Only for proving that the
        simulation checker catches unsafe settings; never use it otherwise.
    */
    basic_lease(detail::unchecked_t, executor_type ex, Backend backend, lease_options opts, RetryPolicy retry = {},
                Signer signer = {}, Clock clock = {}, Observer observer = {})
        : ex_(ex), impl_(std::make_shared<impl>(std::move(ex), std::move(backend), std::move(opts), std::move(retry),
                                                std::move(signer), std::move(clock), std::move(observer))) {}

    basic_lease(basic_lease const&) = delete;
    basic_lease& operator=(basic_lease const&) = delete;
    /// Moves the lease; the moved-from object may only be destroyed.
    basic_lease(basic_lease&&) noexcept = default;

    /// Abandons the lease (see Object lifetimes).
    ~basic_lease() {
        if (impl_) impl_->shutdown();
    }

    /// The executor.
    executor_type get_executor() const noexcept {
        if constexpr (executor_in_state) return impl_->ex();
        else return ex_;
    }

    /** Acquires the lease, waiting as `opts` says.

        Sends one conditional write when the lease is free or was released
        by this object; otherwise reads, and polls while someone else holds
        it, taking over only once that holder's record has stayed unchanged
        for `ttl × max_clock_rate_skew`. Completes at once with success if
        already held. On success, renewal runs in the background.

        @par Handler signature
        `void(error_code, lease_grant)`. Errors: `errc::held_by_other`
        (try-once), `errc::timeout`, `errc::invalid_argument` (a negative
        timeout), `operation_aborted`, `errc::operation_in_progress`,
        `errc::foreign_record` (the key holds something else), and store errors
        that are not transient.

        @par Per-Operation Cancellation
        All types: stops waiting and completes with `operation_aborted`. A
        request already sent is allowed to finish, and a claim whose answer
        was lost is read back once first (the same holds for the timeout); if
        the claim won the lease, the operation completes successfully instead
        (the lease is then held; a claim that landed too late to act on is
        first refreshed, under the same token). No new claim is written after
        cancellation.
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_acquire(acquire_options opts, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, lease_grant)>(
            [](auto handler, std::shared_ptr<impl> self, acquire_options o) {
                self->start_acquire(std::move(handler), o);
            },
            token, impl_, opts);
    }

    /// Acquires the lease, waiting without a time limit. @copydetails async_acquire
    template <class Token = detail::default_token_t<executor_type>>
    auto async_acquire(Token&& token = {}) {
        return async_acquire(acquire_options{}, std::forward<Token>(token));
    }

    /// Tries once: fails with `errc::held_by_other` instead of waiting.
    template <class Token = detail::default_token_t<executor_type>>
    auto async_try_acquire(Token&& token = {}) {
        acquire_options o;
        o.wait = false;
        return async_acquire(o, std::forward<Token>(token));
    }

    /** Releases the lease: writes a released marker under the current
        version, keeping the fencing token. Renewal stops at once and
        `async_wait_lost` waiters complete with `errc::released`.

        Also works after the lease was lost by deadline, as long as nobody
        took it over: the marker then lets the next contender in at once.

        @par Handler signature
        `void(error_code)`. `errc::lease_lost` when someone else had taken
        over; `errc::not_held` when there is nothing to release.
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_release(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [](auto handler, std::shared_ptr<impl> self) { self->start_release(std::move(handler)); }, token, impl_);
    }

    /** Completes when the held lease is lost (`errc::lease_lost`, at the
        renew deadline or when a renewal finds it taken over) or released
        (`errc::released`). Completes at once with `errc::not_held` when the
        lease is not held, with `errc::lease_lost` when its renew deadline has
        passed, and with `errc::released` while a release is under way. Any
        number may wait; every waiter of a term completes before the next term
        begins.

        Combine it with protected work so that the work is cancelled on loss
        (see `run_while_held`).

        @par Per-Operation Cancellation
        All types: completes with `operation_aborted`; the lease is unaffected.
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_wait_lost(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [](auto handler, std::shared_ptr<impl> self) { self->start_wait_lost(std::move(handler)); }, token, impl_);
    }

    /** Reads the lease record as stored now (one read).

        @par Handler signature
        `void(error_code, std::optional<lease_info>)`: empty when no record exists.
        On failure `last_diagnostics()` holds what the store said (e.g. `NoSuchBucket`).
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_inspect(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, std::optional<lease_info>)>(
            [](auto handler, std::shared_ptr<impl> self) { self->start_inspect(std::move(handler)); }, token, impl_);
    }

    /// True while held and before the renew deadline, by this participant's own clock; false once a release began.
    bool is_held() const noexcept { return !impl_->release_op.busy() && impl_->m.is_held(impl_->now()); }
    /// The fencing token of the current (or last) term; 0 before the first acquisition.
    std::uint64_t fencing_token() const noexcept { return impl_->m.token(); }
    /// Time left before the renew deadline; zero when not held. The budget of protected work.
    std::chrono::nanoseconds remaining() const noexcept {
        return impl_->release_op.busy() ? std::chrono::nanoseconds(0) : impl_->m.remaining(impl_->now());
    }
    /// When the lease stops being valid by this participant's clock, while held.
    std::optional<time_point> valid_until() const noexcept {
        if (impl_->m.state() != lease_state::held) return std::nullopt;
        return time_point(std::chrono::duration_cast<typename Clock::duration>(impl_->m.valid_until()));
    }
    /// Where this object is in its life.
    lease_state state() const noexcept { return impl_->m.state(); }
    /// This holder's instance name as written in the record (`owner#suffix`).
    std::string const& owner() const noexcept { return impl_->m.instance(); }
    /// The options in force.
    lease_options const& options() const noexcept { return impl_->m.options(); }
    /// What the store said about the last failure.
    diagnostics const& last_diagnostics() const noexcept { return impl_->m.last_diagnostics(); }
    /// The Clock policy (a simulation reads participants' clocks through it).
    Clock const& clock() const noexcept { return impl_->clock; }
    /// The backend.
    Backend& backend() noexcept { return impl_->backend; }

private:
    static lease_options validated(lease_options o) {
        o.validate();
        return o;
    }


    // The default executor type is the one the state keeps: the handle need not keep a copy (bytes
    // per lease).
    static constexpr bool executor_in_state = std::is_same_v<Executor, boost::asio::any_io_executor>;
    struct no_copy {
        explicit no_copy(executor_type const&) noexcept {}
    };
    [[no_unique_address]] std::conditional_t<executor_in_state, no_copy, executor_type> ex_;
    std::shared_ptr<impl> impl_;
};

} // namespace baton

#include <baton/recipe/impl/lease.hpp>

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/lease.ipp>
#endif

#endif
