// Part of the lease's unit tests (tests/unit/lease_test.cpp, one unit): the sim kit itself: its
// fault profile's rules and its timers on virtual time.
#ifndef BATON_TESTS_UNIT_LEASE_SIM_KIT_HPP
#define BATON_TESTS_UNIT_LEASE_SIM_KIT_HPP

TEST_CASE("the sim kit's fault profile is validated: probabilities, their sums, latencies and timeouts") {
    using baton::sim::fault_profile;
    struct row { void (*edit)(fault_profile&); char const* rule; };
    row const rows[] = {
        {[](fault_profile& f) { f.drop_request = -0.1; }, "drop_request must be a probability from 0 to 1"},
        {[](fault_profile& f) { f.delay = std::numeric_limits<double>::quiet_NaN(); }, "delay must be a probability"},
        {[](fault_profile& f) { f.stale_read = 1.5; }, "stale_read must be a probability"},
        {[](fault_profile& f) { f.conflict = 0.6; f.precondition = 0.6; }, "a write draws from"},
        {[](fault_profile& f) { f.duplicate = 0.5; f.stale_read = 0.6; }, "a read draws from"},
        {[](fault_profile& f) { f.min_latency = 20ms; }, "min_latency <= max_latency"},
        {[](fault_profile& f) { f.max_latency = std::chrono::nanoseconds::max(); }, "max_latency <= 1 hour"},
        {[](fault_profile& f) { f.max_extra_delay = -1ms; }, "max_extra_delay must be from 0 to 1 hour"},
        {[](fault_profile& f) { f.request_timeout = 0ms; }, "request_timeout must be positive"},
    };
    asio::io_context ioc;
    for (auto const& r : rows) {
        fault_profile f;
        r.edit(f);
        CAPTURE(r.rule);
        CHECK_THROWS_WITH_AS(f.validate(), doctest::Contains(r.rule), baton::config_error);
        CHECK_THROWS_AS(baton::sim::faulty_backend(baton::memory_backend(ioc.get_executor()), ioc.get_executor(), 1, f),
                        baton::config_error);
    }
    // Writes and reads draw from different sets: each may sum to 1.
    fault_profile ok;
    ok.conflict = 0.5;
    ok.precondition = 0.5;
    ok.stale_read = 1.0;
    ok.delay = 1.0;
    CHECK_NOTHROW(ok.validate());
    baton::sim::faulty_backend net(baton::memory_backend(ioc.get_executor()), ioc.get_executor(), 1, ok);
    fault_profile bad = ok;
    bad.throttle = 0.1;
    CHECK_THROWS_AS(net.set_profile(bad), baton::config_error);
    CHECK(net.profile().throttle == 0.0); // the old profile stays
}

// ---- the sim kit's timers on virtual time ---------------------------------------------------------

TEST_CASE("virtual timers: fire in expiry order (ties in arming order), never inline, and only when time gets there") {
    sim::scheduler sched(7);
    using timer = boost::asio::basic_waitable_timer<virtual_clock, boost::asio::wait_traits<virtual_clock>,
                                                    boost::asio::io_context::executor_type>;
    timer late(sched.get_executor()), early(sched.get_executor()), tie(sched.get_executor());
    std::vector<std::string> order;
    late.expires_at(vtime(20ms));
    early.expires_at(vtime(10ms));
    tie.expires_at(vtime(20ms));
    late.async_wait([&](error_code ec) { order.push_back("late " + ec.message()); });
    early.async_wait([&](error_code ec) { order.push_back("early " + ec.message()); });
    tie.async_wait([&](error_code ec) { order.push_back("tie " + ec.message()); });
    CHECK(order.empty()); // never inline
    sched.run_until(vtime(9ms));
    CHECK(order.empty());
    sched.run_until(vtime(10ms));
    REQUIRE(order.size() == 1);
    CHECK(order[0] == "early Success");
    sched.run_until(vtime(30ms));
    REQUIRE(order.size() == 3);
    CHECK(order[1] == "late Success");
    CHECK(order[2] == "tie Success");
}

TEST_CASE("virtual timers: cancel, re-arming, per-operation cancellation and destruction complete with operation_aborted") {
    sim::scheduler sched(7);
    using timer = boost::asio::basic_waitable_timer<virtual_clock, boost::asio::wait_traits<virtual_clock>,
                                                    boost::asio::io_context::executor_type>;
    std::vector<error_code> got;
    auto note = [&](error_code ec) { got.push_back(ec); };
    timer t(sched.get_executor());
    t.expires_at(vtime(10ms));
    t.async_wait(note);
    t.async_wait(note);
    CHECK(t.cancel() == 2);
    CHECK(got.empty()); // not inline either
    sched.run_for(0ns);
    REQUIRE(got.size() == 2);
    CHECK(got[1] == boost::asio::error::operation_aborted);

    t.async_wait(note);
    CHECK(t.expires_at(vtime(5ms)) == 1); // re-arming cancels the wait in progress
    t.async_wait(note);
    sched.run_until(vtime(5ms));
    REQUIRE(got.size() == 4);
    CHECK(got[2] == boost::asio::error::operation_aborted);
    CHECK_FALSE(got[3]);

    boost::asio::cancellation_signal signal;
    t.expires_at(vtime(50ms));
    t.async_wait(boost::asio::bind_cancellation_slot(signal.slot(), note));
    signal.emit(boost::asio::cancellation_type::terminal);
    signal.emit(boost::asio::cancellation_type::terminal); // a second emit finds nothing
    sched.run_for(1ms);
    REQUIRE(got.size() == 5);
    CHECK(got[4] == boost::asio::error::operation_aborted);
    sched.run_until(vtime(60ms));
    CHECK(got.size() == 5); // the cancelled wait does not fire at its expiry

    {
        timer gone(sched.get_executor());
        gone.expires_at(vtime(100ms));
        gone.async_wait(note);
    }
    sched.run_for(0ns);
    REQUIRE(got.size() == 6);
    CHECK(got[5] == boost::asio::error::operation_aborted);
}

TEST_CASE("virtual timers: a frozen participant's completions wait for it to thaw") {
    sim::scheduler sched(7);
    auto ex = sched.make_participant_executor();
    boost::asio::basic_waitable_timer<virtual_clock, boost::asio::wait_traits<virtual_clock>, sim::pausable_executor> t(ex);
    bool fired = false;
    t.expires_at(vtime(10ms));
    t.async_wait([&](error_code ec) { fired = !ec; });
    ex.freeze();
    sched.run_until(vtime(20ms));
    CHECK_FALSE(fired);
    ex.thaw();
    sched.run_for(0ns);
    CHECK(fired);
}

#endif
