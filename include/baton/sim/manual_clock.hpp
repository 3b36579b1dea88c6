// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_SIM_MANUAL_CLOCK_HPP
#define BATON_SIM_MANUAL_CLOCK_HPP

/** @file
    Layer: simulation kit (on the store and core). Virtual time for deterministic simulation.

    `virtual_clock` is the simulation's real time: an Asio-compatible clock
    that moves only when the scheduler advances it, so timers armed on it
    fire when virtual time reaches them. `manual_clock` is the Clock policy
    a participant uses: its own reading of virtual time, optionally running
    fast or slow and offset, as real clocks do.

    Virtual time is process-wide and meant for one simulation at a time on
    one thread.
*/

#include <baton/core/clock.hpp>

#include <boost/asio/wait_traits.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <vector>

namespace baton::sim {

/// The simulation's real time. Moves only when advanced.
struct virtual_clock {
    using rep = std::int64_t;                          ///< nanoseconds
    using period = std::nano;                          ///< nanoseconds
    using duration = std::chrono::nanoseconds;         ///< an interval of virtual time
    using time_point = std::chrono::time_point<virtual_clock, duration>; ///< an instant of virtual time
    static constexpr bool is_steady = true;            ///< never goes back (except on `reset`)

    /// The current virtual time.
    static time_point now() noexcept { return time_point(duration(state().now.load(std::memory_order_relaxed))); }

    /// Moves virtual time forward to `t` (never back).
    static void advance_to(time_point t) noexcept {
        auto& s = state();
        if (t.time_since_epoch().count() > s.now.load(std::memory_order_relaxed))
            s.now.store(t.time_since_epoch().count(), std::memory_order_relaxed);
    }

    /// Back to zero, forgetting every noted deadline: the start of a simulation.
    static void reset() noexcept {
        auto& s = state();
        std::lock_guard lock(s.mutex);
        s.now.store(0, std::memory_order_relaxed);
        s.deadlines = {};
    }

    /// Records that a timer will expire at `t`, so the scheduler can jump there.
    static void note_deadline(time_point t) {
        auto& s = state();
        std::lock_guard lock(s.mutex);
        s.deadlines.push(t.time_since_epoch().count());
    }

    /// The earliest noted deadline after now, discarding passed ones; `max()` when there is none.
    static time_point next_deadline() {
        auto& s = state();
        std::lock_guard lock(s.mutex);
        auto const n = s.now.load(std::memory_order_relaxed);
        while (!s.deadlines.empty() && s.deadlines.top() <= n) s.deadlines.pop();
        return s.deadlines.empty() ? time_point::max() : time_point(duration(s.deadlines.top()));
    }

private:
    struct shared_state {
        std::atomic<std::int64_t> now{0};
        std::mutex mutex;
        std::priority_queue<std::int64_t, std::vector<std::int64_t>, std::greater<>> deadlines;
    };
    static shared_state& state() noexcept {
        static shared_state s;
        return s;
    }
};

/** A participant's clock in a simulation: the Clock policy.

    Reads `offset + rate × virtual time`. A rate other than 1 models a
    clock that runs fast or slow; keep the ratio of any two participants'
    rates within the lease's `max_clock_rate_skew`, which is what the
    safety argument assumes.
*/
class manual_clock {
public:
    using timer_clock = virtual_clock;                 ///< timers wait on virtual time
    using duration = std::chrono::nanoseconds;         ///< own-time intervals
    using time_point = std::chrono::time_point<virtual_clock, duration>; ///< own-time readings

    /// A clock at virtual speed, reading zero at virtual time zero. Not explicit, so that `Clock clock = {}` works.
    manual_clock() noexcept : manual_clock(1.0) {}

    /// A clock at `rate` times virtual speed, reading `offset` at virtual time zero.
    explicit manual_clock(double rate, duration offset = duration(0)) noexcept : rate_(rate), offset_(offset) {}

    /// This participant's reading.
    time_point now() const noexcept {
        auto const v = static_cast<long double>(virtual_clock::now().time_since_epoch().count());
        return time_point(offset_ + duration(static_cast<std::int64_t>(std::floor(v * rate_))));
    }

    /// The virtual instant by which `d` of this clock's time will have passed; noted for the scheduler.
    virtual_clock::time_point timer_expiry(duration d) const {
        if (d < duration(0)) d = duration(0);
        auto const real = static_cast<std::int64_t>(std::ceil(static_cast<long double>(d.count()) / rate_)) + 1;
        auto const t = virtual_clock::now() + duration(real);
        virtual_clock::note_deadline(t);
        return t;
    }

    /// The rate relative to virtual time.
    double rate() const noexcept { return rate_; }

    /// Where every simulated wall clock starts: 2026-01-01 00:00:00 UTC.
    static constexpr std::chrono::sys_seconds wall_epoch{std::chrono::seconds(1767225600)};

    /// This participant's wall clock: `wall_epoch` plus virtual time, the same for every
    /// participant (wall clocks are kept in step by NTP, whatever their monotonic rates), so
    /// that wall-clock tokens replay exactly under a seed (never the host's clock).
    std::chrono::system_clock::time_point wall_now() const noexcept {
        return std::chrono::system_clock::time_point(wall_epoch) +
               std::chrono::duration_cast<std::chrono::system_clock::duration>(virtual_clock::now().time_since_epoch());
    }

    /// Moves all virtual time forward by `d` (a convenience for tests).
    static void advance(duration d) noexcept { virtual_clock::advance_to(virtual_clock::now() + d); }

private:
    double rate_;
    duration offset_;
};

static_assert(clock_policy<manual_clock>);
static_assert(has_wall_clock<manual_clock>);

} // namespace baton::sim

/// Timers on virtual time never wait in real time: the scheduler moves time.
template <>
struct boost::asio::wait_traits<baton::sim::virtual_clock> {
    /// No real waiting.
    static baton::sim::virtual_clock::duration to_wait_duration(baton::sim::virtual_clock::duration const&) {
        return baton::sim::virtual_clock::duration::zero();
    }
    /// No real waiting.
    static baton::sim::virtual_clock::duration to_wait_duration(baton::sim::virtual_clock::time_point const&) {
        return baton::sim::virtual_clock::duration::zero();
    }
};

// The timers themselves (they need the clock above).
#include <baton/sim/virtual_timer.hpp>

#endif
