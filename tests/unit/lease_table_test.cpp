// The lease table, deterministically, in virtual time on the memory store: acquisition with
// tokens and checkpoints, balancing with graceful handoff, a dead worker's shards taken after the
// takeover window, workers with a limit on their shards, a frozen worker's checkpoint refused by
// the store, a late checkpoint that lands after its writer lost the shard, a claim given up
// unseen that a lagging replica shows again, shutdown handing everything over, retire and
// register, the steady-state cost (one write per worker per renew period, whatever the
// shard count), why each kind of loss says it was lost, and the worker lease's observer.

#include <baton/backend/memory.hpp>
#include <baton/recipe/detail/lease_record.hpp>
#include <baton/recipe/detail/shard_record.hpp>
#include <baton/recipe/lease_table.hpp>
#include <baton/sim.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <doctest/doctest.h>
#include <test_common/commit_stores.hpp>
#include <test_common/recording_backend.hpp>
#include <test_common/table_workers.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace sim = baton::sim;
using namespace std::chrono_literals;
using baton::errc;
using baton::error_code;
using vclock = sim::virtual_clock;
using timer_for_test = asio::basic_waitable_timer<vclock, asio::wait_traits<vclock>, asio::any_io_executor>;

// Counts the reads, listings and writes (puts, by key prefix) that reach the store.
class counting_store : public test_common::forwarding_store<baton::memory_backend> {
public:
    counting_store(baton::memory_backend inner, std::shared_ptr<std::map<std::string, int>> counts)
        : forwarding_store(std::move(inner)), counts_(std::move(counts)) {}
    template <class H>
    void async_get(std::string key, H&& h) {
        ++(*counts_)["reads"];
        inner_.async_get(std::move(key), std::forward<H>(h));
    }
    template <class H>
    void async_put(std::string key, std::string body, baton::precondition pc, H&& h) {
        ++(*counts_)[key.find("/shards/") != std::string::npos ? "shard writes" : "worker writes"];
        inner_.async_put(std::move(key), std::move(body), std::move(pc), std::forward<H>(h));
    }
    template <class H>
    void async_list(std::string prefix, std::string after, std::size_t limit, H&& h) {
        ++(*counts_)["lists"];
        inner_.async_list(std::move(prefix), std::move(after), limit, std::forward<H>(h));
    }
    baton::memory_backend& inner() { return inner_; }

private:
    std::shared_ptr<std::map<std::string, int>> counts_;
};

// A memory store behind a lossy network and a lagging replica, both scripted per key by the test:
// a put can be applied with its answer lost (its sender hears a timeout) and can run a step of
// the test once applied; reads of a key can be answered with an older record the key held until
// a write made on that record arrives (the store refuses it, and reads are fresh again).
class lagging_store : public test_common::forwarding_store<baton::memory_backend> {
public:
    struct put_plan {
        bool lose_answer = false;   // its sender hears errc::timeout
        std::function<void()> then; // runs once the store applied it, before anyone hears of it
    };

    explicit lagging_store(baton::memory_backend inner) : forwarding_store(std::move(inner)), sh_(std::make_shared<shared>()) {}
    baton::memory_backend& inner() { return inner_; }

    /// What happens to the next puts of `key` that the store applies, in order (a put it refuses
    /// leaves the plan to the next one; once the plans run out, puts are plain).
    void plan_puts(std::string const& key, std::vector<put_plan> plans) {
        for (auto& p : plans) sh_->puts[key].push_back(std::move(p));
    }
    /// Reads of `key` answer `old` until a put or erase conditional on `old`'s version arrives.
    void lag_reads(std::string const& key, baton::record old) { sh_->lagging[key] = std::move(old); }
    bool lagging(std::string const& key) const { return sh_->lagging.count(key) != 0; }

    template <class H>
    void async_get(std::string key, H&& h) {
        auto it = sh_->lagging.find(key);
        if (it == sh_->lagging.end()) return inner_.async_get(std::move(key), std::forward<H>(h));
        baton::get_result r;
        r.found = it->second;
        baton::detail::post_completion(inner_.get_executor(), std::forward<H>(h), error_code{}, std::move(r));
    }
    template <class H>
    void async_put(std::string key, std::string body, baton::precondition pc, H&& h) {
        catch_up(key, pc);
        auto& plans = sh_->puts[key];
        if (plans.empty()) return inner_.async_put(std::move(key), std::move(body), std::move(pc), std::forward<H>(h));
        auto plan = std::move(plans.front());
        plans.pop_front();
        inner_.async_put(key, std::move(body), std::move(pc),
                         [sh = sh_, key, plan = std::move(plan), h = std::forward<H>(h)](error_code ec, baton::put_result r) mutable {
                             if (ec) sh->puts[key].push_front(std::move(plan)); // for the next put that lands
                             if (!ec && plan.then) plan.then();
                             if (!ec && plan.lose_answer) {
                                 r = {};
                                 r.diag.message = "answer lost by the test";
                                 ec = errc::timeout;
                             }
                             std::move(h)(ec, std::move(r));
                         });
    }
    template <class H>
    void async_erase(std::string key, baton::precondition pc, H&& h) {
        catch_up(key, pc);
        inner_.async_erase(std::move(key), std::move(pc), std::forward<H>(h));
    }

private:
    // A write made on the lagging record: its writer learns the truth, and so do later reads.
    void catch_up(std::string const& key, baton::precondition const& pc) {
        auto it = sh_->lagging.find(key);
        if (it != sh_->lagging.end() && pc.which() == baton::precondition::kind::matches && pc.version() == it->second.version)
            sh_->lagging.erase(it);
    }
    struct shared {
        std::map<std::string, std::deque<put_plan>> puts;
        std::map<std::string, baton::record> lagging;
    };
    std::shared_ptr<shared> sh_;
};

baton::lease_table_options table_options(std::string worker, std::uint64_t seed) {
    baton::lease_table_options o;
    o.table = "t/";
    o.worker = std::move(worker);
    o.ttl = 9s;
    o.scan_interval = 3s;
    o.poll_interval = 500ms;
    o.random_seed = seed;
    return o;
}

template <class Store>
struct world {
    using table_t = baton::basic_lease_table<Store, sim::manual_clock, baton::standard_retry>;
    struct worker {
        sim::pausable_executor ex;
        std::unique_ptr<table_t> table;
        std::optional<error_code> finished;
    };

    sim::scheduler& sched;
    Store store;
    std::shared_ptr<test_common::table_log> log = std::make_shared<test_common::table_log>();
    std::map<std::string, worker> workers;

    world(sim::scheduler& s, Store st) : sched(s), store(std::move(st)) {}

    table_t& admin() {
        if (!admin_) {
            auto o = table_options("", 99);
            admin_ = std::make_unique<table_t>(sched.get_executor(), store, o, baton::standard_retry{}, baton::backend_signer{},
                                               sim::manual_clock{});
        }
        return *admin_;
    }

    void register_shards(int count) {
        std::vector<std::string> ids;
        for (int i = 0; i < count; ++i) ids.push_back("s" + std::to_string(100 + i));
        bool done = false;
        admin().async_register(ids, [&](error_code ec) {
            REQUIRE_FALSE(ec);
            done = true;
        });
        sched.run_for(1s);
        REQUIRE(done);
    }

    table_t& start(std::string name, double rate = 1.0, baton::lease_table_options o = {}) {
        if (o.worker.empty()) o = table_options(name, std::hash<std::string>{}(name));
        auto& w = workers.emplace(name, worker{sched.make_participant_executor(), nullptr, std::nullopt}).first->second;
        sim::manual_clock clock(rate);
        w.table = std::make_unique<table_t>(w.ex, store, o, baton::standard_retry{}, baton::backend_signer{}, clock);
        w.table->async_run(test_common::numbered_records_work<table_t>(log, name, clock, 1s),
                           [&w](error_code ec) { w.finished = ec; });
        return *w.table;
    }

    // `shards` registered, worker a alone for 6 s, then b joins and they share them for 20 s: a owns some.
    table_t& two_sharing(int shards) {
        register_shards(shards);
        auto& a = start("a");
        sched.run_for(6s);
        start("b");
        sched.run_for(20s);
        REQUIRE(owned()["a"] >= 1u);
        return a;
    }

    baton::table_snapshot snapshot() {
        std::optional<baton::table_snapshot> out;
        admin().async_snapshot([&](error_code ec, baton::table_snapshot s) {
            REQUIRE_FALSE(ec);
            out = std::move(s);
        });
        sched.run_for(100ms);
        REQUIRE(out);
        return *out;
    }

    // Each shard's token now.
    std::map<std::string, std::uint64_t> tokens() {
        std::map<std::string, std::uint64_t> t;
        for (auto const& s : snapshot().shards) t[s.shard] = s.token;
        return t;
    }

    std::map<std::string, std::size_t> owned() {
        std::map<std::string, std::size_t> n;
        for (auto const& s : snapshot().shards)
            if (s.state == baton::table_shard_state::owned) ++n[s.owner];
        return n;
    }

    // The most works each worker ran at once, from the log.
    std::map<std::string, std::size_t> most_running() const {
        std::map<std::string, std::size_t> running, most;
        for (auto const& e : log->events) {
            if (e.what == test_common::table_event::kind::start) most[e.worker] = std::max(most[e.worker], ++running[e.worker]);
            if (e.what == test_common::table_event::kind::end) --running[e.worker];
        }
        return most;
    }

    void check_log(bool exactly_once) {
        for (auto const& v : log->check(exactly_once)) FAIL_CHECK(v);
    }

private:
    std::unique_ptr<table_t> admin_;
};

} // namespace

TEST_SUITE("lease table") {

TEST_CASE("one worker acquires every shard with the token after its registration's, checkpoints, and a snapshot shows it") {
    sim::scheduler sched(1);
    world<baton::memory_backend> w(sched, baton::memory_backend(sched.get_executor()));
    w.register_shards(5);
    // A registration starts each record at the wall-clock microsecond (tokens survive a deletion):
    // the participant's own wall clock, which in a simulation starts at the simulation's epoch.
    auto const registered = w.tokens();
    auto const epoch_us = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(sim::manual_clock::wall_epoch.time_since_epoch()).count());
    for (auto const& [id, t] : registered) {
        CHECK(t >= epoch_us);
        CHECK(t < epoch_us + 60'000'000);
    }
    w.start("a");
    sched.run_for(10s);
    auto snap = w.snapshot();
    REQUIRE(snap.shards.size() == 5);
    for (auto const& s : snap.shards) {
        CHECK(s.owner == "a");
        CHECK(s.token == registered.at(s.shard) + 1);
        CHECK(s.state == baton::table_shard_state::owned);
        REQUIRE(s.checkpoint);
        CHECK(std::stoi(*s.checkpoint) >= 7);
    }
    REQUIRE(snap.workers.size() == 1);
    CHECK(snap.workers[0].name == "a");
    CHECK(snap.workers[0].shards == 5u);
    CHECK_FALSE(snap.workers[0].released);
    w.check_log(true);
}

TEST_CASE("a joining worker gets its fair share by graceful handoff: no record processed twice, tokens rise") {
    sim::scheduler sched(2);
    world<baton::memory_backend> w(sched, baton::memory_backend(sched.get_executor()));
    w.register_shards(11);
    auto const registered = w.tokens();
    w.start("a");
    sched.run_for(8s);
    CHECK(w.owned()["a"] == 11u);
    auto const joined = vclock::now();
    w.start("b");
    w.start("c");
    sched.run_for(30s);
    auto n = w.owned();
    CHECK(n["a"] + n["b"] + n["c"] == 11u);
    for (auto const* name : {"a", "b", "c"}) {
        CHECK(n[name] >= 3u);
        CHECK(n[name] <= 4u);
    }
    // Each shard that moved resumed from the giver's last checkpoint under a higher token.
    for (auto const& s : w.snapshot().shards)
        if (s.owner != "a") CHECK(s.token >= registered.at(s.shard) + 2);
    w.check_log(true);
    // Moves are graceful: the taker started within a poll of the giver's end.
    std::map<std::string, std::int64_t> last_end;
    for (auto const& e : w.log->events) {
        if (e.at < joined.time_since_epoch().count()) continue;
        if (e.what == test_common::table_event::kind::end) last_end[e.shard] = e.at;
        if (e.what == test_common::table_event::kind::start && last_end.count(e.shard))
            CHECK(std::chrono::nanoseconds(e.at - last_end[e.shard]) <= 1500ms);
    }
}

TEST_CASE("a frozen worker's shards are taken after ttl x skew; its late checkpoint is refused by the store") {
    sim::scheduler sched(3);
    world<baton::memory_backend> w(sched, baton::memory_backend(sched.get_executor()));
    auto& a = w.two_sharing(4);
    auto const frozen_at = vclock::now();
    w.workers.at("a").ex.freeze();
    sched.run_for(40s);
    auto after = w.owned();
    CHECK(after["b"] == 4u);
    // Taken within ttl x skew (18 s) plus a scan (3 s) and the settling of the window.
    std::int64_t first_take = 0;
    for (auto const& e : w.log->events)
        if (e.what == test_common::table_event::kind::start && e.worker == "b" && e.at > frozen_at.time_since_epoch().count()) {
            first_take = e.at;
            break;
        }
    REQUIRE(first_take > 0);
    CHECK(std::chrono::nanoseconds(first_take - frozen_at.time_since_epoch().count()) <= 18s + 2 * 3s + 1s);
    auto const progress = w.log->progress();
    w.workers.at("a").ex.thaw();
    sched.run_for(20s);
    // a lost everything when it resumed; nothing it did after went back on b's progress.
    CHECK(a.running_shards().size() <= 2u);
    w.check_log(false);
    for (auto const& s : w.snapshot().shards) {
        REQUIRE(s.checkpoint);
        CHECK(std::stoull(*s.checkpoint) >= progress.at(s.shard));
    }
}

TEST_CASE("a checkpoint held in the network until its writer lost the shard is refused by the store") {
    sim::scheduler sched(4);
    test_common::holding_store store(baton::memory_backend(sched.get_executor()));
    world<test_common::holding_store> w(sched, store);
    w.register_shards(1);
    w.start("a");
    sched.run_for(5s);
    // Hold a's next checkpoint in the network and freeze a as it is sent (before it hears the timeout).
    store.hold_next("t/shards/s100");
    for (int i = 0; i < 3000 && store.held() == 0; ++i) sched.run_for(1ms);
    REQUIRE(store.held() == 1u);
    w.workers.at("a").ex.freeze();
    w.start("b");
    sched.run_for(40s);
    REQUIRE(w.owned()["b"] == 1u);
    auto const b_progress = w.log->progress().at("s100");
    // a's checkpoint lands now: the store refuses it (b's claim changed the version).
    std::optional<error_code> landed;
    store.land_held([&](error_code ec) { landed = ec; });
    sched.run_for(2s);
    REQUIRE(landed);
    CHECK(*landed == error_code(errc::precondition_failed));
    auto snap = w.snapshot();
    REQUIRE(snap.shards.size() == 1);
    CHECK(std::stoull(*snap.shards[0].checkpoint) >= b_progress);
    CHECK(snap.shards[0].owner == "b");
    w.workers.at("a").ex.thaw();
    sched.run_for(10s);
    w.check_log(false);
}

TEST_CASE("a checkpoint held until after its writer's deadline but landing before the claim is kept, and the taker resumes from it") {
    sim::scheduler sched(8);
    test_common::holding_store store(baton::memory_backend(sched.get_executor()));
    world<test_common::holding_store> w(sched, store);
    w.register_shards(1);
    w.start("a");
    sched.run_for(5s);
    store.hold_next("t/shards/s100");
    for (int i = 0; i < 3000 && store.held() == 0; ++i) sched.run_for(1ms);
    REQUIRE(store.held() == 1u);
    w.workers.at("a").ex.freeze();
    auto const held_progress = w.log->progress().at("s100");
    sched.run_for(12s); // past a's renew deadline (6 s), before anyone may take over (18 s)
    std::optional<error_code> landed;
    store.land_held([&](error_code ec) { landed = ec; });
    sched.run_for(10ms);
    REQUIRE(landed);
    CHECK_FALSE(*landed);
    w.start("b");
    sched.run_for(40s);
    REQUIRE(w.owned()["b"] == 1u);
    std::uint64_t b_started_from = 0;
    for (auto const& e : w.log->events)
        if (e.what == test_common::table_event::kind::start && e.worker == "b") b_started_from = e.n;
    CHECK(b_started_from == held_progress);
    w.workers.at("a").ex.thaw();
    sched.run_for(10s);
    w.check_log(false);
}

TEST_CASE("a work that ended is never restarted under a handoff still in flight") {
    // The work ends on its own after 3 records; the write that gives the shard up is held in the
    // network through every retry. The record still names the worker, but a stop is never
    // undone: the next scans send the handoff again instead of starting the work again; when the
    // held writes land late, the first frees the shard and the others are refused.
    sim::scheduler sched(9);
    test_common::holding_store store(baton::memory_backend(sched.get_executor()));
    world<test_common::holding_store> w(sched, store);
    w.register_shards(1);
    auto const registered = w.tokens().at("s100");
    auto o = table_options("a", 1);
    auto& ex = w.workers.emplace("a", world<test_common::holding_store>::worker{sched.make_participant_executor(), nullptr, std::nullopt})
                   .first->second;
    using table_t = world<test_common::holding_store>::table_t;
    int starts = 0;
    std::vector<std::uint64_t> tokens;
    ex.table = std::make_unique<table_t>(ex.ex, store, o, baton::standard_retry{}, baton::backend_signer{}, sim::manual_clock{});
    ex.table->async_run(
        [&starts, &tokens, &store](table_t::shard_type s) -> asio::awaitable<void> {
            ++starts;
            tokens.push_back(s.token());
            if (starts == 1) store.hold_next("t/shards/s100", 1000); // what follows this work: held
            timer_for_test t(co_await asio::this_coro::executor);
            for (int i = 0; i < 3; ++i) {
                t.expires_at(sim::manual_clock{}.timer_expiry(1s));
                co_await t.async_wait(asio::use_awaitable);
            }
        },
        [](error_code) {});
    sched.run_for(60s);
    CHECK(starts == 1);
    CHECK(store.held() >= 2u); // the give-up was sent again after the first attempts were in doubt
    auto snap = w.snapshot();
    CHECK(snap.shards[0].owner == "a"); // nothing landed yet
    // Land them all: the first frees the shard, the others find it changed. Nothing is held after.
    store.hold_next("t/shards/s100", 0);
    int landed_ok = 0, refused = 0;
    while (store.held() > 0)
        store.land_held([&](error_code ec) { ec ? ++refused : ++landed_ok; });
    sched.run_for(10s);
    CHECK(landed_ok == 1);
    CHECK(refused >= 1);
    // Freed: the next scan of `a` claims it back under a higher token, and only then starts again
    // (this work ends after 3 records every time, so it goes on: a work per token, rising).
    sched.run_for(10s);
    REQUIRE(starts >= 2);
    for (std::size_t i = 1; i < tokens.size(); ++i) CHECK(tokens[i] == tokens[i - 1] + 1);
    CHECK(tokens[0] == registered + 1);
}

TEST_CASE("stopping hands every shard over at once; the lease record is released") {
    sim::scheduler sched(5);
    world<baton::memory_backend> w(sched, baton::memory_backend(sched.get_executor()));
    w.register_shards(6);
    auto& a = w.start("a");
    sched.run_for(5s);
    w.start("b");
    sched.run_for(20s);
    auto const stop_at = vclock::now();
    a.request_stop();
    sched.run_for(5s);
    REQUIRE(w.workers.at("a").finished);
    CHECK_FALSE(*w.workers.at("a").finished);
    auto n = w.owned();
    CHECK(n["b"] == 6u);
    auto snap = w.snapshot();
    for (auto const& wk : snap.workers)
        if (wk.name == "a") CHECK(wk.released);
    // b started each of a's shards within a scan of the stop, with nothing processed twice.
    for (auto const& e : w.log->events)
        if (e.what == test_common::table_event::kind::start && e.worker == "b" && e.at > stop_at.time_since_epoch().count())
            CHECK(std::chrono::nanoseconds(e.at - stop_at.time_since_epoch().count()) <= 4s);
    w.check_log(true);
}

TEST_CASE("a worker whose lease was lost before it could hand over says so when it stops; its shards are taken over") {
    // async_run's success means every shard was handed over and the lease released. A worker frozen
    // past its deadline, then asked to stop, can do neither: it completes with lease_lost, its
    // record is not marked released, and the other worker takes its shards after the window.
    sim::scheduler sched(6);
    world<baton::memory_backend> w(sched, baton::memory_backend(sched.get_executor()));
    auto& a = w.two_sharing(4);
    w.workers.at("a").ex.freeze();
    sched.run_for(10s); // past a's renew deadline (6 s) by its own clock, short of b's takeover window (18 s)
    a.request_stop();
    w.workers.at("a").ex.thaw();
    sched.run_for(5s);
    REQUIRE(w.workers.at("a").finished);
    CHECK(*w.workers.at("a").finished == errc::lease_lost);
    for (auto const& wk : w.snapshot().workers)
        if (wk.name == "a") CHECK_FALSE(wk.released);
    sched.run_for(30s);
    CHECK(w.owned()["b"] == 4u);
    w.check_log(false);
}

TEST_CASE("retire stops the owner and keeps the token; register brings the shard back above it") {
    sim::scheduler sched(6);
    world<baton::memory_backend> w(sched, baton::memory_backend(sched.get_executor()));
    w.register_shards(2);
    auto const registered = w.tokens().at("s100");
    auto& a = w.start("a");
    sched.run_for(5s);
    bool retired = false;
    w.admin().async_retire({"s100"}, [&](error_code ec) {
        CHECK_FALSE(ec);
        retired = true;
    });
    sched.run_for(5s);
    REQUIRE(retired);
    auto snap = w.snapshot();
    CHECK(snap.shards[0].state == baton::table_shard_state::retired);
    CHECK(snap.shards[0].owner.empty());
    CHECK(a.running_shards() == std::vector<std::string>{"s101"});
    std::optional<error_code> unknown;
    w.admin().async_retire({"nope"}, [&](error_code ec) { unknown = ec; });
    std::optional<error_code> bad;
    w.admin().async_register({""}, [&](error_code ec) { bad = ec; });
    sched.run_for(1s);
    CHECK(unknown == error_code(errc::not_found));
    CHECK(bad == error_code(errc::invalid_argument));
    w.admin().async_register({"s100"}, [&](error_code ec) { CHECK_FALSE(ec); });
    sched.run_for(5s);
    snap = w.snapshot();
    CHECK(snap.shards[0].state == baton::table_shard_state::owned);
    CHECK(snap.shards[0].token == registered + 2);
    w.check_log(true);
}

TEST_CASE("steady state: one write per worker per renew period, whatever the number of shards") {
    for (int shards : {30, 300}) {
        CAPTURE(shards);
        sim::scheduler sched(7);
        auto counts = std::make_shared<std::map<std::string, int>>();
        world<counting_store> w(sched, counting_store(baton::memory_backend(sched.get_executor()), counts));
        w.register_shards(shards);
        for (auto const* n : {"a", "b", "c"}) w.start(n);
        sched.run_for(60s);
        // Quiet from here: stop the works' checkpoints from counting by reading shard writes apart.
        auto const before = *counts;
        sched.run_for(90s); // 30 renew periods of 3 s
        int const worker_writes = (*counts)["worker writes"] - before.at("worker writes");
        int const moves = (*counts)["shard writes"] - before.at("shard writes");
        int const records = static_cast<int>(std::count_if(w.log->events.begin(), w.log->events.end(), [&](auto const& e) {
            return e.what == test_common::table_event::kind::checkpoint_ack &&
                   e.at > (vclock::now() - 90s).time_since_epoch().count();
        }));
        MESSAGE("shards " << shards << ": worker writes " << worker_writes << ", shard writes " << moves << " of which checkpoints "
                          << records << ", reads " << (*counts)["reads"] - before.at("reads") << ", lists "
                          << (*counts)["lists"] - before.at("lists") << " in 30 renew periods");
        // Renewals at ttl/3, each 90-110% of it after the last: at most 1.12 per period and worker.
        CHECK(worker_writes <= static_cast<int>(3 * 30 * 1.12) + 3);
        CHECK(moves - records <= 3); // shard writes beyond the checkpoints: none once balanced
    }
}

TEST_CASE("a worker record deleted outside baton: its owner's declared TTL, not the taker's, bounds the takeover") {
    // a declares a 90-s TTL and renews every 30 s; something outside baton deletes its record.
    // b (ttl 6 s) must not end a's term after b's own window of 12 s while a, which learns
    // nothing until its next renewal, still works on the shard.
    sim::scheduler sched(21);
    world<baton::memory_backend> w(sched, baton::memory_backend(sched.get_executor()));
    w.register_shards(1);
    auto oa = table_options("a", 1);
    oa.ttl = 90s;
    w.start("a", 1.0, oa);
    sched.run_for(5s);
    REQUIRE(w.owned()["a"] == 1u);
    std::optional<error_code> erased;
    w.store.async_erase("t/workers/a", baton::precondition::none(), [&](error_code ec, baton::erase_result) { erased = ec; });
    sched.run_for(10ms);
    REQUIRE(erased);
    REQUIRE_FALSE(*erased);
    auto ob = table_options("b", 2);
    ob.ttl = 6s;
    w.start("b", 1.0, ob);
    sched.run_for(60s);
    w.check_log(false); // no work of a after b's started
}

TEST_CASE("a shard whose token reached 2^64-1 is never claimed: its token never wraps to 0") {
    sim::scheduler sched(22);
    world<baton::memory_backend> w(sched, baton::memory_backend(sched.get_executor()));
    w.register_shards(1);
    baton::detail::shard_body b;
    b.token = ~std::uint64_t(0);
    b.nonce = "0123456789abcdef0123456789abcdef";
    std::optional<error_code> put;
    w.store.async_put("t/shards/s100", baton::detail::encode_shard_body(b), baton::precondition::none(),
                      [&](error_code ec, baton::put_result) { put = ec; });
    sched.run_for(10ms);
    REQUIRE(put);
    REQUIRE_FALSE(*put);
    w.start("a");
    sched.run_for(20s);
    auto snap = w.snapshot();
    REQUIRE(snap.shards.size() == 1u);
    CHECK(snap.shards[0].token == ~std::uint64_t(0));
    CHECK(snap.shards[0].owner.empty());
    for (auto const& e : w.log->events) CHECK(e.what != test_common::table_event::kind::start);
}

TEST_CASE("a retired shard's owner stops at its next checkpoint, before its next scan") {
    sim::scheduler sched(23);
    auto counts = std::make_shared<std::map<std::string, int>>();
    world<counting_store> w(sched, counting_store(baton::memory_backend(sched.get_executor()), counts));
    w.register_shards(1);
    auto o = table_options("a", 3);
    o.scan_interval = 9s; // scans are rare: the checkpoint is what tells
    w.start("a", 1.0, o);
    sched.run_for(4s);
    REQUIRE(w.owned()["a"] == 1u);
    // Right after one of a's scans, retire the shard.
    int const lists = (*counts)["lists"];
    while ((*counts)["lists"] == lists) sched.run_for(50ms);
    sched.run_for(200ms);
    int const lists_at_retire = (*counts)["lists"];
    bool retired = false;
    w.admin().async_retire({"s100"}, [&](error_code ec) {
        CHECK_FALSE(ec);
        retired = true;
    });
    auto const retired_at = vclock::now();
    bool ended = false;
    for (int i = 0; i < 60 && !ended; ++i) {
        sched.run_for(50ms);
        for (auto const& e : w.log->events)
            ended = ended || (e.what == test_common::table_event::kind::end && e.at > retired_at.time_since_epoch().count());
    }
    REQUIRE(retired);
    CHECK(ended); // within 3 s, at its next checkpoint
    CHECK((*counts)["lists"] - lists_at_retire <= 1); // the admin's own listing at most; a has not scanned
}

TEST_CASE("a worker missing from listings: only absences seen after a read of its latest term end that term") {
    // The simulation found it: a worker whose record was deleted recreated it, began a new term and
    // claimed a shard again between another worker's listing of the workers (which showed it
    // absent, as it had been for longer than the window) and its listing of the shards. That
    // absence was counted against the new term, and the shard was taken from a live owner.
    using ms = std::chrono::milliseconds;
    baton::detail::table_view v;
    v.own_ttl = 6s;
    v.skew = 2.0;
    baton::detail::shard_body old_term;
    old_term.owner = "a";
    old_term.term = 5;
    old_term.owner_ttl_ms = 9000; // a's own TTL: 18 s of absence end its term, whatever v's TTL is
    v.saw_named(old_term, nullptr, 1s);
    for (auto t = ms(2000); t <= ms(18000); t += ms(1000)) v.saw_missing("a", t, t + ms(10));
    CHECK_FALSE(v.claimable(old_term)); // 16 s: a's window is 18 s, not v's 12
    for (auto t = ms(19000); t <= ms(21000); t += ms(1000)) v.saw_missing("a", t, t + ms(10));
    CHECK(v.claimable(old_term));
    // a recreated its record and claimed the shard under term 7; this view reads that at 22 s,
    // before any listing that shows a's new record.
    baton::detail::shard_seen before{"v1", old_term};
    baton::detail::shard_body new_term = old_term;
    new_term.term = 7;
    v.saw_named(new_term, &before, 22s);
    CHECK_FALSE(v.claimable(new_term));
    v.saw_missing("a", 21500ms, 21510ms); // a listing sent before that read: says nothing of term 7
    CHECK_FALSE(v.claimable(new_term));
    for (auto t = ms(23000); t <= ms(40000); t += ms(1000)) v.saw_missing("a", t, t + ms(10));
    CHECK_FALSE(v.claimable(new_term)); // 17 s of absence since the read
    v.saw_missing("a", 42s, 42010ms); // 18 s from the first answer after the read (23.01 s)
    CHECK(v.claimable(new_term));
}

// A memory store that, once armed, answers the first claim of `t/shards/s1` by "b" with a timeout
// (the write is dropped) and runs `on_trap` right then (the test freezes b there).
class claim_trap_store {
public:
    using executor_type = baton::memory_backend::executor_type;
    explicit claim_trap_store(baton::memory_backend inner) : inner_(std::move(inner)) {}
    executor_type get_executor() const { return inner_.get_executor(); }
    baton::memory_backend& inner() { return inner_; }
    std::shared_ptr<std::function<void()>> on_trap = std::make_shared<std::function<void()>>();
    template <class H>
    void async_get(std::string key, H&& h) { inner_.async_get(std::move(key), std::forward<H>(h)); }
    template <class H>
    void async_list(std::string p, std::string a, std::size_t l, H&& h) { inner_.async_list(std::move(p), std::move(a), l, std::forward<H>(h)); }
    template <class H>
    void async_erase(std::string k, baton::precondition pc, H&& h) { inner_.async_erase(std::move(k), std::move(pc), std::forward<H>(h)); }
    template <class H>
    void async_probe(H&& h) { inner_.async_probe(std::forward<H>(h)); }
    template <class H>
    void async_put(std::string key, std::string body, baton::precondition pc, H&& h) {
        if (*on_trap && key == "t/shards/s1" && body.find("\"owner\":\"b\"") != std::string::npos) {
            auto trap = std::exchange(*on_trap, nullptr);
            trap();
            return baton::detail::post_completion(inner_.get_executor(), std::forward<H>(h), error_code(errc::timeout), baton::put_result{});
        }
        inner_.async_put(std::move(key), std::move(body), std::move(pc), std::forward<H>(h));
    }

private:
    baton::memory_backend inner_;
};

TEST_CASE("a claim that reads a new term of the owner it judged gone leaves the shard to the next scan") {
    // Found by review: a's record is deleted while a is frozen; b sees a missing for longer than
    // a's window and claims a's shard, but the claim is dropped (b hears a timeout, and is frozen
    // there). a thaws, begins a new term and claims its shard again. b's claim then reads the
    // record under a's new term: judged with the old absence, it wrote over a live owner.
    sim::scheduler sched(24);
    claim_trap_store store(baton::memory_backend(sched.get_executor()));
    world<claim_trap_store> w(sched, store);
    std::optional<error_code> reg;
    w.admin().async_register({"s1"}, [&](error_code ec) { reg = ec; });
    sched.run_for(1s);
    REQUIRE(reg);
    REQUIRE_FALSE(*reg);
    w.start("a");
    sched.run_for(10s);
    auto const first = w.snapshot().shards.at(0);
    REQUIRE(first.owner == "a");
    w.workers.at("a").ex.freeze();
    std::optional<error_code> erased;
    store.inner().async_erase("t/workers/a", baton::precondition::none(), [&](error_code ec, baton::erase_result) { erased = ec; });
    bool trapped = false;
    *store.on_trap = [&] {
        trapped = true;
        w.workers.at("b").ex.freeze();
    };
    w.start("b");
    for (int i = 0; i < 1200 && !trapped; ++i) sched.run_for(50ms);
    REQUIRE(trapped); // b judged a's term ended after a's window of absence, and claimed
    w.workers.at("a").ex.thaw();
    for (int i = 0; i < 200; ++i) { // a recreates its record under a new term and claims s1 back
        sched.run_for(50ms);
        auto const s = w.snapshot().shards.at(0);
        if (s.owner == "a" && s.token > first.token) break;
    }
    REQUIRE(w.snapshot().shards.at(0).owner == "a");
    w.workers.at("b").ex.thaw();
    sched.run_for(8s);
    w.check_log(false); // no work of b while a's new term works on s1
}

TEST_CASE("a claim of ours handed over unseen is never worked on when a lagging read shows it again") {
    // The shard's work at token T ends and the shard is freed. Our claim at T+1 lands with its
    // answer lost, and reads lag: they show the record of our work at T. That older record names
    // us, at a token not below the view's, so the view takes it, and the shard, stopped at T, is
    // handed over; the handoff reads the T+1 claim and frees it. Another worker claims it at T+2,
    // and our next claim, refused, reads our T+1 claim from the lagging replica: that claim was
    // given up by our own handoff, and no work may start for it.
    sim::scheduler sched(31);
    lagging_store store(baton::memory_backend(sched.get_executor()));
    world<lagging_store> w(sched, store);
    w.register_shards(1);
    std::string const key = "t/shards/s100";
    using table_t = world<lagging_store>::table_t;
    auto& a = w.workers.emplace("a", world<lagging_store>::worker{sched.make_participant_executor(), nullptr, std::nullopt})
                  .first->second;
    std::vector<std::uint64_t> tokens; // of the works started, in order
    bool competitor_wrote = false;
    // The shard record as another worker's claim writes it over `now` (its version).
    auto competitor_claims = [&store, &key, &competitor_wrote](baton::record const& now) {
        baton::detail::shard_body b;
        baton::diagnostics d;
        REQUIRE_FALSE(baton::detail::decode_shard_body(now.body, b, d));
        b.owner = "b";
        b.term = 1;
        b.token += 1;
        b.nonce = "0123456789abcdef0123456789abcdef";
        store.inner().async_put(key, baton::detail::encode_shard_body(b), baton::precondition::matches(now.version),
                                [&competitor_wrote](error_code ec, baton::put_result) { competitor_wrote = !ec; });
    };
    auto script = [&store, &key, competitor_claims] {
        auto const at_work = store.inner().peek(key); // our work's record: token T, names us
        REQUIRE(at_work);
        auto claim = std::make_shared<std::optional<baton::record>>();
        store.plan_puts(key, {{}, // the handoff that frees the shard at T
                              {true, // our claim at T+1, and then reads lag on our work's record
                               [&store, &key, at_work, claim] {
                                   *claim = store.inner().peek(key);
                                   store.lag_reads(key, *at_work);
                               }},
                              {false, // our handoff of the T+1 claim, then b's claim, and reads lag on ours
                               [&store, &key, competitor_claims, claim] {
                                   auto const freed = store.inner().peek(key);
                                   REQUIRE(freed);
                                   REQUIRE(*claim);
                                   competitor_claims(*freed);
                                   store.lag_reads(key, **claim);
                               }}});
    };
    a.table = std::make_unique<table_t>(a.ex, store, table_options("a", 1), baton::standard_retry{}, baton::backend_signer{},
                                        sim::manual_clock{});
    a.table->async_run(
        [&tokens, script](table_t::shard_type s) -> asio::awaitable<void> {
            tokens.push_back(s.token());
            if (tokens.size() > 1) co_return;
            timer_for_test t(co_await asio::this_coro::executor);
            for (int i = 0; i < 3; ++i) {
                t.expires_at(sim::manual_clock{}.timer_expiry(1s));
                co_await t.async_wait(asio::use_awaitable);
            }
            script(); // the work ends now
        },
        [&a](error_code ec) { a.finished = ec; });
    sched.run_for(30s); // b never runs: a takes b's shard once b is judged missing, after this
    REQUIRE(competitor_wrote);
    REQUIRE_FALSE(tokens.empty());
    auto const T = tokens.front();
    // The lagging read of the T+1 claim was answered to our refused claim (the claim then saw it
    // as ours) and caught up by the handoff that followed.
    CHECK_FALSE(store.lagging(key));
    for (auto t : tokens) CHECK(t != T + 1);
    CHECK(tokens.size() == 1u);
    auto const now = store.inner().peek(key);
    REQUIRE(now);
    baton::detail::shard_body b;
    baton::diagnostics d;
    REQUIRE_FALSE(baton::detail::decode_shard_body(now->body, b, d));
    CHECK(b.owner == "b");
    CHECK(b.token == T + 2);
}

TEST_CASE("a worker back under a new term soon after it was reaped is seen alive again, and gets its share") {
    // b reaps the frozen a (a's record then says released); a thaws at once, finds its term lost
    // and takes a new one well within half its TTL of the reap, so b's listing sees that change
    // as a renewal would look, and a's next renewal is 20 s away. b must still read a's record
    // again: a's ask names a term b's view has not read. A view that kept "released, at the old
    // term" would refuse a's asks until a renewal happened to meet one of b's full scans.
    sim::scheduler sched(41);
    world<baton::memory_backend> w(sched, baton::memory_backend(sched.get_executor()));
    w.register_shards(4);
    auto ob = table_options("b", 2);
    ob.ttl = 6s;
    w.start("b", 1.0, ob);
    sched.run_for(5s);
    auto oa = table_options("a", 1);
    oa.ttl = 60s;
    w.start("a", 1.0, oa);
    sched.run_for(40s);
    REQUIRE(w.owned()["a"] == 2u);
    auto released = [&w] {
        auto r = w.store.peek("t/workers/a");
        baton::detail::lease_body b;
        baton::diagnostics d;
        return r && !baton::detail::decode_lease_body(r->body, b, d) && b.released;
    };
    w.workers.at("a").ex.freeze();
    for (int i = 0; i < 3000 && !released(); ++i) sched.run_for(100ms);
    REQUIRE(released()); // b's reaper ended a's term
    w.workers.at("a").ex.thaw();
    sched.run_for(15s);
    auto n = w.owned();
    CHECK(n["a"] == 2u);
    CHECK(n["b"] == 2u);
    w.check_log(false);
}

TEST_CASE("a shard change that a write of it may still land on is settled before it is answered") {
    // The change is asked again about the record its write was made on; the answer may differ
    // (the view behind a claim moved on), but the earlier write may still land there.
    struct retry_at_once {
        unsigned max = 3;
        baton::retry_decision on_failure(error_code const& ec, unsigned n, double) {
            baton::retry_decision d;
            d.retry = baton::is_retryable(ec) && n < max;
            d.delay = 10ms;
            return d;
        }
        void on_success(unsigned) {}
    } retry;
    std::mt19937_64 rng(3);
    int asked = 0;
    baton::detail::shard_change_fn change = [&](std::optional<baton::detail::shard_body> const&, baton::detail::shard_body& next) {
        if (++asked > 1) return baton::detail::shard_change::refuse(errc::precondition_failed); // changed its mind
        next.owner = "me";
        return baton::detail::shard_change::write();
    };
    baton::detail::shard_body base;
    base.nonce = std::string(32, 'a');
    base.recent = std::string(baton::detail::origin_writer);
    baton::detail::shard_write_machine<retry_at_once, std::mt19937_64> m(change, baton::detail::shard_seen{"v1", base}, retry, rng);
    using kind = baton::detail::machine_step::type;
    auto s = m.start();
    REQUIRE(s.what == kind::write);
    s = m.on_put(errc::timeout, baton::put_result{});
    REQUIRE(s.what == kind::wait);
    REQUIRE(m.on_wait().what == kind::read);
    baton::get_result g;
    g.found = baton::record{"k", baton::detail::encode_shard_body(base), "v1"}; // still the record it was made on
    s = m.on_get({}, g);
    CHECK(s.what != kind::done); // not "refused" while the write may land: read again
    for (int i = 0; i < 10 && s.what != kind::done; ++i) {
        if (s.what == kind::wait) s = m.on_wait();
        else if (s.what == kind::read) s = m.on_get({}, g);
        else break;
    }
    REQUIRE(s.what == kind::done);
    CHECK(s.ec == errc::unknown_outcome); // it never settled: never "refused"
}

TEST_CASE("a worker's limit: it works on at most that many, the others share the rest as if it were full") {
    sim::scheduler sched(6);
    world<baton::memory_backend> w(sched, baton::memory_backend(sched.get_executor()));
    w.register_shards(11);
    auto limited = table_options("a", 1);
    limited.max_shards = 2;
    w.start("a", 1.0, limited);
    sched.run_for(8s);
    CHECK(w.owned()["a"] == 2u);
    w.start("b");
    w.start("c");
    sched.run_for(40s);
    auto n = w.owned();
    CHECK(n["a"] == 2u);
    CHECK(n["a"] + n["b"] + n["c"] == 11u);
    // The fair share is 5 (2 + 5 + 5 covers 11), not ceil(11 / 3) = 4.
    CHECK(n["b"] >= 4u);
    CHECK(n["b"] <= 5u);
    CHECK(n["c"] >= 4u);
    CHECK(n["c"] <= 5u);
    CHECK(w.most_running()["a"] == 2u);
    for (auto const& wk : w.snapshot().workers) CHECK(wk.max_shards == (wk.name == "a" ? 2u : 0u));
    w.check_log(true);
}

TEST_CASE("shards beyond every worker's limit stay free until a worker with room joins") {
    sim::scheduler sched(7);
    world<baton::memory_backend> w(sched, baton::memory_backend(sched.get_executor()));
    w.register_shards(10);
    for (auto const* name : {"a", "b"}) {
        auto o = table_options(name, std::hash<std::string>{}(name));
        o.max_shards = 3;
        w.start(name, 1.0, o);
    }
    sched.run_for(30s);
    auto n = w.owned();
    CHECK(n["a"] == 3u);
    CHECK(n["b"] == 3u);
    std::size_t free_shards = 0;
    for (auto const& s : w.snapshot().shards) free_shards += s.state == baton::table_shard_state::free ? 1 : 0;
    CHECK(free_shards == 4u);
    w.start("c");
    sched.run_for(20s);
    n = w.owned();
    CHECK(n["a"] == 3u);
    CHECK(n["b"] == 3u);
    CHECK(n["c"] == 4u);
    auto most = w.most_running();
    CHECK(most["a"] == 3u);
    CHECK(most["b"] == 3u);
    w.check_log(true);
}

TEST_CASE("a worker with a limit asks a loaded one for shards up to its limit, and a stopping one hands it no more") {
    sim::scheduler sched(8);
    world<baton::memory_backend> w(sched, baton::memory_backend(sched.get_executor()));
    w.register_shards(12);
    auto& a = w.start("a");
    sched.run_for(8s);
    CHECK(w.owned()["a"] == 12u);
    auto limited = table_options("b", 2);
    limited.max_shards = 3;
    w.start("b", 1.0, limited);
    sched.run_for(30s);
    auto n = w.owned();
    CHECK(n["b"] == 3u);
    CHECK(n["a"] == 9u);
    w.start("c");
    sched.run_for(30s);
    // The fair share is 5 (3 + 5 + 5 covers 12): a and c split the other 9.
    n = w.owned();
    CHECK(n["b"] == 3u);
    CHECK(n["a"] + n["c"] == 9u);
    CHECK(n["c"] >= 4u);
    std::map<std::string, std::uint64_t> a_had;
    for (auto const& s : w.snapshot().shards)
        if (s.owner == "a") a_had[s.shard] = s.token;
    a.request_stop();
    sched.run_for(10s);
    REQUIRE(w.workers.at("a").finished);
    n = w.owned();
    CHECK(n["b"] == 3u);
    CHECK(n["c"] == 9u);
    // Each went straight to c: b, at its limit, was never handed one to hand on.
    for (auto const& s : w.snapshot().shards)
        if (a_had.count(s.shard)) CHECK(s.token == a_had[s.shard] + 1);
    CHECK(w.most_running()["b"] == 3u);
    w.check_log(true);
}

TEST_CASE("shards handed to a worker beyond its limit are handed on, never worked on") {
    // As a worker of an older baton, that reads no limits, would hand them: written straight
    // to the store, naming the worker's live term.
    sim::scheduler sched(9);
    world<baton::memory_backend> w(sched, baton::memory_backend(sched.get_executor()));
    w.register_shards(5);
    auto limited = table_options("c", 3);
    limited.max_shards = 2;
    w.start("c", 1.0, limited);
    sched.run_for(8s);
    REQUIRE(w.owned()["c"] == 2u);
    auto const before = w.snapshot();
    std::uint64_t term = 0;
    for (auto const& wk : before.workers)
        if (wk.name == "c") term = wk.term;
    REQUIRE(term != 0);
    std::map<std::string, std::uint64_t> given;
    for (auto const& s : before.shards) {
        if (s.state != baton::table_shard_state::free) continue;
        baton::detail::shard_body b;
        b.token = s.token + 1;
        b.owner = "c";
        b.term = term;
        b.owner_ttl_ms = 9000;
        b.checkpoint = s.checkpoint;
        b.nonce = "0123456789abcdef0123456789abcdef";
        std::optional<error_code> put;
        w.store.async_put("t/shards/" + s.shard, baton::detail::encode_shard_body(b), baton::precondition::none(),
                          [&](error_code ec, baton::put_result) { put = ec; });
        sched.run_for(10ms);
        REQUIRE(put);
        REQUIRE_FALSE(*put);
        given[s.shard] = b.token;
    }
    REQUIRE(given.size() == 3u);
    sched.run_for(10s);
    // Nobody else has room: they are left free (the next claim raises their tokens).
    auto const after = w.snapshot();
    for (auto const& s : after.shards)
        if (given.count(s.shard)) {
            CHECK(s.state == baton::table_shard_state::free);
            CHECK(s.token == given[s.shard]);
        }
    CHECK(w.most_running()["c"] == 2u);
    w.start("d");
    sched.run_for(10s);
    auto n = w.owned();
    CHECK(n["c"] == 2u);
    CHECK(n["d"] == 3u);
    CHECK(w.most_running()["c"] == 2u);
    w.check_log(true);
}

TEST_CASE("a worker's published limit: decoded from its record, a fair share that honours it") {
    using baton::detail::worker_max_shards;
    CHECK(worker_max_shards("max_shards=5") == 5u);
    CHECK(worker_max_shards("") == 0u); // an older baton, or no limit
    CHECK(worker_max_shards("max_shards=") == 0u);
    CHECK(worker_max_shards("max_shards=5x") == 0u);
    CHECK(worker_max_shards("max_shards=-1") == 0u);
    CHECK(worker_max_shards("max_shards=99999999999999999999999") == 0u);
    CHECK(worker_max_shards("leader at 10.0.0.1") == 0u);
    baton::lease_table_options o;
    o.worker = "w";
    CHECK(o.worker_lease().value.empty());
    o.max_shards = 7;
    CHECK(worker_max_shards(o.worker_lease().value) == 7u);

    baton::detail::table_view v;
    for (int i = 0; i < 10; ++i) v.shards["s" + std::to_string(i)] = {};
    auto worker = [&](std::string const& name, std::size_t limit) {
        auto& e = v.workers[name];
        e.decoded = true;
        e.term = 1;
        e.max_shards = limit;
    };
    std::map<std::string, std::size_t, std::less<>> const counts{{"a", 0}, {"b", 0}, {"c", 0}};
    worker("a", 0);
    worker("b", 0);
    worker("c", 0);
    CHECK(baton::detail::fair_ceiling(v, counts, "a") == 4u); // ceil(10 / 3), as without limits
    worker("b", 1);
    CHECK(baton::detail::fair_ceiling(v, counts, "a") == 5u); // 5 + 1 + 5 >= 10
    v.own_max_shards = 2;                                     // a's own limit, from its options
    CHECK(baton::detail::fair_ceiling(v, counts, "a") == 7u); // 2 + 1 + 7 >= 10
    worker("c", 3);
    CHECK(baton::detail::fair_ceiling(v, counts, "a") == 3u); // 2 + 1 + 3 cover 6 of 10: the largest limit
    std::mt19937_64 rng(1);
    auto const plan = baton::detail::plan_balance(v, "a", 1, 4, 0, rng);
    CHECK(plan.claim.size() == 2u); // a's limit, though the share is 3
}

} // TEST_SUITE

// ---- why a shard was lost, and the worker lease's observer ------------------------------------

namespace loss_tests {

using table_t = baton::basic_lease_table<baton::memory_backend, sim::manual_clock, baton::standard_retry>;

// Worker `name` alone on the memory store, with a work that keeps each shard's handle and waits
// for its stop: what the test reads the loss from.
struct one_worker {
    sim::scheduler& sched;
    baton::memory_backend store;
    sim::pausable_executor ex;
    std::unique_ptr<table_t> table;
    std::vector<table_t::shard_type> shards;
    std::optional<error_code> finished;

    one_worker(sim::scheduler& s, baton::memory_backend st) : sched(s), store(std::move(st)), ex(s.make_participant_executor()) {
        baton::lease_table_options o = table_options("", 99);
        table_t admin(sched.get_executor(), store, o, baton::standard_retry{}, baton::backend_signer{}, sim::manual_clock{});
        bool registered = false;
        admin.async_register({"s100"}, [&](error_code ec) {
            REQUIRE_FALSE(ec);
            registered = true;
        });
        sched.run_for(1s);
        REQUIRE(registered);
        table = std::make_unique<table_t>(ex, store, table_options("a", 7), baton::standard_retry{}, baton::backend_signer{},
                                          sim::manual_clock{});
        table->async_run(
            [this](table_t::shard_type s) -> asio::awaitable<void> {
                shards.push_back(s);
                co_await s.async_wait_stop(asio::as_tuple(asio::use_awaitable));
            },
            [this](error_code ec) { finished = ec; });
        sched.run_for(5s);
        REQUIRE(shards.size() == 1u);
        CHECK(shards[0].loss_reason() == baton::shard_loss::none);
    }

    baton::record read(std::string const& key) {
        std::optional<baton::get_result> got;
        store.async_get(key, [&](error_code ec, baton::get_result r) {
            REQUIRE_FALSE(ec);
            got = std::move(r);
        });
        sched.run_for(1ms);
        REQUIRE(got);
        REQUIRE(got->found);
        return *got->found;
    }

    void write(std::string const& key, std::string body, baton::precondition pc) {
        std::optional<error_code> put;
        store.async_put(key, std::move(body), std::move(pc), [&](error_code ec, baton::put_result) { put = ec; });
        sched.run_for(1ms);
        REQUIRE(put);
        REQUIRE_FALSE(*put);
    }

    // The shard record as another worker's claim would leave it.
    void take_shard() {
        auto const r = read("t/shards/s100");
        baton::detail::shard_body b;
        baton::diagnostics d;
        REQUIRE_FALSE(baton::detail::decode_shard_body(r.body, b, d));
        b.owner = "intruder";
        b.term = 1;
        b.token += 1;
        write(r.key, baton::detail::encode_shard_body(b), baton::precondition::matches(r.version));
    }
};

struct observed {
    std::shared_ptr<std::vector<std::string>> seen = std::make_shared<std::vector<std::string>>();
    void on_acquired(baton::lease_acquired_event const& e) { seen->push_back("acquired " + std::string(e.key)); }
    void on_renewed(baton::lease_renewed_event const& e) {
        seen->push_back("renewed " + std::string(e.key) + (e.margin > 0ns ? "" : " without margin"));
    }
    void on_released(baton::lease_released_event const& e) { seen->push_back("released " + std::string(e.key)); }
};

} // namespace loss_tests

TEST_SUITE("lease table") {

TEST_CASE("a lost shard says why: the worker lease's deadline or record, the shard record taken or gone, the table gone") {
    using loss_tests::one_worker;
    using baton::shard_loss;
    sim::scheduler sched(21);
    one_worker w(sched, baton::memory_backend(sched.get_executor()));
    auto& s = w.shards[0];

    SUBCASE("frozen past the renew deadline (6 s), short of a takeover (18 s)") {
        w.ex.freeze();
        sched.run_for(10s);
        w.ex.thaw();
        sched.run_for(1s);
        CHECK(s.lost());
        CHECK(s.loss_reason() == shard_loss::renew_deadline);
    }
    SUBCASE("the worker record taken over: the next renewal is refused") {
        auto const r = w.read("t/workers/a");
        baton::detail::lease_body intruder{"intruder#1", "", "nonce", w.table->term() + 1, false, 9s, 0ms};
        w.write(r.key, baton::detail::encode_lease_body(intruder), baton::precondition::matches(r.version));
        sched.run_for(4s); // a renewal every 3 s
        CHECK(s.lost());
        CHECK(s.loss_reason() == shard_loss::worker_lease_lost);
    }
    SUBCASE("the shard record names another owner at the next scan") {
        w.take_shard();
        sched.run_for(4s); // a scan every 3 s at most
        CHECK(s.lost());
        CHECK(s.loss_reason() == shard_loss::shard_taken);
    }
    SUBCASE("the shard record names another owner when a checkpoint is written, before any scan") {
        w.take_shard();
        std::optional<error_code> cec;
        s.async_checkpoint("2", [&](error_code ec) { cec = ec; });
        sched.run_for(10ms);
        REQUIRE(cec);
        CHECK(*cec == errc::lease_lost);
        CHECK(s.lost());
        CHECK(s.loss_reason() == shard_loss::shard_taken);
    }
    SUBCASE("the shard record deleted: the next listing lacks it") {
        auto const r = w.read("t/shards/s100");
        std::optional<error_code> erased;
        w.store.async_erase(r.key, baton::precondition::none(), [&](error_code ec, baton::erase_result) { erased = ec; });
        sched.run_for(4s);
        REQUIRE(erased);
        CHECK(s.lost());
        CHECK(s.loss_reason() == shard_loss::shard_record_missing);
    }
    SUBCASE("the table object destroyed") {
        w.table.reset();
        sched.run_for(10ms);
        CHECK(s.lost());
        CHECK(s.loss_reason() == shard_loss::table_destroyed);
    }
    SUBCASE("a graceful stop is no loss") {
        w.table->request_stop();
        sched.run_for(2s);
        REQUIRE(w.finished);
        CHECK_FALSE(*w.finished);
        CHECK(s.stop_requested());
        CHECK_FALSE(s.lost());
        CHECK(s.loss_reason() == shard_loss::none);
    }
}

TEST_CASE("the table's observer sees its worker lease: acquired, each renewal with its margin, released") {
    sim::scheduler sched(22);
    baton::memory_backend store(sched.get_executor());
    loss_tests::observed obs;
    using observed_t =
        baton::basic_lease_table<baton::memory_backend, sim::manual_clock, baton::standard_retry, baton::backend_signer,
                                 loss_tests::observed>;
    observed_t t(sched.get_executor(), store, table_options("a", 3), {}, {}, sim::manual_clock{}, obs);
    std::optional<error_code> finished;
    t.async_run([](observed_t::shard_type s) -> asio::awaitable<void> {
        co_await s.async_wait_stop(asio::as_tuple(asio::use_awaitable));
    }, [&](error_code ec) { finished = ec; });
    sched.run_for(10s); // renewals every 3 s
    t.request_stop();
    sched.run_for(2s);
    REQUIRE(finished);
    CHECK_FALSE(*finished);
    auto const& seen = *obs.seen;
    REQUIRE(seen.size() >= 4u); // a renewal every 3 s
    CHECK(seen.front() == "acquired t/workers/a");
    for (std::size_t i = 1; i + 1 < seen.size(); ++i) CHECK(seen[i] == "renewed t/workers/a");
    CHECK(seen.back() == "released t/workers/a");
}

} // TEST_SUITE
