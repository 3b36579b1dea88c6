// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_LEASE_TURNS_IPP
#define BATON_RECIPE_IMPL_LEASE_TURNS_IPP

// Layer: recipes, internal. The compiled part of recipe/detail/lease_turns.hpp.
#include <baton/recipe/detail/lease_turns.hpp>

#include <algorithm>

namespace baton::detail {

BATON_DECL void lease_turns::begin_acquisition(lease_options const& o, own_time now, bool waits,
                                               std::chrono::nanoseconds patience) noexcept {
    phase_ = yield_phase::none;
    patient_ = waits && patience > yield_pause(o);
    // Back to back: acquiring again within an eighth of a poll interval of our own release
    // (a loop that releases and re-acquires at once, like the contention benchmark).
    looping_ = release_ && !release_->version.empty() && now - release_->at <= std::chrono::nanoseconds(o.poll_interval) / 8;
}

BATON_DECL std::chrono::nanoseconds lease_turns::yield_before_take_back(lease_options const& o, own_time now) noexcept {
    if (phase_ == yield_phase::yielded || !patient_ || !streak_over(now)) return std::chrono::nanoseconds(0);
    auto const since_release = now - release_->at; // set: the record is our released marker
    if (since_release < yield_pause(o)) {
        phase_ = yield_phase::yielding;
        return yield_pause(o) - since_release;
    }
    phase_ = yield_phase::yielded; // the waiters have had that time already
    return std::chrono::nanoseconds(0);
}

BATON_DECL std::chrono::nanoseconds lease_turns::left_after_claim(lease_options const& o, own_time now,
                                                                  bool takes_back) const noexcept {
    auto const first = first_turn(o);
    if (first == std::chrono::nanoseconds::max() || !looping_) return std::chrono::nanoseconds(0);
    if (!takes_back) return first;
    if (yielded()) return std::min(turn_ * 2, first * 16);
    return streak_since_ + turn_ - now;
}

BATON_DECL std::chrono::nanoseconds lease_turns::left(own_time now) const noexcept {
    if (turn_ == std::chrono::nanoseconds::max() || !looping_) return std::chrono::nanoseconds(0);
    return streak_since_ + turn_ - now;
}

BATON_DECL void lease_turns::claimed(lease_options const& o, own_time sent, bool takes_back, bool after_yield) noexcept {
    if (!takes_back) {
        streak_since_ = sent;
        turn_ = first_turn(o);
    } else if (after_yield) {
        streak_since_ = sent;
        turn_ = std::min(turn_ * 2, first_turn(o) * 16);
    }
}

BATON_DECL void lease_turns::released(std::string const& version, own_time now) {
    if (!release_) release_ = std::make_unique<own_release>();
    release_->version = version;
    release_->at = now;
}

BATON_DECL std::chrono::nanoseconds lease_turns::stated(lease_body const& b, own_time since, own_time now) noexcept {
    if (b.turn.count() <= 0) return std::chrono::nanoseconds(0);
    return std::max(since + std::chrono::nanoseconds(b.turn) - now, std::chrono::nanoseconds(0));
}

BATON_DECL std::chrono::nanoseconds lease_turns::sleep_through(lease_options const& o, std::chrono::nanoseconds turn,
                                                               double u_stagger, double u_cap1, double u_cap2) noexcept {
    auto const half = std::chrono::nanoseconds(o.poll_interval) / 2;
    auto const stagger = std::chrono::nanoseconds(static_cast<std::int64_t>(u_stagger * static_cast<double>(half.count())));
    auto const cap = poll_near_full(o, u_cap1) + poll_near_full(o, u_cap2);
    return std::min<std::chrono::nanoseconds>(turn + stagger, cap);
}

BATON_DECL std::chrono::nanoseconds lease_turns::poll_near_full(lease_options const& o, double u) noexcept {
    auto const poll = std::chrono::nanoseconds(o.poll_interval);
    return poll - std::chrono::nanoseconds(static_cast<std::int64_t>(u * static_cast<double>(poll.count()) / 32));
}

BATON_DECL std::chrono::milliseconds lease_turns::advertised(std::chrono::nanoseconds left) noexcept {
    if (left <= std::chrono::nanoseconds(0) || left >= std::chrono::nanoseconds(std::chrono::hours(24)))
        return std::chrono::milliseconds(0);
    return std::chrono::ceil<std::chrono::milliseconds>(left);
}

BATON_DECL std::chrono::nanoseconds lease_turns::first_turn(lease_options const& o) noexcept {
    auto const y = o.effective_yield_after();
    if (y == std::chrono::milliseconds::max()) return std::chrono::nanoseconds::max();
    return std::chrono::nanoseconds(y);
}

} // namespace baton::detail

#endif
