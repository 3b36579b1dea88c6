// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_SETTLED_WRITE_OP_HPP
#define BATON_RECIPE_DETAIL_SETTLED_WRITE_OP_HPP

// Layer: recipes, internal. The one driver of a settled write (fenced writes, kv writes, and the
// recipes after them): it runs a write machine (store/detail/settling_write.hpp) against a
// record store as an operation for `async_compose`, so that every such recipe keeps the
// handler's associated executor, allocator and cancellation slot, never completes inline,
// honours terminal cancellation without abandoning a write in doubt, and owns its machine:
// the answers of one call can never reach another.

#include <baton/core/detail/random.hpp>
#include <baton/core/error.hpp>
#include <baton/recipe/detail/envelope.hpp>
#include <baton/recipe/write_observer.hpp>
#include <baton/store/detail/settling_write.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/assert.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>

namespace baton::detail {

// What the copies of one recipe object (basic_fenced, basic_kv, ...) share: the executor, the
// store, the retry budget, the clock, the random source, and the versions last seen per key.
template <class Backend, class Clock, class RetryPolicy, class Seen, class Observer = no_write_observer>
struct recipe_state {
    using executor_type = boost::asio::any_io_executor;
    using timer_clock = typename Clock::timer_clock;
    using timer = boost::asio::basic_waitable_timer<timer_clock, boost::asio::wait_traits<timer_clock>, executor_type>;
    using observer_type = Observer;

    // `seed`: nonces and jitter replay under it (simulations); none: kernel randomness.
    recipe_state(executor_type e, Backend b, RetryPolicy r, Clock c, std::optional<std::uint64_t> seed,
                 std::size_t max_cached_keys, Observer obs = {})
        : ex(std::move(e)), backend(std::move(b)), retry(std::move(r)), clock(std::move(c)), rng(seeded_generator(seed)),
          versions(max_cached_keys), observer(std::move(obs)) {}

    executor_type ex;
    Backend backend;
    RetryPolicy retry;
    Clock clock;
    std::mt19937_64 rng;
    version_cache<Seen> versions;
    [[no_unique_address]] Observer observer;
};

/* One settled write, as an operation for `async_compose<Token, void(error_code, result_type)>`.
   `Spec` holds what is the recipe's own:
     using machine; using result_type;
     error_code check(result_type&)           refuses bad arguments before anything is sent;
     std::unique_ptr<machine> make(State&, std::string const& key);
     machine_step compute(machine&)             answers a `compute` step (kv's update; optional);
     template <class Self> void send(State&, std::string key, machine_step&, machine&, Self&&)
                                              sends a `write` step (a store hook, or async_put);
     result_type result(machine const&, error_code);
     static constexpr std::string_view recipe; std::string_view operation() const;
     std::uint64_t token() const               name the call in the observer's write_event. */
template <class State, class Spec>
struct settled_write_op {
    using machine = typename Spec::machine;
    using result_type = typename Spec::result_type;

    std::shared_ptr<State> st;
    std::string key;
    Spec spec;
    std::unique_ptr<machine> m{};
    std::unique_ptr<typename State::timer> timer{};
    bool went_async = false; // a request or a wait was started: completing now is not inline
    std::chrono::nanoseconds started{0}; // when the call began, for the observer's latency

    static constexpr bool observed = observes_writes<typename State::observer_type>;

    settled_write_op(std::shared_ptr<State> s, std::string k, Spec sp)
        : st(std::move(s)), key(std::move(k)), spec(std::move(sp)) {}

    template <class Self>
    void operator()(Self& self) {
        self.reset_cancellation_state(boost::asio::enable_terminal_cancellation());
        if constexpr (observed) started = st->clock.now().time_since_epoch();
        result_type refused;
        if (auto ec = spec.check(refused)) {
            observe(ec, refused);
            return complete(self, ec, std::move(refused));
        }
        m = spec.make(*st, key);
        step(self, m->start());
    }
    template <class Self>
    void operator()(Self& self, error_code ec, put_result r) {
        step(self, m->on_put(unasked_abort(self, ec), r));
    }
    template <class Self>
    void operator()(Self& self, error_code ec, get_result r) {
        if (!ec && r.found) r.found->key = key;
        step(self, m->on_get(unasked_abort(self, ec), r));
    }
    template <class Self>
    void operator()(Self& self, error_code ec) { // a backoff wait ended
        if (ec || cancelled(self)) return step(self, m->on_cancel());
        step(self, m->on_wait());
    }
    template <class Self>
    void operator()(Self& self, error_code ec, result_type r) { // posted: the call finished before going async
        self.complete(ec, std::move(r));
    }

private:
    // A backend that reports operation_aborted although this operation was not cancelled
    // (a wrapper's own cancellation, say): the request's fate is unknown, not abandoned.
    template <class Self>
    static error_code unasked_abort(Self& self, error_code ec) {
        if (ec == boost::asio::error::operation_aborted && !cancelled(self)) return errc::unknown_outcome;
        return ec;
    }
    template <class Self>
    static bool cancelled(Self& self) {
        return self.cancelled() != boost::asio::cancellation_type::none;
    }

    template <class Self>
    void step(Self& self, machine_step a) {
        using t = machine_step::type;
        for (;;) {
            if (a.what != t::done && a.what != t::read && cancelled(self) && !m->stopping()) a = m->on_cancel();
            if (a.what != t::compute) break;
            if constexpr (requires { spec.compute(*m); }) {
                a = spec.compute(*m);
            } else { // a machine that never asks to compute: never reached, and never reported as written
                a = machine_step::done(boost::asio::error::operation_not_supported);
            }
        }
        if (a.what == t::none || a.what == t::list) { // no write machine asks for these; were one to, nothing is claimed of its writes
            BOOST_ASSERT_MSG(false, "a write machine returned no step");
            a = machine_step::done(errc::unknown_outcome);
        }
        if (a.what != t::done) went_async = true;
        switch (a.what) {
        case t::read: {
            std::string k = key; // `self` holds this op: copy what the call needs before moving it
            if (m->stopping()) // the settling read is not cancelled: it decides what the caller is told
                return st->backend.async_get(std::move(k), boost::asio::bind_cancellation_slot(boost::asio::cancellation_slot(), std::move(self)));
            return st->backend.async_get(std::move(k), std::move(self));
        }
        case t::write:
            return spec.send(*st, std::string(key), a, *m, std::move(self));
        case t::wait:
            if (!timer) timer = std::make_unique<typename State::timer>(st->ex);
            timer->expires_at(st->clock.timer_expiry(a.delay));
            return timer->async_wait(std::move(self));
        case t::none:
        case t::list:
        case t::compute:
        case t::done:
            break;
        }
        st->versions.remember(key, m->last_seen());
        result_type res = spec.result(*m, a.ec);
        if (a.ec) res.diag = m->diag();
        res.requests = m->requests();
        res.settled_by_read = m->settled_by_read();
        observe(a.ec, res);
        m.reset();
        timer.reset();
        complete(self, a.ec, std::move(res));
    }

    // The observer's event for the call that ends with `ec` (the machine is still there, unless
    // the call was refused before it was made).
    void observe(error_code ec, result_type const& res) {
        if constexpr (observed) {
            write_event e;
            e.recipe = Spec::recipe;
            e.operation = spec.operation();
            e.key = key;
            e.outcome = classify_write(ec);
            e.ec = ec;
            e.token = spec.token();
            e.winning_token = res.winning_token;
            e.requests = res.requests;
            if (m) {
                e.retries = m->retries();
                e.ambiguous = m->ambiguous();
                if (e.ambiguous > 0)
                    e.settlement = res.settled_by_read               ? settlement_outcome::landed
                                   : ec == errc::unknown_outcome ? settlement_outcome::unresolved
                                                                 : settlement_outcome::not_landed;
            }
            e.latency = st->clock.now().time_since_epoch() - started;
            e.diag = &res.diag;
            st->observer.on_write(e);
        }
    }

    template <class Self>
    void complete(Self& self, error_code ec, result_type res) {
        if (went_async) return self.complete(ec, std::move(res));
        went_async = true;
        // Posted through the operation's own executor: the handler's may be type-erased, and an
        // erased executor cannot be required to never block. The handler still runs on its own
        // executor (post dispatches there).
        auto ex = self.get_io_executor();
        boost::asio::post(ex, boost::asio::append(std::move(self), ec, std::move(res)));
    }
};

// The plain way to send a write step: a conditional put.
template <class State, class Self>
void send_put(State& st, std::string key, machine_step& a, Self&& self) {
    st.backend.async_put(std::move(key), std::move(a.body), std::move(a.pc), std::forward<Self>(self));
}

} // namespace baton::detail

#endif
