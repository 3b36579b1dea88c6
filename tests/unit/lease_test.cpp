// basic_lease, driven deterministically in virtual time: round trips, the
// time model, loss, ambiguous outcomes, try-once, cancellation, completion
// tokens, destruction and foreign records.
#include <baton/backend/memory.hpp>
#include <baton/memory.hpp>
#include <baton/recipe/detail/lease_record.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/recipe/lease_metrics.hpp>
#include <baton/sim.hpp>

#include <doctest/doctest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace sim = baton::sim;
using namespace std::chrono_literals;
using baton::errc;
using baton::error_code;
using baton::lease_state;
using sim::virtual_clock;
using vtime = virtual_clock::time_point;

using sim_lease = baton::basic_lease<baton::memory_backend, sim::manual_clock>;
using faulty_store = sim::faulty_backend<baton::memory_backend>;
using faulty_lease = baton::basic_lease<faulty_store, sim::manual_clock>;

constexpr auto ttl = std::chrono::milliseconds(20000);
constexpr auto renew_interval = std::chrono::milliseconds(6666);  // ttl / 3
constexpr auto renew_deadline = std::chrono::milliseconds(13333); // 2/3 ttl
constexpr auto poll_every = std::chrono::milliseconds(1000);
constexpr auto takeover_window = std::chrono::milliseconds(40000); // ttl x max_clock_rate_skew

baton::lease_options options(std::string owner, std::uint64_t seed) {
    baton::lease_options o;
    o.key = "jobs/nightly";
    o.owner = std::move(owner);
    o.value = "addr-of-" + o.owner;
    o.ttl = ttl;
    o.poll_interval = poll_every;
    o.max_clock_rate_skew = 2.0;
    o.random_seed = seed;
    return o;
}

struct acquired {
    std::optional<error_code> ec;
    baton::lease_grant grant;
    vtime at{};
    int calls = 0;
};
auto on_acquired(acquired& r) {
    return [&r](error_code ec, baton::lease_grant g) {
        r.ec = ec;
        r.grant = g;
        r.at = virtual_clock::now();
        ++r.calls;
    };
}

struct completed {
    std::optional<error_code> ec;
    vtime at{};
    int calls = 0;
};
auto on_completed(completed& r) {
    return [&r](error_code ec) {
        r.ec = ec;
        r.at = virtual_clock::now();
        ++r.calls;
    };
}

// Acquires `l` (expected free or released) and checks it worked.
template <class Lease>
baton::lease_grant acquire_now(sim::scheduler& sched, Lease& l) {
    acquired r;
    l.async_acquire(on_acquired(r));
    sched.run_for(50ms);
    REQUIRE(r.ec.has_value());
    REQUIRE_MESSAGE(!*r.ec, r.ec->message());
    return r.grant;
}

template <class Lease>
void release_now(sim::scheduler& sched, Lease& l) {
    completed r;
    l.async_release(on_completed(r));
    sched.run_for(50ms);
    REQUIRE(r.ec.has_value());
    REQUIRE_MESSAGE(!*r.ec, r.ec->message());
}

std::optional<baton::detail::lease_body> stored_body(sim::scheduler& sched, baton::memory_backend& store) {
    std::optional<baton::record> found;
    // Note: this read is counted in store.counts() like any other.
    store.async_get("jobs/nightly", [&](error_code ec, baton::get_result r) {
        REQUIRE_FALSE(ec);
        found = r.found;
    });
    sched.run_for(0ns);
    if (!found) return std::nullopt;
    baton::detail::lease_body b;
    baton::diagnostics d;
    REQUIRE_FALSE(baton::detail::decode_lease_body(found->body, b, d));
    return b;
}

} // namespace

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

// ---- cancellation -------------------------------------------------------------

TEST_CASE("cancelling a waiting acquire completes it with operation_aborted; the object can acquire later") {
    sim::scheduler sched(19);
    baton::memory_backend store(sched.get_executor());
    asio::cancellation_signal sig; // outlives the operations it can cancel
    sim_lease a(sched.get_executor(), store, options("a", 28));
    acquire_now(sched, a);
    sim_lease b(sched.get_executor(), store, options("b", 29));
    acquired r;
    b.async_acquire(asio::bind_cancellation_slot(sig.slot(), on_acquired(r)));
    sched.run_for(5s);
    REQUIRE_FALSE(r.ec.has_value());
    sig.emit(asio::cancellation_type::terminal);
    CHECK_FALSE(r.ec.has_value()); // not inline
    sched.run_for(0ns);
    REQUIRE(r.ec.has_value());
    CHECK(*r.ec == asio::error::operation_aborted);
    CHECK(b.state() == lease_state::idle);
    auto const gets = store.counts().gets;
    sched.run_for(10s);
    CHECK(store.counts().gets == gets); // no more polling
    sig.emit(asio::cancellation_type::terminal); // a late emit is harmless
    sched.run_for(0ns);
    CHECK(r.calls == 1);

    release_now(sched, a);
    auto const g = acquire_now(sched, b);
    CHECK(g.fencing_token == 2);
    CHECK(b.is_held());
}

TEST_CASE("cancelling an async_wait_lost waiter leaves the lease alone") {
    sim::scheduler sched(20);
    baton::memory_backend store(sched.get_executor());
    asio::cancellation_signal sig;
    sim_lease a(sched.get_executor(), store, options("a", 30));
    acquire_now(sched, a);
    completed cancelled, other;
    a.async_wait_lost(asio::bind_cancellation_slot(sig.slot(), on_completed(cancelled)));
    a.async_wait_lost(on_completed(other));
    sched.run_for(1s);
    sig.emit(asio::cancellation_type::terminal);
    sched.run_for(0ns);
    REQUIRE(cancelled.ec.has_value());
    CHECK(*cancelled.ec == asio::error::operation_aborted);
    CHECK_FALSE(other.ec.has_value());
    sched.run_for(30s);
    CHECK(a.is_held());
    CHECK_FALSE(other.ec.has_value());
    release_now(sched, a);
    REQUIRE(other.ec.has_value());
    CHECK(*other.ec == errc::released);
    CHECK(cancelled.calls == 1);
}

// ---- completion tokens ------------------------------------------------------------

TEST_CASE("asio::deferred: nothing is sent until the operation is invoked") {
    sim::scheduler sched(21);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 31));
    auto op = a.async_acquire(asio::deferred);
    auto rel = a.async_release(asio::deferred);
    sched.run_for(1s);
    CHECK(store.counts().puts == 0);
    CHECK(a.state() == lease_state::idle);
    acquired r;
    std::move(op)(on_acquired(r));
    sched.run_for(1ms);
    REQUIRE(r.ec.has_value());
    CHECK_FALSE(*r.ec);
    CHECK(r.grant.fencing_token == 1);
    completed done;
    std::move(rel)(on_completed(done));
    sched.run_for(1ms);
    REQUIRE(done.ec.has_value());
    CHECK_FALSE(*done.ec);
    CHECK(a.state() == lease_state::released);
}

TEST_CASE("asio::use_future with a steady-clock lease on a polled io_context") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    auto poll_until_ready = [&](auto& f) {
        for (int i = 0; i < 1000 && f.wait_for(0s) != std::future_status::ready; ++i) ioc.poll();
        return f.wait_for(0s) == std::future_status::ready;
    };
    baton::basic_lease<baton::memory_backend> a(ioc.get_executor(), store, options("a", 32));
    baton::basic_lease<baton::memory_backend> b(ioc.get_executor(), store, options("b", 33));

    std::future<baton::lease_grant> got = a.async_acquire(asio::use_future);
    REQUIRE(poll_until_ready(got));
    auto const g = got.get();
    CHECK(g.fencing_token == 1);
    CHECK(g.remaining > 0ns);
    CHECK(a.is_held());

    std::future<baton::lease_grant> refused = b.async_try_acquire(asio::use_future);
    REQUIRE(poll_until_ready(refused));
    try {
        refused.get();
        FAIL("expected held_by_other");
    } catch (boost::system::system_error const& e) {
        CHECK(e.code() == errc::held_by_other);
    }

    std::future<void> released = a.async_release(asio::use_future);
    REQUIRE(poll_until_ready(released));
    CHECK_NOTHROW(released.get());
    CHECK(a.state() == lease_state::released);
}

TEST_CASE("rebind_executor: as_default_on_t makes use_awaitable the default token of every recipe") {
    using awaitable = asio::use_awaitable_t<>;
    using lease_t = awaitable::as_default_on_t<baton::memory_lease>;
    using election_t = awaitable::as_default_on_t<baton::memory_election>;
    using kv_t = awaitable::as_default_on_t<baton::memory_kv>;
    using fenced_t = awaitable::as_default_on_t<baton::memory_fenced>;
    static_assert(std::is_same_v<lease_t, baton::basic_lease<baton::memory_backend, baton::steady_clock, baton::standard_retry,
                                                             baton::backend_signer, awaitable::executor_with_default<asio::any_io_executor>>>);
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    std::uint64_t token = 0, version = 0, leader_token = 0;
    bool finished = false;
    std::exception_ptr failure;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            lease_t lease(ex, store, options("a", 36));
            baton::lease_grant g = co_await lease.async_acquire(); // no token: use_awaitable
            token = g.fencing_token;
            kv_t kv(ex, store);
            baton::kv_write_result w = co_await kv.async_put("config", "v1");
            version = w.version;
            fenced_t fenced(ex, store);
            co_await fenced.async_write("output", "done", token);
            co_await lease.async_release();
            election_t election(ex, store, options("b", 37));
            baton::lease_grant term = co_await election.async_campaign();
            leader_token = term.fencing_token;
            co_await election.async_resign();
        },
        [&](std::exception_ptr e) {
            finished = true;
            failure = e;
        });
    ioc.run();
    REQUIRE(finished);
    CHECK_FALSE(failure);
    CHECK(token == 1);
    CHECK(version == 1);
    CHECK(leader_token == 2); // the same key, after the release: the next term
    CHECK(store.peek("output").has_value());
}

TEST_CASE("asio::use_awaitable in a coroutine") {
    sim::scheduler sched(22);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 34));
    sim_lease b(sched.get_executor(), store, options("b", 35));
    std::uint64_t token = 0;
    error_code try_ec, wait_ec;
    bool finished = false;
    std::exception_ptr failure;
    asio::co_spawn(
        sched.get_executor(),
        [&]() -> asio::awaitable<void> {
            auto g = co_await a.async_acquire(asio::use_awaitable);
            token = g.fencing_token;
            auto [ec, unused] = co_await b.async_try_acquire(asio::as_tuple(asio::use_awaitable));
            (void)unused;
            try_ec = ec;
            co_await a.async_release(asio::use_awaitable);
            try {
                co_await a.async_wait_lost(asio::use_awaitable);
            } catch (boost::system::system_error const& e) {
                wait_ec = e.code();
            }
            auto g2 = co_await b.async_acquire(asio::use_awaitable);
            token = g2.fencing_token;
        },
        [&](std::exception_ptr e) {
            finished = true;
            failure = e;
        });
    sched.run_for(1s);
    REQUIRE(finished);
    CHECK_FALSE(failure);
    CHECK(try_ec == errc::held_by_other);
    CHECK(wait_ec == errc::not_held);
    CHECK(token == 2);
    CHECK(b.is_held());
}

TEST_CASE("handlers never run inside the initiating call") {
    sim::scheduler sched(23);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 36));
    sim_lease b(sched.get_executor(), store, options("b", 37));
    bool returned = false;
    int ran = 0;
    auto grant_cb = [&](error_code, baton::lease_grant) { CHECK(returned); ++ran; };
    auto plain_cb = [&](error_code) { CHECK(returned); ++ran; };
    auto info_cb = [&](error_code, std::optional<baton::lease_info>) { CHECK(returned); ++ran; };

    // Completions decided without any I/O.
    b.async_release(plain_cb);
    b.async_wait_lost(plain_cb);
    a.async_acquire(grant_cb);
    a.async_acquire(grant_cb); // operation_in_progress
    a.async_inspect(info_cb);
    a.async_inspect(info_cb); // operation_in_progress
    returned = true;
    CHECK(ran == 0);
    sched.run_for(1ms);
    CHECK(ran == 6);

    // And on a lease already held, and when trying a held one.
    returned = false;
    a.async_acquire(grant_cb);
    b.async_try_acquire(grant_cb);
    a.async_wait_lost(plain_cb);
    returned = true;
    sched.run_for(1ms);
    CHECK(ran == 8);
    returned = false;
    a.async_release(plain_cb); // also completes the waiter
    returned = true;
    sched.run_for(1ms);
    CHECK(ran == 10);
}

// ---- destruction ------------------------------------------------------------------

TEST_CASE("destroying a lease with an outstanding acquire completes it with operation_aborted") {
    sim::scheduler sched(24);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 38));
    acquire_now(sched, a);

    SUBCASE("while waiting") {
        acquired r;
        {
            sim_lease b(sched.get_executor(), store, options("b", 39));
            b.async_acquire(on_acquired(r));
            sched.run_for(3s);
            REQUIRE_FALSE(r.ec.has_value());
        }
        CHECK_FALSE(r.ec.has_value()); // not inline, even from the destructor
        sched.run_for(10s);
        REQUIRE(r.ec.has_value());
        CHECK(*r.ec == asio::error::operation_aborted);
        CHECK(r.calls == 1);
    }
    SUBCASE("with a write in flight, and a lost-lease waiter") {
        sim::fault_profile slow;
        slow.min_latency = 100ms;
        slow.max_latency = 200ms;
        faulty_store net(store, sched.get_executor(), 80, slow);
        acquired r;
        completed w;
        {
            faulty_lease c(sched.get_executor(), net, options("c", 40));
            c.async_acquire(on_acquired(r));
            c.async_wait_lost(on_completed(w)); // not held: completes with not_held
            sched.run_for(50ms);                // the create is still travelling
            REQUIRE_FALSE(r.ec.has_value());
        }
        sched.run_for(10s); // the write's answer arrives after the object is gone
        REQUIRE(r.ec.has_value());
        CHECK(*r.ec == asio::error::operation_aborted);
        CHECK(r.calls == 1);
        REQUIRE(w.ec.has_value());
        CHECK(*w.ec == errc::not_held);
    }
    SUBCASE("a held lease's waiters") {
        completed w;
        std::optional<sim_lease> d;
        d.emplace(sched.get_executor(), store, options("d", 41));
        release_now(sched, a);
        acquire_now(sched, *d);
        d->async_wait_lost(on_completed(w));
        d.reset();
        sched.run_for(1ms);
        REQUIRE(w.ec.has_value());
        CHECK(*w.ec == asio::error::operation_aborted);
        CHECK_FALSE(stored_body(sched, store)->released); // abandoned, not released
    }
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

// ---- observers -------------------------------------------------------------------

namespace {
// Records every event it is shown, as one line each.
struct recording_observer {
    std::shared_ptr<std::vector<std::string>> log = std::make_shared<std::vector<std::string>>();
    void on_acquired(baton::lease_acquired_event const& e) {
        log->push_back("acquired " + std::string(e.key) + " token " + std::to_string(e.fencing_token) +
                       (e.created_record ? " created" : "") + (e.took_over ? " takeover" : ""));
    }
    void on_renewed(baton::lease_renewed_event const& e) {
        log->push_back("renewed token " + std::to_string(e.fencing_token) +
                       (e.latency >= 0ns && e.margin > 0ns && e.margin <= renew_deadline ? " timed" : " BAD-TIMES"));
    }
    void on_lost(baton::lease_lost_event const& e) {
        log->push_back("lost token " + std::to_string(e.fencing_token) + ": " + std::string(e.reason) +
                       (e.detail.empty() ? "" : " / " + std::string(e.detail)));
    }
    void on_released(baton::lease_released_event const& e) {
        log->push_back("released token " + std::to_string(e.fencing_token) + (e.ec ? " " + e.ec.message() : " ok"));
    }
    void on_request(baton::lease_request_event const& e) {
        log->push_back(std::string("request ") + to_string(e.lane) + (e.write ? " write " : " read ") + to_string(e.kind));
    }
    void on_settled(baton::lease_settled_event const& e) {
        log->push_back(std::string("settled ") + to_string(e.lane) + " " + to_string(e.outcome) + " token " +
                       std::to_string(e.fencing_token));
    }
    void on_retry(baton::lease_retry_event const& e) {
        log->push_back(std::string("retry ") + to_string(e.lane) + " " + std::to_string(e.attempt) + " " + e.ec.message());
    }
};

using observed_lease = baton::basic_lease<baton::memory_backend, sim::manual_clock, baton::standard_retry,
                                          baton::backend_signer, asio::any_io_executor, recording_observer>;
} // namespace

TEST_CASE("an observer sees acquisition, renewals, every store answer, a takeover's conflict and the loss") {
    sim::scheduler sched(40);
    baton::memory_backend store(sched.get_executor());
    recording_observer seen;
    observed_lease a(sched.get_executor(), store, options("a", 41), {}, {}, {}, seen);
    acquire_now(sched, a);
    // Two renewals, each 90-110% of the interval after the last (a third comes at 270% at the earliest).
    sched.run_until(vtime(renew_interval * 22 / 10 + 1ms));
    baton::detail::lease_body intruder{"intruder#1", "", "n", 2, false, ttl};
    store.async_put("jobs/nightly", baton::detail::encode_lease_body(intruder), baton::precondition::none(),
                    [](error_code, baton::put_result) {});
    sched.run_until(vtime(renew_interval * 33 / 10 + 1ms));
    std::vector<std::string> const want{"request acquire write ok", "acquired jobs/nightly token 1 created",
                                        "request renew write ok",   "renewed token 1 timed",
                                        "request renew write ok",   "renewed token 1 timed",
                                        "request renew write conflict"};
    REQUIRE(seen.log->size() >= want.size() + 1);
    CHECK(std::vector<std::string>(seen.log->begin(), seen.log->begin() + want.size()) == want);
    // The refusal carried the current record (someone else's): the term ends at once, with no read.
    CHECK(seen.log->size() == want.size() + 1);
    CHECK(seen.log->back() == "lost token 1: taken over (the record changed or vanished) / the record changed");
}

TEST_CASE("an observer sees a release, and lease_metrics writes the figures in Prometheus text format") {
    sim::scheduler sched(42);
    baton::memory_backend store(sched.get_executor());
    baton::lease_metrics metrics;
    using metered_lease = baton::basic_lease<baton::memory_backend, sim::manual_clock, baton::standard_retry,
                                             baton::backend_signer, asio::any_io_executor, baton::lease_metrics>;
    metered_lease a(sched.get_executor(), store, options("a", 43), {}, {}, {}, metrics);
    acquire_now(sched, a);
    sched.run_until(vtime(renew_interval * 11 / 10 + 1ms)); // one renewal
    {
        std::string const text = metrics.prometheus_text();
        CHECK(text.find("baton_lease_acquisitions_total{key=\"jobs/nightly\",how=\"created\"} 1\n") != std::string::npos);
        CHECK(text.find("baton_lease_renewals_total{key=\"jobs/nightly\"} 1\n") != std::string::npos);
        CHECK(text.find("baton_lease_renewal_latency_seconds_count{key=\"jobs/nightly\"} 1\n") != std::string::npos);
        CHECK(text.find("baton_lease_renewal_latency_seconds_bucket{key=\"jobs/nightly\",le=\"+Inf\"} 1\n") != std::string::npos);
        CHECK(text.find("baton_lease_held{key=\"jobs/nightly\"} 1\n") != std::string::npos);
        CHECK(text.find("baton_lease_fencing_token{key=\"jobs/nightly\"} 1\n") != std::string::npos);
        CHECK(text.find("# TYPE baton_lease_renewal_latency_seconds histogram\n") != std::string::npos);
    }
    release_now(sched, a);
    // Released: the next participant takes it at once, with the next token.
    metered_lease b(sched.get_executor(), store, options("b", 44), {}, {}, {}, metrics);
    acquire_now(sched, b);
    std::string const text = metrics.prometheus_text();
    CHECK(text.find("baton_lease_releases_total{key=\"jobs/nightly\",result=\"ok\"} 1\n") != std::string::npos);
    CHECK(text.find("baton_lease_acquisitions_total{key=\"jobs/nightly\",how=\"free\"} 1\n") != std::string::npos);
    CHECK(text.find("baton_lease_fencing_token{key=\"jobs/nightly\"} 2\n") != std::string::npos);
    CHECK(text.find("baton_lease_requests_total{key=\"jobs/nightly\",lane=\"release\",request=\"write\",outcome=\"ok\"} 1\n") !=
          std::string::npos);
}

TEST_CASE("an observer sees each write in doubt settled, landed or not, and each retry, in every lane") {
    sim::scheduler sched(60);
    baton::memory_backend store(sched.get_executor());
    sim::fault_profile profile;
    profile.max_latency = 5ms;
    profile.request_timeout = 2s;
    faulty_store net(store, sched.get_executor(), 61, profile);
    net.set_faults_enabled(false); // only what the test scripts
    recording_observer seen;
    using observed_faulty_lease = baton::basic_lease<faulty_store, sim::manual_clock, baton::standard_retry,
                                                     baton::backend_signer, asio::any_io_executor, recording_observer>;
    observed_faulty_lease a(sched.get_executor(), net, options("a", 61), {}, {}, {}, seen);
    net.inject_next(sim::fault_kind::drop_response); // the claim lands; its answer is lost
    acquired got;
    a.async_acquire(on_acquired(got));
    sched.run_for(5s); // the timeout (2 s), a pause, the read back
    REQUIRE(got.ec.has_value());
    REQUIRE_FALSE(*got.ec);
    CHECK(got.grant.fencing_token == 1);
    net.inject_next(sim::fault_kind::drop_request); // the first renewal never arrives
    sched.run_until(vtime(renew_interval + 5s));    // its timeout, a read back, the renewal again
    net.inject_next(sim::fault_kind::drop_response); // the released marker lands; its answer is lost
    completed released;
    a.async_release(on_completed(released));
    sched.run_for(5s);
    REQUIRE(released.ec.has_value());
    CHECK_FALSE(*released.ec);
    auto count = [&](std::string const& line) { return std::count(seen.log->begin(), seen.log->end(), line); };
    std::string const timed_out = error_code(errc::timeout).message();
    CHECK(count("retry acquire 1 " + timed_out) == 1);
    CHECK(count("settled acquire landed token 1") == 1);
    CHECK(count("retry renew 1 " + timed_out) == 1);
    CHECK(count("settled renew not_landed token 1") == 1);
    CHECK(count("retry release 1 " + timed_out) == 1);
    CHECK(count("settled release landed token 1") == 1);
    CHECK(count("released token 1 ok") == 1);
    // The same through lease_metrics.
    baton::lease_metrics metrics;
    baton::lease_settled_event settled;
    settled.key = "k";
    settled.lane = baton::lease_lane::renew;
    settled.outcome = baton::settlement_outcome::not_landed;
    metrics.on_settled(settled);
    baton::lease_retry_event retried;
    retried.key = "k";
    retried.lane = baton::lease_lane::renew;
    metrics.on_retry(retried);
    metrics.on_retry(retried);
    std::string const text = metrics.prometheus_text();
    CHECK(text.find("baton_lease_settlements_total{key=\"k\",lane=\"renew\",outcome=\"not_landed\"} 1\n") !=
          std::string::npos);
    CHECK(text.find("baton_lease_retries_total{key=\"k\",lane=\"renew\"} 2\n") != std::string::npos);
}

TEST_CASE("lease_metrics escapes label values and counts conflicts by the store's cause") {
    baton::lease_metrics metrics;
    baton::diagnostics d;
    d.http_status = 412;
    d.service_code = "PreconditionFailed";
    baton::lease_request_event e;
    e.key = "a \"quoted\"\\key\n";
    e.lane = baton::lease_lane::renew;
    e.write = true;
    e.ec = errc::precondition_failed;
    e.kind = baton::classify_answer(e.ec, true);
    e.diag = &d;
    metrics.on_request(e);
    d.service_code = "ConditionalCheckFailedException";
    metrics.on_request(e);
    metrics.on_request(e);
    std::string const text = metrics.prometheus_text();
    std::string const key = "key=\"a \\\"quoted\\\"\\\\key\\n\"";
    CHECK(text.find("baton_lease_conflicts_total{" + key + ",cause=\"PreconditionFailed\"} 1\n") != std::string::npos);
    CHECK(text.find("baton_lease_conflicts_total{" + key + ",cause=\"ConditionalCheckFailedException\"} 2\n") !=
          std::string::npos);
    CHECK(text.find("baton_lease_requests_total{" + key + ",lane=\"renew\",request=\"write\",outcome=\"conflict\"} 3\n") !=
          std::string::npos);
    CHECK(baton::classify_answer(errc::throttled, true) == baton::answer_kind::throttled);
    CHECK(baton::classify_answer(errc::timeout, true) == baton::answer_kind::ambiguous);
    CHECK(baton::classify_answer(errc::timeout, false) == baton::answer_kind::failed);
    CHECK(baton::classify_answer(error_code{}, false) == baton::answer_kind::ok);
}

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

namespace {
// Answers every request at once, inside the call, with `answer_with`: a backend that breaks the
// rule that completions come later. The lease must still never complete inside its own call.
struct inline_answering_backend {
    using executor_type = asio::any_io_executor;
    executor_type ex;
    error_code answer_with;
    executor_type get_executor() const { return ex; }
    template <class H>
    void async_get(std::string, H&& h) { std::forward<H>(h)(answer_with, baton::get_result{}); }
    template <class H>
    void async_put(std::string, std::string, baton::precondition, H&& h) { std::forward<H>(h)(answer_with, baton::put_result{}); }
    template <class H>
    void async_erase(std::string, baton::precondition, H&& h) { std::forward<H>(h)(answer_with, baton::erase_result{}); }
    template <class H>
    void async_list(std::string, std::string, std::size_t, H&& h) { std::forward<H>(h)(answer_with, baton::list_page{}); }
    template <class H>
    void async_probe(H&& h) { std::forward<H>(h)(answer_with, baton::capabilities{}); }
};
} // namespace

TEST_CASE("on a real io_context an answer's completion runs without a hop, yet never inside an initiating call") {
    // The lease hands an acquisition or release that a backend's answer completes to its handler
    // by dispatch. Each handler here starts the next operation and checks that its handler has
    // not run by the time the call returns: the chain acquire -> release -> acquire ... never nests.
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    baton::basic_lease<baton::memory_backend> a(ioc.get_executor(), store, options("a", 34));
    int cycles = 0, inline_calls = 0, depth = 0, max_depth = 0;
    std::function<void()> next_acquire;
    // Each call gets a flag that is true until the call returns; a handler that sees it true ran inside.
    auto release = [&] {
        auto inside = std::make_shared<bool>(true);
        a.async_release([&, inside](error_code ec) {
            if (*inside) ++inline_calls;
            REQUIRE_FALSE(ec);
            CHECK(a.state() == lease_state::released);
            if (++cycles < 20) next_acquire();
        });
        *inside = false;
    };
    next_acquire = [&] {
        auto inside = std::make_shared<bool>(true);
        a.async_acquire([&, inside](error_code ec, baton::lease_grant g) {
            if (*inside) ++inline_calls;
            REQUIRE_FALSE(ec);
            CHECK(g.fencing_token == static_cast<std::uint64_t>(cycles + 1));
            CHECK(a.is_held());
            max_depth = std::max(max_depth, ++depth);
            release();
            --depth;
        });
        *inside = false;
    };
    next_acquire();
    ioc.run();
    CHECK(cycles == 20);
    CHECK(inline_calls == 0);
    CHECK(max_depth == 1);
    CHECK(a.state() == lease_state::released);
}

TEST_CASE("a backend that answers inside the call still never has the lease complete inside its own call") {
    asio::io_context ioc;
    inline_answering_backend store{ioc.get_executor(), error_code(errc::invalid_argument)};
    baton::basic_lease<inline_answering_backend> a(ioc.get_executor(), store, options("a", 35));
    bool done = false, returned = false, inside = false;
    // Started from a handler: inside io_context::run, where a dispatch would run at once.
    asio::post(ioc, [&] {
        a.async_try_acquire([&](error_code ec, baton::lease_grant) {
            done = true;
            inside = !returned;
            CHECK(ec == errc::invalid_argument);
        });
        returned = true;
    });
    ioc.run();
    CHECK(done);
    CHECK_FALSE(inside);
}
