// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_LEASE_MACHINE_HPP
#define BATON_RECIPE_DETAIL_LEASE_MACHINE_HPP

// Layer: recipes, internal. The lease protocol as a sans-I/O state machine: acquire, renew and release.
// It never touches a socket, a timer or a clock. The driver (basic_lease)
// feeds it events with the participant's own monotonic time and carries out
// the steps (machine_step) it returns: read the record, write it under a
// precondition, wait, finish, or none. Tests drive it directly.
//
// Safety argument (docs/design.md §3-4):
// - a holder's lease is valid until t_send + ttl on its own clock, where
//   t_send is when it sent the write that last succeeded; it stops acting at
//   t_send + renew_deadline;
// - a contender takes over only after seeing the same version for
//   ttl x max_clock_rate_skew on its own clock, counted from the response of
//   its first read of that version;
// - every change of holder writes token + 1; renewals keep the token;
// - a write whose outcome is unknown is settled by reading back its nonce
//   (the store layer's settlement.hpp: which answers are ambiguous, the ledger).

#include <baton/core/detail/config.hpp>
#include <baton/core/detail/random.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/recipe/detail/lease_record.hpp>
#include <baton/recipe/detail/lease_turns.hpp>
#include <baton/core/error.hpp>
#include <baton/recipe/lease_observer.hpp>
#include <baton/recipe/lease_options.hpp>
#include <baton/core/retry.hpp>
#include <baton/store/settlement.hpp>
#include <baton/store/record_store.hpp>
#include <baton/store/detail/machine_step.hpp>

#include <boost/assert.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace baton::detail {

// A small, fast generator for jitter and nonces (8 bytes of state; a
// Mersenne Twister would be 2.5 KB per lease).
class splitmix64 {
public:
    using result_type = std::uint64_t;
    explicit splitmix64(std::uint64_t seed) noexcept : s_(seed) {}
    static constexpr result_type min() noexcept { return 0; }
    static constexpr result_type max() noexcept { return ~result_type(0); }
    result_type operator()() noexcept {
        std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }

private:
    std::uint64_t s_;
};

// The last failure's diagnostics, on the heap once a failure has said something: a lease that
// never failed holds a pointer, not four strings (bytes per held lease: a process may hold
// thousands).
class last_failure {
public:
    diagnostics const& get() const noexcept { return d_ ? *d_ : none(); }
    last_failure& operator=(diagnostics const& d);
    last_failure& operator=(diagnostics&& d);
    /// For writing in place (allocates when nothing was kept yet).
    diagnostics& edit() {
        if (!d_) d_ = std::make_unique<diagnostics>();
        return *d_;
    }
    void clear() noexcept {
        if (d_) d_->clear();
    }

private:
    static diagnostics const& none() noexcept {
        static diagnostics const empty;
        return empty;
    }
    std::unique_ptr<diagnostics> d_;
};

// Hooks into the driver: its RetryPolicy, and its observer's settlement and retry events
// (null when not observed). Kept non-template so the machine compiles once.
struct lease_hook_fns {
    retry_decision (*on_failure)(void*, error_code const&, unsigned, double) = nullptr;
    void (*on_success)(void*, unsigned) = nullptr;
    void (*on_settled)(void*, lease_lane, settlement_outcome, std::uint64_t token) = nullptr;
    void (*on_retry)(void*, lease_lane, error_code const&, unsigned attempt, std::chrono::nanoseconds delay) = nullptr;
};
// What the machine calls back: a context and a static table (two pointers in every lease, not five).
struct lease_hooks {
    void* ctx = nullptr;
    lease_hook_fns const* fns = nullptr;
};

class lease_machine {
public:
    lease_machine(lease_options opts, std::uint64_t seed, lease_hooks hooks);

    // ---- queries ---------------------------------------------------------
    lease_state state() const noexcept { return state_; }
    std::string const& instance() const noexcept { return instance_; }
    lease_options const& options() const noexcept { return opts_; }
    std::uint64_t token() const noexcept { return held_.token; }
    bool took_over() const noexcept { return took_over_; }
    bool created_record() const noexcept { return created_; }
    // The least token a record this object creates starts at (wall-clock tokens; see lease_options).
    void set_creation_floor(std::uint64_t floor) noexcept { creation_floor_ = floor; }
    own_time deadline() const noexcept { return held_.t_send + renew_deadline(); }
    own_time valid_until() const noexcept { return held_.t_send + ttl(); }
    bool is_held(own_time now) const noexcept { return state_ == lease_state::held && now < deadline(); }
    std::chrono::nanoseconds remaining(own_time now) const noexcept {
        return is_held(now) ? deadline() - now : std::chrono::nanoseconds(0);
    }
    diagnostics const& last_diagnostics() const noexcept { return diag_.get(); }
    // A failure outside the protocol (a one-off read of the record) is still the last thing the store said.
    void note_failure(diagnostics d) { diag_ = std::move(d); }
    double uniform() { return uniform01(rng_); }

    // ---- acquire -----------------------------------------------------------
    // `patience`: how long the caller waits at most (its timeout). A yield that would not fit in
    // it, or in a try-once acquisition, is skipped: they take their own release back at once.
    machine_step acquire_start(own_time now, bool wait,
                               std::chrono::nanoseconds patience = std::chrono::nanoseconds::max());

    machine_step acquire_on_write(own_time now, error_code ec, put_result const& r);

    /// True while an acquisition's claim may have landed unseen (its outcome is unknown).
    bool claim_in_doubt() const noexcept { return pending_ != nullptr; }
    /// True when the last answer showed this acquisition's claim landed too late to act on, and
    /// the step returned refreshes it (same token): finishing the claim, not a new one.
    bool refreshing_late_claim() const noexcept { return late_claim_; }
    /// True while the current acquisition's own claim may have landed unseen.
    bool claim_of_this_acquisition_in_doubt() const noexcept {
        return state_ == lease_state::acquiring && pending_ && pending_->acquisition == acquisition_;
    }

    machine_step acquire_on_read(own_time now, error_code ec, std::optional<record> const& found,
                                 diagnostics const& d);

    machine_step acquire_on_wait(own_time /*now*/);

    // ---- renew (while held) -------------------------------------------------
    // Time to wait before the next renewal.
    machine_step renew_schedule(own_time now);

    machine_step renew_on_wait(own_time now);

    machine_step renew_on_write(own_time now, error_code ec, put_result const& r);

    machine_step renew_on_read(own_time now, error_code ec, std::optional<record> const& found, diagnostics const& d);

    // ---- loss ----------------------------------------------------------------
    // A held term ends without a release only in lose(), for one of these causes. The renew
    // lane's answers decide the record's causes (renew_on_read); the deadline is decided by
    // check_deadline, which the driver calls whenever its own time may have passed it (its
    // deadline timer fired, an answer or a call of the user's came late), and by renew_on_wait.
    enum class loss_cause : unsigned char {
        none,
        deadline,          // t_send + renew_deadline passed on our clock without a renewal that landed
        taken_over,        // the record changed under us: someone else's now
        record_vanished,   // the record was deleted (outside baton: the lease layer never deletes it)
        record_unreadable, // the record is no lease record any more
        step_not_taken,    // the driver could not carry out a step this machine asked for
    };
    // Why the last held term was lost, and the words an observer's lost event gives for it: the
    // reason (a metrics label, so its values stay few and stable) and the detail.
    loss_cause last_loss() const noexcept { return loss_; }
    static std::string_view describe(loss_cause c) noexcept;
    static std::string_view detail_of(loss_cause c) noexcept;

    // True when the renew deadline has passed by `now` and that ends a held term now (once).
    bool check_deadline(own_time now) {
        if (state_ != lease_state::held || now < deadline()) return false;
        (void)lose(loss_cause::deadline);
        return true;
    }

    // The driver cannot carry out a step this machine asked for: a held term ends here, lost.
    void end_term() {
        if (state_ == lease_state::held) (void)lose(loss_cause::step_not_taken);
    }

    // ---- release -----------------------------------------------------------
    // Whether there is a record of ours to mark released (held now, or held
    // until it was lost: writing the marker lets others take over at once).
    bool can_release() const noexcept { return has_version_ && (state_ == lease_state::held || state_ == lease_state::lost); }

    machine_step release_start(own_time now);

    machine_step release_on_write(own_time now, error_code ec, put_result const& r);

    machine_step release_on_read(own_time now, error_code ec, std::optional<record> const& found, diagnostics const& d);

    machine_step release_on_wait(own_time now);

    // The driver gave up on an acquisition (cancelled or timed out) between steps.
    void abandon_acquire() {
        if (state_ == lease_state::acquiring) state_ = lease_state::idle;
    }

    // ttl x skew, saturated: a window too long (or not a number) to represent waits "forever", never wraps
    // around to one already elapsed. Validated options never come near the cap (24 h x 1000).
    static std::chrono::nanoseconds takeover_window(std::chrono::milliseconds ttl, double skew);

    // A record read by anyone (status, elections): decode for display.
    static error_code describe(record const& r, lease_info& info, diagnostics& d);

private:
    enum after_wait : unsigned char { read_next, write_next };

    // A nonce kept inline: 32 hex digits, the same as fill_nonce draws from the generator (the
    // attempt in flight keeps one for the whole term: 33 heap bytes per held lease).
    struct nonce_text {
        std::array<char, 32> digits{}; // all '\0' until filled (hex digits never are)
        void fill(splitmix64& rng) noexcept;
        operator std::string_view() const noexcept {
            return digits[0] == '\0' ? std::string_view() : std::string_view(digits.data(), digits.size());
        }
        friend bool operator==(nonce_text const& a, nonce_text const& b) noexcept {
            return std::string_view(a) == std::string_view(b);
        }
        friend bool operator==(nonce_text const& a, std::string_view b) noexcept { return std::string_view(a) == b; }
    };

    struct attempt_record {
        nonce_text nonce;
        std::uint64_t token = 0;
        own_time sent{0};
        std::uint64_t acquisition = 0; // claims: which acquisition sent it
        bool release = false;          // own writes: a released marker
        bool creates = false;          // claims: created the record (it was absent)
        bool takes_back = false;       // claims: of our own released marker
        bool after_yield = false;      // ... after this acquisition yielded it to the waiters
        std::size_t condition = 0;     // claims: a hash of the version it was conditional on (observer accuracy only)
    };
    nonce_text fresh_nonce() noexcept;

    struct held_record {
        std::uint64_t token = 0;
        std::string version;
        own_time t_send{0};
    };

    std::string body(std::uint64_t token, std::string_view nonce, bool released,
                     std::chrono::nanoseconds turn_left = std::chrono::nanoseconds(0)) const {
        return encode_lease_body(instance_, opts_.value, nonce, token, released, ttl(), lease_turns::advertised(turn_left));
    }

    // The record as last known is the released marker this object wrote itself.
    bool released_by_us() const noexcept { return turns_.is_our_marker(known_version_); }

    // Our own released marker is the record: taken back at once during our turn; once the turn
    // is over, it stays with the waiters until 2.25 poll intervals after our release (each
    // reads it by then: see lease_turns::yield_pause), unless this acquisition may not wait that long.
    machine_step take_back(own_time now, bool contended = false);

    // `contended`: the claim is of a released record just seen (a read, or a refusal that showed
    // it), so a refusal means someone else took it in the meantime.
    machine_step claim(own_time now, std::uint64_t token, precondition pc, bool takes_back = false,
                       bool contended = false);

    // The record is absent: create it, with a token above every one this object saw and the floor.
    machine_step create(own_time now) {
        return claim(now, std::max(next_token(), creation_floor_), precondition::absent());
    }

    // The token of a claim over a record: above the record's, and above every token this object
    // saw. A record can go back: deleted outside baton, then created again by a create that was
    // delayed in the network, it carries an older token; claimed at that token + 1, a term of this
    // object would repeat one it held before (a lease table would take it for that term alive).
    std::uint64_t next_token() const noexcept { return max_token_seen_ + 1; }

    machine_step claimed(own_time now, std::uint64_t token, std::string const& version, own_time sent);

    // Decide what to do about the record as it is now.
    machine_step consider(own_time now, record const& r);

    std::chrono::nanoseconds poll_delay();

    // The retry policy's pause before attempt `attempt_ + 1` (then `next`), or nothing when it gives up.
    std::optional<machine_step> policy_pause(error_code ec, after_wait next);

    // Acquire-side failure handling: retry per policy; waiting acquisitions
    // keep going at the poll interval while errors are transient.
    machine_step retry_or_fail(error_code ec, after_wait next);

    // Rewrites our own record (same token, fresh nonce) under its current version.
    machine_step rewrite_own(own_time now, bool released);
    machine_step renew_write(own_time now) { return rewrite_own(now, false); }

    // Renewals never give up before the deadline: the policy spaces attempts
    // within a round; between rounds, a quarter renew interval.
    machine_step backoff_renew(error_code ec, after_wait next);

    // The one place a held term is lost. This term's writes in doubt stay known until the next
    // acquisition clears them: a release after the loss may still find one landed. They never
    // pass for a claim (see acquire_start).
    machine_step lose(loss_cause why);

    // A renewal confirmed, directly or by reading back its nonce: the lease is valid from when it was sent.
    machine_step renewed(own_time now, attempt_record const& a, std::string const& version);

    // The attempt of this term in doubt that wrote `nonce`, if any.
    std::optional<attempt_record> own_doubt(std::string_view nonce) const { return own_doubts_.landed(nonce); }

    machine_step release_write(own_time now) { return rewrite_own(now, true); }

    machine_step backoff_release(error_code ec, after_wait next);

    // `landed`: the nonce of our marker in doubt that the read found, when settled by reading.
    machine_step released(own_time now, std::string const& version, std::string_view landed = {});

    // Our marker landed and a contender already took the lease through it: released, and the
    // record is not ours any more.
    machine_step released_by_contender();

    machine_step release_failed(error_code ec);

    // ---- observation (the driver's hooks; null when nobody observes) ----------
    static lease_lane lane_of(attempt_record const& a) noexcept {
        return a.release ? lease_lane::release : a.acquisition != 0 ? lease_lane::acquire : lease_lane::renew;
    }
    lease_lane current_lane() const noexcept {
        return state_ == lease_state::acquiring   ? lease_lane::acquire
               : state_ == lease_state::releasing ? lease_lane::release
                                                  : lease_lane::renew;
    }
    void report(attempt_record const& a, settlement_outcome o) {
        if (hooks_.fns->on_settled) hooks_.fns->on_settled(hooks_.ctx, lane_of(a), o, a.token);
    }
    // Forgets this term's writes in doubt, each reported as `o` except the one that wrote
    // `landed` (found by a read), reported as landed.
    void settle_doubts(settlement_outcome o, std::string_view landed = {});

    void note_success();

    lease_options opts_;
    splitmix64 rng_;
    lease_hooks hooks_;
    // The durations in force, read from the options (not copied apart: bytes per lease).
    std::chrono::milliseconds ttl() const noexcept { return opts_.ttl; }
    std::chrono::milliseconds renew_interval() const noexcept { return opts_.effective_renew_interval(); }
    std::chrono::milliseconds renew_deadline() const noexcept { return opts_.effective_renew_deadline(); }
    std::string instance_;

    held_record held_;
    lease_state state_ = lease_state::idle;
    loss_cause loss_ = loss_cause::none;
    bool has_version_ = false;
    bool took_over_ = false;
    bool late_claim_ = false;          // the last answer found our claim landed too late: refreshing it
    bool created_ = false;             // the last acquisition created the record
    bool refused_ = false;             // the last renewal or release write was refused (412, 404): read to confirm
    bool try_once_ = false;
    unsigned release_refusals_ = 0;    // refusals of this release while the record stayed ours
    unsigned attempt_ = 0;
    std::uint64_t creation_floor_ = 0; // the least token a created record starts at

    // Fairness between contenders that release and re-acquire (advice only). The bytes after it
    // may sit in its tail padding (bytes per lease).
    [[no_unique_address]] lease_turns turns_;
    after_wait next_after_wait_ = read_next;
    // What this participant last knew of the record.
    enum class known_record : unsigned char { unknown, absent, present, released };
    known_record known_ = known_record::unknown;
    // The claim in flight: a create, a replace, or a replace of a released record just seen
    // (see claim(): a refusal of it means someone else took the record in the meantime).
    enum class claim_kind : unsigned char { create, replace, replace_just_seen_released };
    claim_kind inflight_claim_ = claim_kind::create;

    attempt_record inflight_;
    // An acquisition's claim whose outcome is unknown (on the heap: rare, and 80 bytes in every lease).
    std::unique_ptr<attempt_record> pending_;
    settlement_ledger<attempt_record> own_doubts_; // this term's renewals and releases whose outcomes are unknown

    std::string known_version_;
    std::uint64_t max_token_seen_ = 0;
    std::uint64_t acquisition_ = 0; // acquisitions started, to tell this one's claims from earlier ones

    // The observation that times a takeover.
    struct observation {
        std::string version;
        own_time since{0};
        std::chrono::milliseconds ttl{0};
    };
    // On the heap from the first time someone else held it, then kept: a lease that never met a
    // rival's record keeps a pointer, not 56 bytes.
    std::unique_ptr<observation> observed_;

    last_failure diag_;
};

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/lease_machine.ipp>
#endif

#endif
