// Part of the lease's unit tests (tests/unit/lease_test.cpp, one unit): term boundaries: answers
// of an ended term, losses not yet delivered, writes in doubt.
#ifndef BATON_TESTS_UNIT_LEASE_TERMS_HPP
#define BATON_TESTS_UNIT_LEASE_TERMS_HPP

TEST_SUITE("lease") {

// ---- term boundaries: answers of an ended term, losses not yet delivered, writes in doubt -----
// Each case is an interleaving that broke the driver before: an answer or a loss that crosses
// a term's end must reach neither the old term's caller nor the new term.

namespace {
// Runs until the store has seen one more put than `before` (at most 30 s of virtual time).
void run_until_put(sim::scheduler& sched, baton::memory_backend& store, std::uint64_t before) {
    for (int i = 0; i < 30000 && store.counts().puts == before; ++i) sched.run_for(1ms);
    REQUIRE(store.counts().puts == before + 1);
}

// Runs until `n` requests are held in the network (at most 30 s of virtual time).
void run_until_held(sim::scheduler& sched, faulty_store& net, std::size_t n) {
    for (int i = 0; i < 30000 && net.held_count() < n; ++i) sched.run_for(1ms);
    REQUIRE(net.held_count() == n);
}

sim::fault_profile slow_client(std::chrono::nanoseconds request_timeout) {
    sim::fault_profile p;
    p.max_latency = 5ms;
    p.request_timeout = request_timeout;
    return p;
}

// A memory store behind a network that injects only what a test scripts (inject_next, hold),
// with 1-5 ms latency each way and the given client attempt timeout.
struct scripted_network {
    sim::scheduler sched;
    baton::memory_backend store;
    faulty_store net;
    scripted_network(std::uint64_t seed, std::chrono::nanoseconds request_timeout)
        : sched(seed), store(sched.get_executor()), net(store, sched.get_executor(), seed + 1, slow_client(request_timeout)) {
        net.set_faults_enabled(false);
    }
};
} // namespace

TEST_CASE("a renewal of an ended term answered 412 during the next term leaves the next term alone") {
    scripted_network world(40, 60s); // an attempt timeout past the deadline
    auto& [sched, store, net] = world;
    faulty_lease a(sched.get_executor(), net, options("a", 42));
    faulty_lease b(sched.get_executor(), net, options("b", 43));
    CHECK(acquire_now(sched, a).fencing_token == 1);
    completed lost1;
    a.async_wait_lost(on_completed(lost1));
    net.inject_next(sim::fault_kind::hold); // the first renewal (~6 s) stays in the network
    sched.run_until(vtime(renew_deadline + 1ms));
    REQUIRE(net.held_count() == 1);
    REQUIRE(lost1.ec.has_value());
    CHECK(*lost1.ec == errc::lease_lost);

    // The application's loop acquires again at once: a new term, token 2.
    CHECK(acquire_now(sched, a).fencing_token == 2);
    completed lost2;
    a.async_wait_lost(on_completed(lost2));
    acquired rb;
    b.async_acquire(on_acquired(rb)); // takes over as soon as a stops renewing for its window

    net.deliver_held(); // the old renewal reaches the store now: refused (412), answered in the new term
    sched.run_for(70s); // well past b's takeover window
    // What the application sees: a was told of no loss, so nobody else may hold.
    CHECK_FALSE(lost2.ec.has_value());
    CHECK(a.is_held());
    CHECK(a.state() == lease_state::held);
    CHECK_FALSE(rb.ec.has_value());
    CHECK(a.fencing_token() == 2);
}

TEST_CASE("a renewal of an ended term that times out during the next term does not disarm the next term's deadline") {
    // The first term's renewal (sent at ~6 s) times out at ~25 s: inside the next term, before its deadline.
    scripted_network world(44, 19s);
    auto& [sched, store, net] = world;
    faulty_lease a(sched.get_executor(), net, options("a", 46));
    acquire_now(sched, a);
    net.inject_next(sim::fault_kind::hold);
    sched.run_until(vtime(renew_deadline + 1ms));
    CHECK_FALSE(a.is_held());
    CHECK(acquire_now(sched, a).fencing_token == 2);
    vtime const term2 = sched.now();
    completed lost2;
    a.async_wait_lost(on_completed(lost2));
    net.inject_next(sim::fault_kind::hold); // the next term's first renewal is stuck as well
    sched.run_until(term2 + renew_deadline + 1s);
    CHECK(net.counts().timeouts == 1); // the old renewal's answer came first, at ~25 s
    REQUIRE(lost2.ec.has_value());      // the new term's loss is still delivered at its deadline
    CHECK(*lost2.ec == errc::lease_lost);
    CHECK(lost2.at <= term2 + renew_deadline + 10ms);
    net.deliver_held(0);
    net.deliver_held(0);
    sched.run_for(30s);
}

TEST_CASE("acquiring past the deadline before the lease's timer ran delivers the loss first and never grants a token twice") {
    scripted_network world(48, 2s);
    auto& [sched, store, net] = world;
    auto ex = sched.make_participant_executor();
    faulty_lease a(ex, net, options("a", 50));
    CHECK(acquire_now(sched, a).fencing_token == 1);
    completed lost1;
    a.async_wait_lost(on_completed(lost1));
    // The first renewal lands but its answer is lost (in doubt); the read that would settle it is held.
    net.inject_next(sim::fault_kind::drop_response);
    net.inject_next(sim::fault_kind::hold);
    run_until_put(sched, store, store.counts().puts);
    run_until_held(sched, net, 1);
    // A pause: the participant runs nothing until past its deadline; then the application's own
    // code runs first and, seeing the lease not held, acquires again.
    ex.freeze();
    sched.run_for(renew_deadline);
    CHECK_FALSE(a.is_held());
    CHECK_FALSE(lost1.ec.has_value());
    acquired r;
    a.async_try_acquire(on_acquired(r));
    ex.thaw();
    sched.run_for(100ms);
    REQUIRE(lost1.ec.has_value());
    CHECK(*lost1.ec == errc::lease_lost); // the old term's loss is delivered...
    REQUIRE(r.ec.has_value());
    REQUIRE_MESSAGE(!*r.ec, r.ec->message());
    CHECK(lost1.at <= r.at);           // ...no later than the new term begins,
    CHECK(r.grant.fencing_token == 2); // and the landed renewal is an earlier term's write, not a grant
    auto const body = stored_body(sched, store);
    REQUIRE(body.has_value());
    CHECK(body->token == 2);
    net.deliver_held();
    sched.run_for(1s);
    CHECK(a.fencing_token() == 2);
    CHECK(a.is_held());
}

TEST_CASE("a renewal that lands just before its re-send is refused keeps the lease") {
    scripted_network world(51, 2s);
    auto& [sched, store, net] = world;
    faulty_lease a(sched.get_executor(), net, options("a", 53));
    acquire_now(sched, a);
    completed lost;
    a.async_wait_lost(on_completed(lost));
    // Renewal A1 is held; the client times out and reads back (not landed), then re-sends A2,
    // held too. A1 lands first; A2 then reaches the store and is refused (412).
    net.inject_next(sim::fault_kind::hold);
    run_until_held(sched, net, 1);
    auto const gets = store.counts().gets;
    for (int i = 0; i < 30000 && store.counts().gets == gets; ++i) sched.run_for(1ms);
    REQUIRE(store.counts().gets == gets + 1); // the read back reached the store; A2 follows its answer
    net.inject_next(sim::fault_kind::hold);
    run_until_held(sched, net, 2);
    net.deliver_held(0); // A1 lands
    sched.run_for(20ms);
    net.deliver_held(0); // A2: 412, read back, A1's nonce found: the lease is ours
    sched.run_for(60s);
    CHECK_FALSE(lost.ec.has_value());
    CHECK(a.is_held());
    CHECK(a.fencing_token() == 1);
}

TEST_CASE("a release refused because our renewal in doubt landed first still releases") {
    scripted_network world(54, 2s);
    auto& [sched, store, net] = world;
    faulty_lease a(sched.get_executor(), net, options("a", 56));
    faulty_lease b(sched.get_executor(), net, options("b", 57));
    acquire_now(sched, a);
    // Renewal A1 is held; the work ends and the application releases while A1 is in flight.
    // The release write waits for A1's outcome (a timeout: in doubt) and is held too.
    net.inject_next(sim::fault_kind::hold);
    net.inject_next(sim::fault_kind::hold);
    run_until_held(sched, net, 1);
    completed released;
    a.async_release(on_completed(released));
    run_until_held(sched, net, 2);
    net.deliver_held(0); // A1 lands
    sched.run_for(20ms);
    net.deliver_held(0); // the release: 412, read back, A1 is ours: released under the new version
    sched.run_for(100ms);
    REQUIRE(released.ec.has_value());
    CHECK_MESSAGE(!*released.ec, released.ec->message());
    auto const body = stored_body(sched, store);
    REQUIRE(body.has_value());
    CHECK(body->released);
    CHECK(body->token == 1);
    CHECK(acquire_now(sched, b).fencing_token == 2); // taken at once, without waiting out a window
}

TEST_CASE("settings whose takeover window cannot be represented are refused") {
    auto o = options("a", 1);
    o.max_clock_rate_skew = std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("max_clock_rate_skew must be a finite number"),
                         baton::config_error);
    o.max_clock_rate_skew = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_AS(o.validate(), baton::config_error);
    o.max_clock_rate_skew = 1e12; // 20 s x 1e12 overflows 64-bit nanoseconds
    CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("at most 1000"), baton::config_error);
    o.max_clock_rate_skew = 1000;
    CHECK_NOTHROW(o.validate());
    o.ttl = std::chrono::hours(25); // others could not read a record declaring it
    o.renew_interval = std::chrono::hours(1);
    CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("at most 24 hours"), baton::config_error);
    o.ttl = std::chrono::hours(24);
    CHECK_NOTHROW(o.validate());
}

TEST_CASE("an unvalidated skew too large for the clock never makes a live holder look expired") {
    sim::scheduler sched(58);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 59));
    auto o = options("b", 60);
    o.max_clock_rate_skew = std::numeric_limits<double>::infinity();
    sim_lease b(baton::detail::unchecked, sched.get_executor(), store, o);
    acquire_now(sched, a);
    acquired rb;
    b.async_acquire(on_acquired(rb));
    sched.run_for(5s);
    CHECK_FALSE(rb.ec.has_value()); // still waiting: the window saturates, it never wraps around
    CHECK(a.is_held());
}


TEST_CASE("a waiter registered while a release waits for the renewal in flight completes with released") {
    scripted_network world(61, 2s);
    auto& [sched, store, net] = world;
    faulty_lease a(sched.get_executor(), net, options("a", 63));
    acquire_now(sched, a);
    net.inject_next(sim::fault_kind::hold);
    run_until_held(sched, net, 1); // a renewal in flight
    completed rel;
    a.async_release(on_completed(rel)); // waits for the renewal's outcome
    CHECK_FALSE(a.is_held());
    CHECK(a.remaining() == 0ns);
    completed w;
    a.async_wait_lost(on_completed(w)); // e.g. a coroutine still looping on the lease
    sched.run_for(1ms);
    REQUIRE(w.ec.has_value());
    CHECK(*w.ec == errc::released);
    sched.run_for(3s); // the renewal times out; the release is written
    REQUIRE(rel.ec.has_value());
    CHECK_MESSAGE(!*rel.ec, rel.ec->message());
    net.deliver_held();
    sched.run_for(1s);
    CHECK(w.calls == 1);
}

TEST_CASE("a release after a deadline loss still marks the record when the late renewal landed") {
    scripted_network world(64, 60s);
    auto& [sched, store, net] = world;
    faulty_lease a(sched.get_executor(), net, options("a", 66));
    sim_lease b(sched.get_executor(), store, options("b", 67));
    acquire_now(sched, a);
    net.inject_next(sim::fault_kind::hold);
    sched.run_until(vtime(renew_deadline + 1ms));
    CHECK(a.state() == lease_state::lost);
    net.deliver_held(); // lands now, and its success comes back: the record is still a's
    sched.run_for(50ms);
    CHECK(a.state() == lease_state::lost); // no resurrection
    completed rel;
    a.async_release(on_completed(rel));
    sched.run_for(50ms);
    REQUIRE(rel.ec.has_value());
    CHECK_MESSAGE(!*rel.ec, rel.ec->message());
    auto const g = acquire_now(sched, b); // at once, through the marker
    CHECK(g.fencing_token == 2);
    CHECK_FALSE(g.took_over);
}

TEST_CASE("a release whose answer was lost is released, even when a contender took the lease through the marker first") {
    scripted_network world(68, 2s);
    auto& [sched, store, net] = world;
    faulty_lease a(sched.get_executor(), net, options("a", 70));
    sim_lease b(sched.get_executor(), store, options("b", 71));
    acquire_now(sched, a);
    acquired rb;
    b.async_acquire(on_acquired(rb)); // polls while a holds
    sched.run_for(100ms);
    net.inject_next(sim::fault_kind::drop_response); // the marker lands; its answer is lost
    completed rel;
    a.async_release(on_completed(rel));
    sched.run_for(5s);
    REQUIRE(rb.ec.has_value());
    REQUIRE_FALSE(*rb.ec);
    CHECK(rb.grant.fencing_token == 2);
    CHECK_FALSE(rb.grant.took_over);
    REQUIRE(rel.ec.has_value());
    CHECK_MESSAGE(!*rel.ec, rel.ec->message()); // not lease_lost: the work ended normally and handed over
    CHECK(a.state() == lease_state::released);
}

TEST_CASE("a renewal read back after the deadline is not sent again") {
    scripted_network world(72, 2s);
    auto& [sched, store, net] = world;
    auto ex = sched.make_participant_executor();
    faulty_lease a(ex, net, options("a", 74));
    acquire_now(sched, a);
    completed lost;
    a.async_wait_lost(on_completed(lost));
    net.inject_next(sim::fault_kind::drop_request); // the renewal never arrives: timeout, then a read back
    net.inject_next(sim::fault_kind::hold);         // the read back waits in the network
    run_until_held(sched, net, 1);
    auto const puts = store.counts().puts;
    ex.freeze();
    net.deliver_held(); // its answer (not landed) waits for the frozen participant
    sched.run_until(vtime(renew_deadline + 2s));
    ex.thaw(); // the read's answer runs before the deadline timer's handler
    sched.run_for(1s);
    REQUIRE(lost.ec.has_value());
    CHECK(*lost.ec == errc::lease_lost);
    CHECK(store.counts().puts == puts); // no renewal written after the deadline
}

TEST_CASE("a renewal answered while frozen and run after the deadline delivers the loss in the thaw instant") {
    // Simulation seed 18579: the answer re-armed the renew wait with a deadline already
    // passed, and the loss came one tick after the thaw; another holder's application could
    // run in between while this one still believed it held.
    scripted_network world(78, 2s);
    auto& [sched, store, net] = world;
    auto ex = sched.make_participant_executor();
    faulty_lease a(ex, net, options("a", 80));
    acquire_now(sched, a);
    completed lost;
    a.async_wait_lost(on_completed(lost));
    net.inject_next(sim::fault_kind::hold); // the first renewal (~6 s) waits in the network
    run_until_held(sched, net, 1);
    ex.freeze();
    net.deliver_held(); // it lands and succeeds; the answer waits for the frozen participant
    sched.run_until(vtime(renew_deadline + renew_interval + 5s));
    CHECK_FALSE(lost.ec.has_value());
    vtime const thawed = sched.now();
    ex.thaw();
    sched.run_for(0ns);
    REQUIRE(lost.ec.has_value());
    CHECK(*lost.ec == errc::lease_lost);
    CHECK(lost.at == thawed);
    CHECK_FALSE(a.is_held());
}

// An acquisition cancelled (or timed out) after its claim's answer was lost: the claim may have
// landed. Abandoning it would leave a record that names us, unseen by us, holding every
// contender off for ttl x skew; the cancellation reads it back first.
void cancel_with_claim_in_doubt(bool read_held) {
    scripted_network world(read_held ? 82 : 84, 2s);
    auto& [sched, store, net] = world;
    faulty_lease a(sched.get_executor(), net, options("a", 86));
    asio::cancellation_signal sig;
    acquired r;
    net.inject_next(sim::fault_kind::drop_response); // the claim lands; its answer is lost (timeout at 2 s)
    if (read_held) net.inject_next(sim::fault_kind::hold); // and the read back waits in the network
    a.async_acquire(asio::bind_cancellation_slot(sig.slot(), on_acquired(r)));
    if (read_held) {
        run_until_held(sched, net, 1);
    } else {
        for (int i = 0; i < 30000 && net.counts().timeouts == 0; ++i) sched.run_for(1ms);
        REQUIRE(net.counts().timeouts == 1);
    }
    REQUIRE_FALSE(r.ec.has_value());
    auto const puts = store.counts().puts;
    sig.emit(asio::cancellation_type::terminal);
    if (read_held) {
        sched.run_for(100ms);
        CHECK_FALSE(r.ec.has_value()); // the read in flight decides
        net.deliver_held();
    }
    sched.run_for(1s);
    REQUIRE(r.ec.has_value());
    CHECK_MESSAGE(!*r.ec, r.ec->message()); // the claim won: the operation completes successfully
    CHECK(r.grant.fencing_token == 1);
    CHECK(a.is_held());
    CHECK(store.counts().puts == puts); // no new claim after the cancellation
    release_now(sched, a);
}

TEST_CASE("an acquisition cancelled while its landed claim is in doubt settles it: the claim won") {
    SUBCASE("cancelled while waiting to read back") { cancel_with_claim_in_doubt(false); }
    SUBCASE("cancelled while the read back is in flight") { cancel_with_claim_in_doubt(true); }
}

TEST_CASE("an acquisition cancelled while its lost claim is in doubt completes aborted and sends nothing more") {
    scripted_network world(88, 2s);
    auto& [sched, store, net] = world;
    faulty_lease a(sched.get_executor(), net, options("a", 90));
    asio::cancellation_signal sig;
    acquired r;
    net.inject_next(sim::fault_kind::drop_request); // the claim never arrives
    net.inject_next(sim::fault_kind::hold);         // the read back waits in the network
    a.async_acquire(asio::bind_cancellation_slot(sig.slot(), on_acquired(r)));
    run_until_held(sched, net, 1);
    sig.emit(asio::cancellation_type::terminal);
    net.deliver_held(); // the record is absent: the claim did not land, and no new claim is sent
    sched.run_for(1s);
    REQUIRE(r.ec.has_value());
    CHECK(*r.ec == asio::error::operation_aborted);
    CHECK(a.state() == lease_state::idle);
    CHECK(store.counts().puts == 0);
    CHECK_FALSE(stored_body(sched, store).has_value());
}

void erase_record(sim::scheduler& sched, baton::memory_backend& store) {
    bool done = false;
    store.async_erase("jobs/nightly", baton::precondition::none(), [&](error_code ec, baton::erase_result) {
        REQUIRE_FALSE(ec);
        done = true;
    });
    sched.run_for(0ns);
    REQUIRE(done);
}

TEST_CASE("a record deleted behind the lease's back: the next grant says it created the record, and tokens restart") {
    sim::scheduler sched(92);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 93));
    auto g1 = acquire_now(sched, a);
    CHECK(g1.fencing_token == 1);
    CHECK(g1.created_record);
    release_now(sched, a);
    auto g2 = acquire_now(sched, a);
    CHECK(g2.fencing_token == 2);
    CHECK_FALSE(g2.created_record);
    release_now(sched, a);
    erase_record(sched, store); // a lifecycle rule, a TTL, an operator

    // This object remembers the tokens it saw: it continues above them.
    auto g3 = acquire_now(sched, a);
    CHECK(g3.fencing_token == 3);
    CHECK(g3.created_record);
    release_now(sched, a);
    erase_record(sched, store);
    // A new object cannot know: its token restarts, and its grant says why.
    sim_lease b(sched.get_executor(), store, options("b", 94));
    auto g4 = acquire_now(sched, b);
    CHECK(g4.fencing_token == 1);
    CHECK(g4.created_record);
}

TEST_CASE("wall-clock tokens survive the record's deletion") {
    sim::scheduler sched(95);
    baton::memory_backend store(sched.get_executor());
    auto o = options("a", 96);
    o.wall_clock_tokens = true;
    // A simulated participant reads its own wall clock, from the simulation's epoch: tokens replay under a seed.
    auto const before = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(sim::manual_clock::wall_epoch.time_since_epoch()).count());
    sim_lease a(sched.get_executor(), store, o);
    auto g1 = acquire_now(sched, a);
    CHECK(g1.created_record);
    CHECK(g1.fencing_token >= before);
    release_now(sched, a);
    auto g2 = acquire_now(sched, a);
    CHECK(g2.fencing_token == g1.fencing_token + 1); // one per change of holder, as ever
    release_now(sched, a);
    erase_record(sched, store);
    auto ob = options("b", 97);
    ob.wall_clock_tokens = true;
    sim_lease b(sched.get_executor(), store, ob); // a new object, knowing nothing of the old tokens
    auto g3 = acquire_now(sched, b);
    CHECK(g3.created_record);
    CHECK(g3.fencing_token > g2.fencing_token);
    CHECK(g1.fencing_token < before + 60'000'000); // a minute of virtual time, at most
}

TEST_CASE("the host's wall-clock token floor rises within a process, from the microsecond of the system clock") {
    auto const before = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    auto const first = baton::detail::wall_clock_token_floor(baton::steady_clock{});
    auto const second = baton::detail::wall_clock_token_floor(baton::steady_clock{});
    CHECK(first >= before);
    CHECK(second > first); // distinct even within one microsecond
}

TEST_CASE("a renewal refused by a spurious 412 reads the record and keeps the lease") {
    scripted_network world(98, 2s);
    auto& [sched, store, net] = world;
    faulty_lease a(sched.get_executor(), net, options("a", 99));
    acquire_now(sched, a);
    completed lost;
    a.async_wait_lost(on_completed(lost));
    net.inject_next(sim::fault_kind::precondition); // the store refuses a write whose condition held
    auto const gets = store.counts().gets;
    sched.run_for(60s);
    CHECK_FALSE(lost.ec.has_value());
    CHECK(a.is_held());
    CHECK(store.counts().gets == gets + 1); // one read to see the record is still ours
    CHECK(a.fencing_token() == 1);
}

TEST_CASE("a release refused by a spurious 412, or throttled after it was applied, still releases") {
    for (auto fault : {sim::fault_kind::precondition, sim::fault_kind::throttle_applied}) {
        CAPTURE(static_cast<int>(fault));
        scripted_network world(100, 2s);
        auto& [sched, store, net] = world;
        faulty_lease a(sched.get_executor(), net, options("a", 101));
        acquire_now(sched, a);
        net.inject_next(fault);
        completed r;
        a.async_release(on_completed(r));
        sched.run_for(5s);
        REQUIRE(r.ec.has_value());
        CHECK_MESSAGE(!*r.ec, r.ec->message());
        auto const body = stored_body(sched, store);
        REQUIRE(body.has_value());
        CHECK(body->released);
        CHECK(body->token == 1);
    }
}

TEST_CASE("a store that refuses every write although the record is unchanged fails the release with a clear error") {
    scripted_network world(102, 2s);
    auto& [sched, store, net] = world;
    faulty_lease a(sched.get_executor(), net, options("a", 103));
    acquire_now(sched, a);
    { auto p = net.profile(); p.precondition = 1.0; net.set_profile(p); } // writes only: reads pass
    net.set_faults_enabled(true);
    completed r;
    a.async_release(on_completed(r));
    sched.run_for(30s);
    REQUIRE(r.ec.has_value());
    CHECK(*r.ec == errc::precondition_failed);
    CHECK(a.last_diagnostics().message.find("preconditions") != std::string::npos);
}

TEST_CASE("a renewal throttled after it was applied is read back and keeps the lease") {
    scripted_network world(104, 2s);
    auto& [sched, store, net] = world;
    faulty_lease a(sched.get_executor(), net, options("a", 105));
    acquire_now(sched, a);
    completed lost;
    a.async_wait_lost(on_completed(lost));
    net.inject_next(sim::fault_kind::throttle_applied);
    sched.run_for(60s);
    CHECK_FALSE(lost.ec.has_value());
    CHECK(a.is_held());
}

TEST_CASE("an acquisition cancelled while its claim travels, answered with an unknown outcome, reads the claim back") {
    scripted_network world(106, 2s);
    auto& [sched, store, net] = world;
    faulty_lease a(sched.get_executor(), net, options("a", 107));
    asio::cancellation_signal sig;
    acquired r;
    net.inject_next(sim::fault_kind::server_error_applied); // the claim lands; its answer is an ambiguous 500
    a.async_acquire(asio::bind_cancellation_slot(sig.slot(), on_acquired(r)));
    sig.emit(asio::cancellation_type::terminal);
    sched.run_for(0ns); // the cancellation is seen while the claim travels (1-5 ms each way)
    CHECK(store.counts().puts == 0);
    CHECK_FALSE(r.ec.has_value());
    sched.run_for(1s);
    REQUIRE(r.ec.has_value());
    CHECK_MESSAGE(!*r.ec, r.ec->message()); // the claim won: not abandoned
    CHECK(a.is_held());
    CHECK(store.counts().puts == 1);
}

TEST_CASE("a negative acquire timeout is refused with invalid_argument, and nothing is sent") {
    sim::scheduler sched(108);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 109));
    baton::acquire_options o;
    o.timeout = std::chrono::milliseconds(-1);
    acquired r;
    a.async_acquire(o, on_acquired(r));
    sched.run_for(1s);
    REQUIRE(r.ec.has_value());
    CHECK(*r.ec == errc::invalid_argument);
    CHECK(store.counts().puts + store.counts().gets == 0);
    CHECK(acquire_now(sched, a).fencing_token == 1); // the object is unaffected
}

TEST_CASE("try-once completes on store errors even when an earlier acquisition left a claim in doubt") {
    scripted_network world(75, 2s);
    auto& [sched, store, net] = world;
    faulty_lease a(sched.get_executor(), net, options("a", 77));
    net.inject_next(sim::fault_kind::drop_request); // the claim: its outcome is unknown
    { auto p = net.profile(); p.throttle = 1.0; net.set_profile(p); }                    // then every request is throttled (known not applied)
    acquired first;
    baton::acquire_options o;
    o.timeout = 5s;
    a.async_acquire(o, on_acquired(first));
    net.set_faults_enabled(true);
    sched.run_for(6s);
    REQUIRE(first.ec.has_value());
    CHECK(*first.ec == errc::timeout);
    acquired second;
    a.async_try_acquire(on_acquired(second));
    sched.run_for(60s);
    REQUIRE(second.ec.has_value()); // not polling forever for the earlier acquisition's claim
    CHECK(*second.ec == errc::throttled);
}

TEST_CASE("an acquire timeout of milliseconds::max() waits, it does not overflow into an immediate timeout") {
    sim::scheduler sched(78);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 79));
    sim_lease b(sched.get_executor(), store, options("b", 80));
    acquire_now(sched, a);
    baton::acquire_options o;
    o.timeout = std::chrono::milliseconds::max();
    acquired rb;
    b.async_acquire(o, on_acquired(rb));
    sched.run_for(10s);
    CHECK_FALSE(rb.ec.has_value());
    release_now(sched, a);
    sched.run_for(2s);
    REQUIRE(rb.ec.has_value());
    CHECK_FALSE(*rb.ec);
}

} // TEST_SUITE

#endif
