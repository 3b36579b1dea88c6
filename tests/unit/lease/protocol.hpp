// Part of the lease's unit tests (tests/unit/lease_test.cpp, one unit): round trips, the time
// model, losing the lease, ambiguous outcomes, try-once and timeouts, one operation of a kind at a
// time, foreign records.
#ifndef BATON_TESTS_UNIT_LEASE_PROTOCOL_HPP
#define BATON_TESTS_UNIT_LEASE_PROTOCOL_HPP

TEST_SUITE("lease") {

// ---- round trips ------------------------------------------------------------

TEST_CASE("acquiring a free lease is one put and no get") {
    sim::scheduler sched(1);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 1));
    std::optional<baton::lease_info> info{baton::lease_info{}};
    a.async_inspect([&](error_code ec, std::optional<baton::lease_info> i) {
        CHECK_FALSE(ec);
        info = std::move(i);
    });
    sched.run_for(0ns);
    CHECK_FALSE(info.has_value()); // no record yet
    auto const start = store.counts();
    acquired r;
    a.async_acquire(on_acquired(r));
    sched.run_for(1ms);
    REQUIRE(r.ec.has_value());
    CHECK_FALSE(*r.ec);
    CHECK(r.grant.fencing_token == 1);
    CHECK_FALSE(r.grant.took_over);
    CHECK(r.grant.remaining == renew_deadline); // no time passed: the whole budget
    CHECK(store.counts().puts == start.puts + 1);
    CHECK(store.counts().gets == start.gets);
    CHECK(a.state() == lease_state::held);
    CHECK(a.is_held());
    CHECK(a.fencing_token() == 1);
    CHECK(a.remaining() == renew_deadline - 1ms);
    REQUIRE(a.valid_until().has_value());
    CHECK(a.valid_until()->time_since_epoch() == ttl);
    auto b = stored_body(sched, store);
    REQUIRE(b.has_value());
    CHECK(b->owner == a.owner());
    CHECK(b->value == "addr-of-a");
    CHECK(b->token == 1);
    CHECK_FALSE(b->released);
    CHECK(b->ttl == ttl);

    // Acquiring again while held completes at once, with no request.
    sched.run_for(1s);
    auto const before = store.counts();
    acquired again;
    a.async_acquire(on_acquired(again));
    sched.run_for(0ns);
    REQUIRE(again.ec.has_value());
    CHECK_FALSE(*again.ec);
    CHECK(again.grant.fencing_token == 1);
    CHECK(again.grant.remaining == a.remaining());
    CHECK(store.counts().puts == before.puts);
    CHECK(store.counts().gets == before.gets);
}

TEST_CASE("each renewal is one put, within 90-110% of the renew interval after the last") {
    sim::scheduler sched(3);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 3));
    acquire_now(sched, a);
    completed lost;
    a.async_wait_lost(on_completed(lost));
    std::vector<vtime> puts_at{vtime{}};
    auto last = store.counts();
    for (int i = 0; i < 60000; ++i) { // 60 s in 1 ms steps
        sched.run_for(1ms);
        auto const c = store.counts();
        CHECK(c.gets == 0);
        CHECK(c.puts - last.puts <= 1);
        if (c.puts != last.puts) puts_at.push_back(sched.now());
        last = c;
    }
    REQUIRE(puts_at.size() >= 10);
    for (std::size_t i = 1; i < puts_at.size(); ++i) {
        auto const gap = puts_at[i] - puts_at[i - 1];
        CHECK(gap >= renew_interval * 9 / 10 - 1ms); // sampled every 1 ms
        CHECK(gap <= renew_interval * 11 / 10 + 1ms);
    }
    CHECK(last.refused == 0);
    CHECK(a.is_held());
    CHECK(a.fencing_token() == 1); // renewals keep the token
    CHECK_FALSE(lost.ec.has_value());
    CHECK(stored_body(sched, store)->token == 1);
}

TEST_CASE("release is one put, keeps the record and its token; re-acquiring is one put") {
    sim::scheduler sched(4);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 4));
    acquire_now(sched, a);
    completed lost;
    a.async_wait_lost(on_completed(lost));
    auto const before = store.counts();
    release_now(sched, a);
    CHECK(store.counts().puts == before.puts + 1);
    CHECK(store.counts().gets == before.gets);
    CHECK(store.counts().erases == 0);
    CHECK(a.state() == lease_state::released);
    CHECK_FALSE(a.is_held());
    CHECK(a.remaining() == 0ns);
    CHECK(a.fencing_token() == 1);
    REQUIRE(lost.ec.has_value());
    CHECK(*lost.ec == errc::released);

    CHECK(store.size() == 1); // the record stays, marked released
    std::optional<baton::lease_info> info;
    a.async_inspect([&](error_code ec, std::optional<baton::lease_info> i) {
        CHECK_FALSE(ec);
        info = std::move(i);
    });
    sched.run_for(1ms);
    REQUIRE(info.has_value());
    CHECK(info->released);
    CHECK(info->fencing_token == 1);
    CHECK(info->owner == a.owner());
    CHECK(info->value == "addr-of-a");
    CHECK(info->ttl == ttl);
    CHECK_FALSE(info->version.empty());

    // Nothing happens while released.
    auto const idle = store.counts();
    sched.run_for(60s);
    CHECK(store.counts().puts == idle.puts);

    auto const g = acquire_now(sched, a);
    CHECK(store.counts().puts == idle.puts + 1);
    CHECK(store.counts().gets == idle.gets);
    CHECK(g.fencing_token == 2); // a new term, a new token
    CHECK_FALSE(g.took_over);
}

TEST_CASE("taking over a dead holder: reads while waiting, then exactly one put") {
    sim::scheduler sched(5);
    baton::memory_backend store(sched.get_executor());
    {
        sim_lease a(sched.get_executor(), store, options("a", 5));
        acquire_now(sched, a);
    } // destroyed without release: the record stays, held
    sched.run_for(0ns);
    CHECK(store.counts().puts == 1);
    sched.run_for(5s);

    sim_lease b(sched.get_executor(), store, options("b", 6));
    acquired r;
    b.async_acquire(on_acquired(r));
    sched.run_for(0ns);
    // b's first request is a create, refused with the current record: that is its first read.
    auto const start = store.counts();
    CHECK(start.puts == 2);
    CHECK(start.refused == 1);
    CHECK(start.gets == 0);
    CHECK_FALSE(r.ec.has_value());

    sched.run_for(takeover_window + poll_every);
    REQUIRE(r.ec.has_value());
    CHECK_FALSE(*r.ec);
    CHECK(r.grant.took_over);
    CHECK(r.grant.fencing_token == 2);
    auto const end = store.counts();
    CHECK(end.puts == start.puts + 1);
    CHECK(end.refused == start.refused);
    // Polls every 50-100% of the poll interval for the 40 s window.
    CHECK(end.gets >= 40);
    CHECK(end.gets <= 81);
}

// ---- time model ---------------------------------------------------------------

TEST_CASE("a contender takes over only after ttl x skew of its own time since its first read") {
    double rate = 1.0;
    SUBCASE("clock at virtual speed") { rate = 1.0; }
    SUBCASE("fast clock") { rate = 2.0; }
    SUBCASE("slow clock") { rate = 0.75; }
    sim::scheduler sched(6);
    baton::memory_backend store(sched.get_executor());
    std::optional<sim_lease> a;
    a.emplace(sched.get_executor(), store, options("a", 7));
    acquire_now(sched, *a);
    sched.run_for(3s);
    a.reset(); // dies holding the lease
    sched.run_for(10s);

    sim::manual_clock clock(rate, 12345s);
    sim_lease b(sched.get_executor(), store, options("b", 8), {}, {}, clock);
    auto const first_read_own = clock.now(); // the refused create answers at this instant
    acquired r;
    std::optional<sim::manual_clock::time_point> own_at;
    b.async_acquire([&](error_code ec, baton::lease_grant g) {
        on_acquired(r)(ec, g);
        own_at = b.clock().now();
    });
    auto const window_real = std::chrono::nanoseconds(static_cast<std::int64_t>(
        std::ceil(static_cast<double>(std::chrono::nanoseconds(takeover_window).count()) / rate)));
    auto const poll_real = std::chrono::nanoseconds(static_cast<std::int64_t>(
        std::ceil(static_cast<double>(std::chrono::nanoseconds(poll_every).count()) / rate)));
    vtime const first_read = sched.now();

    sched.run_until(first_read + window_real - 1ms);
    CHECK_FALSE(r.ec.has_value());
    CHECK(b.state() == lease_state::acquiring);
    CHECK(stored_body(sched, store)->token == 1);

    sched.run_until(first_read + window_real + poll_real);
    REQUIRE(r.ec.has_value());
    CHECK_FALSE(*r.ec);
    CHECK(r.grant.took_over);
    CHECK(r.grant.fencing_token == 2);
    CHECK(*own_at - first_read_own >= takeover_window);
    CHECK(*own_at - first_read_own <= takeover_window + poll_every);
    CHECK(r.at >= first_read + window_real - 1us);
    CHECK(r.at <= first_read + window_real + poll_real);
    CHECK(b.is_held());
}

TEST_CASE("a live holder is never taken over; once released, the lease is taken within one poll interval") {
    sim::scheduler sched(8);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 11));
    acquire_now(sched, a);
    sim_lease b(sched.get_executor(), store, options("b", 12));
    acquired r;
    b.async_acquire(on_acquired(r));
    sched.run_for(3 * takeover_window); // a keeps renewing: each new version restarts b's wait
    REQUIRE_FALSE(r.ec.has_value());
    CHECK(a.is_held());
    CHECK(b.state() == lease_state::acquiring);
    CHECK(stored_body(sched, store)->token == 1);

    completed rel;
    a.async_release(on_completed(rel));
    sched.run_for(0ns);
    REQUIRE(rel.ec.has_value());
    CHECK_FALSE(*rel.ec);
    vtime const released_at = rel.at;
    sched.run_for(poll_every + 1ms);
    REQUIRE(r.ec.has_value());
    CHECK_FALSE(*r.ec);
    CHECK(r.at - released_at <= poll_every + 1ns);
    CHECK_FALSE(r.grant.took_over);
    CHECK(r.grant.fencing_token == 2);
}

TEST_CASE("fencing tokens go 1, 2, 3 across holders") {
    sim::scheduler sched(9);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 13));
    sim_lease b(sched.get_executor(), store, options("b", 14));
    sim_lease c(sched.get_executor(), store, options("c", 15));
    CHECK(acquire_now(sched, a).fencing_token == 1);
    release_now(sched, a);
    CHECK(acquire_now(sched, b).fencing_token == 2);
    sched.run_for(10s); // renewals keep the token
    CHECK(b.fencing_token() == 2);
    release_now(sched, b);
    CHECK(acquire_now(sched, c).fencing_token == 3);
    release_now(sched, c);
    // a's idea of the record is stale: its conditional write is refused, it reads the news, and goes on to 4.
    CHECK(acquire_now(sched, a).fencing_token == 4);
    CHECK(stored_body(sched, store)->token == 4);
}

// ---- losing the lease -----------------------------------------------------------

TEST_CASE("a holder whose renewals fail loses the lease exactly at its renew deadline") {
    sim::scheduler sched(10);
    baton::memory_backend store(sched.get_executor());
    sim::fault_profile drop_all;
    drop_all.drop_request = 1.0;
    faulty_store net(store, sched.get_executor(), 77, drop_all);
    net.set_faults_enabled(false);
    faulty_lease a(sched.get_executor(), net, options("a", 16));
    vtime const t_send = sched.now(); // the acquiring write is sent now
    acquire_now(sched, a);
    net.set_faults_enabled(true); // from now on nothing reaches the store

    completed lost;
    bool held_then = true;
    std::chrono::nanoseconds remaining_then{-1};
    a.async_wait_lost([&](error_code ec) {
        on_completed(lost)(ec);
        held_then = a.is_held();
        remaining_then = a.remaining();
    });
    sched.run_until(t_send + renew_deadline - 1ms);
    CHECK_FALSE(lost.ec.has_value());
    CHECK(a.is_held());
    CHECK(a.remaining() == 1ms);
    CHECK(net.counts().dropped_requests >= 1); // renewals were tried

    sched.run_for(1s);
    REQUIRE(lost.ec.has_value());
    CHECK(*lost.ec == errc::lease_lost);
    auto const late = lost.at - (t_send + renew_deadline);
    CHECK(late >= 0ns);
    CHECK(late <= 1ns); // timers round up by 1 ns
    CHECK_FALSE(held_then);
    CHECK(remaining_then == 0ns);
    CHECK(a.state() == lease_state::lost);
    CHECK(a.fencing_token() == 1);
    CHECK(store.counts().puts == 1); // no renewal ever landed
}

TEST_CASE("a frozen holder stops being held at its deadline and learns of the loss on thaw") {
    sim::scheduler sched(11);
    baton::memory_backend store(sched.get_executor());
    auto ex = sched.make_participant_executor();
    sim_lease a(ex, store, options("a", 17));
    acquire_now(sched, a);
    completed lost;
    a.async_wait_lost(on_completed(lost));
    sched.run_for(1s);
    ex.freeze();
    sched.run_until(vtime(renew_deadline - 1ns));
    CHECK(a.is_held());
    sched.run_until(vtime(renew_deadline));
    CHECK_FALSE(a.is_held()); // by its own clock, even while it cannot run
    CHECK(a.remaining() == 0ns);
    sched.run_until(vtime(30s));
    CHECK_FALSE(lost.ec.has_value());
    CHECK(store.counts().puts == 1);
    ex.thaw();
    sched.run_for(1ms);
    REQUIRE(lost.ec.has_value());
    CHECK(*lost.ec == errc::lease_lost);
    CHECK(a.state() == lease_state::lost);
}

TEST_CASE("a holder taken over learns lease_lost at its next renewal") {
    sim::scheduler sched(12);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 18));
    acquire_now(sched, a);
    completed lost;
    a.async_wait_lost(on_completed(lost));
    sched.run_for(1s);

    // Someone else writes the record (as a contender with a too-fast clock would).
    baton::detail::lease_body intruder{"intruder#1", "", "n", 2, false, ttl};
    bool written = false;
    store.async_put("jobs/nightly", baton::detail::encode_lease_body(intruder), baton::precondition::none(),
                    [&](error_code ec, baton::put_result) { written = !ec; });
    sched.run_for(0ns);
    REQUIRE(written);

    sched.run_until(vtime(renew_interval * 11 / 10 + 1ms));
    REQUIRE(lost.ec.has_value());
    CHECK(*lost.ec == errc::lease_lost);
    CHECK(lost.at >= vtime(renew_interval * 9 / 10));
    CHECK(lost.at < vtime(renew_deadline)); // well before the deadline
    CHECK(a.state() == lease_state::lost);
    CHECK_FALSE(a.is_held());

    // Releasing now cannot touch the new holder's record.
    completed rel;
    a.async_release(on_completed(rel));
    sched.run_for(1ms);
    REQUIRE(rel.ec.has_value());
    CHECK(*rel.ec == errc::lease_lost);
    auto b = stored_body(sched, store);
    CHECK(b->owner == "intruder#1");
    CHECK(b->token == 2);
    CHECK_FALSE(b->released);
}

TEST_CASE("leases sharing one executor share its timer, and a hung renewal still loses exactly at the renew deadline") {
    // Every lease on an executor holds one entry in one timer queue, and renewals due
    // close together share a wake-up (each may come up to 1/32 of its wait early). A deadline
    // has no such window: the holder whose renewal hangs learns its loss at the deadline to the
    // nanosecond, though 40 others' renewals are queued around it, and the hung write's late
    // answer does not bring the term back.
    sim::scheduler sched(31);
    baton::memory_backend store(sched.get_executor());
    auto profile = sim::fault_profile::none();
    profile.min_latency = profile.max_latency = 0ns;
    faulty_store net(store, sched.get_executor(), 31, profile);
    auto ex = sched.make_participant_executor();
    std::vector<std::unique_ptr<sim_lease>> others;
    for (int i = 0; i < 40; ++i) {
        auto o = options("other" + std::to_string(i), 100 + static_cast<std::uint64_t>(i));
        o.key = "shared/" + std::to_string(i);
        others.push_back(std::make_unique<sim_lease>(ex, store, o));
        acquire_now(sched, *others.back());
    }
    faulty_lease victim(ex, net, options("victim", 32));
    auto const sent = sched.now(); // its claim goes out now (no latency): the deadline counts from here
    acquire_now(sched, victim);
    completed lost;
    victim.async_wait_lost(on_completed(lost));
    for (int i = 0; i < 20; ++i) net.inject_next(sim::fault_kind::hold); // no renewal or retry reaches the store
    // One queue for the executor, holding one entry per lease (its renew wait).
    CHECK(baton::detail::timer_queues<virtual_clock>::of(ex)->size() == 41);
    auto const puts_before = store.counts().puts;

    sched.run_until(sent + renew_deadline - 1ns);
    CHECK_FALSE(lost.ec.has_value());
    CHECK(victim.is_held());
    // The simulated clock's timers expire 1 ns past the own-time instant (when it has passed).
    sched.run_until(sent + renew_deadline + 1ns);
    REQUIRE(lost.ec.has_value());
    CHECK(*lost.ec == errc::lease_lost);
    CHECK(lost.at == sent + renew_deadline + 1ns); // never late
    // The others renewed meanwhile (about twice each in 13.3 s at 6.67 s +-10%), and hold on.
    auto const renewals = store.counts().puts - puts_before;
    CHECK(renewals >= 40);
    CHECK(renewals <= 80);
    for (auto& l : others) CHECK(l->is_held());

    // The first hung renewal lands now, after its timeout: its answer is lost, and the term stays over.
    CHECK(net.held_count() >= 2);
    net.deliver_held();
    sched.run_for(1s);
    CHECK(victim.state() == lease_state::lost);
    CHECK_FALSE(victim.is_held());
    CHECK(lost.calls == 1);
}

// ---- ambiguous outcomes ---------------------------------------------------------

TEST_CASE("an acquiring write applied but unanswered is settled by reading back its nonce") {
    sim::scheduler sched(13);
    baton::memory_backend store(sched.get_executor());
    sim::fault_profile lose_answer;
    lose_answer.drop_response = 1.0;
    faulty_store net(store, sched.get_executor(), 78, lose_answer);
    faulty_lease a(sched.get_executor(), net, options("a", 19));
    acquired r;
    a.async_acquire(on_acquired(r));
    net.set_faults_enabled(false); // only the first request is faulty
    sched.run_for(3s);                // past the 2 s request timeout, before any renewal
    REQUIRE(r.ec.has_value());
    CHECK_FALSE(*r.ec);
    CHECK(r.grant.fencing_token == 1);
    CHECK_FALSE(r.grant.took_over);
    CHECK(net.counts().dropped_responses == 1);
    CHECK(net.counts().timeouts == 1);
    CHECK(store.counts().puts == 1); // not written twice
    CHECK(store.counts().gets == 1); // one read back
    CHECK(r.at >= vtime(2s));        // after the client's request timeout
    // It holds from when the write was sent, not from when it learned of it.
    CHECK(r.grant.remaining < renew_deadline - 2s);
    CHECK(r.grant.remaining > renew_deadline - 3s);
    CHECK(a.is_held());
    CHECK(stored_body(sched, store)->owner == a.owner());
}

TEST_CASE("a renewal applied but unanswered keeps the lease") {
    sim::scheduler sched(14);
    baton::memory_backend store(sched.get_executor());
    sim::fault_profile lose_answer;
    lose_answer.drop_response = 1.0;
    faulty_store net(store, sched.get_executor(), 79, lose_answer);
    net.set_faults_enabled(false);
    faulty_lease a(sched.get_executor(), net, options("a", 20));
    acquire_now(sched, a);
    completed lost;
    a.async_wait_lost(on_completed(lost));

    net.set_faults_enabled(true);
    auto const puts_before = store.counts().puts;
    for (int i = 0; i < 10000 && store.counts().puts == puts_before; ++i) sched.run_for(1ms);
    REQUIRE(store.counts().puts == puts_before + 1); // the renewal landed; its answer will not come
    net.set_faults_enabled(false);
    vtime const renewal_landed = sched.now();

    sched.run_for(4s); // past the request timeout and the read back
    CHECK(net.counts().dropped_responses == 1);
    CHECK(store.counts().gets == 1);
    CHECK(store.counts().puts == puts_before + 1); // settled by reading, not by writing again
    CHECK(a.is_held());
    // The deadline moved to the renewal's send time + renew deadline.
    CHECK(a.remaining() > renew_deadline - (sched.now() - renewal_landed) - 100ms);

    sched.run_for(60s);
    CHECK_FALSE(lost.ec.has_value());
    CHECK(a.is_held());
    CHECK(a.fencing_token() == 1);
}

// ---- try-once and timeouts -------------------------------------------------------

TEST_CASE("try-acquire against a held lease fails with held_by_other without waiting") {
    sim::scheduler sched(15);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 21));
    acquire_now(sched, a);
    sched.run_for(2s);
    sim_lease b(sched.get_executor(), store, options("b", 22));
    auto const before = store.counts();
    vtime const asked = sched.now();
    acquired r;
    b.async_try_acquire(on_acquired(r));
    sched.run_for(0ns);
    REQUIRE(r.ec.has_value());
    CHECK(*r.ec == errc::held_by_other);
    CHECK(r.at == asked);
    CHECK(b.state() == lease_state::idle);
    CHECK(store.counts().puts == before.puts + 1); // the refused create
    CHECK(store.counts().gets == before.gets);

    // Try-once on a free (released) lease succeeds.
    release_now(sched, a);
    acquired r2;
    b.async_try_acquire(on_acquired(r2));
    sched.run_for(1ms);
    REQUIRE(r2.ec.has_value());
    CHECK_FALSE(*r2.ec);
    CHECK(r2.grant.fencing_token == 2);
}

TEST_CASE("acquire with a timeout fails with errc::timeout when the time is up") {
    sim::scheduler sched(16);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 23));
    acquire_now(sched, a);
    sim_lease b(sched.get_executor(), store, options("b", 24));
    vtime const asked = sched.now();
    acquired r;
    b.async_acquire(baton::acquire_options{.timeout = 5s}, on_acquired(r));
    sched.run_until(asked + 5s - 1ms);
    CHECK_FALSE(r.ec.has_value());
    sched.run_until(asked + 5s + 1ms);
    REQUIRE(r.ec.has_value());
    CHECK(*r.ec == errc::timeout);
    CHECK(r.at >= asked + 5s);
    CHECK(b.state() == lease_state::idle);
    // It stops polling.
    auto const gets = store.counts().gets;
    sched.run_for(10s);
    CHECK(store.counts().gets == gets);
    // And may try again.
    acquired r2;
    b.async_try_acquire(on_acquired(r2));
    sched.run_for(1ms);
    REQUIRE(r2.ec.has_value());
    CHECK(*r2.ec == errc::held_by_other);
}

// ---- one operation of a kind at a time ---------------------------------------------

TEST_CASE("not_held before holding; a second acquire or a release while acquiring: operation_in_progress") {
    sim::scheduler sched(17);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 25));
    acquire_now(sched, a);
    sim_lease b(sched.get_executor(), store, options("b", 26));
    // Nothing to release or to lose before b ever held it.
    completed rel0, wait0;
    b.async_release(on_completed(rel0));
    b.async_wait_lost(on_completed(wait0));
    sched.run_for(0ns);
    REQUIRE(rel0.ec.has_value());
    CHECK(*rel0.ec == errc::not_held);
    REQUIRE(wait0.ec.has_value());
    CHECK(*wait0.ec == errc::not_held);

    acquired first, second;
    completed rel;
    b.async_acquire(on_acquired(first));
    sched.run_for(3s);
    b.async_acquire(on_acquired(second));
    b.async_release(on_completed(rel));
    sched.run_for(0ns);
    REQUIRE(second.ec.has_value());
    CHECK(*second.ec == errc::operation_in_progress);
    REQUIRE(rel.ec.has_value());
    CHECK(*rel.ec == errc::operation_in_progress);
    CHECK_FALSE(first.ec.has_value()); // unaffected
    CHECK(b.state() == lease_state::acquiring);

    release_now(sched, a);
    sched.run_for(poll_every + 1ms);
    REQUIRE(first.ec.has_value());
    CHECK_FALSE(*first.ec);
    CHECK(first.grant.fencing_token == 2);
    CHECK(first.calls == 1);
    CHECK(second.calls == 1);
}

// ---- foreign records --------------------------------------------------------------

TEST_CASE("a key holding something else fails with foreign_record and explains why") {
    sim::scheduler sched(25);
    baton::memory_backend store(sched.get_executor());
    std::string body;
    std::string why;
    SUBCASE("not JSON") {
        body = "hello, world";
        why = "not JSON";
    }
    SUBCASE("another format") {
        body = R"({"baton":"lease/9","owner":"x"})";
        why = "format tag";
    }
    bool written = false;
    store.async_put("jobs/nightly", body, baton::precondition::none(), [&](error_code ec, baton::put_result) { written = !ec; });
    sched.run_for(0ns);
    REQUIRE(written);

    sim_lease a(sched.get_executor(), store, options("a", 42));
    acquired r;
    a.async_acquire(on_acquired(r));
    sched.run_for(5s);
    REQUIRE(r.ec.has_value());
    CHECK(*r.ec == errc::foreign_record);
    CHECK(a.last_diagnostics().message.find(why) != std::string::npos);
    CHECK(a.state() == lease_state::idle);
    CHECK_FALSE(a.is_held());

    std::optional<error_code> inspect_ec;
    a.async_inspect([&](error_code ec, std::optional<baton::lease_info>) { inspect_ec = ec; });
    sched.run_for(1ms);
    REQUIRE(inspect_ec.has_value());
    CHECK(*inspect_ec == errc::foreign_record);

    // The record is left as it was.
    store.async_get("jobs/nightly", [&](error_code, baton::get_result g) {
        REQUIRE(g.found.has_value());
        CHECK(g.found->body == body);
    });
    sched.run_for(1ms);
}

} // TEST_SUITE

#endif
