// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_SETTLED_WRITE_OP_HPP
#define BATON_RECIPE_DETAIL_SETTLED_WRITE_OP_HPP

// Layer: recipes, internal. A settled write (fenced writes, kv writes): a write machine
// (store/detail/settling_write.hpp) run by the one driver, machine_op, with what the recipes
// share around it: their state, the versions cache, and the observer's write events.

#include <baton/core/detail/random.hpp>
#include <baton/core/error.hpp>
#include <baton/recipe/detail/envelope.hpp>
#include <baton/store/detail/machine_op.hpp>
#include <baton/recipe/write_observer.hpp>
#include <baton/store/detail/settling_write.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/basic_waitable_timer.hpp>

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

/* The recipe half of one settled write (fenced, kv), run by machine_op: the versions cache, the
   result's common fields and the observer's write_event. `Spec` holds what is the recipe's own:
     using machine; using result_type;
     error_code check(result_type&)           refuses bad arguments before anything is sent;
     std::unique_ptr<machine> make(State&, std::string const& key);
     machine_step compute(machine&)           answers a `compute` step (kv's update; optional);
     template <class Self> void send(State&, std::string key, machine_step&, machine&, Self&&)
                                              sends a `write` step (a store hook; optional: a conditional put otherwise);
     result_type result(machine const&, error_code);
     static constexpr std::string_view recipe; std::string_view operation() const;
     std::uint64_t token() const               name the call in the observer's write_event. */
template <class State, class Spec>
struct settled_write_spec {
    using machine = typename Spec::machine;
    using result_type = typename Spec::result_type;
    static constexpr bool observed = observes_writes<typename State::observer_type>;

    Spec inner;
    std::chrono::nanoseconds started{0}; // when the call began, for the observer's latency

    settled_write_spec(Spec s) : inner(std::move(s)) {} // NOLINT: converts, so callers name only their Spec

    error_code check(State& st, std::string const& key, result_type& refused) {
        if constexpr (observed) started = st.clock.now().time_since_epoch();
        auto ec = inner.check(refused);
        if (ec) observe(st, key, nullptr, ec, refused);
        return ec;
    }
    std::unique_ptr<machine> make(State& st, std::string const& key) { return inner.make(st, key); }
    machine_step compute(machine& m)
        requires requires(Spec& s) { s.compute(m); }
    {
        return inner.compute(m);
    }
    template <class Self>
        requires requires(Spec& s, State& st, machine_step& a, machine& m, Self&& self) {
            s.send(st, std::string(), a, m, std::forward<Self>(self));
        }
    void send(State& st, std::string key, machine_step& a, machine& m, Self&& self) {
        inner.send(st, std::move(key), a, m, std::forward<Self>(self));
    }
    result_type finish(State& st, std::string const& key, machine& m, error_code ec) {
        st.versions.remember(key, m.last_seen());
        result_type res = inner.result(m, ec);
        if (ec) res.diag = m.diag();
        res.requests = m.requests();
        res.settled_by_read = m.settled_by_read();
        observe(st, key, &m, ec, res);
        return res;
    }

private:
    // The observer's event for the call that ends with `ec` (`m` null: refused before it was made).
    void observe(State& st, std::string const& key, machine const* m, error_code ec, result_type const& res) {
        if constexpr (observed) {
            write_event e;
            e.recipe = Spec::recipe;
            e.operation = inner.operation();
            e.key = key;
            e.outcome = classify_write(ec);
            e.ec = ec;
            e.token = inner.token();
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
            e.latency = st.clock.now().time_since_epoch() - started;
            e.diag = &res.diag;
            st.observer.on_write(e);
        }
    }
};

// One settled write, as an operation for `async_compose<Token, void(error_code, result_type)>`.
template <class State, class Spec>
using settled_write_op = machine_op<State, settled_write_spec<State, Spec>>;

} // namespace baton::detail

#endif
