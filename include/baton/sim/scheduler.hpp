// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_SIM_SCHEDULER_HPP
#define BATON_SIM_SCHEDULER_HPP

/** @file
    Layer: simulation kit (on the store and core). The seeded scheduler: one io_context, virtual time,
    and a random source, so that a simulation run is a pure function of its seed.
*/

#include <baton/sim/manual_clock.hpp>
#include <baton/sim/pausable_executor.hpp>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>

namespace baton::sim {

/** Runs a simulation: everything ready at the current virtual instant
    runs, then time jumps to the next timer deadline, and so on.

    Constructing a scheduler resets virtual time to zero. One at a time.
*/
class scheduler {
public:
    /// A fresh simulation whose randomness all derives from `seed`.
    explicit scheduler(std::uint64_t seed) : seed_(seed), rng_(seed) {
        virtual_clock::reset();
        detail::virtual_timer_queue::instance().shutdown();
    }

    /// Destroys the handlers of the waits still pending (before the io_context goes).
    ~scheduler() { detail::virtual_timer_queue::instance().shutdown(); }

    scheduler(scheduler const&) = delete;
    scheduler& operator=(scheduler const&) = delete;

    /// The io_context every participant runs on.
    boost::asio::io_context& context() noexcept { return ioc_; }
    /// Its executor (for the "network": backends and fault delays).
    boost::asio::io_context::executor_type get_executor() noexcept { return ioc_.get_executor(); }
    /// A new participant executor, which can be frozen on its own.
    pausable_executor make_participant_executor() { return pausable_executor(ioc_.get_executor()); }

    /// The seed.
    std::uint64_t seed() const noexcept { return seed_; }
    /// The simulation's random source: draw every random choice from it.
    std::mt19937_64& rng() noexcept { return rng_; }
    /// A uniform draw from [0, 1).
    double uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

    /// Virtual now.
    virtual_clock::time_point now() const noexcept { return virtual_clock::now(); }

    /// Called after each instant's work has run, with that instant: where invariants are checked.
    void on_step(std::function<void(virtual_clock::time_point)> f) { step_ = std::move(f); }

    /// Runs until virtual time `until`, inclusive of work due then; time reaches `until` even if nothing is left to do.
    void run_until(virtual_clock::time_point until) {
        for (;;) {
            drain();
            if (step_) step_(virtual_clock::now());
            ++steps_;
            auto next = std::min(virtual_clock::next_deadline(), next_timer_expiry());
            if (next == virtual_clock::time_point::max()) {
                // Nothing scheduled: time still passes (a frozen participant's clock runs on).
                next = ioc_.stopped() ? until : virtual_clock::now() + idle_step;
            }
            if (next >= until) {
                virtual_clock::advance_to(until);
                drain();
                if (step_) step_(virtual_clock::now());
                return;
            }
            virtual_clock::advance_to(next);
        }
    }

    /// Runs for `d` of virtual time.
    void run_for(virtual_clock::duration d) { run_until(virtual_clock::now() + d); }

    /// Instants processed so far.
    std::uint64_t steps() const noexcept { return steps_; }

    /// How far time jumps when work remains but no deadline is known (timers armed without a Clock policy).
    static constexpr virtual_clock::duration idle_step = std::chrono::milliseconds(1);

private:
    // Runs everything due now: the waits on virtual time that expired, the handlers they and
    // others queued, and again while a handler armed a wait that is already due. No system
    // call: the io_context has no reactor (virtual timers never touch it).
    void drain() {
        auto& timers = detail::virtual_timer_queue::instance();
        for (;;) {
            auto const now = virtual_clock::now().time_since_epoch().count();
            timers.fire_due(now);
            if (ioc_.stopped()) ioc_.restart();
            if (ioc_.poll() == 0) {
                std::int64_t next = 0;
                if (!timers.next_expiry(next) || next > now) return;
            }
        }
    }

    static virtual_clock::time_point next_timer_expiry() {
        std::int64_t next = 0;
        if (!detail::virtual_timer_queue::instance().next_expiry(next)) return virtual_clock::time_point::max();
        return virtual_clock::time_point(virtual_clock::duration(next));
    }

    std::uint64_t seed_;
    std::mt19937_64 rng_;
    boost::asio::io_context ioc_{1};
    std::function<void(virtual_clock::time_point)> step_;
    std::uint64_t steps_ = 0;
};

} // namespace baton::sim

#endif
