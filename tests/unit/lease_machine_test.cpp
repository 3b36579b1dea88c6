// The lease protocol's state machine, driven directly: no I/O, no timers,
// no executor. Each case feeds events with chosen own-clock times and checks
// the action the machine asks for (read, conditional write, wait, done).
#include <baton/recipe/detail/lease_machine.hpp>
#include <baton/recipe/detail/lease_record.hpp>
#include <baton/core/retry.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using baton::errc;
using baton::error_code;
using baton::lease_state;
using baton::detail::machine_step;
using baton::detail::lease_machine;
using act = machine_step::type;

struct fixture {
    baton::standard_retry retry;
    lease_machine m;

    explicit fixture(std::string owner = "a", double skew = 2.0) : m(opts(std::move(owner), skew), 7, hooks(retry)) {}

    static baton::lease_options opts(std::string owner, double skew) {
        baton::lease_options o;
        o.key = "k";
        o.owner = std::move(owner);
        o.ttl = 30s; // renew interval 10 s, deadline 20 s
        o.max_clock_rate_skew = skew;
        o.yield_after = 1s; // a turn of one poll interval, as these cases count it (the default is two)
        return o;
    }
    static baton::detail::lease_hooks hooks(baton::standard_retry& r) {
        static constexpr baton::detail::lease_hook_fns fns{
            [](void* c, error_code const& ec, unsigned n, double u) {
                return static_cast<baton::standard_retry*>(c)->on_failure(ec, n, u);
            },
            [](void* c, unsigned n) { static_cast<baton::standard_retry*>(c)->on_success(n); }};
        return {&r, &fns};
    }
};

baton::detail::lease_body body_of(machine_step const& a) {
    baton::detail::lease_body b;
    baton::diagnostics d;
    REQUIRE_FALSE(baton::detail::decode_lease_body(a.body, b, d));
    return b;
}

baton::put_result written(std::string version) {
    baton::put_result r;
    r.version = std::move(version);
    return r;
}

baton::record stored(machine_step const& write, std::string version) { return baton::record{"k", write.body, std::move(version)}; }

baton::record foreign(std::uint64_t token, std::string version, bool released = false) {
    return baton::record{"k", baton::detail::encode_lease_body("b#1", "", "nonce-b", token, released, 30s), std::move(version)};
}

// Acquires a free lease at `t`: one create, answered with version "v1".
machine_step acquire_free(lease_machine& m, std::chrono::nanoseconds t) {
    auto claim = m.acquire_start(t, true);
    REQUIRE(claim.what == act::write);
    CHECK(claim.pc.which() == baton::precondition::kind::absent);
    auto done = m.acquire_on_write(t + 5ms, {}, written("v1"));
    REQUIRE(done.what == act::done);
    REQUIRE_FALSE(done.ec);
    return claim;
}

} // namespace

TEST_SUITE("lease machine") {

TEST_CASE("a free lease is one conditional create; the deadline counts from when it was sent") {
    fixture f;
    auto claim = acquire_free(f.m, 100s);
    CHECK(body_of(claim).token == 1);
    CHECK(f.m.state() == lease_state::held);
    CHECK(f.m.token() == 1);
    CHECK(f.m.created_record());
    CHECK(f.m.deadline() == std::chrono::nanoseconds(120s));
    CHECK(f.m.valid_until() == std::chrono::nanoseconds(130s));
    CHECK(f.m.is_held(119s));
    CHECK_FALSE(f.m.is_held(120s));
}

TEST_CASE("every loss of a held term has its cause: the deadline, a takeover, a deleted or a foreign record") {
    using cause = lease_machine::loss_cause;
    // The deadline, found by the driver's check (its timer, or an answer or a call that came late): once.
    {
        fixture f;
        acquire_free(f.m, 0s);
        CHECK(f.m.last_loss() == cause::none);
        CHECK_FALSE(f.m.check_deadline(20s - 1ns));
        CHECK(f.m.check_deadline(20s));
        CHECK(f.m.state() == lease_state::lost);
        CHECK(f.m.last_loss() == cause::deadline);
        CHECK_FALSE(f.m.check_deadline(21s)); // already lost: nothing more to deliver
        CHECK(lease_machine::describe(cause::deadline) == "renew deadline passed");
    }
    // The deadline, found by the renew lane itself after a pause past it.
    {
        fixture f;
        acquire_free(f.m, 0s);
        (void)f.m.renew_schedule(0s);
        auto late = f.m.renew_on_wait(25s);
        CHECK(late.what == act::done);
        CHECK(late.ec == errc::lease_lost);
        CHECK(f.m.last_loss() == cause::deadline);
    }
    // What a renewal's read finds: someone else's record, no record, a record that is not a lease's.
    struct found_case {
        std::optional<baton::record> found;
        cause want;
    };
    found_case const cases[] = {{foreign(2, "v9"), cause::taken_over},
                                {std::nullopt, cause::record_vanished},
                                {baton::record{"k", "not json", "v9"}, cause::record_unreadable}};
    for (auto const& c : cases) {
        fixture f;
        acquire_free(f.m, 0s);
        (void)f.m.renew_schedule(0s);
        REQUIRE(f.m.renew_on_wait(9s).what == act::write);
        REQUIRE(f.m.renew_on_write(9s + 5ms, error_code(errc::precondition_failed), {}).what == act::read);
        auto end = f.m.renew_on_read(9s + 10ms, {}, c.found, {});
        CHECK(end.what == act::done);
        CHECK(end.ec == errc::lease_lost);
        CHECK(f.m.state() == lease_state::lost);
        CHECK(f.m.last_loss() == c.want);
        // One stable reason for all three (a metrics label); the detail tells them apart.
        CHECK(lease_machine::describe(c.want) == "taken over (the record changed or vanished)");
        CHECK_FALSE(lease_machine::detail_of(c.want).empty());
    }
}

TEST_CASE("renewals: scheduled within 90-110% of the interval, one write conditional on our version") {
    fixture f;
    acquire_free(f.m, 0s);
    auto wait = f.m.renew_schedule(5ms);
    REQUIRE(wait.what == act::wait);
    CHECK(wait.delay >= 9s - 5ms);
    CHECK(wait.delay <= 11s - 5ms);
    auto write = f.m.renew_on_wait(9s);
    REQUIRE(write.what == act::write);
    CHECK(write.pc.which() == baton::precondition::kind::matches);
    CHECK(write.pc.version() == "v1");
    CHECK(body_of(write).token == 1);
    auto next = f.m.renew_on_write(9s + 5ms, {}, written("v2"));
    CHECK(next.what == act::wait);
    CHECK(f.m.deadline() == std::chrono::nanoseconds(29s)); // from the renewal's send time
}

TEST_CASE("a renewal in doubt that landed is adopted from the read back, with its send time") {
    fixture f;
    acquire_free(f.m, 0s);
    (void)f.m.renew_schedule(0s);
    auto write = f.m.renew_on_wait(9s);
    auto after = f.m.renew_on_write(11s, error_code(errc::timeout), {});
    REQUIRE(after.what == act::wait); // backoff, then read
    auto read = f.m.renew_on_wait(11s + after.delay);
    REQUIRE(read.what == act::read);
    auto next = f.m.renew_on_read(12s, {}, stored(write, "v2"), {});
    CHECK(next.what == act::wait);
    CHECK(f.m.state() == lease_state::held);
    CHECK(f.m.deadline() == std::chrono::nanoseconds(29s));
}

TEST_CASE("a refused renewal reads first: unchanged means send again after a pause, another holder means lost") {
    SUBCASE("spurious refusal") {
        fixture f;
        auto claim = acquire_free(f.m, 0s);
        (void)f.m.renew_schedule(0s);
        (void)f.m.renew_on_wait(9s);
        auto read = f.m.renew_on_write(9s + 5ms, error_code(errc::precondition_failed), {});
        REQUIRE(read.what == act::read);
        auto pause = f.m.renew_on_read(9s + 10ms, {}, stored(claim, "v1"), {});
        REQUIRE(pause.what == act::wait);
        CHECK(pause.delay > 0ns);
        CHECK(f.m.renew_on_wait(9s + 10ms + pause.delay).what == act::write);
        CHECK(f.m.state() == lease_state::held);
    }
    SUBCASE("the current record comes with the refusal (DynamoDB): no read needed") {
        fixture f;
        acquire_free(f.m, 0s);
        (void)f.m.renew_schedule(0s);
        (void)f.m.renew_on_wait(9s);
        baton::put_result refused;
        refused.current = foreign(2, "v9");
        auto lost = f.m.renew_on_write(9s + 5ms, error_code(errc::precondition_failed), refused);
        REQUIRE(lost.what == act::done);
        CHECK(lost.ec == errc::lease_lost);
        CHECK(f.m.state() == lease_state::lost);
    }
}

TEST_CASE("a contender waits ttl x skew of its own time from its first read, then claims token + 1") {
    fixture f("c");
    auto read = f.m.acquire_start(0s, true);
    // Nothing known yet: a create first; the store refuses it with the holder's record.
    REQUIRE(read.what == act::write);
    baton::put_result refused;
    refused.current = foreign(4, "v4");
    auto wait = f.m.acquire_on_write(10ms, error_code(errc::precondition_failed), refused);
    REQUIRE(wait.what == act::wait);
    CHECK(wait.delay <= 1s);
    auto t = std::chrono::nanoseconds(10ms);
    machine_step a = wait;
    int reads = 0;
    while (a.what == act::wait) {
        t += a.delay;
        REQUIRE(f.m.acquire_on_wait(t).what == act::read);
        ++reads;
        a = f.m.acquire_on_read(t, {}, foreign(4, "v4"), {});
    }
    REQUIRE(a.what == act::write);
    CHECK(t >= std::chrono::nanoseconds(10ms + 60s)); // 30 s x 2
    CHECK(reads >= 60);
    CHECK(body_of(a).token == 5);
    CHECK(a.pc.version() == "v4");
}

// A fresh acquisition whose create is refused by a record released at token 7 ("v7"): the claim
// over that record.
machine_step claim_over_released_7(lease_machine& m) {
    (void)m.acquire_start(0s, true);
    baton::put_result refused;
    refused.current = foreign(7, "v7", true);
    auto claim = m.acquire_on_write(10ms, error_code(errc::precondition_failed), refused);
    REQUIRE(claim.what == act::write);
    return claim;
}

TEST_CASE("a released record is claimed at once, keeping the token sequence") {
    fixture f("c");
    auto claim = claim_over_released_7(f.m);
    CHECK(body_of(claim).token == 8);
    CHECK(claim.pc.version() == "v7");
}

TEST_CASE("a record that went back to an older token is claimed above every token this object held") {
    // Deleted outside baton, a key can be created again by a create that was delayed in the
    // network, carrying an older token. A claim at that token + 1 would repeat a token this object
    // held before, and a lease table takes a worker's token for its term: the term would live again.
    fixture f("c");
    auto claim = claim_over_released_7(f.m);
    REQUIRE(body_of(claim).token == 8);
    REQUIRE(f.m.acquire_on_write(20ms, {}, written("v8")).what == act::done);
    auto marker = f.m.release_start(1s);
    REQUIRE(marker.what == act::write);
    REQUIRE(f.m.release_on_write(1s + 5ms, {}, written("v9")).what == act::done);
    // The next acquisition finds the key at token 3: someone's create, delayed, landed after a deletion.
    auto back = f.m.acquire_start(2s, false);
    REQUIRE(back.what == act::write);
    baton::put_result went_back;
    went_back.current = foreign(3, "v10", true);
    auto again = f.m.acquire_on_write(2s + 5ms, error_code(errc::precondition_failed), went_back);
    REQUIRE(again.what == act::write);
    CHECK(again.pc.version() == "v10");
    CHECK(body_of(again).token == 9); // not 4
    REQUIRE(f.m.acquire_on_write(2s + 10ms, {}, written("v11")).what == act::done);
    CHECK(f.m.token() == 9);
}

TEST_CASE("a claim that lands too late to act on is refreshed under the same token before it counts") {
    fixture f;
    auto claim = f.m.acquire_start(0s, true);
    auto wait = f.m.acquire_on_write(2s, error_code(errc::timeout), {});
    REQUIRE(wait.what == act::wait);
    CHECK(f.m.claim_of_this_acquisition_in_doubt());
    CHECK(f.m.acquire_on_wait(25s).what == act::read);
    auto refresh = f.m.acquire_on_read(25s, {}, stored(claim, "v1"), {}); // it landed; 25 s >= the 20 s deadline
    REQUIRE(refresh.what == act::write);
    CHECK(f.m.refreshing_late_claim());
    CHECK(body_of(refresh).token == body_of(claim).token);
    CHECK(refresh.pc.version() == "v1");
    auto done = f.m.acquire_on_write(25s + 5ms, {}, written("v2"));
    REQUIRE(done.what == act::done);
    CHECK(f.m.deadline() == std::chrono::nanoseconds(45s));
}

TEST_CASE("release writes a marker with the same token; a refusal with our landed renewal re-releases") {
    fixture f;
    acquire_free(f.m, 0s);
    (void)f.m.renew_schedule(0s);
    auto renewal = f.m.renew_on_wait(9s);
    (void)f.m.renew_on_write(11s, error_code(errc::timeout), {}); // in doubt
    REQUIRE(f.m.can_release());
    auto marker = f.m.release_start(12s);
    REQUIRE(marker.what == act::write);
    CHECK(body_of(marker).released);
    CHECK(body_of(marker).token == 1);
    CHECK(marker.pc.version() == "v1");
    baton::put_result refused;
    refused.current = stored(renewal, "v2"); // the renewal had landed
    auto again = f.m.release_on_write(12s + 5ms, error_code(errc::precondition_failed), refused);
    REQUIRE(again.what == act::write);
    CHECK(body_of(again).released);
    CHECK(again.pc.version() == "v2");
    auto done = f.m.release_on_write(12s + 10ms, {}, written("v3"));
    REQUIRE(done.what == act::done);
    CHECK_FALSE(done.ec);
    CHECK(f.m.state() == lease_state::released);
}

TEST_CASE("a new acquisition forgets the last term's writes in doubt: a landed one never passes for a grant") {
    fixture f;
    acquire_free(f.m, 0s);
    (void)f.m.renew_schedule(0s);
    auto renewal = f.m.renew_on_wait(9s);
    (void)f.m.renew_on_write(11s, error_code(errc::timeout), {});
    CHECK(f.m.check_deadline(21s));
    REQUIRE(f.m.state() == lease_state::lost);
    REQUIRE(f.m.acquire_start(22s, true).what == act::read);
    // The read finds the landed renewal: our own record of an earlier term. A new term takes
    // token + 1 under its version; the renewal is not mistaken for this acquisition's claim.
    auto claim = f.m.acquire_on_read(22s + 5ms, {}, stored(renewal, "v2"), {});
    REQUIRE(claim.what == act::write);
    CHECK(body_of(claim).token == 2);
    CHECK(claim.pc.version() == "v2");
    CHECK(f.m.state() == lease_state::acquiring);
}

TEST_CASE("the takeover window saturates instead of overflowing") {
    CHECK(lease_machine::takeover_window(30s, 2.0) == std::chrono::nanoseconds(60s));
    auto const inf = lease_machine::takeover_window(24h, std::numeric_limits<double>::infinity());
    CHECK(inf > std::chrono::nanoseconds(24h) * 1000);
    CHECK(lease_machine::takeover_window(24h, std::nan("")) == inf);
    CHECK(lease_machine::takeover_window(24h, 1e300) == inf);
}

}

namespace {

// Releases the held lease at `t`: the marker is confirmed as `version` 1 ms later.
void release_at(lease_machine& m, std::chrono::nanoseconds t, std::string version) {
    auto marker = m.release_start(t);
    REQUIRE(marker.what == act::write);
    auto done = m.release_on_write(t + 1ms, {}, written(std::move(version)));
    REQUIRE(done.what == act::done);
    REQUIRE_FALSE(done.ec);
}

// Expects `a` to take back our released marker `version` with one write, confirmed 1 ms later as `next`.
void take_back(lease_machine& m, machine_step const& a, std::chrono::nanoseconds t, std::string const& version,
               std::string next) {
    REQUIRE(a.what == act::write);
    CHECK(a.pc.version() == version);
    auto done = m.acquire_on_write(t + 1ms, {}, written(std::move(next)));
    REQUIRE(done.what == act::done);
    REQUIRE_FALSE(done.ec);
}

// Our own released marker `version` (token `token`) as a read returns it.
baton::record own_marker(lease_machine const& m, std::uint64_t token, std::string version) {
    return baton::record{"k", baton::detail::encode_lease_body(m.instance(), "", "n", token, true, 30s), std::move(version)};
}

// A yield ends with a read; it finds our marker `version` (token `token`) still there.
machine_step read_after_yield(lease_machine& m, std::chrono::nanoseconds t, std::uint64_t token, std::string version) {
    REQUIRE(m.acquire_on_wait(t).what == act::read);
    return m.acquire_on_read(t + 1ms, {}, own_marker(m, token, std::move(version)), {});
}

} // namespace

TEST_SUITE("lease machine") {

TEST_CASE("fairness: one's own release is taken back at once during a turn, after a yield once the turn is over") {
    fixture f; // poll interval 1 s: a turn of 1 s, a yield of 2.25 s
    acquire_free(f.m, 0s);
    release_at(f.m, 100ms, "v2");
    take_back(f.m, f.m.acquire_start(200ms, true), 200ms, "v2", "v3"); // within the turn: no wait

    release_at(f.m, 1500ms, "v4");
    auto yield = f.m.acquire_start(1600ms, true); // the turn began at 0 s: over
    REQUIRE(yield.what == act::wait);
    CHECK(yield.delay == std::chrono::nanoseconds(2250ms - 99ms)); // 2.25 s after the release was confirmed
    CHECK(f.m.state() == lease_state::acquiring);
    // The yield over, the record is read first (a waiter will usually have taken it); our marker
    // is still there, and taken back.
    take_back(f.m, read_after_yield(f.m, 3751ms, 2, "v4"), 3752ms, "v4", "v5");
    CHECK(f.m.token() == 3);

    // Nobody came: the next turn is twice as long (2 s from 3.752 s): at 5.7 s, 0.1 s after the
    // release, a 1-s turn would yield; this one takes the record back at once.
    release_at(f.m, 5600ms, "v6");
    take_back(f.m, f.m.acquire_start(5700ms, true), 5700ms, "v6", "v7");
    release_at(f.m, 5800ms, "v8");
    CHECK(f.m.acquire_start(5900ms, true).what == act::wait);
}

TEST_CASE("fairness: a release long enough ago was the waiters' chance; the record is taken back without waiting") {
    fixture f;
    acquire_free(f.m, 0s);
    release_at(f.m, 2s, "v2");
    take_back(f.m, f.m.acquire_start(10s, true), 10s, "v2", "v3"); // 8 s after the release: no pause
}

TEST_CASE("fairness: a waiter that took the record during the yield keeps it; we wait like any contender") {
    fixture f;
    acquire_free(f.m, 0s);
    release_at(f.m, 1500ms, "v2");
    REQUIRE(f.m.acquire_start(1600ms, true).what == act::wait);
    REQUIRE(f.m.acquire_on_wait(3751ms).what == act::read); // read, not a blind take-back
    auto wait = f.m.acquire_on_read(3752ms, {}, foreign(2, "v3"), {}); // b took it with token 2 and holds it
    REQUIRE(wait.what == act::wait);
    CHECK(wait.delay <= std::chrono::nanoseconds(1s));
    CHECK(f.m.state() == lease_state::acquiring);
    // b releases: its marker is claimed at once, and the turn that starts is a new one.
    CHECK(f.m.acquire_on_wait(4s).what == act::read);
    auto mine = f.m.acquire_on_read(4s, {}, foreign(2, "v4", true), {});
    REQUIRE(mine.what == act::write);
    CHECK(body_of(mine).token == 3);
    REQUIRE(f.m.acquire_on_write(4001ms, {}, written("v5")).what == act::done);
    release_at(f.m, 4500ms, "v6");
    take_back(f.m, f.m.acquire_start(4600ms, true), 4600ms, "v6", "v7"); // a fresh 1 s turn from 4 s
}

TEST_CASE("fairness: try-once, and a timeout shorter than the pause, take their own release back at once") {
    fixture f;
    acquire_free(f.m, 0s);
    release_at(f.m, 1500ms, "v2");
    take_back(f.m, f.m.acquire_start(1600ms, false), 1600ms, "v2", "v3");
    release_at(f.m, 1700ms, "v4");
    take_back(f.m, f.m.acquire_start(1800ms, true, 2250ms), 1800ms, "v4", "v5");
    release_at(f.m, 1900ms, "v6");
    CHECK(f.m.acquire_start(2000ms, true, 2251ms).what == act::wait); // this one has the time
}

TEST_CASE("fairness: a take-back that fails transiently is read back: our marker is taken back, and the turn goes on") {
    fixture f;
    acquire_free(f.m, 0s);
    release_at(f.m, 100ms, "v2");
    auto claim = f.m.acquire_start(200ms, true);
    REQUIRE(claim.what == act::write);
    auto pause = f.m.acquire_on_write(201ms, error_code(errc::throttled), {}); // not applied
    REQUIRE(pause.what == act::wait);
    REQUIRE(f.m.acquire_on_wait(300ms).what == act::read);
    auto marker = baton::record{"k", baton::detail::encode_lease_body(f.m.instance(), "", "n", 1, true, 30s), "v2"};
    take_back(f.m, f.m.acquire_on_read(301ms, {}, marker, {}), 301ms, "v2", "v3");
    // Still the turn that began at 0 s: the next take-back after 1 s yields.
    release_at(f.m, 1100ms, "v4");
    CHECK(f.m.acquire_start(1200ms, true).what == act::wait);
}

TEST_CASE("fairness: a take-back in doubt settled by reading it back keeps the turn it belonged to") {
    fixture f;
    acquire_free(f.m, 0s);
    release_at(f.m, 100ms, "v2");
    auto claim = f.m.acquire_start(200ms, true);
    REQUIRE(claim.what == act::write);
    REQUIRE(f.m.acquire_on_write(2200ms, error_code(errc::timeout), {}).what == act::wait); // in doubt
    REQUIRE(f.m.acquire_on_wait(2300ms).what == act::read);
    auto done = f.m.acquire_on_read(2300ms, {}, stored(claim, "v3"), {}); // it landed
    REQUIRE(done.what == act::done);
    REQUIRE_FALSE(done.ec);
    // The turn began at 0 s, not at the settlement: the next take-back yields.
    release_at(f.m, 2400ms, "v4");
    CHECK(f.m.acquire_start(2500ms, true).what == act::wait);
}

TEST_CASE("a claim that lost a race, refused without the record (S3, dynalite), reads again when a poll is due") {
    fixture f("c"); // poll interval 1 s
    REQUIRE(f.m.acquire_start(0s, true).what == act::write);
    REQUIRE(f.m.acquire_on_write(10ms, error_code(errc::precondition_failed), {}).what == act::read); // a first claim: read at once
    auto claim = f.m.acquire_on_read(20ms, {}, foreign(7, "v7", true), {});
    REQUIRE(claim.what == act::write); // released: claimed straight after the read
    // Refused, with no record: someone wrote in that round trip, most likely a contender that now
    // holds it. The next read comes near a poll interval later, not at once.
    auto wait = f.m.acquire_on_write(21ms, error_code(errc::precondition_failed), {});
    REQUIRE(wait.what == act::wait);
    CHECK(wait.delay >= std::chrono::nanoseconds(968750us));
    CHECK(wait.delay <= std::chrono::nanoseconds(1s));
    REQUIRE(f.m.acquire_on_wait(1021ms).what == act::read);
    auto mine = f.m.acquire_on_read(1022ms, {}, foreign(8, "v8", true), {}); // released again since
    REQUIRE(mine.what == act::write);
    CHECK(body_of(mine).token == 9);

    // A try-once acquisition reads at once: it answers now, held or not.
    fixture g("c");
    REQUIRE(g.m.acquire_start(0s, false).what == act::write);
    REQUIRE(g.m.acquire_on_write(10ms, error_code(errc::precondition_failed), {}).what == act::read);
    REQUIRE(g.m.acquire_on_read(20ms, {}, foreign(7, "v7", true), {}).what == act::write);
    CHECK(g.m.acquire_on_write(21ms, error_code(errc::precondition_failed), {}).what == act::read);

    // A take-back of our marker as we last knew it (a loop), refused without the record: read at
    // once; the record may well be free under another version.
    fixture h;
    acquire_free(h.m, 0s);
    release_at(h.m, 100ms, "v2");
    REQUIRE(h.m.acquire_start(200ms, true).what == act::write);
    CHECK(h.m.acquire_on_write(201ms, error_code(errc::precondition_failed), {}).what == act::read);

    // An acquisition that may not wait that long (a timeout under 2.25 poll intervals) reads at once.
    fixture k("c");
    REQUIRE(k.m.acquire_start(0s, true, 500ms).what == act::write);
    REQUIRE(k.m.acquire_on_write(10ms, error_code(errc::precondition_failed), {}).what == act::read);
    REQUIRE(k.m.acquire_on_read(20ms, {}, foreign(7, "v7", true), {}).what == act::write);
    CHECK(k.m.acquire_on_write(21ms, error_code(errc::precondition_failed), {}).what == act::read);
}

TEST_CASE("a refused takeover reads at once: the holder may have released it meanwhile; the grant then is no takeover") {
    fixture f("c", 1.0); // takeover window: ttl 30 s x 1.0
    REQUIRE(f.m.acquire_start(0s, true).what == act::write);
    baton::put_result refused;
    refused.current = foreign(4, "v9");
    REQUIRE(f.m.acquire_on_write(1ms, error_code(errc::precondition_failed), refused).what == act::wait);
    REQUIRE(f.m.acquire_on_wait(31s).what == act::read);
    auto takeover = f.m.acquire_on_read(31s, {}, foreign(4, "v9"), {});
    REQUIRE(takeover.what == act::write);
    CHECK(f.m.took_over());
    // Refused without the record (S3, dynalite): the holder came back and released it.
    REQUIRE(f.m.acquire_on_write(31001ms, error_code(errc::precondition_failed), {}).what == act::read);
    auto claim = f.m.acquire_on_read(31002ms, {}, foreign(4, "v10", true), {});
    REQUIRE(claim.what == act::write);
    CHECK(body_of(claim).token == 5);
    REQUIRE(f.m.acquire_on_write(31003ms, {}, written("v11")).what == act::done);
    CHECK_FALSE(f.m.took_over()); // taken through the released marker, not over
}

TEST_CASE("turn hint: a participant re-acquiring back to back states its turn; one that may leave states none") {
    fixture f; // poll interval 1 s: a first turn of 1 s
    auto claim = acquire_free(f.m, 0s);
    CHECK(body_of(claim).turn == 0ms); // a first acquisition: it may well release and leave
    auto marker = f.m.release_start(100ms);
    CHECK(body_of(marker).turn == 0ms); // a released record is free for whoever reads it
    REQUIRE(f.m.release_on_write(101ms, {}, written("v2")).what == act::done);
    auto back = f.m.acquire_start(200ms, true);
    CHECK(body_of(back).turn == 800ms); // a take-back: the turn that began at 0 s has 800 ms left
    take_back(f.m, back, 200ms, "v2", "v3");
    (void)f.m.renew_schedule(200ms);
    CHECK(body_of(f.m.renew_on_wait(700ms)).turn == 300ms);
    REQUIRE(f.m.renew_on_write(701ms, {}, written("v4")).what == act::wait);
    (void)f.m.renew_schedule(701ms);
    CHECK(body_of(f.m.renew_on_wait(1200ms)).turn == 0ms); // the turn is over
    REQUIRE(f.m.renew_on_write(1201ms, {}, written("v5")).what == act::wait);
    release_at(f.m, 1500ms, "v5b");
    REQUIRE(f.m.acquire_start(1600ms, true).what == act::wait); // the yield
    REQUIRE(f.m.acquire_on_wait(2750ms).what == act::read);
    auto after_yield = f.m.acquire_on_read(2751ms, {}, own_marker(f.m, 2, "v5b"), {});
    REQUIRE(after_yield.what == act::write);
    CHECK(body_of(after_yield).turn == 2000ms); // nobody came: a turn twice as long

    // Released, and acquiring again right away (a loop): the record had been taken meanwhile,
    // and the claim of it, a new turn, states the whole turn.
    REQUIRE(f.m.acquire_on_write(2752ms, {}, written("v6")).what == act::done);
    release_at(f.m, 2800ms, "v7");
    REQUIRE(f.m.acquire_start(2900ms, true).what == act::write); // our own marker (the machine assumes it is still there)
    baton::put_result refused;
    refused.current = foreign(5, "v8", true); // someone took it and released it
    auto claim2 = f.m.acquire_on_write(2901ms, error_code(errc::precondition_failed), refused);
    REQUIRE(claim2.what == act::write);
    CHECK(body_of(claim2).turn == 1000ms);
    // Acquiring long after the last release: states none, also when taking back our old marker
    // (with the turn it doubles to after the pause the waiters had).
    REQUIRE(f.m.acquire_on_write(2902ms, {}, written("v9")).what == act::done);
    release_at(f.m, 3000ms, "v10");
    auto old_marker = f.m.acquire_start(9000ms, true);
    REQUIRE(old_marker.what == act::write);
    CHECK(body_of(old_marker).turn == 0ms);
    refused.current = foreign(7, "v11", true);
    auto claim3 = f.m.acquire_on_write(9001ms, error_code(errc::precondition_failed), refused);
    REQUIRE(claim3.what == act::write);
    CHECK(body_of(claim3).turn == 0ms);
}

TEST_CASE("turn hint: yield_after = max() states no turn") {
    baton::standard_retry retry;
    auto o = fixture::opts("a", 2.0);
    o.yield_after = std::chrono::milliseconds::max();
    lease_machine m(o, 7, fixture::hooks(retry));
    acquire_free(m, 0s);
    release_at(m, 100ms, "v2");
    auto back = m.acquire_start(200ms, true);
    CHECK(body_of(back).turn == 0ms);
}

namespace {
// Someone else's record stating a turn.
baton::record with_turn(std::uint64_t token, std::string version, bool released, std::chrono::milliseconds turn) {
    baton::detail::lease_body b{"b#1", "", "nonce-b", token, released, 30s, turn};
    return baton::record{"k", baton::detail::encode_lease_body(b), std::move(version)};
}
// The first acquisition of a fresh machine at `t` finds `current` (its create refused with it).
machine_step first_sight(lease_machine& m, std::chrono::nanoseconds t, baton::record current, bool wait = true) {
    REQUIRE(m.acquire_start(t, wait).what == act::write);
    baton::put_result refused;
    refused.current = std::move(current);
    return m.acquire_on_write(t + 1ms, error_code(errc::precondition_failed), refused);
}
} // namespace

TEST_CASE("turn hint: a released record is claimed at once, whatever turn it states") {
    fixture f("c");
    auto claim = first_sight(f.m, 0s, with_turn(4, "v9", true, 600ms));
    REQUIRE(claim.what == act::write); // its writer may never come back
    CHECK(body_of(claim).token == 5);
}

TEST_CASE("turn hint: by default a turn is two poll intervals, and the record states it") {
    baton::standard_retry retry;
    auto o = fixture::opts("a", 2.0);
    o.yield_after = 0ms;
    CHECK(o.effective_yield_after() == 2s);
    lease_machine m(o, 7, fixture::hooks(retry));
    acquire_free(m, 0s);
    release_at(m, 100ms, "v2");
    auto back = m.acquire_start(200ms, true);
    CHECK(body_of(back).turn == 1800ms); // a take-back: the turn that began at 0 s has 1.8 s left
}

TEST_CASE("turn hint: a held record's turn moves the next read to its end, never later than two poll intervals") {
    {
        fixture f("c"); // poll interval 1 s
        auto a = first_sight(f.m, 0s, with_turn(4, "v9", false, 300ms));
        REQUIRE(a.what == act::wait);
        CHECK(a.delay >= std::chrono::nanoseconds(300ms));
        CHECK(a.delay <= std::chrono::nanoseconds(800ms)); // staggered over half a poll interval
    }
    {
        // A long turn: read again after two poll intervals all the same (its holder may release and leave).
        fixture f("c");
        auto a = first_sight(f.m, 0s, with_turn(4, "v9", false, std::chrono::hours(24)));
        REQUIRE(a.what == act::wait);
        CHECK(a.delay >= std::chrono::nanoseconds(1937500us)); // jittered below it: capped waiters drift apart
        CHECK(a.delay <= std::chrono::nanoseconds(2s));
    }
    {
        // Counted from the first read of that version: read again later, what is left.
        fixture f("c");
        REQUIRE(first_sight(f.m, 0s, with_turn(4, "v9", false, 800ms)).what == act::wait);
        REQUIRE(f.m.acquire_on_wait(500ms).what == act::read);
        auto a = f.m.acquire_on_read(500ms, {}, with_turn(4, "v9", false, 800ms), {});
        REQUIRE(a.what == act::wait);
        CHECK(a.delay >= std::chrono::nanoseconds(300ms));
        CHECK(a.delay <= std::chrono::nanoseconds(800ms));
    }
    {
        // Never past the takeover window.
        fixture f("c", 1.0); // takeover window 30 s
        REQUIRE(first_sight(f.m, 0s, with_turn(4, "v9", false, 3000ms)).what == act::wait);
        REQUIRE(f.m.acquire_on_wait(29500ms).what == act::read);
        auto a = f.m.acquire_on_read(29500ms, {}, with_turn(4, "v9", false, 3000ms), {});
        REQUIRE(a.what == act::wait);
        CHECK(a.delay == std::chrono::nanoseconds(500ms + 1ms)); // observed from 1 ms (the refusal's answer)
    }
}

TEST_CASE("fairness: a waiter that first reads a turn late still reads within the yield that ends it") {
    // The default turn (two polls of 1 s). H loops with holds of about a poll: created at 0, released
    // at 1 s, taken back at 1.001 s (stating 999 ms of turn), released at 2.001 s; its turn is over,
    // so it yields. W first reads the take-back just before the turn ends, and counts the 999 ms from
    // that read: it wakes up to a hold late, and then at most half a poll later (the stagger). The
    // yield must outlast that (review of the two-poll cap: with a pause of 1.25 polls, W missed it
    // in about half of these seeds, and H took its record back).
    for (auto const w_start : {1800ms, 1950ms, 1990ms}) {
        for (std::uint64_t seed = 1; seed <= 200; ++seed) {
            CAPTURE(w_start);
            CAPTURE(seed);
            baton::standard_retry rh, rw;
            auto oh = fixture::opts("h", 2.0);
            oh.yield_after = 0ms;
            lease_machine h(oh, 1000 + seed, fixture::hooks(rh));
            acquire_free(h, 0ms);
            release_at(h, 999ms, "v2");
            auto const back = h.acquire_start(1001ms, true);
            take_back(h, back, 1001ms, "v2", "v3");
            CHECK(body_of(back).turn == 999ms);
            auto const v3 = stored(back, "v3");
            release_at(h, 2000ms, "v4");
            auto const yield = h.acquire_start(2001ms, true);
            REQUIRE(yield.what == act::wait);
            auto const yield_end = std::chrono::nanoseconds(2001ms) + yield.delay;

            auto ow = fixture::opts("w", 2.0);
            ow.yield_after = 0ms;
            lease_machine w(ow, 5000 + seed, fixture::hooks(rw));
            auto t = std::chrono::nanoseconds(w_start);
            REQUIRE(w.acquire_start(t, true).what == act::write);
            baton::put_result refused;
            refused.current = v3;
            auto next = w.acquire_on_write(t, error_code(errc::precondition_failed), refused);
            // W sleeps and reads the take-back until a read falls after H's release: that read sees
            // the released marker, and it must come before H ends its yield.
            while (next.what == act::wait) {
                t += next.delay;
                REQUIRE(w.acquire_on_wait(t).what == act::read);
                if (t >= std::chrono::nanoseconds(2001ms)) break;
                next = w.acquire_on_read(t, {}, v3, {});
            }
            CHECK(t >= std::chrono::nanoseconds(2001ms));
            CHECK(t < yield_end);
        }
    }
}

TEST_CASE("fairness: yield_after = max() never yields; negative or over 24 h is refused") {
    baton::standard_retry retry;
    auto o = fixture::opts("a", 2.0);
    o.yield_after = std::chrono::milliseconds::max();
    CHECK_NOTHROW(o.validate());
    lease_machine m(o, 7, fixture::hooks(retry));
    acquire_free(m, 0s);
    release_at(m, 100s, "v2");
    take_back(m, m.acquire_start(100s + 2ms, true), 100s + 2ms, "v2", "v3");

    o.yield_after = -1ms;
    CHECK_THROWS_AS(o.validate(), baton::config_error);
    o.yield_after = std::chrono::hours(25);
    CHECK_THROWS_AS(o.validate(), baton::config_error);
    o.yield_after = std::chrono::hours(24);
    CHECK_NOTHROW(o.validate());
}

// ---- what an observer is told of settlements and retries ----------------------

namespace {
// A machine whose settlement and retry hooks write one line each.
struct observed_fixture {
    baton::standard_retry retry;
    std::vector<std::string> seen;
    lease_machine m;

    observed_fixture() : m(fixture::opts("a", 2.0), 7, hooks()) {}
    baton::detail::lease_hooks hooks() {
        static constexpr baton::detail::lease_hook_fns fns{
            [](void* c, error_code const& ec, unsigned n, double u) {
                return static_cast<observed_fixture*>(c)->retry.on_failure(ec, n, u);
            },
            [](void* c, unsigned n) { static_cast<observed_fixture*>(c)->retry.on_success(n); },
            [](void* c, baton::lease_lane l, baton::settlement_outcome o, std::uint64_t token) {
                static_cast<observed_fixture*>(c)->seen.push_back(std::string("settled ") + to_string(l) + " " +
                                                                 to_string(o) + " " + std::to_string(token));
            },
            [](void* c, baton::lease_lane l, error_code const&, unsigned attempt, std::chrono::nanoseconds d) {
                static_cast<observed_fixture*>(c)->seen.push_back(std::string("retry ") + to_string(l) + " " +
                                                                 std::to_string(attempt) + (d > 0ns ? "" : " NO-DELAY"));
            }};
        return {this, &fns};
    }
};
} // namespace

TEST_CASE("observed: a renewal in doubt when the term ends is reported unresolved when the next term starts") {
    observed_fixture f;
    acquire_free(f.m, 0s);
    (void)f.m.renew_schedule(0s);
    (void)f.m.renew_on_wait(9s);
    auto after = f.m.renew_on_write(11s, error_code(errc::timeout), {});
    REQUIRE(after.what == act::wait);
    CHECK(f.seen == std::vector<std::string>{"retry renew 1"});
    CHECK(f.m.check_deadline(20s));
    REQUIRE(f.m.state() == lease_state::lost);
    CHECK(f.seen.size() == 1); // still undecided: nothing read it back
    (void)f.m.acquire_start(21s, true);
    CHECK(f.seen == std::vector<std::string>{"retry renew 1", "settled renew unresolved 1"});
}

TEST_CASE("observed: a renewal in doubt is reported landed when read back, not landed when the next one wins") {
    SUBCASE("landed") {
        observed_fixture f;
        acquire_free(f.m, 0s);
        (void)f.m.renew_schedule(0s);
        auto first = f.m.renew_on_wait(9s);
        auto pause = f.m.renew_on_write(11s, error_code(errc::timeout), {});
        REQUIRE(f.m.renew_on_wait(11s + pause.delay).what == act::read);
        CHECK(f.m.renew_on_read(12s, {}, stored(first, "v2"), {}).what == act::wait);
        CHECK(f.seen == std::vector<std::string>{"retry renew 1", "settled renew landed 1"});
    }
    SUBCASE("not landed") {
        observed_fixture f;
        auto claim = acquire_free(f.m, 0s);
        (void)f.m.renew_schedule(0s);
        (void)f.m.renew_on_wait(9s);
        auto pause = f.m.renew_on_write(11s, error_code(errc::timeout), {});
        REQUIRE(f.m.renew_on_wait(11s + pause.delay).what == act::read);
        auto again = f.m.renew_on_read(12s, {}, stored(claim, "v1"), {}); // unchanged: send again
        REQUIRE(again.what == act::write);
        CHECK(f.seen == std::vector<std::string>{"retry renew 1"}); // it may still land
        CHECK(f.m.renew_on_write(12s + 5ms, {}, written("v2")).what == act::wait);
        CHECK(f.seen == std::vector<std::string>{"retry renew 1", "settled renew not_landed 1"});
    }
}

TEST_CASE("observed: a claim in doubt is reported landed when read back, not landed when a later claim wins") {
    SUBCASE("landed") {
        observed_fixture f;
        auto claim = f.m.acquire_start(0s, true);
        auto pause = f.m.acquire_on_write(2s, error_code(errc::timeout), {});
        REQUIRE(pause.what == act::wait);
        REQUIRE(f.m.acquire_on_wait(2s + pause.delay).what == act::read);
        auto done = f.m.acquire_on_read(3s, {}, stored(claim, "v1"), {});
        REQUIRE(done.what == act::done);
        CHECK(f.seen == std::vector<std::string>{"retry acquire 1", "settled acquire landed 1"});
    }
    SUBCASE("not landed") {
        observed_fixture f;
        (void)f.m.acquire_start(0s, true);
        auto pause = f.m.acquire_on_write(2s, error_code(errc::timeout), {});
        REQUIRE(f.m.acquire_on_wait(2s + pause.delay).what == act::read);
        auto again = f.m.acquire_on_read(3s, {}, std::nullopt, {}); // still absent: create again
        REQUIRE(again.what == act::write);
        REQUIRE(f.m.acquire_on_write(3s + 5ms, {}, written("v1")).what == act::done);
        CHECK(f.seen == std::vector<std::string>{"retry acquire 1", "settled acquire not_landed 1"});
    }
}

namespace {
// Holds, releases at 5 s, and the marker's answer is lost (timeout at 7 s): the machine asks to read it back.
void release_in_doubt(observed_fixture& f) {
    acquire_free(f.m, 0s);
    (void)f.m.release_start(5s);
    auto pause = f.m.release_on_write(7s, error_code(errc::timeout), {});
    REQUIRE(pause.what == act::wait);
    REQUIRE(f.m.release_on_wait(7s + pause.delay).what == act::read);
}
} // namespace

TEST_CASE("observed: a released marker in doubt that a contender already used is reported landed") {
    observed_fixture f;
    release_in_doubt(f);
    auto done = f.m.release_on_read(8s, {}, foreign(2, "v3"), {}); // token 2 within our validity: our marker let it in
    REQUIRE(done.what == act::done);
    CHECK_FALSE(done.ec);
    CHECK(f.seen == std::vector<std::string>{"retry release 1", "settled release landed 1"});
}

TEST_CASE("observed: writes in doubt of a release that finds the record gone are reported unresolved") {
    observed_fixture f;
    release_in_doubt(f);
    auto done = f.m.release_on_read(8s, {}, std::nullopt, {});
    REQUIRE(done.what == act::done);
    CHECK(done.ec == errc::lease_lost);
    // Our marker may have landed and been deleted since: no read can tell now.
    CHECK(f.seen == std::vector<std::string>{"retry release 1", "settled release unresolved 1"});
}

} // TEST_SUITE
