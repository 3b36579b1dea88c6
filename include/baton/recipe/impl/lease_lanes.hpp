// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_LEASE_LANES_HPP
#define BATON_RECIPE_IMPL_LEASE_LANES_HPP

// Layer: recipes, internal. A lease's lanes, step by step: each carries out the machine_step its
// lane of the lease machine asks for (a read or a write of the record, a wait on a timer slot,
// the end), feeds the answer back in the term it was sent in, and completes the lane's
// operation.

#include <baton/recipe/impl/lease.hpp>

namespace baton {

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
    step_acquire(m.acquire_start(now(), o.wait,
                                 o.timeout ? std::chrono::nanoseconds(std::min(*o.timeout, longest_timeout))
                                           : std::chrono::nanoseconds::max()));
}

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
void basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::step_acquire(detail::machine_step a) {
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
void basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::step_renew(detail::machine_step a) {
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

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Executor, class Observer>
void basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::after_renew_io(unsigned gen, detail::machine_step next) {
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
void basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>::impl::step_release(detail::machine_step a) {
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

} // namespace baton

#endif
