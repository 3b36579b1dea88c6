// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_LEASE_MACHINE_IPP
#define BATON_RECIPE_IMPL_LEASE_MACHINE_IPP

// Layer: recipes, internal. The compiled part of recipe/detail/lease_machine.hpp: the lease
// protocol's state machine.
#include <baton/recipe/detail/lease_machine.hpp>

namespace baton::detail {

BATON_DECL last_failure& last_failure::operator=(diagnostics const& d) {
    if (d_) *d_ = d;
    else if (!d.empty()) d_ = std::make_unique<diagnostics>(d);
    return *this;
}

BATON_DECL last_failure& last_failure::operator=(diagnostics&& d) {
    if (d_) *d_ = std::move(d);
    else if (!d.empty()) d_ = std::make_unique<diagnostics>(std::move(d));
    return *this;
}

BATON_DECL lease_machine::lease_machine(lease_options opts, std::uint64_t seed, lease_hooks hooks)
    : opts_(std::move(opts)), rng_(seed), hooks_(hooks) {
    BOOST_ASSERT(hooks_.fns && hooks_.fns->on_failure && hooks_.fns->on_success);
    std::string_view const owner = opts_.owner.empty() ? std::string_view("baton") : std::string_view(opts_.owner);
    auto const suffix = to_hex(rng_());
    instance_ = std::string(owner.size() + 1 + suffix.size(), '#'); // sized exactly: every lease keeps it
    owner.copy(instance_.data(), owner.size());
    suffix.copy(instance_.data() + owner.size() + 1, suffix.size());
}

BATON_DECL machine_step lease_machine::acquire_start(own_time now, bool wait, std::chrono::nanoseconds patience) {
    // Writes of the previous term still in doubt belong to it: if one lands, the record
    // reads as ours from an earlier term, and the claim takes token + 1.
    settle_doubts(settlement_outcome::unresolved);
    ++acquisition_;
    state_ = lease_state::acquiring;
    try_once_ = !wait;
    loss_ = loss_cause::none;
    attempt_ = 0;
    took_over_ = false;
    created_ = false;
    diag_.clear();
    turns_.begin_acquisition(opts_, now, wait, patience);
    if (known_ == known_record::released) {
        if (released_by_us()) return take_back(now);
        return claim(now, next_token(), precondition::matches(known_version_));
    }
    if (known_ == known_record::unknown || known_ == known_record::absent) return create(now);
    return machine_step::read();
}

BATON_DECL machine_step lease_machine::acquire_on_write(own_time now, error_code ec, put_result const& r) {
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
        if (inflight_claim_ == claim_kind::replace_just_seen_released && turns_.patient()) {
            attempt_ = 0;
            next_after_wait_ = read_next;
            return machine_step::wait(lease_turns::poll_near_full(opts_, uniform()));
        }
        return machine_step::read();
    }
    if (ec == errc::not_found && inflight_claim_ != claim_kind::create) {
        // A replace found the key gone (S3 answers 404): create it instead.
        known_ = known_record::absent;
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

BATON_DECL machine_step lease_machine::acquire_on_read(own_time now, error_code ec, std::optional<record> const& found,
                                                       diagnostics const& d) {
    late_claim_ = false;
    if (ec) {
        diag_ = d;
        return retry_or_fail(ec, read_next);
    }
    if (!found) {
        known_ = known_record::absent;
        return create(now);
    }
    return consider(now, *found);
}

BATON_DECL machine_step lease_machine::acquire_on_wait(own_time /*now*/) {
    // After a yield, read first: under contention a waiter has taken the record meanwhile, and
    // a blind take-back would be refused (on a store that does not return the record with the
    // refusal, a write and then a read). Our marker still there is taken back as usual.
    turns_.wait_ended();
    return machine_step::read();
}

BATON_DECL machine_step lease_machine::renew_schedule(own_time now) {
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
    return machine_step::wait(next - now);
}

BATON_DECL machine_step lease_machine::renew_on_wait(own_time now) {
    if (state_ != lease_state::held) return machine_step::none();
    // Resumed after a pause past the deadline: the lease is gone; writing
    // now would only disturb the contenders' observation.
    if (now >= deadline()) return lose(loss_cause::deadline);
    if (next_after_wait_ == read_next) return machine_step::read();
    return renew_write(now);
}

BATON_DECL machine_step lease_machine::renew_on_write(own_time now, error_code ec, put_result const& r) {
    if (state_ != lease_state::held) {
        // Lost by deadline while this renewal travelled: the lease stays lost, but the record
        // may still be ours, and a release can then still mark it for the next holder.
        if (state_ == lease_state::lost && has_version_) {
            if (!ec) held_.version = r.version;
            else if (outcome_unknown(ec)) own_doubts_.in_doubt(inflight_);
        }
        return machine_step::none();
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
        return machine_step::read();
    }
    if (outcome_unknown(ec)) {
        own_doubts_.in_doubt(inflight_);
        return backoff_renew(ec, read_next);
    }
    return backoff_renew(ec, write_next);
}

BATON_DECL machine_step lease_machine::renew_on_read(own_time now, error_code ec, std::optional<record> const& found,
                                                     diagnostics const& d) {
    if (state_ != lease_state::held) {
        lease_body lb;
        diagnostics ignored;
        if (state_ == lease_state::lost && has_version_ && !ec && found &&
            !decode_lease_body(found->body, lb, ignored) && own_doubt(lb.nonce)) {
            settle_doubts(settlement_outcome::not_landed, lb.nonce);
            held_.version = found->version; // our renewal landed after the loss: still ours to mark released
        }
        return machine_step::none();
    }
    if (ec) {
        diag_ = d;
        return backoff_renew(ec, read_next);
    }
    if (!found) return lose(loss_cause::record_vanished);
    lease_body b;
    if (auto dec = decode_lease_body(found->body, b, diag_.edit())) return lose(loss_cause::record_unreadable);
    if (auto landed = own_doubt(b.nonce)) return renewed(now, *landed, found->version);
    if (now >= deadline()) return lose(loss_cause::deadline); // too late to write: it would only delay the contenders
    if (found->version == held_.version) {
        // Unchanged: none landed (yet), or the store refused a write that held. Send again,
        // after a pause when it was refused.
        if (std::exchange(refused_, false)) return backoff_renew(errc::precondition_failed, write_next);
        return renew_write(now);
    }
    return lose(loss_cause::taken_over);
}

BATON_DECL machine_step lease_machine::release_start(own_time now) {
    state_ = lease_state::releasing;
    attempt_ = 0;
    refused_ = false;
    release_refusals_ = 0;
    diag_.clear();
    return release_write(now);
}

BATON_DECL machine_step lease_machine::release_on_write(own_time now, error_code ec, put_result const& r) {
    if (!ec) return released(now, r.version);
    diag_ = r.diag;
    if (ec == errc::precondition_failed || ec == errc::not_found) {
        // As for renewals, the record decides: a write of ours in doubt may have landed, or the refusal was spurious.
        refused_ = true;
        if (r.current) return release_on_read(now, {}, r.current, r.diag);
        next_after_wait_ = read_next;
        return machine_step::read();
    }
    if (outcome_unknown(ec)) own_doubts_.in_doubt(inflight_);
    return backoff_release(ec, outcome_unknown(ec) ? read_next : write_next);
}

BATON_DECL machine_step lease_machine::release_on_read(own_time now, error_code ec, std::optional<record> const& found,
                                                       diagnostics const& d) {
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

BATON_DECL machine_step lease_machine::release_on_wait(own_time now) {
    if (next_after_wait_ == read_next) return machine_step::read();
    return release_write(now);
}

BATON_DECL std::chrono::nanoseconds lease_machine::takeover_window(std::chrono::milliseconds ttl, double skew) {
    constexpr double cap = 1e18; // ~31 years of nanoseconds, below INT64_MAX
    double const ns = static_cast<double>(std::chrono::nanoseconds(ttl).count()) * skew;
    if (!(ns < cap)) return std::chrono::nanoseconds(static_cast<std::int64_t>(cap));
    return std::chrono::nanoseconds(static_cast<std::int64_t>(ns));
}

BATON_DECL error_code lease_machine::describe(record const& r, lease_info& info, diagnostics& d) {
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

BATON_DECL void lease_machine::nonce_text::fill(splitmix64& rng) noexcept {
    put_hex16(rng(), digits.data());
    put_hex16(rng(), digits.data() + 16);
}

BATON_DECL lease_machine::nonce_text lease_machine::fresh_nonce() noexcept {
    nonce_text n;
    n.fill(rng_);
    return n;
}

BATON_DECL machine_step lease_machine::take_back(own_time now, bool contended) {
    if (auto const yield = turns_.yield_before_take_back(opts_, now); yield > std::chrono::nanoseconds(0))
        return machine_step::wait(yield);
    return claim(now, next_token(), precondition::matches(known_version_), true, contended);
}

BATON_DECL machine_step lease_machine::claim(own_time now, std::uint64_t token, precondition pc, bool takes_back,
                                             bool contended) {
    bool const creates = pc.which() == precondition::kind::absent;
    inflight_ = attempt_record{fresh_nonce(), token, now, acquisition_, false, creates, takes_back,
                               takes_back && turns_.yielded(),
                               creates ? 0 : std::hash<std::string_view>{}(std::string_view(pc.version()))};
    inflight_claim_ = pc.which() != precondition::kind::matches ? claim_kind::create
                      : contended                                 ? claim_kind::replace_just_seen_released
                                                                  : claim_kind::replace;
    return machine_step::write(body(token, inflight_.nonce, false, turns_.left_after_claim(opts_, now, takes_back)), std::move(pc));
}

BATON_DECL machine_step lease_machine::claimed(own_time now, std::uint64_t token, std::string const& version,
                                               own_time sent) {
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
    known_ = known_record::present;
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
    // Taken from someone else, created or taken over: a new turn. After a yield nobody
    // answered (likely nobody waits), a turn twice as long, so that a participant without
    // rivals seldom pauses.
    turns_.claimed(opts_, sent, inflight_.takes_back, inflight_.after_yield);
    return machine_step::done();
}

BATON_DECL machine_step lease_machine::consider(own_time now, record const& r) {
    lease_body b;
    diagnostics d;
    if (auto ec = decode_lease_body(r.body, b, d)) {
        diag_ = d;
        state_ = lease_state::idle;
        return machine_step::done(ec);
    }
    max_token_seen_ = std::max(max_token_seen_, b.token);
    known_ = b.released ? known_record::released : known_record::present;
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
        return machine_step::done(errc::held_by_other);
    }
    attempt_ = 0;
    next_after_wait_ = read_next;
    // Its holder's turn (advice, see lease_record.hpp): until it is over, the holder takes its
    // own released record straight back, so a read then would only lose races. The next read
    // comes at the turn's end, but never later than two poll intervals from now: a holder may
    // release and leave in its turn, and the lease is then taken within two polls. Sleeping
    // through a turn of two polls instead of reading once a poll is what halves the waiters'
    // reads under sustained contention (lease_options::yield_after).
    auto const turn = lease_turns::stated(b, observed_->since, now);
    std::chrono::nanoseconds pause;
    if (turn > std::chrono::nanoseconds(0)) {
        double const cap1 = uniform(), cap2 = uniform(), stagger = uniform(); // in this order on every compiler
        pause = lease_turns::sleep_through(opts_, turn, stagger, cap1, cap2);
    } else {
        pause = poll_delay();
    }
    return machine_step::wait(std::min<std::chrono::nanoseconds>(pause, window - elapsed));
}

BATON_DECL std::chrono::nanoseconds lease_machine::poll_delay() {
    auto const poll = std::chrono::nanoseconds(opts_.poll_interval);
    return std::chrono::nanoseconds(static_cast<std::int64_t>((0.5 + 0.5 * uniform()) * static_cast<double>(poll.count())));
}

BATON_DECL std::optional<machine_step> lease_machine::policy_pause(error_code ec, after_wait next) {
    ++attempt_;
    next_after_wait_ = next;
    auto const d = hooks_.fns->on_failure(hooks_.ctx, ec, attempt_, uniform());
    if (!d.retry) return std::nullopt;
    if (hooks_.fns->on_retry) hooks_.fns->on_retry(hooks_.ctx, current_lane(), ec, attempt_, d.delay);
    return machine_step::wait(d.delay);
}

BATON_DECL machine_step lease_machine::retry_or_fail(error_code ec, after_wait next) {
    if (auto pause = policy_pause(ec, next)) return *pause;
    if (!is_retryable(ec)) { // a missing bucket or table, auth, bad input: final
        state_ = lease_state::idle;
        return machine_step::done(ec);
    }
    if (try_once_) {
        // Bounded by the policy, even with its own claim in doubt: the claim stays known, and
        // the next acquisition adopts it if it landed.
        state_ = lease_state::idle;
        return machine_step::done(ec);
    }
    attempt_ = 0;
    return machine_step::wait(poll_delay());
}

BATON_DECL machine_step lease_machine::rewrite_own(own_time now, bool released) {
    inflight_ = attempt_record{fresh_nonce(), held_.token, now, 0, released};
    // A released marker states no turn: whoever reads it may take it at once (the releaser
    // may never come back), and a waiter that races our take-back loses one write at most.
    return machine_step::write(body(held_.token, inflight_.nonce, released,
                                    released ? std::chrono::nanoseconds(0) : turns_.left(now)),
                               precondition::matches(held_.version));
}

BATON_DECL machine_step lease_machine::backoff_renew(error_code ec, after_wait next) {
    if (auto pause = policy_pause(ec, next)) return *pause;
    attempt_ = 0;
    return machine_step::wait(std::chrono::nanoseconds(renew_interval()) / 4);
}

BATON_DECL machine_step lease_machine::lose(loss_cause why) {
    state_ = lease_state::lost;
    loss_ = why;
    return machine_step::done(errc::lease_lost);
}

BATON_DECL std::string_view lease_machine::describe(loss_cause c) noexcept {
    switch (c) {
    case loss_cause::deadline: return "renew deadline passed";
    case loss_cause::taken_over:
    case loss_cause::record_vanished:
    case loss_cause::record_unreadable: return "taken over (the record changed or vanished)";
    case loss_cause::step_not_taken: return "the lease machine asked for a step its driver cannot take";
    case loss_cause::none: break;
    }
    return "";
}

BATON_DECL std::string_view lease_machine::detail_of(loss_cause c) noexcept {
    switch (c) {
    case loss_cause::taken_over: return "the record changed";
    case loss_cause::record_vanished: return "the record was deleted (outside baton: a lifecycle rule, a TTL, an operator)";
    case loss_cause::record_unreadable: return "the record is no longer a lease record";
    case loss_cause::deadline:
    case loss_cause::step_not_taken:
    case loss_cause::none: break;
    }
    return "";
}

BATON_DECL machine_step lease_machine::renewed(own_time now, attempt_record const& a, std::string const& version) {
    held_.version = version;
    held_.t_send = a.sent;
    refused_ = false;
    // Every other attempt of this round was conditional on the version just replaced: none can land now.
    settle_doubts(settlement_outcome::not_landed, a.nonce);
    note_success();
    return renew_schedule(now);
}

BATON_DECL machine_step lease_machine::backoff_release(error_code ec, after_wait next) {
    if (auto pause = policy_pause(ec, next)) return *pause;
    return release_failed(ec);
}

BATON_DECL machine_step lease_machine::released(own_time now, std::string const& version, std::string_view landed) {
    note_success();
    settle_doubts(settlement_outcome::not_landed, landed);
    state_ = lease_state::released;
    known_ = known_record::released;
    known_version_ = version;
    turns_.released(version, now);
    has_version_ = false;
    return machine_step::done();
}

BATON_DECL machine_step lease_machine::released_by_contender() {
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
    known_ = known_record::unknown;
    has_version_ = false;
    return machine_step::done();
}

BATON_DECL machine_step lease_machine::release_failed(error_code ec) {
    // The record moved on or vanished: nothing of ours can land on it any more, but one may
    // have landed before and been replaced since; which, no read can tell now.
    settle_doubts(settlement_outcome::unresolved);
    state_ = lease_state::lost;
    has_version_ = false;
    known_ = known_record::unknown;
    return machine_step::done(ec);
}

BATON_DECL void lease_machine::settle_doubts(settlement_outcome o, std::string_view landed) {
    if (hooks_.fns->on_settled)
        own_doubts_.for_each([&](attempt_record const& a) {
            report(a, !landed.empty() && a.nonce == landed ? settlement_outcome::landed : o);
        });
    own_doubts_.clear();
}

BATON_DECL void lease_machine::note_success() {
    hooks_.fns->on_success(hooks_.ctx, attempt_ + 1);
    attempt_ = 0;
}

} // namespace baton::detail

#endif
