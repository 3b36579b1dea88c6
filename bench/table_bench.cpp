// What a lease table costs and how fast it rebalances, in virtual time on the memory store
// (requests are counted, not timed; the store's speed does not enter).
//
//   table_bench [SHARDS] [WORKERS]     (default 1000 shards, 10 workers)
//
// Printed, in one run:
//   1. Requests per renew period with nothing changing (no checkpoints: those cost one write each
//      in both designs): baton's lease table, and the per-shard renewal the Kinesis Client
//      Library does (every owner rewrites each of its shard leases every renew period, and lists
//      the table at each scan), written here as the baseline on the same store, same periods.
//   2. Time until a dead worker's shards are all owned again, and until the table is balanced
//      (every live worker within one of the fair share), after one worker of W dies.
//   3. Time until the table is balanced after a worker joins.

#include "common.hpp"

#include <baton/backend/memory.hpp>
#include <baton/recipe/lease_table.hpp>
#include <baton/sim.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace sim = baton::sim;
using namespace std::chrono_literals;
using vclock = sim::virtual_clock;

// Requests of each kind, and what reads and listings bring back: keys, versions, bodies.
struct counts {
    long writes = 0, reads = 0, lists = 0;
    long long bytes_returned = 0;

    bool on_request(bench::store_op op) {
        switch (op) {
        case bench::store_op::get: ++reads; break;
        case bench::store_op::put:
        case bench::store_op::erase: ++writes; break;
        case bench::store_op::list: ++lists; break;
        case bench::store_op::probe: break;
        }
        return true;
    }
    void on_answer(bench::store_op, baton::error_code, baton::get_result const& r) {
        if (r.found) bytes_returned += static_cast<long long>(r.found->key.size() + r.found->body.size() + r.found->version.size());
    }
    void on_answer(bench::store_op, baton::error_code, baton::list_page const& p) {
        for (auto const& e : p.entries) bytes_returned += static_cast<long long>(e.key.size() + e.version.size());
    }
};

// The memory store, counting requests.
using counting_store = bench::counting_store<baton::memory_backend, counts>;

using table_t = baton::basic_lease_table<counting_store, sim::manual_clock>;

constexpr auto ttl = 9s;
constexpr auto renew_period = 3s; // ttl / 3, both designs
constexpr auto scan_period = 4500ms;

baton::lease_table_options options(std::string worker, std::uint64_t seed) {
    baton::lease_table_options o;
    o.table = "t/";
    o.worker = std::move(worker);
    o.ttl = ttl;
    o.scan_interval = scan_period;
    o.max_moves_per_cycle = 8;
    o.random_seed = seed;
    return o;
}

// Owned shards per worker as stored (only owners whose worker record is held at that term).
std::map<std::string, int> owners(baton::memory_backend& m, int shards, int* unowned) {
    std::map<std::string, std::uint64_t> live;
    for (int w = 0; w < 64; ++w) {
        auto r = m.peek("t/workers/w" + std::to_string(w));
        baton::detail::lease_body b;
        baton::diagnostics d;
        if (r && !baton::detail::decode_lease_body(r->body, b, d) && !b.released) live["w" + std::to_string(w)] = b.token;
    }
    std::map<std::string, int> n;
    for (auto const& [w, t] : live) n[w] = 0;
    *unowned = 0;
    for (int i = 0; i < shards; ++i) {
        auto r = m.peek("t/shards/s" + std::to_string(i));
        baton::detail::shard_body b;
        baton::diagnostics d;
        if (!r || baton::detail::decode_shard_body(r->body, b, d) || !live.count(b.owner) || live[b.owner] != b.term) ++*unowned;
        else ++n[b.owner];
    }
    return n;
}

bool balanced(std::map<std::string, int> const& n, int shards) {
    if (n.empty()) return false;
    int const lo = shards / static_cast<int>(n.size()), hi = (shards + static_cast<int>(n.size()) - 1) / static_cast<int>(n.size());
    for (auto const& [w, c] : n)
        if (c < lo || c > hi) return false;
    return true;
}

// A KCL lease row as JSON, the size of what a baton shard record holds.
std::string kcl_row(int owner, long counter) {
    return "{\"owner\":\"w" + std::to_string(owner) + "\",\"counter\":" + std::to_string(counter) +
           ",\"checkpoint\":null,\"owner_switches\":0}";
}

// Runs until `done()` holds (checked every 100 ms of virtual time); the virtual seconds it took.
template <class Done>
double until(sim::scheduler& sched, Done done, std::chrono::seconds limit = 600s) {
    auto const start = vclock::now();
    while (!done() && vclock::now() - start < limit) sched.run_for(100ms);
    return std::chrono::duration<double>(vclock::now() - start).count();
}

} // namespace

int main(int argc, char** argv) {
    int const shards = argc > 1 ? std::atoi(argv[1]) : 1000;
    int const workers = argc > 2 ? std::atoi(argv[2]) : 10;
    std::printf("lease table: %d shards, %d workers, ttl %llds, renew period %llds, scan %.1fs (virtual time, memory store)\n",
                shards, workers, static_cast<long long>(ttl.count()), static_cast<long long>(renew_period.count()),
                std::chrono::duration<double>(scan_period).count());

    int const periods = 40;
    double settle = 0;
    auto const [baton_writes, baton_reads, baton_bytes] = [&] {
    // ---- 1. steady state: baton ----------------------------------------------------------
    sim::scheduler sched(1);
    baton::memory_backend memory(sched.get_executor());
    auto c = std::make_shared<counts>();
    counting_store store(memory, c);
    {
        table_t admin(sched.get_executor(), store, options("", 1), {}, {}, sim::manual_clock{});
        std::vector<std::string> ids;
        for (int i = 0; i < shards; ++i) ids.push_back("s" + std::to_string(i));
        admin.async_register(ids, [](baton::error_code ec) {
            if (ec) std::fprintf(stderr, "register: %s\n", ec.message().c_str()), std::exit(1);
        });
        sched.run_for(5s);
    }
    // The work holds its shard until asked to stop (no checkpoints).
    auto work = [](table_t::shard_type s) -> asio::awaitable<void> {
        co_await s.async_wait_stop(asio::as_tuple(asio::use_awaitable));
    };
    std::map<std::string, std::unique_ptr<table_t>> tables;
    std::map<std::string, sim::pausable_executor> execs;
    auto start = [&](std::string const& name) {
        auto ex = sched.make_participant_executor();
        execs.emplace(name, ex);
        tables[name] = std::make_unique<table_t>(ex, store, options(name, std::hash<std::string>{}(name)), baton::standard_retry{},
                                                 baton::backend_signer{}, sim::manual_clock{});
        tables[name]->async_run(work, [](baton::error_code) {});
    };
    for (int w = 0; w < workers; ++w) start("w" + std::to_string(w));
    int unowned = 0;
    settle = until(sched, [&] { return balanced(owners(memory, shards, &unowned), shards) && unowned == 0; });
    sched.run_for(30s);
    counts const before = *c;
    sched.run_for(renew_period * periods);
    double const baton_writes = static_cast<double>(c->writes - before.writes) / periods;
    double const baton_reads = static_cast<double>(c->reads - before.reads + c->lists - before.lists) / periods;
    double const baton_bytes = static_cast<double>(c->bytes_returned - before.bytes_returned) / periods;

    // ---- 2. a worker dies ------------------------------------------------------------------
    std::string const victim = "w0";
    int victim_shards = owners(memory, shards, &unowned)[victim];
    tables.erase(victim); // abandoned: no release, its lease expires
    double const all_owned = until(sched, [&] {
        owners(memory, shards, &unowned);
        return unowned == 0 && !owners(memory, shards, &unowned).count(victim);
    });
    double const rebalanced = all_owned + until(sched, [&] { return balanced(owners(memory, shards, &unowned), shards) && unowned == 0; });
    std::printf("\n2. one of %d workers dies (%d shards): all owned again after %.1f s (ttl x skew = %.0f s, scan %.1f s);"
                " balanced after %.1f s\n",
                workers, victim_shards, all_owned, std::chrono::duration<double>(ttl).count() * 2,
                std::chrono::duration<double>(scan_period).count(), rebalanced);

    // ---- 3. a worker joins -------------------------------------------------------------------
    std::string const joiner = "w" + std::to_string(workers);
    start(joiner);
    double const joined = until(sched, [&] {
        auto n = owners(memory, shards, &unowned);
        return n.count(joiner) && balanced(n, shards) && unowned == 0;
    });
    std::printf("3. a worker joins: balanced after %.1f s (max %zu moves per scan and asker)\n", joined,
                options("x", 0).max_moves_per_cycle);
    tables.clear();
    sched.run_for(1s);
    return std::tuple{baton_writes, baton_reads, baton_bytes};
    }();
    // ---- 1. steady state: the per-shard renewal baseline (KCL) ----------------------------
    // Each worker owns S/W lease rows and rewrites each one (a conditional put) every renew
    // period, and lists the table (its lease taker's scan) every scan period; the list requests
    // are counted as KCL's Scan pages (which return the rows themselves).
    // Virtual time is process-wide: this simulation runs after the first one ended.
    long kcl_writes = 0, kcl_reads = 0;
    long long kcl_bytes = 0;
    {
        sim::scheduler ks(2);
        baton::memory_backend km(ks.get_executor());
        auto kc = std::make_shared<counts>();
        counting_store kstore(km, kc);
        std::vector<std::pair<std::string, std::string>> rows; // key, version
        for (int i = 0; i < shards; ++i) {
            // A lease row with what a baton shard record holds (owner, counter, checkpoint).
            kstore.async_put("kcl/s" + std::to_string(i), kcl_row(i % workers, 0),
                             baton::precondition::absent(), [&, i](baton::error_code, baton::put_result r) {
                                 rows.emplace_back("kcl/s" + std::to_string(i), r.version);
                             });
        }
        ks.run_for(1s);
        counts const k0 = *kc;
        auto const start_at = vclock::now();
        long counter = 0;
        for (auto t = 0ms; t < std::chrono::duration_cast<std::chrono::milliseconds>(renew_period * periods); t += 100ms) {
            if (t % renew_period == 0ms)
                for (auto& row : rows) {
                    auto& version = std::get<1>(row);
                    kstore.async_put(std::get<0>(row), kcl_row(0, ++counter), baton::precondition::matches(version),
                                     [&version](baton::error_code ec, baton::put_result r) {
                                         if (!ec) version = r.version;
                                     });
                }
            if (t % scan_period == 0ms)
                for (int w = 0; w < workers; ++w)
                    for (int page = 0; page * 1000 < shards; ++page)
                        // A Scan page returns the rows themselves: count their bodies too.
                        kstore.async_list("kcl/", "", 1000, [&km, &kc](baton::error_code, baton::list_page p) {
                            for (auto const& e : p.entries)
                                if (auto r = km.peek(e.key)) kc->bytes_returned += static_cast<long long>(r->body.size());
                        });
            ks.run_until(start_at + t + 100ms);
        }
        kcl_writes = kc->writes - k0.writes;
        kcl_reads = kc->reads - k0.reads + kc->lists - k0.lists;
        kcl_bytes = kc->bytes_returned - k0.bytes_returned;
    }
    double const kcl_w = static_cast<double>(kcl_writes) / periods, kcl_r = static_cast<double>(kcl_reads) / periods;
    std::printf("\n1. requests per renew period, nothing changing (mean of %d periods):\n", periods);
    double const kcl_b = static_cast<double>(kcl_bytes) / periods;
    std::printf("   %-34s %10s %10s %16s\n", "", "writes", "reads", "bytes returned");
    std::printf("   %-34s %10.1f %10.1f %16.0f\n", "baton lease table", baton_writes, baton_reads, baton_bytes);
    std::printf("   %-34s %10.1f %10.1f %16.0f\n", "per-shard renewal (KCL baseline)", kcl_w, kcl_r, kcl_b);
    std::printf("   baton / baseline: writes %.4fx, reads %.2fx, bytes returned %.2fx (bound: writes <= W = %d)\n",
                baton_writes / kcl_w, baton_reads / kcl_r, baton_bytes / kcl_b, workers);
    std::printf("   (baton's reads: one listing per prefix and scan, which returns versions only, plus one read per\n"
                "    record whose version changed; checkpoints add one write each, and one read for each other worker)\n");
    std::printf("   first balance after a cold start: %.1f s\n", settle);

    return 0;
}
