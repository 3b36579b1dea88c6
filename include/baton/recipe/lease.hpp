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

    One long file on purpose: the four lanes (acquire, renew, release,
    waiters) share one impl whose term and generation checks keep an older
    term's answers away from a newer one; split apart they would have to
    expose that state. The observer glue is the next piece to move out.
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
struct lease_access {
    template <class Lease>
    static auto closed_watch(Lease const& l) -> lease_closed_watch<typename decltype(l.impl_)::element_type> {
        return {l.impl_};
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

    struct impl : std::enable_shared_from_this<impl> {
        // Type-erased inside: the handle's Executor only names the default completion token.
        using executor_type = boost::asio::any_io_executor;
        using timer_clock = typename Clock::timer_clock;
        using timer_queue = detail::timer_queue<timer_clock>;
        using timer_time = typename timer_clock::time_point;

        impl(executor_type e, Backend b, lease_options o, RetryPolicy r, Signer s, Clock c, Observer obs)
            : backend(std::move(b)), retry(std::move(r)), signer(std::move(s)), clock(std::move(c)),
              observer(std::move(obs)), m(o, detail::seed_or_random(o.random_seed), hooks()), timers(detail::timer_queues<timer_clock>::of(e)) {
            detail::adopt_signer(backend, signer);
            timer_entry.owner = this;
            timer_entry.lock = [](void* c) -> std::shared_ptr<void> { return static_cast<impl*>(c)->weak_from_this().lock(); };
            timer_entry.fire = [](void* c, timer_time t) { static_cast<impl*>(c)->on_timers(t); };
        }

        ~impl() { timers->remove(timer_entry); }

        // The lease's executor: the queue's, which compares equal to it (interchangeable), kept once.
        executor_type const& ex() const noexcept { return timers->executor(); }

        Backend backend;
        RetryPolicy retry;
        [[no_unique_address]] Signer signer;
        [[no_unique_address]] Clock clock;
        [[no_unique_address]] Observer observer;
        detail::lease_machine m;
        // The lease's waits share one timer with every lease on its executor (thousands of leases
        // cost one reactor timer): each is a slot here, and the lease holds one entry in the queue,
        // due when its earliest slot is.
        enum slot_id : unsigned char { acquire_wait, acquire_timeout, renew_wait, renew_deadline, release_wait, slot_count };
        struct slot {
            static constexpr timer_time never = timer_time::max();
            timer_time due = never; // runs by then; `never`: not armed (a wait to the end of time never runs)
            std::uint64_t gen = 0;  // the generation it was armed for (see `run_slot`)
            bool armed() const noexcept { return due != never; }
            void disarm() noexcept { due = never; }
        };
        std::shared_ptr<timer_queue> timers;
        typename timer_queue::entry timer_entry;
        slot slots[slot_count];
        timer_time renew_early{}; // the renew wait may run from then (a window to share a wake-up)
        // One per acquisition. Every request of the renew lane carries the term it was sent in,
        // and its answer is dropped unless that term is still current: an answer of an ended
        // term never reaches the machine or the new term's timers (docs/design.md §7). If such a write
        // lands late, the store's precondition refuses it or the new claim reads it as ours.
        std::uint64_t term = 0;

        // acquire lane
        detail::pending_op<void(error_code, lease_grant)> acquire_op;
        // Why the acquisition was asked to stop (a byte, not an error_code: bytes per lease).
        enum class stop_reason : unsigned char { none, cancelled, timed_out };
        static error_code error_of(stop_reason r) {
            return r == stop_reason::timed_out ? error_code(errc::timeout) : error_code(boost::asio::error::operation_aborted);
        }
        // release lane
        detail::pending_op<void(error_code)> release_op;
        // lost-lease waiters
        struct waiter {
            std::uint64_t id;
            detail::pending_op<void(error_code)> op;
        };
        struct waiter_list {
            std::list<waiter> items; // a list: erasing never move-assigns handlers
            std::uint64_t next_id = 1;
        };
        std::unique_ptr<waiter_list> waiters; // from the first wait (bytes per lease: most have none)
        // The lanes' wait generations and flags, packed together (bytes per lease).
        unsigned renew_gen = 0, deadline_gen = 0; // renew lane
        unsigned release_gen = 0;                 // release lane
        stop_reason acquire_stop = stop_reason::none;
        bool acquire_io = false;
        bool renew_io = false;
        bool release_after_renew = false;
        bool inspect_busy = false;
        bool firing = false; // in `on_timers`: the entry is rescheduled once, at the end
        bool closed = false;

        // The machine calls back into this impl (it never moves: it lives in its shared_ptr).
        detail::lease_hooks hooks() {
            static constexpr detail::lease_hook_fns fns{&hook_failure, &hook_success,
                                                        detail::observes_settlements<Observer> ? &hook_settled : nullptr,
                                                        detail::observes_retries<Observer> ? &hook_retry : nullptr};
            return {this, &fns};
        }
        static retry_decision hook_failure(void* c, error_code const& ec, unsigned n, double u) {
            return static_cast<impl*>(c)->retry.on_failure(ec, n, u);
        }
        static void hook_success(void* c, unsigned n) { static_cast<impl*>(c)->retry.on_success(n); }
        static void hook_settled(void* c, lease_lane lane, settlement_outcome o, std::uint64_t token) {
            if constexpr (detail::observes_settlements<Observer>) {
                auto& self = *static_cast<impl*>(c);
                lease_settled_event e;
                e.key = self.m.options().key;
                e.lane = lane;
                e.outcome = o;
                e.fencing_token = token;
                self.observer.on_settled(e);
            }
        }
        static void hook_retry(void* c, lease_lane lane, error_code const& ec, unsigned attempt, std::chrono::nanoseconds delay) {
            if constexpr (detail::observes_retries<Observer>) {
                auto& self = *static_cast<impl*>(c);
                lease_retry_event e;
                e.key = self.m.options().key;
                e.lane = lane;
                e.attempt = attempt;
                e.delay = delay;
                e.ec = ec;
                self.observer.on_retry(e);
            }
        }

        detail::own_time now() const { return clock.now().time_since_epoch(); }

        template <class F>
        auto bound(F&& f) {
            return boost::asio::bind_executor(ex(), answer_scope<std::decay_t<F>>{this, std::forward<F>(f)});
        }

        // A backend's answer: it never runs inside one of our initiating functions (backends
        // complete later), so an operation it completes may hand its handler over by dispatch,
        // saving a hop. `f` holds a reference on the lease, and is called as an lvalue so that
        // the reference lives until `answering` is cleared.
        template <class F>
        struct answer_scope {
            impl* self;
            F f;
            template <class... A>
            void operator()(A&&... args) {
                struct end_of_answer {
                    impl* self;
                    ~end_of_answer() { self->answering = false; } // also when an observer throws
                } const scope{self};
                self->answering = true;
                f(std::forward<A>(args)...);
            }
        };
        bool answering = false;  // inside a backend's answer (answer_scope); cleared before any handler runs
        bool initiating = false; // inside start_acquire or start_release (a backend that broke its
                                 // never-inline rule would otherwise have us complete inline)

        // True once per answer: the first completion it makes may be dispatched. Cleared first, so
        // that whatever the handler then calls (close(), another operation) posts as usual.
        bool may_dispatch() noexcept { return std::exchange(answering, false) && !initiating; }

        // Marks an initiating function's extent; what completes inside it is posted.
        struct initiation {
            explicit initiation(impl& i) noexcept : self(i), outer(std::exchange(i.initiating, true)) {
                self.answering = false; // called from user code inside an answer (an observer, say)
            }
            ~initiation() { self.initiating = outer; }
            initiation(initiation const&) = delete;
            initiation& operator=(initiation const&) = delete;
            impl& self;
            bool outer;
        };

        template <class Handler, class... Args>
        void post_completion(Handler&& h, Args&&... args) {
            detail::post_completion(ex(), std::forward<Handler>(h), std::forward<Args>(args)...);
        }

        std::weak_ptr<impl> weak_self() { return this->shared_from_this(); }

        // ---- observation (compiled out for no_lease_observer) ---------------
        static constexpr bool observed = !std::is_same_v<Observer, no_lease_observer>;

        // When a request is sent, for its event's latency.
        detail::own_time sent_at() const {
            if constexpr (observed) return now();
            else return {};
        }

        void observe_answer(lease_lane lane, bool write, detail::own_time sent, error_code const& ec,
                            diagnostics const& d) {
            if constexpr (detail::observes_requests<Observer>) {
                lease_request_event e;
                e.key = m.options().key;
                e.lane = lane;
                e.write = write;
                e.kind = classify_answer(ec, write);
                e.latency = now() - sent;
                e.ec = ec;
                e.diag = &d;
                observer.on_request(e);
            }
        }

        // The machine decided the term is lost (lease_machine::lose, the one place): renewal
        // stops, the observer and then every waiter are told why.
        void deliver_loss(error_code cause = errc::lease_lost) {
            [[maybe_unused]] auto const why = m.last_loss();
            stop_renewal();
            if constexpr (observed) {
                lease_lost_event e;
                e.key = m.options().key;
                e.fencing_token = m.token();
                e.cause = cause;
                e.reason = detail::lease_machine::describe(why);
                e.detail = detail::lease_machine::detail_of(why);
                detail::observe(observer, e);
            }
            notify_waiters(cause);
        }

        lease_grant grant() const {
            lease_grant g;
            g.fencing_token = m.token();
            g.remaining = m.remaining(now());
            g.took_over = m.took_over();
            g.created_record = m.created_record();
            return g;
        }

        // ---- acquire ------------------------------------------------------
        // Saturated: a timeout of milliseconds::max() must mean "very long", never overflow.
        static constexpr std::chrono::milliseconds longest_timeout = std::chrono::hours(24 * 365 * 10);

        // Not a template: the caller's handler arrives type-erased, so this and all it calls
        // are compiled once per lease type, not once per handler.
        void start_acquire(boost::asio::any_completion_handler<void(error_code, lease_grant)> h, acquire_options o) {
            initiation scope(*this);
            if (closed) return post_completion(std::move(h), error_code(boost::asio::error::operation_aborted), lease_grant{});
            if (acquire_op.busy() || release_op.busy())
                return post_completion(std::move(h), error_code(errc::operation_in_progress), lease_grant{});
            if (o.timeout && o.timeout->count() < 0)
                return post_completion(std::move(h), error_code(errc::invalid_argument), lease_grant{});
            auto const t = now(); // one reading for both decisions
            (void)deliver_loss_if_due(t);
            if (m.is_held(t)) return post_completion(std::move(h), error_code{}, grant());
            // A new term: whatever the renew lane still has in flight belongs to the old one, and
            // nothing of the old one may outlive it (a backstop: the loss was delivered above).
            ++term;
            renew_io = false;
            stop_renewal();
            notify_waiters(errc::lease_lost);
            acquire_stop = stop_reason::none;
            if (m.options().wall_clock_tokens) m.set_creation_floor(detail::wall_clock_token_floor(clock));
            auto const gen = acquire_op.start(std::move(h), ex(), weak_self(), [](impl& self) {
                self.interrupt_acquire(stop_reason::cancelled);
            });
            if (o.timeout) {
                arm(acquire_timeout, std::min(*o.timeout, longest_timeout), gen);
            }
            step_acquire(m.acquire_start(now(), o.wait,
                                         o.timeout ? std::chrono::nanoseconds(std::min(*o.timeout, longest_timeout))
                                                   : std::chrono::nanoseconds::max()));
        }

        void interrupt_acquire(stop_reason reason) {
            if (!acquire_op.busy() || acquire_stop != stop_reason::none) return;
            acquire_stop = reason;
            if (acquire_io) return; // the request in flight decides: see the handlers below
            if (settle_before_stopping()) return;
            m.abandon_acquire();
            finish_acquire(error_of(reason));
        }

        // ---- timers ---------------------------------------------------------
        // Arms slot `id` to run after `delay` (own time) for generation `gen`, replacing what it
        // held. `slack`: it may run that much earlier, to share another lease's wake-up.
        void arm(slot_id id, std::chrono::nanoseconds delay, std::uint64_t gen, std::chrono::nanoseconds slack = {}) {
            auto& sl = slots[id];
            sl.due = clock.timer_expiry(delay);
            if (id == renew_wait) renew_early = sl.due - std::chrono::duration_cast<typename timer_clock::duration>(slack);
            sl.gen = gen;
            reschedule();
        }

        void disarm(slot_id id) {
            if (!slots[id].armed()) return;
            slots[id].disarm();
            reschedule();
        }

        // The lease's entry in the queue: due with its earliest slot, or out of the queue.
        void reschedule() {
            if (firing) return;
            bool any = false;
            timer_time due{}, early{};
            for (int i = 0; i < slot_count; ++i) {
                if (!slots[i].armed()) continue;
                timer_time const e = early_of(static_cast<slot_id>(i));
                if (!any || slots[i].due < due) due = slots[i].due;
                if (!any || e < early) early = e;
                any = true;
            }
            if (!any) return timers->remove(timer_entry);
            timers->schedule(timer_entry, early, due);
        }

        timer_time early_of(slot_id id) const { return id == renew_wait ? renew_early : slots[id].due; }

        // The queue fired at `t`: the slots due by then run, earliest first. A slot armed again
        // while they run waits for the next wake-up, as a separate timer would.
        void on_timers(timer_time t) {
            if (closed) return;
            slot due_at_fire[slot_count];
            std::copy(std::begin(slots), std::end(slots), std::begin(due_at_fire));
            firing = true;
            try {
                run_due_slots(t, due_at_fire);
            } catch (...) { // an observer threw: the slots still armed keep their place in the queue
                firing = false;
                if (!closed) reschedule();
                throw;
            }
            firing = false;
            if (!closed) reschedule();
        }

        void run_due_slots(timer_time t, slot (&due_at_fire)[slot_count]) {
            for (;;) {
                int next = -1;
                for (int i = 0; i < slot_count; ++i) {
                    auto const& sl = slots[i];
                    auto const& was = due_at_fire[i];
                    bool const unchanged = sl.armed() && was.armed() && sl.due == was.due && sl.gen == was.gen;
                    if (unchanged && !(t < early_of(static_cast<slot_id>(i))) && (next < 0 || sl.due < slots[next].due))
                        next = i;
                }
                if (next < 0 || closed) break;
                auto const gen = slots[next].gen;
                slots[next].disarm();
                due_at_fire[next].disarm();
                run_slot(static_cast<slot_id>(next), gen);
            }
        }

        void run_slot(slot_id id, std::uint64_t gen) {
            switch (id) {
            case acquire_wait:
                if (acquire_op.current(gen) && acquire_stop == stop_reason::none) step_acquire(m.acquire_on_wait(now()));
                return;
            case acquire_timeout:
                if (acquire_op.current(gen)) interrupt_acquire(stop_reason::timed_out);
                return;
            case renew_wait:
                if (gen != renew_gen || deliver_loss_if_due(now())) return;
                step_renew(m.renew_on_wait(now()));
                return;
            case renew_deadline:
                if (gen != deadline_gen) return;
                if (m.check_deadline(now())) {
                    deliver_loss();
                } else if (m.state() == lease_state::held && renew_io) {
                    arm_deadline(); // fired a hair early; the deadline has not passed by our clock
                }
                return;
            case release_wait:
                if (gen == release_gen) step_release(m.release_on_wait(now()));
                return;
            case slot_count:
                return;
            }
        }

        // How much earlier than its jittered time a renewal may be sent to share a wake-up:
        // 1/32 of its wait. Early, never late: the margin to the deadline is kept.
        static std::chrono::nanoseconds renew_slack(std::chrono::nanoseconds wait) { return wait / 32; }

        // A stopped acquisition whose claim may have landed reads it back once before giving up,
        // or the record would name us unseen and hold every contender off for ttl x skew.
        bool settle_before_stopping() {
            if (!m.claim_of_this_acquisition_in_doubt()) return false;
            disarm(acquire_wait);
            step_acquire(m.acquire_on_wait(now()));
            return true;
        }

        void step_acquire(detail::machine_step a) {
            using t = detail::machine_step::type;
            auto self = this->shared_from_this();
            auto const gen = acquire_op.generation();
            switch (a.what) {
            case t::read:
                acquire_io = true;
                backend.async_get(m.options().key, bound([self, sent = sent_at()](error_code ec, get_result r) {
                    self->acquire_io = false;
                    if (self->closed) return;
                    self->observe_answer(lease_lane::acquire, false, sent, ec, r.diag);
                    auto next = self->m.acquire_on_read(self->now(), ec, r.found, r.diag);
                    // Stopped: only a claim of ours found landed completes the operation (refreshed first
                    // when it landed too late to act on); no new claim is sent.
                    if (self->acquire_stop != stop_reason::none && !(next.what == t::done && !next.ec) && !self->m.refreshing_late_claim()) {
                        self->m.abandon_acquire();
                        return self->finish_acquire(error_of(self->acquire_stop));
                    }
                    self->step_acquire(std::move(next));
                }));
                return;
            case t::write:
                acquire_io = true;
                backend.async_put(m.options().key, std::move(a.body), std::move(a.pc),
                                  bound([self, sent = sent_at()](error_code ec, put_result r) {
                                      self->acquire_io = false;
                                      if (self->closed) return;
                                      self->observe_answer(lease_lane::acquire, true, sent, ec, r.diag);
                                      auto next = self->m.acquire_on_write(self->now(), ec, r);
                                      if (self->acquire_stop != stop_reason::none && !(next.what == t::done && !next.ec) &&
                                          !self->m.refreshing_late_claim()) {
                                          if (self->settle_before_stopping()) return;
                                          self->m.abandon_acquire();
                                          return self->finish_acquire(error_of(self->acquire_stop));
                                      }
                                      self->step_acquire(std::move(next));
                                  }));
                return;
            case t::wait:
                arm(acquire_wait, a.delay, gen);
                return;
            case t::done:
                return finish_acquire(a.ec);
            case t::none:
                return finish_acquire(errc::lease_lost);
            case t::list:
            case t::erase:
            case t::probe:
            case t::copy:
            case t::compute: // the lease machine never asks to list, erase, probe, copy or compute
                BOOST_ASSERT_MSG(false, "the lease machine asked for a step it never asks for");
                return finish_acquire(errc::lease_lost);
            }
        }

        void finish_acquire(error_code ec) {
            if (!acquire_op.busy()) return;
            acquire_stop = stop_reason::none;
            disarm(acquire_wait);
            disarm(acquire_timeout);
            lease_grant g;
            if (!ec) {
                g = grant();
                if constexpr (observed) {
                    lease_acquired_event e;
                    e.key = m.options().key;
                    e.fencing_token = g.fencing_token;
                    e.took_over = g.took_over;
                    e.created_record = g.created_record;
                    e.remaining = g.remaining;
                    detail::observe(observer, e);
                }
                start_renewal();
            }
            acquire_op.complete_from(ex(), may_dispatch(), ec, g);
        }

        // ---- renew ---------------------------------------------------------
        // The renew deadline is enforced by whichever timer is armed: a renew
        // wait never runs past it, and while a request is in flight the
        // deadline timer is armed (and disarmed when the request returns).
        // One timer firing per renewal instead of two: with thousands of
        // leases, each firing costs the reactor a syscall.
        void start_renewal() {
            ++renew_gen;
            step_renew(m.renew_schedule(now()));
        }

        // The renew deadline passed by `t` but its timer has not run yet (an answer ran late, a
        // paused process, or the application's own timer ran first): the machine decides, and
        // the loss is delivered now, before anything else is decided. True when it was.
        bool deliver_loss_if_due(detail::own_time t) {
            if (!m.check_deadline(t)) return false;
            deliver_loss();
            return true;
        }

        void arm_deadline() {
            arm(renew_deadline, m.deadline() - now(), ++deadline_gen);
        }

        void stop_renewal() {
            ++renew_gen;
            ++deadline_gen;
            disarm(renew_wait);
            disarm(renew_deadline);
        }

        void step_renew(detail::machine_step a) {
            using t = detail::machine_step::type;
            auto self = this->shared_from_this();
            unsigned const gen = renew_gen;
            switch (a.what) {
            case t::wait: {
                // The slack is of the wait armed, which the deadline may have cut short.
                auto const wait = std::max(std::min(a.delay, m.deadline() - now()), std::chrono::nanoseconds(0));
                arm(renew_wait, wait, gen, renew_slack(wait));
                return;
            }
            case t::write:
                arm_deadline();
                renew_io = true;
                backend.async_put(m.options().key, std::move(a.body), std::move(a.pc),
                                  bound([self, gen, sent_in = term, sent = sent_at()](error_code ec, put_result r) {
                                      if (self->closed || sent_in != self->term) return;
                                      self->renew_io = false;
                                      self->observe_answer(lease_lane::renew, true, sent, ec, r.diag);
                                      if constexpr (observed) {
                                          if (!ec) self->observe_renewed(sent);
                                      }
                                      auto next = self->m.renew_on_write(self->now(), ec, r);
                                      self->after_renew_io(gen, std::move(next));
                                  }));
                return;
            case t::read:
                arm_deadline();
                renew_io = true;
                backend.async_get(m.options().key, bound([self, gen, sent_in = term, sent = sent_at()](error_code ec, get_result r) {
                    if (self->closed || sent_in != self->term) return;
                    self->renew_io = false;
                    self->observe_answer(lease_lane::renew, false, sent, ec, r.diag);
                    auto next = self->m.renew_on_read(self->now(), ec, r.found, r.diag);
                    self->after_renew_io(gen, std::move(next));
                }));
                return;
            case t::done: // lost (lease_machine::lose): taken over, deleted, unreadable, or past the deadline
                deliver_loss(a.ec ? a.ec : error_code(errc::lease_lost));
                return;
            case t::none:
                return;
            case t::list:
            case t::erase:
            case t::probe:
            case t::copy:
            case t::compute: // the lease machine never asks to list, erase, probe, copy or compute; were it to, the term ends
                BOOST_ASSERT_MSG(false, "the lease machine asked for a step it never asks for");
                m.end_term();
                deliver_loss();
                return;
            }
        }

        // A renewal's answer came back written: how long it took, and how close the term came to its deadline.
        void observe_renewed(detail::own_time sent) {
            auto const t = now();
            lease_renewed_event e;
            e.key = m.options().key;
            e.fencing_token = m.token();
            e.latency = t - sent;
            e.margin = m.deadline() - t;
            detail::observe(observer, e);
        }

        void after_renew_io(unsigned gen, detail::machine_step next) {
            ++deadline_gen; // disarm: the renew wait (or the next request) enforces the deadline now
            disarm(renew_deadline);
            if (release_after_renew) {
                release_after_renew = false;
                return begin_release();
            }
            if (gen != renew_gen) return;
            // An answer run late (a paused process) may find the deadline passed: the loss is
            // delivered now, not one timer tick later.
            if (deliver_loss_if_due(now())) return;
            // A success moves the deadline later; the armed timer notices when it fires and re-arms.
            step_renew(std::move(next));
        }

        // ---- release -------------------------------------------------------
        void start_release(boost::asio::any_completion_handler<void(error_code)> h) {
            initiation scope(*this);
            if (closed) return post_completion(std::move(h), error_code(boost::asio::error::operation_aborted));
            if (release_op.busy() || acquire_op.busy())
                return post_completion(std::move(h), error_code(errc::operation_in_progress));
            (void)deliver_loss_if_due(now()); // a loss comes first: waiters learn lease_lost, not released
            if (!m.can_release()) return post_completion(std::move(h), error_code(errc::not_held));
            // Not cancellable: the marker is written or settled (a release that stopped half-way would
            // leave the record's fate unknown to everyone).
            release_op.start(std::move(h), ex(), weak_self(), [](impl&) {});
            stop_renewal();
            notify_waiters(errc::released);
            if (renew_io) {
                release_after_renew = true; // let the renewal in flight land first
                return;
            }
            begin_release();
        }

        void begin_release() {
            if (!m.can_release()) return finish_release(errc::lease_lost);
            step_release(m.release_start(now()));
        }

        void step_release(detail::machine_step a) {
            using t = detail::machine_step::type;
            auto self = this->shared_from_this();
            switch (a.what) {
            case t::write:
                backend.async_put(m.options().key, std::move(a.body), std::move(a.pc),
                                  bound([self, sent = sent_at()](error_code ec, put_result r) {
                                      if (self->closed) return;
                                      self->observe_answer(lease_lane::release, true, sent, ec, r.diag);
                                      self->step_release(self->m.release_on_write(self->now(), ec, r));
                                  }));
                return;
            case t::read:
                backend.async_get(m.options().key, bound([self, sent = sent_at()](error_code ec, get_result r) {
                    if (self->closed) return;
                    self->observe_answer(lease_lane::release, false, sent, ec, r.diag);
                    self->step_release(self->m.release_on_read(self->now(), ec, r.found, r.diag));
                }));
                return;
            case t::wait: {
                arm(release_wait, a.delay, ++release_gen);
                return;
            }
            case t::done:
                return finish_release(a.ec);
            case t::none:
                return finish_release(errc::lease_lost);
            case t::list:
            case t::erase:
            case t::probe:
            case t::copy:
            case t::compute: // the lease machine never asks to list, erase, probe, copy or compute
                BOOST_ASSERT_MSG(false, "the lease machine asked for a step it never asks for");
                return finish_release(errc::lease_lost);
            }
        }

        void finish_release(error_code ec) {
            if (!release_op.busy()) return;
            notify_waiters(errc::released); // none should be left (start_wait_lost refuses them): a backstop
            if constexpr (observed) {
                lease_released_event e;
                e.key = m.options().key;
                e.fencing_token = m.token();
                e.ec = ec;
                detail::observe(observer, e);
            }
            release_op.complete_from(ex(), may_dispatch(), ec);
        }

        // ---- waiters and inspection ----------------------------------------
        void start_wait_lost(boost::asio::any_completion_handler<void(error_code)> h) {
            if (closed) return post_completion(std::move(h), error_code(boost::asio::error::operation_aborted));
            // Released while the renewal in flight finishes: the term is over for the application.
            if (release_op.busy()) return post_completion(std::move(h), error_code(errc::released));
            if (!m.is_held(now())) {
                auto const s = m.state();
                error_code ec = (s == lease_state::held || s == lease_state::lost) ? error_code(errc::lease_lost)
                                                                                   : error_code(errc::not_held);
                return post_completion(std::move(h), ec);
            }
            if (!waiters) waiters = std::make_unique<waiter_list>();
            std::uint64_t const id = waiters->next_id++;
            auto& w = waiters->items.emplace_back();
            w.id = id;
            w.op.start(std::move(h), ex(), weak_self(), [id](impl& self) { self.on_waiter_cancel(id); });
        }

        void on_waiter_cancel(std::uint64_t id) {
            if (!waiters) return;
            for (auto it = waiters->items.begin(); it != waiters->items.end(); ++it) {
                if (it->id != id) continue;
                it->op.complete(ex(), error_code(boost::asio::error::operation_aborted));
                waiters->items.erase(it);
                return;
            }
        }

        void notify_waiters(error_code ec) {
            if (!waiters) return;
            auto ws = std::move(waiters->items);
            waiters->items.clear();
            for (auto& w : ws) w.op.complete(ex(), ec);
        }

        void start_inspect(boost::asio::any_completion_handler<void(error_code, std::optional<lease_info>)> h) {
            if (closed)
                return post_completion(std::move(h), error_code(boost::asio::error::operation_aborted),
                                       std::optional<lease_info>{});
            if (inspect_busy)
                return post_completion(std::move(h), error_code(errc::operation_in_progress), std::optional<lease_info>{});
            inspect_busy = true;
            auto self = this->shared_from_this();
            backend.async_get(m.options().key,
                              bound([self, h = std::move(h)](error_code ec, get_result r) mutable {
                                  self->inspect_busy = false;
                                  std::optional<lease_info> info;
                                  if (ec) self->m.note_failure(std::move(r.diag));
                                  if (!ec && r.found) {
                                      lease_info i;
                                      diagnostics d;
                                      ec = detail::lease_machine::describe(*r.found, i, d);
                                      if (ec) self->m.note_failure(std::move(d));
                                      else info = std::move(i);
                                  }
                                  self->post_completion(std::move(h), ec, std::move(info));
                              }));
        }

        void shutdown() {
            closed = true;
            for (auto& sl : slots) sl.disarm();
            timers->remove(timer_entry);
            auto const aborted = error_code(boost::asio::error::operation_aborted);
            acquire_op.complete(ex(), aborted, lease_grant{});
            release_op.complete(ex(), aborted);
            notify_waiters(aborted);
        }
    };

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

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/lease.ipp>
#endif

#endif
