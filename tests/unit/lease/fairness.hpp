// Part of the lease's unit tests (tests/unit/lease_test.cpp, one unit): fairness between
// contenders that release and re-acquire.
#ifndef BATON_TESTS_UNIT_LEASE_FAIRNESS_HPP
#define BATON_TESTS_UNIT_LEASE_FAIRNESS_HPP

namespace {

// Figure 2 of the store bench in virtual time: `k` contenders, each looping acquire (waiting)
// -> hold -> release, over a store 0.1-0.2 ms away each way (dynalite on loopback).
struct contention_result {
    std::vector<unsigned> per_contender;
    double max_wait_ms = 0;
    double requests_per_acquisition = 0;
    double reads_per_acquisition = 0, refused_per_acquisition = 0; // of the requests
    unsigned acquisitions = 0, overlaps = 0;

    double jain() const {
        double sum = 0, squares = 0;
        for (auto n : per_contender) {
            sum += n;
            squares += static_cast<double>(n) * n;
        }
        return squares == 0 ? 0 : sum * sum / (static_cast<double>(per_contender.size()) * squares);
    }
};

// `carry`: whether a refused write carries the current record (DynamoDB's do; dynalite's, which
// the store bench runs on, do not).
contention_result contend(std::uint64_t seed, std::chrono::milliseconds yield_after, bool carry = true, int k = 8,
                          std::chrono::milliseconds run = 10s) {
    using timer = boost::asio::basic_waitable_timer<virtual_clock, boost::asio::wait_traits<virtual_clock>,
                                                    boost::asio::io_context::executor_type>;
    sim::scheduler sched(seed);
    baton::memory_backend store(sched.get_executor());
    auto profile = sim::fault_profile::none();
    profile.min_latency = 100us; // a store on loopback: round trips of 0.2-0.4 ms
    profile.max_latency = 200us;
    profile.refusals_carry_record = carry;
    struct contender {
        std::unique_ptr<faulty_store> net;
        std::unique_ptr<faulty_lease> lease;
        std::unique_ptr<timer> hold;
        vtime asked{};
        bool waiting = false;
        unsigned served = 0;
    };
    std::vector<contender> cs(static_cast<std::size_t>(k));
    contention_result out;
    vtime const end = virtual_clock::now() + run;
    bool held = false;
    std::function<void(contender&)> loop = [&](contender& c) {
        c.asked = virtual_clock::now();
        if (c.asked >= end) return;
        c.waiting = true;
        c.lease->async_acquire([&](error_code ec, baton::lease_grant) {
            REQUIRE_FALSE(ec);
            c.waiting = false;
            if (held) ++out.overlaps;
            held = true;
            ++c.served;
            out.max_wait_ms = std::max(out.max_wait_ms,
                                       std::chrono::duration<double, std::milli>(virtual_clock::now() - c.asked).count());
            c.hold->expires_after(2ms);
            c.hold->async_wait([&](error_code) {
                held = false;
                c.lease->async_release([&](error_code e2) {
                    REQUIRE_FALSE(e2);
                    loop(c);
                });
            });
        });
    };
    for (int i = 0; i < k; ++i) {
        auto& c = cs[static_cast<std::size_t>(i)];
        c.net = std::make_unique<faulty_store>(store, sched.get_executor(), seed * 100 + static_cast<std::uint64_t>(i), profile);
        auto o = options("c" + std::to_string(i), seed * 1000 + static_cast<std::uint64_t>(i));
        o.poll_interval = 25ms;
        o.yield_after = yield_after;
        c.lease = std::make_unique<faulty_lease>(sched.get_executor(), *c.net, o);
        c.hold = std::make_unique<timer>(sched.get_executor());
        loop(c);
    }
    sched.run_for(run + 5s);
    for (auto& c : cs) {
        out.per_contender.push_back(c.served);
        out.acquisitions += c.served;
        // One still waiting counts with its wait so far (a starved contender must not pass unseen).
        if (c.waiting)
            out.max_wait_ms = std::max(out.max_wait_ms,
                                       std::chrono::duration<double, std::milli>(virtual_clock::now() - c.asked).count());
    }
    auto const n = store.counts();
    auto const per = 1.0 / std::max(1u, out.acquisitions);
    out.requests_per_acquisition = static_cast<double>(n.gets + n.puts) * per;
    out.reads_per_acquisition = static_cast<double>(n.gets) * per;
    out.refused_per_acquisition = static_cast<double>(n.refused) * per;
    return out;
}

} // namespace

TEST_SUITE("lease fairness") {

TEST_CASE("8 contenders releasing and re-acquiring, polling every 25 ms: every one served, evenly, never two at once") {
    // Both kinds of store: refusals that carry the current record (DynamoDB, the memory store)
    // and refusals that do not (S3, and dynalite, which the store bench's figure 2 runs on).
    for (bool carry : {true, false}) {
        for (std::uint64_t seed = 1; seed <= 3; ++seed) {
            auto const r = contend(seed, 0ms, carry);
            std::string per;
            for (auto n : r.per_contender) per += std::to_string(n) + " ";
            MESSAGE(std::string(carry ? "refusals with the record" : "refusals without it") << ", seed " << seed << ": "
                    << r.acquisitions << " acquisitions, per contender " << per << "Jain " << r.jain()
                    << ", max wait " << r.max_wait_ms << " ms, requests/acquisition " << r.requests_per_acquisition
                    << " (reads " << r.reads_per_acquisition << ", refused writes " << r.refused_per_acquisition
                    << ")");
            CHECK(r.overlaps == 0);
            // The stated bound: at each yield the first waiter to read the released record takes it,
            // so a waiter is passed over with probability (W - 1) / W per turn; at W = 7 a wait over
            // 5 s, some 90 turns (the default turn is two polls, 50 ms, and a hand-over), happens
            // about once in a million waits ((6/7)^90 is 9.4e-7).
            // Measured at these seeds: 1.5-3.8 s (0.8-1.7 s with turns of one poll and a yield of 1.25).
            CHECK(r.max_wait_ms <= 5000);
            CHECK(r.jain() >= 0.9);
            for (auto n : r.per_contender) CHECK(n >= r.acquisitions / 16); // none below half its fair share
            // 2 writes, and the waiters' reads: they poll at the end of the holder's turn, which the
            // record states, not during it (2.52-2.54 measured; 2.90 with turns of one poll, when a
            // waiter read at least once a poll; 3.07 without the stated turn).
            CHECK(r.requests_per_acquisition <= 2.7);
            CHECK(r.acquisitions >= 3000); // a yield costs little: ~300 acquisitions per second
        }
    }
}

TEST_CASE("without yielding (yield_after = max()) the releaser keeps the lease: what the yield is for") {
    auto const r = contend(1, std::chrono::milliseconds::max());
    std::string per;
    for (auto n : r.per_contender) per += std::to_string(n) + " ";
    MESSAGE(r.acquisitions << " acquisitions, per contender " << per << "Jain " << r.jain() << ", max wait "
                           << r.max_wait_ms << " ms, requests/acquisition " << r.requests_per_acquisition);
    CHECK(r.overlaps == 0);
    CHECK(r.jain() < 0.9);           // the case above passes because of the yield
    CHECK(r.max_wait_ms > 2500);
}

} // TEST_SUITE

#endif
