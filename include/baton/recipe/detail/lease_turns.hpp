// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_LEASE_TURNS_HPP
#define BATON_RECIPE_DETAIL_LEASE_TURNS_HPP

// Layer: recipes, internal. Fairness between participants that release the lease and want it
// again (lease_options::yield_after; docs/design.md §8 and docs/fairness.md): turns. Advice, never safety: nothing
// here decides whether a lease is held or lost, only when a claim is sent and what a record
// states about its holder's turn.
//
// Taking back one's own released lease costs one write and no wait, so a participant that
// releases and re-acquires in a loop would win nearly every time. So it takes its marker
// straight back only for a turn; then it leaves the marker to the waiters for 2.25 poll
// intervals (each reads it by then), and takes it back only if nobody did, with a turn twice
// as long. A holder re-acquiring back to back states what is left of its turn in the record,
// and waiters sleep through it (for at most two polls) instead of losing races to it.

#include <baton/core/detail/config.hpp>
#include <baton/recipe/detail/lease_record.hpp>
#include <baton/recipe/lease_options.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace baton::detail {

using own_time = std::chrono::nanoseconds; // a reading of the participant's own clock, since its epoch

class lease_turns {
public:
    // ---- the holder's side ----------------------------------------------------------------
    // An acquisition begins at `now`. `waits`: it waits for the lease (not try-once);
    // `patience`: how long its caller waits at most.
    void begin_acquisition(lease_options const& o, own_time now, bool waits, std::chrono::nanoseconds patience) noexcept;

    // True when this acquisition may wait a yield out (it waits, and long enough): it then also
    // reads a released record it lost a race for when a poll is due, not at once.
    bool patient() const noexcept { return patient_; }
    // True once this acquisition has left our marker to the waiters (and nobody took it).
    bool yielded() const noexcept { return phase_ == yield_phase::yielded; }

    // `version` is the released marker this participant wrote last.
    bool is_our_marker(std::string_view version) const noexcept {
        return release_ && !release_->version.empty() && version == release_->version;
    }

    // The record is our own marker and we are about to take it back: how long to leave it to
    // the waiters first (zero: take it now). Once a turn is over, a patient acquisition yields
    // until 2.25 poll intervals after our release; later than that, the waiters had their time.
    std::chrono::nanoseconds yield_before_take_back(lease_options const& o, own_time now) noexcept;
    // A wait of the acquisition ended: a yield in progress is over.
    void wait_ended() noexcept {
        if (phase_ == yield_phase::yielding) phase_ = yield_phase::yielded;
    }

    // What a claim sent now states as left of its turn: a new turn (taken from someone else),
    // the current one (a take-back within it), or a doubled one (a take-back after a yield).
    // Only a participant re-acquiring back to back states one.
    std::chrono::nanoseconds left_after_claim(lease_options const& o, own_time now, bool takes_back) const noexcept;
    // What a renewal states: what is left of the current turn (as the acquisition set it).
    std::chrono::nanoseconds left(own_time now) const noexcept;

    // A claim sent at `sent` landed: a new turn starts unless it took our marker back; after
    // a yield nobody answered, the next turn is twice as long (up to 16 times the first).
    void claimed(lease_options const& o, own_time sent, bool takes_back, bool after_yield) noexcept;

    // Our released marker, `version`, was confirmed at `now`.
    void released(std::string const& version, own_time now);

    // ---- the waiter's side ------------------------------------------------------------------
    // What is left of the turn record `b` states, counted from `since`, the first read of this
    // version (the write was sent before that, so the turn ends no later).
    static std::chrono::nanoseconds stated(lease_body const& b, own_time since, own_time now) noexcept;
    // How long a waiter sleeps through `turn`: to the turn's end plus a stagger over half a poll
    // (so that one waiter reads the released record first instead of all racing for it), capped
    // at two polls less up to a 16th, jittered so that waiters capped together drift apart.
    // The `u`s are uniform draws in [0, 1): one for the stagger, two for the cap.
    static std::chrono::nanoseconds sleep_through(lease_options const& o, std::chrono::nanoseconds turn, double u_stagger,
                                                  double u_cap1, double u_cap2) noexcept;
    // A poll interval less up to a 32nd (`u` a uniform draw): the pause after a lost race.
    static std::chrono::nanoseconds poll_near_full(lease_options const& o, double u) noexcept;

    // A turn as the record states it: whole milliseconds, rounded up; none when unbounded.
    static std::chrono::milliseconds advertised(std::chrono::nanoseconds left) noexcept;

    // Two poll intervals and a quarter: every waiter reads within a poll interval of its last
    // read (its pauses are jittered down, never up), or within two when the record it read
    // stated a turn (sleep_through's cap). Not the turn's end as the waiter computes it: it
    // counts the turn from its first read of that version, which may come a whole hold after
    // the write, so that end can be later than our release by up to the cap. The quarter is
    // for a read still in flight.
    static std::chrono::nanoseconds yield_pause(lease_options const& o) noexcept {
        return std::chrono::nanoseconds(o.poll_interval) * 9 / 4;
    }

private:
    static std::chrono::nanoseconds first_turn(lease_options const& o) noexcept;
    bool streak_over(own_time now) const noexcept {
        return turn_ != std::chrono::nanoseconds::max() && now - streak_since_ >= turn_;
    }

    struct own_release {
        std::string version; // of the last released marker we wrote
        own_time at{0};      // when that marker was confirmed
    };
    std::unique_ptr<own_release> release_; // from the first release, then kept (bytes per lease)
    own_time streak_since_{0};             // when the current run of terms taken back straight after our release began
    std::chrono::nanoseconds turn_{0};     // how long that run may last before we yield
    enum class yield_phase : unsigned char { none, yielding, yielded };
    yield_phase phase_ = yield_phase::none; // of this acquisition
    bool patient_ = false;                 // this acquisition may yield (it waits, and long enough)
    bool looping_ = false;                 // this acquisition began right after our own release (back to back)
};

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/lease_turns.ipp>
#endif

#endif
