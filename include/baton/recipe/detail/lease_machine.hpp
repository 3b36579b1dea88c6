// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_LEASE_MACHINE_HPP
#define BATON_RECIPE_DETAIL_LEASE_MACHINE_HPP

// Layer: recipes, internal. The lease protocol as a sans-I/O state machine: acquire, renew and release.
// It never touches a socket, a timer or a clock. The driver (basic_lease)
// feeds it events with the participant's own monotonic time and carries out
// the actions it returns: read the record, write it under a precondition,
// wait, or finish. Tests drive it directly.
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
#include <baton/recipe/detail/lease_record.hpp>
#include <baton/core/error.hpp>
#include <baton/recipe/lease_observer.hpp>
#include <baton/recipe/lease_options.hpp>
#include <baton/core/retry.hpp>
#include <baton/store/settlement.hpp>
#include <baton/store/record_store.hpp>

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

using own_time = std::chrono::nanoseconds; // a reading of the participant's own clock, since its epoch

struct lease_action {
    enum class type { none, read, write, wait, done };
    type what = type::none;
    std::string body;                             // write
    precondition pc = precondition::none();       // write
    std::chrono::nanoseconds delay{0};            // wait, in own time
    error_code ec;                                // done

    static lease_action none() { return {}; }
    static lease_action read() { lease_action a; a.what = type::read; return a; }
    static lease_action write(std::string body, precondition pc) {
        lease_action a; a.what = type::write; a.body = std::move(body); a.pc = std::move(pc); return a;
    }
    // A custom RetryPolicy's delay is kept within [0, 24 h], so no timer deadline computed from it overflows.
    static lease_action wait(std::chrono::nanoseconds d) {
        lease_action a; a.what = type::wait;
        a.delay = std::clamp(d, std::chrono::nanoseconds(0), std::chrono::nanoseconds(std::chrono::hours(24)));
        return a;
    }
    static lease_action done(error_code ec = {}) { lease_action a; a.what = type::done; a.ec = ec; return a; }
};

// The last failure's diagnostics, on the heap once a failure has said something: a lease that
// never failed holds a pointer, not four strings (bytes per held lease: a process may hold
// thousands).
class last_failure {
public:
    diagnostics const& get() const noexcept { return d_ ? *d_ : none(); }
    last_failure& operator=(diagnostics const& d) {
        if (d_) *d_ = d;
        else if (!d.empty()) d_ = std::make_unique<diagnostics>(d);
        return *this;
    }
    last_failure& operator=(diagnostics&& d) {
        if (d_) *d_ = std::move(d);
        else if (!d.empty()) d_ = std::make_unique<diagnostics>(std::move(d));
        return *this;
    }
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
    lease_machine(lease_options opts, std::uint64_t seed, lease_hooks hooks)
        : opts_(std::move(opts)), rng_(seed), hooks_(hooks) {
        BOOST_ASSERT(hooks_.fns && hooks_.fns->on_failure && hooks_.fns->on_success);
        std::string_view const owner = opts_.owner.empty() ? std::string_view("baton") : std::string_view(opts_.owner);
        auto const suffix = hex(rng_());
        instance_ = std::string(owner.size() + 1 + suffix.size(), '#'); // sized exactly: every lease keeps it
        owner.copy(instance_.data(), owner.size());
        suffix.copy(instance_.data() + owner.size() + 1, suffix.size());
    }

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
    double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

    // ---- acquire -----------------------------------------------------------
    // `patience`: how long the caller waits at most (its timeout). A yield that would not fit in
    // it, or in a try-once acquisition, is skipped: they take their own release back at once.
    lease_action acquire_start(own_time now, bool wait,
                               std::chrono::nanoseconds patience = std::chrono::nanoseconds::max()) {
        // Writes of the previous term still in doubt belong to it: if one lands, the record
        // reads as ours from an earlier term, and the claim takes token + 1.
        settle_doubts(settlement_outcome::unresolved);
        ++acquisition_;
        state_ = lease_state::acquiring;
        try_once_ = !wait;
        attempt_ = 0;
        took_over_ = false;
        created_ = false;
        diag_.clear();
        yielding_ = yielded_ = false;
        yield_allowed_ = wait && patience > yield_pause();
        // Back to back: acquiring again within an eighth of a poll interval of our own release
        // (a loop that releases and re-acquires at once, like the contention benchmark).
        looping_ = own_release_ && !own_release_->version.empty() && now - own_release_->at <= std::chrono::nanoseconds(opts_.poll_interval) / 8;
        if (known_ && released_) {
            if (released_by_us()) return take_back(now);
            return claim(now, next_token(), precondition::matches(known_version_));
        }
        if (!known_ || absent_) return create(now);
        return lease_action::read();
    }

    lease_action acquire_on_write(own_time now, error_code ec, put_result const& r) {
        late_claim_ = false;
        if (!ec) return claimed(now, inflight_.token, r.version, inflight_.sent);
        diag_ = r.diag;
        if (ec == errc::precondition_failed) {
            if (r.current) return consider(now, *r.current);
            // Refused, and the store did not say by what (S3 never does). A claim of a released
            // record (or of our marker) that followed a fresh look at it lost a race: someone
            // took it in that round trip and now holds it for a term, so read it when a poll is
            // due, not at once, unless this acquisition may not wait that long. Any other claim
            // reads at once: one on older knowledge (the first, a take-back in a loop) may find
            // the record free under another version, and a refused takeover may have met the
            // holder's released marker.
            if (inflight_contended_ && yield_allowed_) {
                attempt_ = 0;
                next_after_wait_ = read_next;
                return lease_action::wait(poll_delay_near_full());
            }
            return lease_action::read();
        }
        if (ec == errc::not_found && inflight_replaces_) {
            // A replace found the key gone (S3 answers 404): create it instead.
            known_ = true;
            absent_ = true;
            released_ = false;
            return create(now);
        }
        if (outcome_unknown(ec)) {
            // A claim still in doubt from before is forgotten: conditional on a version of a record
            // that names us, it can only land as ours, and is then claimed again with token + 1.
            if (pending_) report(*pending_, settlement_outcome::unresolved);
            if (pending_) *pending_ = inflight_;
            else pending_ = std::make_unique<attempt_record>(inflight_);
        }
        return retry_or_fail(ec, read_next);
    }

    /// True while an acquisition's claim may have landed unseen (its outcome is unknown).
    bool claim_in_doubt() const noexcept { return pending_ != nullptr; }
    /// True when the last answer showed this acquisition's claim landed too late to act on, and
    /// the action returned refreshes it (same token): finishing the claim, not a new one.
    bool refreshing_late_claim() const noexcept { return late_claim_; }
    /// True while the current acquisition's own claim may have landed unseen.
    bool claim_of_this_acquisition_in_doubt() const noexcept {
        return state_ == lease_state::acquiring && pending_ && pending_->acquisition == acquisition_;
    }

    lease_action acquire_on_read(own_time now, error_code ec, std::optional<record> const& found,
                                 diagnostics const& d) {
        late_claim_ = false;
        if (ec) {
            diag_ = d;
            return retry_or_fail(ec, read_next);
        }
        if (!found) {
            known_ = true;
            absent_ = true;
            released_ = false;
            return create(now);
        }
        return consider(now, *found);
    }

    lease_action acquire_on_wait(own_time /*now*/) {
        // After a yield, read first: under contention a waiter has taken the record meanwhile, and
        // a blind take-back would be refused (on a store that does not return the record with the
        // refusal, a write and then a read). Our marker still there is taken back as usual.
        if (std::exchange(yielding_, false)) yielded_ = true;
        return lease_action::read();
    }

    // ---- renew (while held) -------------------------------------------------
    // Time to wait before the next renewal.
    lease_action renew_schedule(own_time now) {
        attempt_ = 0;
        next_after_wait_ = write_next; // a scheduled renewal is one conditional write, no read first
        // Spread evenly around the interval, so that a holder writes once per interval on
        // average (a table's cost bound counts on it), and never later than halfway from the
        // interval to the renew deadline, so that retries still fit before it.
        auto const interval = static_cast<double>(std::chrono::nanoseconds(renew_interval()).count());
        auto const spread = std::min(0.1 * interval,
                                     0.5 * static_cast<double>(std::chrono::nanoseconds(renew_deadline() - renew_interval()).count()));
        auto const next = held_.t_send + std::chrono::nanoseconds(static_cast<std::int64_t>(
                                             interval - spread + 2.0 * spread * uniform()));
        return lease_action::wait(next - now);
    }

    lease_action renew_on_wait(own_time now) {
        if (state_ != lease_state::held) return lease_action::none();
        // Resumed after a pause past the deadline: the lease is gone; writing
        // now would only disturb the contenders' observation.
        if (now >= deadline()) return lose();
        if (next_after_wait_ == read_next) return lease_action::read();
        return renew_write(now);
    }

    lease_action renew_on_write(own_time now, error_code ec, put_result const& r) {
        if (state_ != lease_state::held) {
            // Lost by deadline while this renewal travelled: the lease stays lost, but the record
            // may still be ours, and a release can then still mark it for the next holder.
            if (state_ == lease_state::lost && has_version_) {
                if (!ec) held_.version = r.version;
                else if (outcome_unknown(ec)) own_doubts_.in_doubt(inflight_);
            }
            return lease_action::none();
        }
        if (!ec) return renewed(now, inflight_, r.version);
        diag_ = r.diag;
        if (ec == errc::precondition_failed || ec == errc::not_found) {
            // Refused: the record decides, not the refusal. An earlier attempt of ours may have
            // landed, or the refusal was spurious (a store or proxy that retried a request that
            // had landed); a real takeover happens only long after our deadline, so reading
            // first costs no safety.
            refused_ = true;
            if (r.current) return renew_on_read(now, {}, r.current, r.diag);
            return lease_action::read();
        }
        if (outcome_unknown(ec)) {
            own_doubts_.in_doubt(inflight_);
            return backoff_renew(ec, read_next);
        }
        return backoff_renew(ec, write_next);
    }

    lease_action renew_on_read(own_time now, error_code ec, std::optional<record> const& found, diagnostics const& d) {
        if (state_ != lease_state::held) {
            lease_body lb;
            diagnostics ignored;
            if (state_ == lease_state::lost && has_version_ && !ec && found &&
                !decode_lease_body(found->body, lb, ignored) && own_doubt(lb.nonce)) {
                settle_doubts(settlement_outcome::not_landed, lb.nonce);
                held_.version = found->version; // our renewal landed after the loss: still ours to mark released
            }
            return lease_action::none();
        }
        if (ec) {
            diag_ = d;
            return backoff_renew(ec, read_next);
        }
        if (!found) return lose();
        lease_body b;
        if (auto dec = decode_lease_body(found->body, b, diag_.edit())) return lose();
        if (auto landed = own_doubt(b.nonce)) return renewed(now, *landed, found->version);
        if (now >= deadline()) return lose(); // too late to write: it would only delay the contenders
        if (found->version == held_.version) {
            // Unchanged: none landed (yet), or the store refused a write that held. Send again,
            // after a pause when it was refused.
            if (std::exchange(refused_, false)) return backoff_renew(errc::precondition_failed, write_next);
            return renew_write(now);
        }
        return lose();
    }

    // The renew deadline passed without a successful renewal.
    void on_deadline(own_time now) {
        if (state_ == lease_state::held && now >= deadline()) (void)lose();
    }

    // ---- release -----------------------------------------------------------
    // Whether there is a record of ours to mark released (held now, or held
    // until it was lost: writing the marker lets others take over at once).
    bool can_release() const noexcept { return has_version_ && (state_ == lease_state::held || state_ == lease_state::lost); }

    lease_action release_start(own_time now) {
        state_ = lease_state::releasing;
        attempt_ = 0;
        refused_ = false;
        release_refusals_ = 0;
        diag_.clear();
        return release_write(now);
    }

    lease_action release_on_write(own_time now, error_code ec, put_result const& r) {
        if (!ec) return released(now, r.version);
        diag_ = r.diag;
        if (ec == errc::precondition_failed || ec == errc::not_found) {
            // As for renewals, the record decides: a write of ours in doubt may have landed, or the refusal was spurious.
            refused_ = true;
            if (r.current) return release_on_read(now, {}, r.current, r.diag);
            next_after_wait_ = read_next;
            return lease_action::read();
        }
        if (outcome_unknown(ec)) own_doubts_.in_doubt(inflight_);
        return backoff_release(ec, outcome_unknown(ec) ? read_next : write_next);
    }

    lease_action release_on_read(own_time now, error_code ec, std::optional<record> const& found, diagnostics const& d) {
        if (ec) {
            diag_ = d;
            return backoff_release(ec, read_next);
        }
        if (!found) return release_failed(errc::lease_lost);
        lease_body b;
        if (decode_lease_body(found->body, b, diag_.edit())) return release_failed(errc::lease_lost);
        if (auto landed = own_doubt(b.nonce)) {
            if (b.released) return released(now, found->version, b.nonce);
            // A renewal of ours landed: the record is still ours, under a newer version.
            settle_doubts(settlement_outcome::not_landed, b.nonce);
            held_.version = found->version;
            return release_write(now);
        }
        if (found->version == held_.version) {
            if (std::exchange(refused_, false) && ++release_refusals_ >= 3) {
                diag_.edit().message = "the store refused the released marker three times while the record stayed "
                                "unchanged: it does not honour preconditions as it should";
                return release_failed(errc::precondition_failed);
            }
            return release_write(now);
        }
        // A contender's record while we are still valid: only our released marker can have let it
        // in (a takeover needs ttl x skew of unchanged version). A release in doubt landed.
        if (b.token > held_.token && now < valid_until() &&
            own_doubts_.any([](attempt_record const& a) { return a.release; }))
            return released_by_contender();
        return release_failed(errc::lease_lost);
    }

    lease_action release_on_wait(own_time now) {
        if (next_after_wait_ == read_next) return lease_action::read();
        return release_write(now);
    }

    // The driver gave up on an acquisition (cancelled or timed out) between steps.
    void abandon_acquire() {
        if (state_ == lease_state::acquiring) state_ = lease_state::idle;
    }

    // ttl x skew, saturated: a window too long (or not a number) to represent waits "forever", never wraps
    // around to one already elapsed. Validated options never come near the cap (24 h x 1000).
    static std::chrono::nanoseconds takeover_window(std::chrono::milliseconds ttl, double skew) {
        constexpr double cap = 1e18; // ~31 years of nanoseconds, below INT64_MAX
        double const ns = static_cast<double>(std::chrono::nanoseconds(ttl).count()) * skew;
        if (!(ns < cap)) return std::chrono::nanoseconds(static_cast<std::int64_t>(cap));
        return std::chrono::nanoseconds(static_cast<std::int64_t>(ns));
    }

    // A record read by anyone (status, elections): decode for display.
    static error_code describe(record const& r, lease_info& info, diagnostics& d) {
        lease_body b;
        if (auto ec = decode_lease_body(r.body, b, d)) return ec;
        info.owner = std::move(b.owner);
        info.value = std::move(b.value);
        info.fencing_token = b.token;
        info.released = b.released;
        info.ttl = b.ttl;
        info.version = r.version;
        return {};
    }

private:
    enum after_wait { read_next, write_next };

    // A nonce kept inline: 32 hex digits, the same as fill_nonce draws from the generator (the
    // attempt in flight keeps one for the whole term: 33 heap bytes per held lease).
    struct nonce_text {
        std::array<char, 32> digits{}; // all '\0' until filled (hex digits never are)
        void fill(splitmix64& rng) noexcept {
            static constexpr char hexd[] = "0123456789abcdef";
            for (std::size_t half = 0; half < 2; ++half) {
                std::uint64_t v = rng();
                for (int i = 15; i >= 0; --i, v >>= 4) digits[half * 16 + static_cast<std::size_t>(i)] = hexd[v & 15];
            }
        }
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
    nonce_text fresh_nonce() noexcept {
        nonce_text n;
        n.fill(rng_);
        return n;
    }

    struct held_record {
        std::uint64_t token = 0;
        std::string version;
        own_time t_send{0};
    };

    static std::string hex(std::uint64_t v) {
        static constexpr char digits[] = "0123456789abcdef";
        std::string s(16, '0');
        for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 15];
        return s;
    }

    std::string body(std::uint64_t token, std::string_view nonce, bool released,
                     std::chrono::nanoseconds turn_left = std::chrono::nanoseconds(0)) const {
        return encode_lease_body(instance_, opts_.value, nonce, token, released, ttl(), advertised(turn_left));
    }
    // A turn as the record states it: whole milliseconds, rounded up; none when unbounded (never yields).
    static std::chrono::milliseconds advertised(std::chrono::nanoseconds left) noexcept {
        if (left <= std::chrono::nanoseconds(0) || left >= std::chrono::nanoseconds(std::chrono::hours(24)))
            return std::chrono::milliseconds(0);
        return std::chrono::ceil<std::chrono::milliseconds>(left);
    }

    // The record as last known is the released marker this object wrote itself.
    bool released_by_us() const noexcept { return own_release_ && !own_release_->version.empty() && known_version_ == own_release_->version; }

    // Fairness (lease_options::yield_after): whether the current run of terms taken back
    // straight after our own release has lasted a turn.
    std::chrono::nanoseconds first_turn() const noexcept {
        auto const y = opts_.effective_yield_after();
        if (y == std::chrono::milliseconds::max()) return std::chrono::nanoseconds::max();
        return std::chrono::nanoseconds(y);
    }
    bool streak_over(own_time now) const noexcept {
        return turn_ != std::chrono::nanoseconds::max() && now - streak_since_ >= turn_;
    }
    // Two poll intervals and a quarter: every waiter reads within a poll interval of its last
    // read (its pauses are jittered down, never up), or within two when the record it read stated
    // a turn (turn_wait_cap). Not the turn's end as the waiter computes it: it counts the turn from
    // its first read of that version, which may come a whole hold after the write, so that end
    // can be later than our release by up to the cap. The quarter is for a read still in flight.
    std::chrono::nanoseconds yield_pause() const noexcept {
        return std::chrono::nanoseconds(opts_.poll_interval) * 9 / 4;
    }

    // The turn a record states (see lease_record.hpp). Only a participant re-acquiring back to
    // back states one (this acquisition began right after our own release): it will likely
    // release and take back again within its turn. Others state none (one that takes the lease
    // once, or comes back after a while and finds its old marker), so when they release and
    // leave the waiters have been polling as usual and one of them takes the record at once.
    // What is left, at `now`, of the turn a claim sent now would be part of (see claimed()):
    // a new one, the current one (a take-back within it), or a doubled one (after a yield).
    std::chrono::nanoseconds turn_left_after_claim(own_time now, bool takes_back) const noexcept {
        auto const first = first_turn();
        if (first == std::chrono::nanoseconds::max() || !looping_) return std::chrono::nanoseconds(0);
        if (!takes_back) return first;
        if (yielded_) return std::min(turn_ * 2, first * 16);
        return streak_since_ + turn_ - now;
    }
    // What is left of the current turn, for a renewal of a term that states one (looping_ stays
    // as the acquisition set it for the whole term).
    std::chrono::nanoseconds turn_left(own_time now) const noexcept {
        if (turn_ == std::chrono::nanoseconds::max() || !looping_) return std::chrono::nanoseconds(0);
        return streak_since_ + turn_ - now;
    }

    // Our own released marker is the record: taken back at once during our turn; once the turn
    // is over, it stays with the waiters until 2.25 poll intervals after our release (each
    // reads it by then: see yield_pause), unless this acquisition may not wait that long.
    lease_action take_back(own_time now, bool contended = false) {
        if (!yielded_ && yield_allowed_ && streak_over(now)) {
            auto const since_release = now - own_release_->at; // set: the record is our released marker
            if (since_release < yield_pause()) {
                yielding_ = true;
                return lease_action::wait(yield_pause() - since_release);
            }
            yielded_ = true; // the waiters have had that time already
        }
        return claim(now, next_token(), precondition::matches(known_version_), true, contended);
    }

    // `contended`: the claim is of a released record just seen (a read, or a refusal that showed
    // it), so a refusal means someone else took it in the meantime.
    lease_action claim(own_time now, std::uint64_t token, precondition pc, bool takes_back = false,
                       bool contended = false) {
        bool const creates = pc.which() == precondition::kind::absent;
        inflight_contended_ = contended;
        inflight_ = attempt_record{fresh_nonce(), token, now, acquisition_, false, creates, takes_back,
                                   takes_back && yielded_,
                                   creates ? 0 : std::hash<std::string_view>{}(std::string_view(pc.version()))};
        inflight_replaces_ = pc.which() == precondition::kind::matches;
        return lease_action::write(body(token, inflight_.nonce, false, turn_left_after_claim(now, takes_back)), std::move(pc));
    }

    // The record is absent: create it, with a token above every one this object saw and the floor.
    lease_action create(own_time now) {
        return claim(now, std::max(next_token(), creation_floor_), precondition::absent());
    }

    // The token of a claim over a record: above the record's, and above every token this object
    // saw. A record can go back: deleted outside baton, then created again by a create that was
    // delayed in the network, it carries an older token; claimed at that token + 1, a term of this
    // object would repeat one it held before (a lease table would take it for that term alive).
    std::uint64_t next_token() const noexcept { return max_token_seen_ + 1; }

    lease_action claimed(own_time now, std::uint64_t token, std::string const& version, own_time sent) {
        note_success();
        created_ = created_ || inflight_.creates;
        // A claim in doubt other than this one: conditional on the same state as this one, it
        // cannot have landed; on another, it may have landed before and been replaced since.
        if (pending_ && pending_->nonce != inflight_.nonce)
            report(*pending_, pending_->creates == inflight_.creates && pending_->condition == inflight_.condition
                                  ? settlement_outcome::not_landed
                                  : settlement_outcome::unresolved);
        pending_.reset();
        max_token_seen_ = std::max(max_token_seen_, token);
        known_ = true;
        absent_ = false;
        released_ = false;
        known_version_ = version;
        if (now >= sent + renew_deadline()) {
            // It landed, but too late to act on: refresh our own record first.
            late_claim_ = true;
            return claim(now, token, precondition::matches(version));
        }
        held_.token = token;
        held_.version = version; // assigned, not rebuilt: a renewal then allocates nothing here
        held_.t_send = sent;
        has_version_ = true;
        state_ = lease_state::held;
        if (!inflight_.takes_back) {
            // Taken from someone else, created, or taken over: a new turn starts.
            streak_since_ = sent;
            turn_ = first_turn();
        } else if (inflight_.after_yield) {
            // We yielded and nobody took it: likely nobody waits. The next turn is twice as long
            // (up to 16 times the first), so a participant without rivals seldom pauses.
            streak_since_ = sent;
            turn_ = std::min(turn_ * 2, first_turn() * 16);
        }
        return lease_action::done();
    }

    // Decide what to do about the record as it is now.
    lease_action consider(own_time now, record const& r) {
        lease_body b;
        diagnostics d;
        if (auto ec = decode_lease_body(r.body, b, d)) {
            diag_ = d;
            state_ = lease_state::idle;
            return lease_action::done(ec);
        }
        max_token_seen_ = std::max(max_token_seen_, b.token);
        known_ = true;
        absent_ = false;
        released_ = b.released;
        known_version_ = r.version;
        if (pending_ && pending_->nonce == b.nonce) {
            report(*pending_, settlement_outcome::landed);
            inflight_ = *pending_;
            return claimed(now, inflight_.token, r.version, inflight_.sent);
        }
        if (released_by_us()) {
            attempt_ = 0;
            took_over_ = false; // a takeover refused earlier in this acquisition is not this claim
            return take_back(now, true); // our own marker, still there (read after a failure or a wait)
        }
        if (b.released || b.owner == instance_) {
            // Released, or ours from an earlier term: nobody else can hold it
            // while this version is current. A new term gets a new token.
            attempt_ = 0;
            took_over_ = false;
            return claim(now, next_token(), precondition::matches(r.version), false, b.released);
        }
        if (!observed_ || observed_->version != r.version) {
            if (!observed_) observed_ = std::make_unique<observation>();
            observed_->version = r.version;
            observed_->since = now; // the response of the first read of this version
            observed_->ttl = b.ttl;
        }
        auto const window = takeover_window(observed_->ttl, opts_.max_clock_rate_skew);
        auto const elapsed = now - observed_->since;
        if (elapsed >= window) {
            took_over_ = true;
            return claim(now, next_token(), precondition::matches(r.version));
        }
        if (try_once_) {
            state_ = lease_state::idle;
            return lease_action::done(errc::held_by_other);
        }
        attempt_ = 0;
        next_after_wait_ = read_next;
        // Its holder's turn (advice, see lease_record.hpp): until it is over, the holder takes its
        // own released record straight back, so a read then would only lose races. The next read
        // comes at the turn's end, but never later than two poll intervals from now: a holder may
        // release and leave in its turn, and the lease is then taken within two polls. Sleeping
        // through a turn of two polls instead of reading once a poll is what halves the waiters'
        // reads under sustained contention (lease_options::yield_after).
        auto const turn = turn_stated(b, now);
        auto const pause = turn > std::chrono::nanoseconds(0)
                               ? std::min<std::chrono::nanoseconds>(turn + stagger(), turn_wait_cap())
                               : poll_delay();
        return lease_action::wait(std::min<std::chrono::nanoseconds>(pause, window - elapsed));
    }

    // What is left of the turn record `b` states, from when this version was first read (the write
    // was sent before that, so the turn ends no later).
    std::chrono::nanoseconds turn_stated(lease_body const& b, own_time now) const noexcept {
        if (b.turn.count() <= 0) return std::chrono::nanoseconds(0);
        return std::max(observed_->since + std::chrono::nanoseconds(b.turn) - now, std::chrono::nanoseconds(0));
    }
    // A poll interval less up to a 32nd: the cap of a pause for a stated turn, jittered so that
    // waiters capped together drift apart instead of staying in lockstep.
    std::chrono::nanoseconds poll_delay_near_full() {
        auto const poll = std::chrono::nanoseconds(opts_.poll_interval);
        return poll - std::chrono::nanoseconds(static_cast<std::int64_t>(uniform() * static_cast<double>(poll.count()) / 32));
    }
    // The longest a waiter sleeps through a stated turn: two poll intervals less up to a 16th of
    // one, jittered for the same reason (the sum of two draws of poll_delay_near_full, which is
    // also the pause after a lost race). yield_pause covers it.
    std::chrono::nanoseconds turn_wait_cap() { return poll_delay_near_full() + poll_delay_near_full(); }
    // Spreads the waiters that wake at the end of a turn over half a poll interval, so that one
    // reads the released record first instead of all racing for it.
    std::chrono::nanoseconds stagger() {
        auto const half = std::chrono::nanoseconds(opts_.poll_interval) / 2;
        return std::chrono::nanoseconds(static_cast<std::int64_t>(uniform() * static_cast<double>(half.count())));
    }

    std::chrono::nanoseconds poll_delay() {
        auto const poll = std::chrono::nanoseconds(opts_.poll_interval);
        return std::chrono::nanoseconds(static_cast<std::int64_t>((0.5 + 0.5 * uniform()) * static_cast<double>(poll.count())));
    }

    // The retry policy's pause before attempt `attempt_ + 1` (then `next`), or nothing when it gives up.
    std::optional<lease_action> policy_pause(error_code ec, after_wait next) {
        ++attempt_;
        next_after_wait_ = next;
        auto const d = hooks_.fns->on_failure(hooks_.ctx, ec, attempt_, uniform());
        if (!d.retry) return std::nullopt;
        if (hooks_.fns->on_retry) hooks_.fns->on_retry(hooks_.ctx, current_lane(), ec, attempt_, d.delay);
        return lease_action::wait(d.delay);
    }

    // Acquire-side failure handling: retry per policy; waiting acquisitions
    // keep going at the poll interval while errors are transient.
    lease_action retry_or_fail(error_code ec, after_wait next) {
        if (auto pause = policy_pause(ec, next)) return *pause;
        if (!is_retryable(ec)) { // a missing bucket or table, auth, bad input: final
            state_ = lease_state::idle;
            return lease_action::done(ec);
        }
        if (try_once_) {
            // Bounded by the policy, even with its own claim in doubt: the claim stays known, and
            // the next acquisition adopts it if it landed.
            state_ = lease_state::idle;
            return lease_action::done(ec);
        }
        attempt_ = 0;
        return lease_action::wait(poll_delay());
    }

    // Rewrites our own record (same token, fresh nonce) under its current version.
    lease_action rewrite_own(own_time now, bool released) {
        inflight_ = attempt_record{fresh_nonce(), held_.token, now, 0, released};
        // A released marker states no turn: whoever reads it may take it at once (the releaser
        // may never come back), and a waiter that races our take-back loses one write at most.
        return lease_action::write(body(held_.token, inflight_.nonce, released,
                                        released ? std::chrono::nanoseconds(0) : turn_left(now)),
                                   precondition::matches(held_.version));
    }
    lease_action renew_write(own_time now) { return rewrite_own(now, false); }

    // Renewals never give up before the deadline: the policy spaces attempts
    // within a round; between rounds, a quarter renew interval.
    lease_action backoff_renew(error_code ec, after_wait next) {
        if (auto pause = policy_pause(ec, next)) return *pause;
        attempt_ = 0;
        return lease_action::wait(std::chrono::nanoseconds(renew_interval()) / 4);
    }

    // This term's writes in doubt stay known until the next acquisition clears them: a release
    // after the loss may still find one landed. They never pass for a claim (see acquire_start).
    lease_action lose() {
        state_ = lease_state::lost;
        return lease_action::done(errc::lease_lost);
    }

    // A renewal confirmed, directly or by reading back its nonce: the lease is valid from when it was sent.
    lease_action renewed(own_time now, attempt_record const& a, std::string const& version) {
        held_.version = version;
        held_.t_send = a.sent;
        refused_ = false;
        // Every other attempt of this round was conditional on the version just replaced: none can land now.
        settle_doubts(settlement_outcome::not_landed, a.nonce);
        note_success();
        return renew_schedule(now);
    }

    // The attempt of this term in doubt that wrote `nonce`, if any.
    std::optional<attempt_record> own_doubt(std::string_view nonce) const { return own_doubts_.landed(nonce); }

    lease_action release_write(own_time now) { return rewrite_own(now, true); }

    lease_action backoff_release(error_code ec, after_wait next) {
        if (auto pause = policy_pause(ec, next)) return *pause;
        return release_failed(ec);
    }

    // `landed`: the nonce of our marker in doubt that the read found, when settled by reading.
    lease_action released(own_time now, std::string const& version, std::string_view landed = {}) {
        note_success();
        settle_doubts(settlement_outcome::not_landed, landed);
        state_ = lease_state::released;
        known_ = true;
        absent_ = false;
        released_ = true;
        known_version_ = version;
        if (!own_release_) own_release_ = std::make_unique<own_release>();
        own_release_->version = version;
        own_release_->at = now;
        has_version_ = false;
        return lease_action::done();
    }

    // Our marker landed and a contender already took the lease through it: released, and the
    // record is not ours any more.
    lease_action released_by_contender() {
        note_success();
        // One of our markers in doubt landed; which one is known only when there was one.
        std::size_t markers = 0;
        own_doubts_.for_each([&](attempt_record const& a) { markers += a.release; });
        own_doubts_.for_each([&](attempt_record const& a) {
            report(a, !a.release ? settlement_outcome::not_landed
                      : markers == 1 ? settlement_outcome::landed
                                     : settlement_outcome::unresolved);
        });
        own_doubts_.clear();
        state_ = lease_state::released;
        known_ = false;
        has_version_ = false;
        return lease_action::done();
    }

    lease_action release_failed(error_code ec) {
        // The record moved on or vanished: nothing of ours can land on it any more, but one may
        // have landed before and been replaced since; which, no read can tell now.
        settle_doubts(settlement_outcome::unresolved);
        state_ = lease_state::lost;
        has_version_ = false;
        known_ = false;
        return lease_action::done(ec);
    }

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
    void settle_doubts(settlement_outcome o, std::string_view landed = {}) {
        if (hooks_.fns->on_settled)
            own_doubts_.for_each([&](attempt_record const& a) {
                report(a, !landed.empty() && a.nonce == landed ? settlement_outcome::landed : o);
            });
        own_doubts_.clear();
    }

    void note_success() {
        hooks_.fns->on_success(hooks_.ctx, attempt_ + 1);
        attempt_ = 0;
    }

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
    bool has_version_ = false;
    bool took_over_ = false;
    bool late_claim_ = false;          // the last answer found our claim landed too late: refreshing it
    bool created_ = false;             // the last acquisition created the record
    bool refused_ = false;             // the last renewal or release write was refused (412, 404): read to confirm
    bool try_once_ = false;
    unsigned release_refusals_ = 0;    // refusals of this release while the record stayed ours
    unsigned attempt_ = 0;
    std::uint64_t creation_floor_ = 0; // the least token a created record starts at

    // Fairness between contenders that release and re-acquire (lease_options::yield_after).
    struct own_release {
        std::string version; // of the last released marker we wrote
        own_time at{0};      // when that marker was confirmed
    };
    std::unique_ptr<own_release> own_release_; // from the first release, then kept (bytes per lease)
    own_time streak_since_{0};             // when the current run of terms taken back straight after our release began
    std::chrono::nanoseconds turn_{0};     // how long that run may last before we yield
    bool yield_allowed_ = false;           // this acquisition may yield (it waits, and long enough)
    bool yielding_ = false;                // the wait in progress is a yield
    bool yielded_ = false;                 // this acquisition has yielded
    bool looping_ = false;                 // this acquisition began right after our own release (back to back)
    after_wait next_after_wait_ = read_next;

    attempt_record inflight_;
    // An acquisition's claim whose outcome is unknown (on the heap: rare, and 80 bytes in every lease).
    std::unique_ptr<attempt_record> pending_;
    settlement_ledger<attempt_record> own_doubts_; // this term's renewals and releases whose outcomes are unknown

    // What this participant last knew of the record.
    bool known_ = false, absent_ = false, released_ = false;
    bool inflight_replaces_ = false; // the claim in flight was a replace (not a create)
    bool inflight_contended_ = false; // the claim in flight is of a released record just seen (see claim())
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

#endif
