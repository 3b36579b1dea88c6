// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_CLOCK_HPP
#define BATON_CORE_CLOCK_HPP

/** @file
    Layer: core. The Clock policy: a participant's own monotonic time, and how to arm
    Asio timers against it.

    baton's safety argument uses durations measured on each participant's
    own monotonic clock, never wall clocks (docs/design.md §3). A Clock policy is a
    small object, so that a simulation can give each participant a clock
    that runs fast or slow.

    Requirements (`c` is a `C const`, `d` a `C::duration`):

    | expression          | type                           | meaning |
    |---------------------|--------------------------------|---------|
    | `C::timer_clock`    | a clock usable by `asio::basic_waitable_timer` | what timers wait on |
    | `C::duration`       | `std::chrono::duration`        | an interval of this participant's own time |
    | `C::time_point`     | `std::chrono::time_point`      | a reading of this participant's own clock |
    | `c.now()`           | `C::time_point`                | monotonic: never goes back |
    | `c.timer_expiry(d)` | `C::timer_clock::time_point`   | when, on the timer clock, `d` of own time will have passed |
    | `c.wall_now()`      | `std::chrono::system_clock::time_point` | optional: this participant's wall clock |

    The wall clock is never trusted for safety. It only seeds the tokens of records created with
    wall-clock tokens (`lease_options::wall_clock_tokens`, the lease table's shards), so that they
    rise above those of a record deleted outside baton. Without `wall_now()`, `system_clock` is
    read, and the floors one process hands out are kept distinct and rising even if that clock
    steps back. A Clock's own `wall_now()` is read as it is, with nothing shared across the
    process: that is for simulations (`sim::manual_clock`), where a seed must replay exactly.
*/

#include <baton/core/detail/config.hpp>

#include <chrono>
#include <concepts>

namespace baton {

/// A Clock policy (see the requirements table in this header).
template <class C>
concept clock_policy = std::copy_constructible<C> &&
    requires(C const& c, typename C::duration d) {
        typename C::timer_clock;
        typename C::duration;
        typename C::time_point;
        { c.now() } -> std::same_as<typename C::time_point>;
        { c.timer_expiry(d) } -> std::same_as<typename C::timer_clock::time_point>;
    };

/// The production Clock policy: `std::chrono::steady_clock`, at its own rate.
struct steady_clock {
    /// Timers wait on the steady clock itself.
    using timer_clock = std::chrono::steady_clock;
    /// Own-time intervals.
    using duration = timer_clock::duration;
    /// Own-time readings.
    using time_point = timer_clock::time_point;

    /// The current monotonic reading.
    time_point now() const noexcept { return timer_clock::now(); }

    /// A timer expiry `d` from now.
    timer_clock::time_point timer_expiry(duration d) const noexcept { return timer_clock::now() + d; }
};

static_assert(clock_policy<steady_clock>);

/// True when the Clock policy `C` has a wall clock of its own (`c.wall_now()`, optional). Its
/// type is checked where it is read: one of another type is an error, never a silent fallback.
template <class C>
concept has_wall_clock = requires(C const& c) { c.wall_now(); };

} // namespace baton

#endif
