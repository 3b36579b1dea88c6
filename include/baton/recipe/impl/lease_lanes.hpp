// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_LEASE_LANES_HPP
#define BATON_RECIPE_IMPL_LEASE_LANES_HPP

// Layer: recipes, internal. A lease's lanes on the one driver (store/detail/machine_op.hpp):
// each lane is a machine made of the lease machine's steps for that lane and the lane's own
// rules; its continuation, lane_call, carries the answers back in the term they were sent in;
// and the operations that start and complete the lanes.

#include <baton/recipe/impl/lease.hpp>

namespace baton {

// The continuation of a lane's request: the lease (held, so that it outlives the request), the
// lane's generation, and the term and time the request was sent in. It runs the answer on the
// lease's executor.
template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
template <class Lane>
struct basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::lane_call {
    std::shared_ptr<impl> self;
    std::uint64_t gen = 0;   // the lane's generation (its pending operation's, or the renewal's)
    std::uint64_t term = 0;  // the term the request in flight was sent in
    detail::own_time sent{}; // when it was sent (observed leases)

    using executor_type = typename impl::executor_type;
    executor_type get_executor() const noexcept { return self->ex(); }

    // A lane stops through its machine (acquire_lane's rules), not through a cancellation.
    boost::asio::cancellation_type cancelled() const noexcept { return boost::asio::cancellation_type::none; }
    void sending(detail::machine_step const&) { Lane{*self, gen}.sending(*this); }
    void wait(std::chrono::nanoseconds d) { Lane{*self, gen}.wait(d); }
    void rest() noexcept {}
    void complete(error_code ec, lane_end) { Lane{*self, gen}.end(ec); }

    void operator()(error_code ec, get_result r) { answer(false, ec, r); }
    void operator()(error_code ec, put_result r) { answer(true, ec, r); }

private:
    template <class Result>
    void answer(bool write, error_code ec, Result& r) {
        auto const keep = self; // `*this` moves into the next request
        impl& s = *keep;
        struct end_of_answer {
            impl& s;
            ~end_of_answer() { s.answering = false; } // also when an observer throws
        } const scope{s};
        s.answering = true;
        if (!Lane{s, gen}.accept(*this, write, ec, r.diag)) return;
        lane_ctx<Lane> c(s, gen);
        lane_driver<Lane>::answer(c, *this, ec, std::move(r));
    }
};

// Where a lane's run lives for the driver: in the lease itself (a lane outlives every call).
template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
template <class Lane>
struct basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::lane_ctx {
    struct spec {
        using machine = Lane;
        using result_type = lane_end;
        // The lease machine settles its own writes: a store's operation_aborted is its to judge.
        static constexpr bool passes_store_aborts = true;
        lane_end finish(impl&, std::string const&, Lane&, error_code&) const noexcept { return {}; }
    };
    struct view { // the machine: a view of the lease, nothing to free
        Lane lane;
        Lane* operator->() noexcept { return &lane; }
        Lane& operator*() noexcept { return lane; }
        void reset() noexcept {}
    };
    using host_type = impl;
    using spec_type = spec;

    lane_ctx(impl& s, std::uint64_t gen) : host(&s), key(s.m.options().key), m{Lane{s, gen}} {}

    impl* host;
    std::string const& key;
    spec_type spec{};
    view m;
    std::string asked{};
    bool went_async = true; // a lane completes itself (lane_call::complete)
};

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
template <class Lane>
void basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::drive(std::uint64_t gen, detail::machine_step a) {
    lane_call<Lane> call{this->shared_from_this(), gen};
    lane_ctx<Lane> c(*this, gen);
    lane_driver<Lane>::step(c, call, std::move(a));
}

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
template <class Lane>
void basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::drive_waited(std::uint64_t gen, error_code ec) {
    lane_call<Lane> call{this->shared_from_this(), gen};
    lane_ctx<Lane> c(*this, gen);
    lane_driver<Lane>::waited(c, call, ec);
}

// The acquire lane: the claim and its reads. Stopped (cancelled or timed out), it sends no new
// claim: only a claim of ours found landed completes the operation (refreshed first when it
// landed too late to act on), and a claim in doubt is read back once.
template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
struct basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::acquire_lane {
    impl& s;
    std::uint64_t gen;
    using step = detail::machine_step;

    step on_get(error_code ec, get_result const& r) {
        step next = s.m.acquire_on_read(s.now(), ec, r.found, r.diag);
        after_answer(next, false);
        return next;
    }
    step on_put(error_code ec, put_result const& r) {
        step next = s.m.acquire_on_write(s.now(), ec, r);
        after_answer(next, true);
        return next;
    }
    step on_wait() { return lane_or_lost(s.m.acquire_on_wait(s.now())); }
    step on_cancel() { return s.stop_acquire(); } // stopped at a wait

    void after_answer(step& next, bool wrote) {
        if (s.acquire_stop != stop_reason::none && !(next.what == step::type::done && !next.ec) && !s.m.refreshing_late_claim()) {
            if (wrote) {
                next = s.stop_acquire();
                return;
            }
            s.m.abandon_acquire();
            next = step::done(error_of(s.acquire_stop));
            return;
        }
        if (next.what == step::type::none) next = step::done(errc::lease_lost);
    }

    bool accept(lane_call<acquire_lane> const& call, bool write, error_code const& ec, diagnostics const& d) {
        s.acquire_io = false;
        if (s.closed) return false;
        s.observe_answer(lease_lane::acquire, write, call.sent, ec, d);
        return true;
    }
    void sending(lane_call<acquire_lane>& call) {
        s.acquire_io = true;
        call.sent = s.sent_at();
    }
    void wait(std::chrono::nanoseconds d) { s.arm(acquire_wait, d, gen); }
    void end(error_code ec) { s.finish_acquire(ec); }
};

// The renew lane: renewals while held, and their reads. An answer of an ended term is dropped
// (lane_call's term); one of a renewal stopped since (a release, a loss) moves nothing on.
template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
struct basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::renew_lane {
    impl& s;
    std::uint64_t gen;
    using step = detail::machine_step;

    step on_get(error_code ec, get_result const& r) {
        step next = s.m.renew_on_read(s.now(), ec, r.found, r.diag);
        if (!moves_on()) return step::none();
        return next;
    }
    step on_put(error_code ec, put_result const& r) {
        step next = s.m.renew_on_write(s.now(), ec, r);
        if (!moves_on()) return step::none();
        return next;
    }
    step on_wait() {
        if (s.deliver_loss_if_due(s.now())) return step::none();
        return s.m.renew_on_wait(s.now());
    }
    step on_cancel() { return step::none(); } // never asked: a renewal's wait is not stopped, its generation is

    // After an answer the machine has taken: false when the lane rests instead of taking its next step.
    bool moves_on() {
        ++s.deadline_gen; // disarm: the renew wait (or the next request) enforces the deadline now
        s.disarm(renew_deadline);
        if (s.release_after_renew) {
            s.release_after_renew = false;
            s.begin_release();
            return false;
        }
        if (gen != s.renew_gen) return false;
        // An answer run late (a paused process) may find the deadline passed: the loss is
        // delivered now, not one timer tick later.
        if (s.deliver_loss_if_due(s.now())) return false;
        // A success moves the deadline later; the armed timer notices when it fires and re-arms.
        return true;
    }

    bool accept(lane_call<renew_lane> const& call, bool write, error_code const& ec, diagnostics const& d) {
        if (s.closed || call.term != s.term) return false;
        s.renew_io = false;
        s.observe_answer(lease_lane::renew, write, call.sent, ec, d);
        if constexpr (observed) {
            if (write && !ec) s.observe_renewed(call.sent);
        }
        return true;
    }
    void sending(lane_call<renew_lane>& call) {
        s.arm_deadline();
        s.renew_io = true;
        call.term = s.term;
        call.sent = s.sent_at();
    }
    void wait(std::chrono::nanoseconds d) {
        // The slack is of the wait armed, which the deadline may have cut short.
        auto const w = std::max(std::min(d, s.m.deadline() - s.now()), std::chrono::nanoseconds(0));
        s.arm(renew_wait, w, gen, renew_slack(w));
    }
    // Lost (lease_machine::lose): taken over, deleted, unreadable, or past the deadline. Were the
    // driver to end the lane for a step it cannot take, the term ends here.
    void end(error_code) {
        s.m.end_term();
        s.deliver_loss();
    }
};

// The release lane: the released marker and its reads. Not stopped once begun (a release
// that stopped half-way would leave the record's fate unknown to everyone).
template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
struct basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::release_lane {
    impl& s;
    std::uint64_t gen;
    using step = detail::machine_step;

    step on_get(error_code ec, get_result const& r) { return lane_or_lost(s.m.release_on_read(s.now(), ec, r.found, r.diag)); }
    step on_put(error_code ec, put_result const& r) { return lane_or_lost(s.m.release_on_write(s.now(), ec, r)); }
    step on_wait() { return lane_or_lost(s.m.release_on_wait(s.now())); }
    step on_cancel() { return on_wait(); } // never asked: a release is not stopped

    bool accept(lane_call<release_lane> const& call, bool write, error_code const& ec, diagnostics const& d) {
        if (s.closed) return false;
        s.observe_answer(lease_lane::release, write, call.sent, ec, d);
        return true;
    }
    void sending(lane_call<release_lane>& call) { call.sent = s.sent_at(); }
    void wait(std::chrono::nanoseconds d) { s.arm(release_wait, d, ++s.release_gen); }
    void end(error_code ec) { s.finish_release(ec); }
};

// async_inspect: one read of the record, on the one driver as a call of its own.
template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
struct basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::inspect_spec
    : detail::one_read_spec<std::optional<lease_info>> {
    result_type finish(impl& s, std::string const&, machine& read, error_code& ec) const {
        s.inspect_busy = false;
        std::optional<lease_info> info;
        auto& r = read.result();
        if (ec) s.m.note_failure(std::move(r.diag));
        if (!ec && r.found) {
            lease_info i;
            diagnostics d;
            ec = detail::lease_machine::describe(*r.found, i, d);
            if (ec) s.m.note_failure(std::move(d));
            else info = std::move(i);
        }
        return info;
    }
};


template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
void basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::start_acquire(boost::asio::any_completion_handler<void(error_code, lease_grant)> h, acquire_options o) {
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
    drive<acquire_lane>(gen, lane_or_lost(m.acquire_start(now(), o.wait,
                                                          o.timeout ? std::chrono::nanoseconds(std::min(*o.timeout, longest_timeout))
                                                                    : std::chrono::nanoseconds::max())));
}


template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
void basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::finish_acquire(error_code ec) {
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



template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
void basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::start_release(boost::asio::any_completion_handler<void(error_code)> h) {
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


template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
void basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::finish_release(error_code ec) {
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

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
void basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::start_wait_lost(boost::asio::any_completion_handler<void(error_code)> h) {
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

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
void basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::start_inspect(boost::asio::any_completion_handler<void(error_code, std::optional<lease_info>)> h) {
    if (closed)
        return post_completion(std::move(h), error_code(boost::asio::error::operation_aborted),
                               std::optional<lease_info>{});
    if (inspect_busy)
        return post_completion(std::move(h), error_code(errc::operation_in_progress), std::optional<lease_info>{});
    inspect_busy = true;
    // Run on the lease's executor, where its state lives, and completed from there by a post,
    // as every lease operation is (the caller's handler may be bound elsewhere).
    auto done = boost::asio::bind_executor(ex(), [self = this->shared_from_this(), h = std::move(h)](error_code ec, std::optional<lease_info> info) mutable {
        self->post_completion(std::move(h), ec, std::move(info));
    });
    boost::asio::async_compose<decltype(done), void(error_code, std::optional<lease_info>)>(
        detail::machine_op<impl, inspect_spec>(this->shared_from_this(), m.options().key, inspect_spec{}), done, ex());
}

} // namespace baton

#endif
