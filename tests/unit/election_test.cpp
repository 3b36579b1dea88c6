// Election and run_while_held, on virtual time (deterministic, no real waiting).

#include <baton/backend/memory.hpp>
#include <baton/recipe/election.hpp>
#include <baton/recipe/run_while_held.hpp>
#include <baton/sim.hpp>

#include <doctest/doctest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/strand.hpp>

#include <memory>
#include <optional>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using vclock = baton::sim::virtual_clock;
using sim_store = baton::sim::faulty_backend<baton::memory_backend>;
using sim_election = baton::basic_election<baton::memory_backend, baton::sim::manual_clock>;
using faulty_lease = baton::basic_lease<sim_store, baton::sim::manual_clock>;
using vtimer = asio::basic_waitable_timer<vclock, asio::wait_traits<vclock>, asio::any_io_executor>;

baton::lease_options options(std::string owner, std::uint64_t seed) {
    baton::lease_options o;
    o.key = "services/api/leader";
    o.owner = std::move(owner);
    o.value = o.owner + ".internal:8080";
    o.random_seed = seed;
    return o;
}

// Protected work for run_while_held: waits a minute of virtual time; notes when it is cancelled.
auto minute_of_work(bool& cancelled) {
    return [&cancelled](baton::lease_grant) -> asio::awaitable<void> {
        vtimer t(co_await asio::this_coro::executor);
        t.expires_at(baton::sim::manual_clock{}.timer_expiry(60s));
        try {
            co_await t.async_wait(asio::use_awaitable);
        } catch (boost::system::system_error const&) {
            cancelled = true;
            throw;
        }
    };
}

std::optional<double> seconds_of(std::optional<vclock::time_point> t) {
    if (!t) return std::nullopt;
    return std::chrono::duration<double>(t->time_since_epoch()).count();
}

} // namespace

TEST_SUITE("election") {

TEST_CASE("the first candidate leads; observers see its value; resigning hands over within one poll") {
    baton::sim::scheduler sched(1);
    baton::memory_backend store(sched.get_executor());
    sim_election a(sched.get_executor(), store, options("a", 1), {}, {}, baton::sim::manual_clock{});
    sim_election b(sched.get_executor(), store, options("b", 2), {}, {}, baton::sim::manual_clock{});

    std::optional<std::uint64_t> a_term, b_term;
    std::optional<vclock::time_point> b_elected;
    a.async_campaign([&](baton::error_code ec, baton::lease_grant g) {
        REQUIRE_FALSE(ec);
        a_term = g.fencing_token;
    });
    sched.run_for(100ms);
    b.async_campaign([&](baton::error_code ec, baton::lease_grant g) {
        REQUIRE_FALSE(ec);
        b_term = g.fencing_token;
        b_elected = vclock::now();
    });
    std::optional<baton::lease_info> seen;
    b.async_leader([&](baton::error_code ec, std::optional<baton::lease_info> l) {
        REQUIRE_FALSE(ec);
        seen = l;
    });
    sched.run_for(10s);
    CHECK(a_term == 1u);
    CHECK(a.is_leader());
    CHECK_FALSE(b.is_leader());
    REQUIRE(seen);
    CHECK(seen->value == "a.internal:8080");
    CHECK(seen->owner.rfind("a#", 0) == 0);
    CHECK(seen->fencing_token == 1u);

    std::optional<baton::lease_info> changed;
    b.async_wait_for_change(seen, [&](baton::error_code ec, std::optional<baton::lease_info> l) {
        CHECK_FALSE(ec);
        changed = l;
    });
    auto const resigned_at = vclock::now();
    a.async_resign([](baton::error_code ec) { CHECK_FALSE(ec); });
    sched.run_for(5s);
    REQUIRE(b_term);
    CHECK(*b_term == 2u);
    REQUIRE(b_elected);
    CHECK(*b_elected - resigned_at <= 1s + 50ms); // one poll interval, plus the write
    REQUIRE(changed.has_value());
    CHECK_FALSE(a.is_leader());
    CHECK(b.is_leader());
}

TEST_CASE("wait_for_change can be cancelled and leaves leadership alone") {
    baton::sim::scheduler sched(2);
    baton::memory_backend store(sched.get_executor());
    asio::cancellation_signal sig; // outlives the election, which may hold its slot
    sim_election a(sched.get_executor(), store, options("a", 1), {}, {}, baton::sim::manual_clock{});
    a.async_campaign([](baton::error_code, baton::lease_grant) {});
    sched.run_for(1s);
    std::optional<baton::error_code> result;
    a.async_wait_for_change(std::nullopt, asio::bind_cancellation_slot(sig.slot(), [&](baton::error_code ec, auto) {
        result = ec;
    }));
    sched.run_for(1s);
    // The leader exists, so "nobody" -> "a" is already a change.
    REQUIRE(result);
    CHECK_FALSE(*result);
    std::optional<baton::lease_info> current;
    a.async_leader([&](baton::error_code, std::optional<baton::lease_info> l) { current = l; });
    sched.run_for(1s);
    result.reset();
    a.async_wait_for_change(current, asio::bind_cancellation_slot(sig.slot(), [&](baton::error_code ec, auto) {
        result = ec;
    }));
    sched.run_for(3s);
    CHECK_FALSE(result); // still waiting: renewals do not change the leader
    sig.emit(asio::cancellation_type::terminal);
    sched.run_for(1s);
    REQUIRE(result);
    CHECK(*result == asio::error::operation_aborted);
    CHECK(a.is_leader());
}

TEST_CASE("a watch cancelled then started again is completed by its own reads; destroying the election ends a watch at once") {
    baton::sim::scheduler sched(2);
    baton::memory_backend store(sched.get_executor());
    asio::cancellation_signal sig; // outlives the election, which may hold its slot
    auto a = std::make_unique<sim_election>(sched.get_executor(), store, options("a", 1), baton::standard_retry{},
                                            baton::backend_signer{}, baton::sim::manual_clock{});
    a->async_campaign([](baton::error_code, baton::lease_grant) {});
    sched.run_for(1s);
    std::optional<baton::lease_info> current;
    a->async_leader([&](baton::error_code, std::optional<baton::lease_info> l) { current = l; });
    sched.run_for(1s);
    REQUIRE(current);

    // Cancelled in the middle of a poll, then watched again as soon as the first completed: the
    // first watch's machine, still stopping, never completes the second.
    std::vector<baton::error_code> first, second;
    a->async_wait_for_change(current, asio::bind_cancellation_slot(sig.slot(), [&](baton::error_code ec, auto) {
        first.push_back(ec);
    }));
    sched.run_for(150ms);
    sig.emit(asio::cancellation_type::terminal);
    sched.run_for(1ms); // the cancellation reaches the election through its executor
    REQUIRE(first.size() == 1);
    a->async_wait_for_change(current, [&](baton::error_code ec, auto) { second.push_back(ec); });
    sched.run_for(3s);
    REQUIRE(first.size() == 1);
    CHECK(first[0] == asio::error::operation_aborted);
    CHECK(second.empty()); // still watching: the leader did not change

    // The election goes away while the second watch waits between polls: it completes now,
    // aborted, and nothing of it runs after.
    a.reset();
    sched.run_for(10ms);
    REQUIRE(second.size() == 1);
    CHECK(second[0] == asio::error::operation_aborted);
    sched.run_for(5s);
    CHECK(second.size() == 1);
    CHECK(first.size() == 1);
}

TEST_CASE("a crashed leader with no candidate to replace it is reported expired, with its age") {
    baton::sim::scheduler sched(5);
    baton::memory_backend store(sched.get_executor());
    sim_election observer(sched.get_executor(), store, options("o", 5), {}, {}, baton::sim::manual_clock{});
    auto leader_now = [&] {
        std::optional<baton::lease_info> seen;
        observer.async_leader([&](baton::error_code ec, std::optional<baton::lease_info> l) {
            REQUIRE_FALSE(ec);
            seen = l;
        });
        sched.run_for(10ms);
        return seen;
    };
    {
        sim_election a(sched.get_executor(), store, options("a", 6), {}, {}, baton::sim::manual_clock{});
        a.async_campaign([](baton::error_code ec, baton::lease_grant) { REQUIRE_FALSE(ec); });
        sched.run_for(1s);
        // A live leader renews every third of its ttl: never unchanged long enough to expire.
        for (int i = 0; i < 8; ++i) {
            auto l = leader_now();
            REQUIRE(l.has_value());
            CHECK_FALSE(l->expired);
            CHECK(l->unchanged_for < 7s);
            sched.run_for(10s);
        }
    } // a crashes: destroyed without resigning; its record stays
    auto first = leader_now();
    REQUIRE(first.has_value());
    CHECK_FALSE(first->expired);

    std::optional<baton::lease_info> changed;
    observer.async_wait_for_change(first, [&](baton::error_code ec, std::optional<baton::lease_info> l) {
        CHECK_FALSE(ec);
        changed = l;
    });
    sched.run_for(30s);
    CHECK_FALSE(changed.has_value()); // within ttl x skew (40 s) of an unchanged record, a leader may still be live
    auto later = leader_now();
    REQUIRE(later.has_value());
    CHECK_FALSE(later->expired);
    CHECK(later->unchanged_for >= 30s);
    sched.run_for(15s);
    REQUIRE(changed.has_value()); // the watcher learns that the leader is gone
    CHECK(changed->expired);
    CHECK(changed->fencing_token == first->fencing_token);
    auto gone = leader_now();
    REQUIRE(gone.has_value());
    CHECK(gone->expired);
    CHECK(gone->unchanged_for >= 40s);
    CHECK(gone->owner == first->owner);
}

TEST_CASE("run_while_held: work that finishes is followed by a release") {
    baton::sim::scheduler sched(3);
    baton::memory_backend store(sched.get_executor());
    baton::basic_lease<baton::memory_backend, baton::sim::manual_clock> lease(
        sched.get_executor(), store, options("w", 3), {}, {}, baton::sim::manual_clock{});
    std::optional<baton::error_code> outcome;
    std::uint64_t token = 0;
    asio::co_spawn(
        sched.get_executor(),
        [&]() -> asio::awaitable<void> {
            outcome = co_await baton::run_while_held(lease, [&](baton::lease_grant g) -> asio::awaitable<void> {
                token = g.fencing_token;
                vtimer t(co_await asio::this_coro::executor);
                t.expires_at(baton::sim::manual_clock{}.timer_expiry(30s)); // outlives several renewals
                co_await t.async_wait(asio::use_awaitable);
            });
        },
        asio::detached);
    sched.run_for(40s);
    REQUIRE(outcome);
    CHECK_FALSE(*outcome);
    CHECK(token == 1u);
    CHECK(lease.state() == baton::lease_state::released);
}

TEST_CASE("run_while_held: losing the lease cancels the work at the renew deadline") {
    baton::sim::scheduler sched(4);
    baton::memory_backend memory(sched.get_executor());
    sim_store store(memory, sched.get_executor(), 4, baton::sim::fault_profile::none());
    faulty_lease lease(sched.get_executor(), store, options("w", 4), {}, {}, baton::sim::manual_clock{});
    std::optional<baton::error_code> outcome;
    std::optional<vclock::time_point> cancelled_at;
    asio::co_spawn(
        sched.get_executor(),
        [&]() -> asio::awaitable<void> {
            outcome = co_await baton::run_while_held(lease, [&](baton::lease_grant) -> asio::awaitable<void> {
                // From now on every request of this holder is lost: renewals fail.
                { auto p = store.profile(); p.drop_request = 1.0; store.set_profile(p); }
                vtimer t(co_await asio::this_coro::executor);
                t.expires_at(baton::sim::manual_clock{}.timer_expiry(60s));
                try {
                    co_await t.async_wait(asio::use_awaitable);
                } catch (boost::system::system_error const&) {
                    cancelled_at = vclock::now();
                    throw;
                }
            });
        },
        asio::detached);
    sched.run_for(2min);
    REQUIRE(outcome);
    CHECK(*outcome == baton::errc::lease_lost);
    REQUIRE(cancelled_at);
    // Cancelled at the renew deadline (2/3 of the 20 s ttl after the acquiring write was sent), not at expiry.
    CHECK(seconds_of(cancelled_at).value() == doctest::Approx(13.34).epsilon(0.01));
}


TEST_CASE("run_while_held: a lease destroyed while its work runs is abandoned and never touched again") {
    // Before, run_while_held sent a release through the destroyed lease (use after free under ASan).
    baton::sim::scheduler sched(5);
    baton::memory_backend store(sched.get_executor());
    using lease_type = baton::basic_lease<baton::memory_backend, baton::sim::manual_clock>;
    std::optional<lease_type> lease;
    lease.emplace(sched.get_executor(), store, options("w", 5), baton::standard_retry{}, baton::backend_signer{},
                  baton::sim::manual_clock{});
    std::optional<baton::error_code> outcome;
    bool work_cancelled = false;
    asio::co_spawn(
        sched.get_executor(),
        [&]() -> asio::awaitable<void> {
            outcome = co_await baton::run_while_held(*lease, minute_of_work(work_cancelled));
        },
        asio::detached);
    sched.run_for(5s);
    REQUIRE(lease->state() == baton::lease_state::held);
    lease.reset();
    sched.run_for(1s);
    REQUIRE(outcome);
    CHECK(*outcome == asio::error::operation_aborted);
    CHECK(work_cancelled);
    // Abandoned, not released: the record still names the holder until another contender's wait expires.
    sim_election observer(sched.get_executor(), store, options("o", 6), {}, {}, baton::sim::manual_clock{});
    std::optional<baton::lease_info> seen;
    observer.async_leader([&](baton::error_code ec, std::optional<baton::lease_info> l) {
        REQUIRE_FALSE(ec);
        seen = l;
    });
    sched.run_for(10ms);
    REQUIRE(seen);
    CHECK(seen->owner.starts_with("w"));
    CHECK_FALSE(seen->released);
}

TEST_CASE("run_while_held: cancelling it cancels the work and releases the lease") {
    baton::sim::scheduler sched(7);
    baton::memory_backend store(sched.get_executor());
    baton::basic_lease<baton::memory_backend, baton::sim::manual_clock> lease(
        sched.get_executor(), store, options("w", 7), {}, {}, baton::sim::manual_clock{});
    std::optional<baton::error_code> outcome;
    std::exception_ptr thrown;
    bool work_cancelled = false;
    asio::cancellation_signal sig;
    asio::co_spawn(
        sched.get_executor(),
        [&]() -> asio::awaitable<void> {
            outcome = co_await baton::run_while_held(lease, minute_of_work(work_cancelled));
        },
        asio::bind_cancellation_slot(sig.slot(), [&](std::exception_ptr e) { thrown = e; }));
    sched.run_for(5s);
    REQUIRE(lease.state() == baton::lease_state::held);
    sig.emit(asio::cancellation_type::terminal);
    sched.run_for(1s);
    CHECK_FALSE(thrown);
    REQUIRE(outcome);
    CHECK(*outcome == asio::error::operation_aborted);
    CHECK(work_cancelled);
    // Released: the next contender takes it at once, without waiting out the ttl.
    CHECK(lease.state() == baton::lease_state::released);
}

TEST_CASE("every operation's handler runs on its own strand; async_leader runs alongside wait_for_change") {
    baton::sim::scheduler sched(9);
    baton::memory_backend store(sched.get_executor());
    sim_election a(sched.get_executor(), store, options("a", 1), {}, {}, baton::sim::manual_clock{});
    sim_election b(sched.get_executor(), store, options("b", 2), {}, {}, baton::sim::manual_clock{});
    auto strand = asio::make_strand(sched.get_executor());
    int calls = 0, on_strand = 0;
    auto seen_on_strand = [&] {
        ++calls;
        if (strand.running_in_this_thread()) ++on_strand;
    };
    a.async_campaign(asio::bind_executor(strand, [&](baton::error_code ec, baton::lease_grant) {
        CHECK_FALSE(ec);
        seen_on_strand();
    }));
    sched.run_for(100ms);
    std::optional<baton::error_code> lost;
    a.async_wait_lost(asio::bind_executor(strand, [&](baton::error_code ec) {
        lost = ec;
        seen_on_strand();
    }));
    std::optional<baton::lease_info> leader;
    b.async_leader(asio::bind_executor(strand, [&](baton::error_code ec, std::optional<baton::lease_info> l) {
        CHECK_FALSE(ec);
        leader = l;
        seen_on_strand();
    }));
    sched.run_for(100ms);
    REQUIRE(leader.has_value());
    std::optional<baton::error_code> changed;
    b.async_wait_for_change(leader, asio::bind_executor(strand, [&](baton::error_code ec, std::optional<baton::lease_info>) {
        changed = ec;
        seen_on_strand();
    }));
    // While the watch polls, async_leader still answers (it has no single slot to contend for).
    for (int i = 0; i < 3; ++i) {
        b.async_leader(asio::bind_executor(strand, [&](baton::error_code ec, std::optional<baton::lease_info> l) {
            CHECK_FALSE(ec); // not operation_in_progress
            CHECK(l.has_value());
            seen_on_strand();
        }));
    }
    b.lease().async_inspect(asio::bind_executor(strand, [&](baton::error_code ec, std::optional<baton::lease_info>) {
        CHECK_FALSE(ec);
        seen_on_strand();
    }));
    b.lease().async_try_acquire(asio::bind_executor(strand, [&](baton::error_code ec, baton::lease_grant) {
        CHECK(ec == baton::errc::held_by_other);
        seen_on_strand();
    }));
    sched.run_for(3s);
    a.async_resign(asio::bind_executor(strand, [&](baton::error_code ec) {
        CHECK_FALSE(ec);
        seen_on_strand();
    }));
    sched.run_for(3s);
    REQUIRE(lost.has_value());
    CHECK(*lost == baton::errc::released);
    REQUIRE(changed.has_value());
    CHECK_FALSE(*changed);
    CHECK(calls == 10);
    CHECK(on_strand == calls);
}

}
