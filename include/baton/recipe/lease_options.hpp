// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_LEASE_OPTIONS_HPP
#define BATON_RECIPE_LEASE_OPTIONS_HPP

/** @file
    Layer: recipes. Settings and results of leases: `lease_options` (validated at
    construction), `acquire_options`, `lease_grant` and `lease_info`.
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/core/error.hpp>
#include <baton/store/record_store.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton {

/** Settings of one lease. Data, not behaviour: defaults follow docs/design.md §3.

    Rules, checked by `validate()` (and so by every lease constructor):
    - `key` is 1 to 1024 bytes;
    - 0 < `ttl` ≤ 24 h (the longest TTL a lease record may declare), and `ttl` ≥ 3 × renew interval;
    - renew interval < renew deadline < `ttl` (a renewal is tried before the deadline, and the deadline comes before expiry);
    - `max_clock_rate_skew` is a finite number from 1 to 1000 (so `ttl` × it always fits the clock's range);
    - 0 < `poll_interval` ≤ `ttl`;
    - 0 ≤ `yield_after` ≤ 24 h, or `milliseconds::max()`;
    - `owner` (at most 1 KiB) and `value` (at most 8 KiB) are valid UTF-8, so
      that the record, escaped, always stays readable (under 64 KiB).
*/
struct lease_options {
    /// The record that is the lease, e.g. `jobs/nightly-report`.
    std::string key;
    /// A readable name for this holder (host, pod, ...); a random instance suffix is added. Empty: `baton`.
    std::string owner;
    /// Stored with the lease while held, e.g. the leader's address.
    std::string value;
    /// How long a successful write keeps the lease valid, measured on the holder's own monotonic clock from when the write was sent.
    std::chrono::milliseconds ttl{20000};
    /// Mean time between renewals (spread by up to 10% either way, never past halfway to
    /// `renew_deadline`; a renewal may also come up to 1/32 of its wait early, to share the
    /// wake-up of the one timer all leases on an executor share). Zero: `ttl` / 3.
    std::chrono::milliseconds renew_interval{0};
    /// When the holder stops acting if no renewal succeeded since the last one was sent. Zero: 2/3 of `ttl`.
    std::chrono::milliseconds renew_deadline{0};
    /** How often a waiting contender re-reads the record (jittered down by up to 50%, never
        longer), except while the record states its holder's turn (see `yield_after`): then at
        the turn's end, and at least every two poll intervals.
    */
    std::chrono::milliseconds poll_interval{1000};
    /** Largest ratio between two participants' clock rates. A contender
        takes over only after seeing the same version for `ttl` ×
        this factor on its own clock.
    */
    double max_clock_rate_skew = 2.0;
    /** Seeds jitter, nonces and the instance suffix; set it for reproducible
        simulations, and then give every participant a different seed (two
        participants with one seed would share an instance name). Empty: from `std::random_device`.
    */
    std::optional<std::uint64_t> random_seed;
    /** Whether a record this lease creates starts its tokens at the wall-clock
        time in microseconds since 1970 instead of 1 (above every token this
        object saw either way). Tokens only grow by one per change of holder,
        so they then survive the record's deletion (a lifecycle rule, a TTL,
        an operator): the next holder's token is still larger than any a
        fenced resource accepted before, unless its wall clock is behind
        by more than the time since the first record was created.
        Off: tokens go 1, 2, 3 and restart at 1 after a deletion (see
        `lease_grant::created_record`).
    */
    bool wall_clock_tokens = false;
    /** Fairness between participants that release the lease and want it
        again. Taking back one's own released lease costs one write and no
        wait, so under contention the releaser would win nearly every time:
        its rivals see the released record only if one of their polls falls
        in the round trip between the release and the re-claim. So a
        participant takes its own released lease straight back only for a
        turn of `yield_after` (counted from the first term of the run); after
        that its next acquisition first leaves the released record alone for
        2.25 × `poll_interval`, long enough for every waiting contender to
        read it once (a waiter reads at least every two poll intervals, see
        below), and the first to read it takes it. If nobody does, the
        participant takes it back with one write and its next turn is twice
        as long (at most 16 × `yield_after`), so a participant without
        rivals pauses rarely. Acquisitions that are not taking back one's
        own release are never delayed, nor are try-once acquisitions and
        ones whose timeout is shorter than the pause; no write is added.
        The pause assumes the waiters have the same `poll_interval` as this
        participant.
        A participant re-acquiring back to back (within an eighth of a poll
        interval of its own release) states in the record what is left of its
        turn, and the waiters read again at its end instead of during it, but at
        least every two poll intervals: a lease released in the middle of a
        turn, by a holder that then leaves, is taken within two poll intervals
        (and so is any release a waiter that read a stated turn is sleeping
        through; one that read none reads within one). The longest turn, after
        untaken yields, is 16 × `yield_after`: 32 poll intervals by default.
        Zero (the default): two poll intervals, so that under sustained
        contention each waiter reads about once per turn (half the reads of a
        turn of one poll interval; 2.5 store requests per acquisition instead
        of 2.9 at 8 contenders, in virtual time). `milliseconds::max()`: never
        yield (the releaser keeps winning under contention). Otherwise at most 24 h.
    */
    std::chrono::milliseconds yield_after{0};

    /// The renew interval in force (explicit or derived).
    std::chrono::milliseconds effective_renew_interval() const noexcept {
        return renew_interval.count() != 0 ? renew_interval : ttl / 3;
    }
    /// The renew deadline in force (explicit or derived).
    std::chrono::milliseconds effective_renew_deadline() const noexcept {
        return renew_deadline.count() != 0 ? renew_deadline : ttl * 2 / 3;
    }

    /// The fairness turn in force (explicit or derived; `max()` never yields).
    std::chrono::milliseconds effective_yield_after() const noexcept {
        return yield_after.count() != 0 ? yield_after : 2 * poll_interval;
    }

    /// Throws `config_error` with a message naming the first broken rule.
    void validate() const;
};

/// How `async_acquire` waits.
struct acquire_options {
    /// Give up with `errc::timeout` after this long. Empty: wait until acquired or cancelled.
    std::optional<std::chrono::milliseconds> timeout;
    /// False: try once, failing with `errc::held_by_other` when someone else validly holds it.
    bool wait = true;
};

/// What a successful acquisition gives the holder.
struct lease_grant {
    /// Strictly greater than every token any earlier holder of this key had. Pass it to fenced writes.
    std::uint64_t fencing_token = 0;
    /// Time left before the renew deadline, when protected work must stop unless a renewal succeeds.
    std::chrono::nanoseconds remaining{0};
    /// True when the lease was taken over from a holder that stopped renewing (not released or free).
    bool took_over = false;
    /** True when the record did not exist and this acquisition created it.
        Its token then continues from the largest this object saw (1 for a
        new object), or from the wall clock with `lease_options::wall_clock_tokens`:
        if the key existed before and was deleted, a fenced resource may hold
        a larger token than this grant's, and will refuse it.
    */
    bool created_record = false;
};

/// A lease record as stored, for status displays and elections.
struct lease_info {
    /// The holder's instance name (`owner` plus a random suffix).
    std::string owner;
    /// The holder's value.
    std::string value;
    /// The fencing token of the holder's term.
    std::uint64_t fencing_token = 0;
    /// True when the holder released it; the next contender takes it at once.
    bool released = false;
    /// The TTL the holder declared.
    std::chrono::milliseconds ttl{0};
    /// The store's version of the record.
    std::string version;
    /** How long the reader knows this same version unchanged, on its own
        clock: from the answer of its first read that showed it to the
        sending of the latest. Zero for a one-off read (only observers that
        read repeatedly, such as `basic_election`, fill it).
    */
    std::chrono::nanoseconds unchanged_for{0};
    /** True when the record stayed unchanged for `ttl × max_clock_rate_skew`
        of the reader's time: its holder stopped renewing (crashed or cut off)
        and no longer holds, though nobody has taken over yet.
    */
    bool expired = false;
};

/// Where a lease object is in its life.
enum class lease_state {
    idle,      ///< never held, or not trying
    acquiring, ///< `async_acquire` outstanding
    held,      ///< held; renewing in the background
    releasing, ///< `async_release` outstanding
    released,  ///< released by this object
    lost,      ///< taken over, or the renew deadline passed
};

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/lease_options.ipp>
#endif

#endif
