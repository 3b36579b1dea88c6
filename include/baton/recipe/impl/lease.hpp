// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_LEASE_HPP
#define BATON_RECIPE_IMPL_LEASE_HPP

// Layer: recipes, internal. The state a lease's four lanes share (acquire, renew, release, the
// waiters of async_wait_lost): the store, the machine, the timer slots on the shared queue, the
// term, the pending operations, observation and the one place a loss is delivered. The lanes
// run on the one driver of every machine (store/detail/machine_op.hpp); each lane's rules are
// in lease_lanes.hpp.

#include <baton/recipe/lease.hpp>
#include <baton/store/detail/machine_op.hpp>
#include <baton/store/detail/read_machines.hpp>

namespace baton {

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
struct basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl : std::enable_shared_from_this<impl> {
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

    // A backend's answer (lane_call) never runs inside one of our initiating functions
    // (backends complete later), so an operation it completes may hand its handler over by
    // dispatch, saving a hop.
    bool answering = false;  // inside a backend's answer (lane_call); cleared before any handler runs
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

    // ---- the lanes on the one driver -----------------------------------
    // Each lane is a view of this state as a machine: the lease machine's steps for that lane,
    // with the lane's own rules (when an acquisition stops, when a renewal's answer is stale,
    // where its waits go). The one driver runs it through a continuation, lane_call, that
    // carries the lease, the lane's generation, and the term and time a request was sent in.
    struct acquire_lane;
    struct renew_lane;
    struct release_lane;
    struct lane_end {}; // what a lane's end carries: its error_code says it all
    template <class Lane>
    struct lane_call;
    template <class Lane>
    struct lane_ctx;
    template <class Lane>
    using lane_driver = detail::machine_driver<lane_ctx<Lane>>;

    // The acquire and release lanes end lost when the machine has nothing to do (the term ended under them).
    static detail::machine_step lane_or_lost(detail::machine_step a) {
        if (a.what == detail::machine_step::type::none) return detail::machine_step::done(errc::lease_lost);
        return a;
    }

    // Runs step `a` of lane `Lane` (generation `gen`).
    template <class Lane>
    void drive(std::uint64_t gen, detail::machine_step a);
    // Lane `Lane`'s wait ended: its timer slot ran, or (`ec`) it was stopped.
    template <class Lane>
    void drive_waited(std::uint64_t gen, error_code ec = {});

    // ---- acquire ------------------------------------------------------
    // Saturated: a timeout of milliseconds::max() must mean "very long", never overflow.
    static constexpr std::chrono::milliseconds longest_timeout = std::chrono::hours(24 * 365 * 10);

    // Not a template: the caller's handler arrives type-erased, so this and all it calls
    // are compiled once per lease type, not once per handler.
    void start_acquire(boost::asio::any_completion_handler<void(error_code, lease_grant)> h, acquire_options o);

    void interrupt_acquire(stop_reason reason) {
        if (!acquire_op.busy() || acquire_stop != stop_reason::none) return;
        acquire_stop = reason;
        if (acquire_io) return; // the request in flight decides: see acquire_lane
        drive_waited<acquire_lane>(acquire_op.generation(), boost::asio::error::operation_aborted);
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
            if (acquire_op.current(gen) && acquire_stop == stop_reason::none) drive_waited<acquire_lane>(gen);
            return;
        case acquire_timeout:
            if (acquire_op.current(gen)) interrupt_acquire(stop_reason::timed_out);
            return;
        case renew_wait:
            if (gen == renew_gen) drive_waited<renew_lane>(gen);
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
            if (gen == release_gen) drive_waited<release_lane>(gen);
            return;
        case slot_count:
            return;
        }
    }

    // How much earlier than its jittered time a renewal may be sent to share a wake-up:
    // 1/32 of its wait. Early, never late: the margin to the deadline is kept.
    static std::chrono::nanoseconds renew_slack(std::chrono::nanoseconds wait) { return wait / 32; }

    // The acquisition stops (cancelled or timed out) after a write's answer or at a wait. A
    // claim of this acquisition that may have landed is read back once first, or the record
    // would name us unseen and hold every contender off for ttl x skew.
    detail::machine_step stop_acquire() {
        if (m.claim_of_this_acquisition_in_doubt()) {
            disarm(acquire_wait);
            return lane_or_lost(m.acquire_on_wait(now()));
        }
        m.abandon_acquire();
        return detail::machine_step::done(error_of(acquire_stop));
    }

    void finish_acquire(error_code ec);

    // ---- renew ---------------------------------------------------------
    // The renew deadline is enforced by whichever timer is armed: a renew
    // wait never runs past it, and while a request is in flight the
    // deadline timer is armed (and disarmed when the request returns).
    // One timer firing per renewal instead of two: with thousands of
    // leases, each firing costs the reactor a syscall.
    void start_renewal() {
        ++renew_gen;
        drive<renew_lane>(renew_gen, m.renew_schedule(now()));
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

    // ---- release -------------------------------------------------------
    void start_release(boost::asio::any_completion_handler<void(error_code)> h);

    void begin_release() {
        if (!m.can_release()) return finish_release(errc::lease_lost);
        drive<release_lane>(release_gen, lane_or_lost(m.release_start(now())));
    }

    void finish_release(error_code ec);

    // ---- waiters and inspection ----------------------------------------
    void start_wait_lost(boost::asio::any_completion_handler<void(error_code)> h);

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

    void start_inspect(boost::asio::any_completion_handler<void(error_code, std::optional<lease_info>)> h);
    struct inspect_spec;

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

} // namespace baton

#include <baton/recipe/impl/lease_lanes.hpp>

#endif
