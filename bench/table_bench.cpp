// What a lease table costs and how fast it rebalances, in virtual time on the memory store
// (requests are counted, not timed; the store's speed does not enter).
//
//   table_bench [SHARDS] [WORKERS]     (default 1000 shards, 10 workers)
//
// Printed, in one run:
//   1. Requests and bytes per renew period with nothing changing (no checkpoints: those cost one
//      write each in both designs): baton's lease table, and the per-shard renewal the Kinesis
//      Client Library does (every owner rewrites each of its shard leases every renew period, and
//      lists the table at each scan), written here as the baseline on the same store, same
//      periods. With them, the client's own cost: CPU per scan of a worker, and the heap its
//      table object holds per shard.
//   2. Time until a dead worker's shards are all owned again, and until the table is balanced
//      (every live worker within one of the fair share), after one worker of W dies.
//   3. Time until the table is balanced after a worker joins.
//   Each phase's CPU time, so that a run at a new size shows where its time went.

#include "common.hpp"

#include <baton/backend/memory.hpp>
#include <baton/recipe/lease_table.hpp>
#include <baton/sim.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <sys/resource.h>

// ---- heap accounting (the bytes a worker's table object holds) -------------------------------
namespace {
std::atomic<std::int64_t> g_live_bytes{0};
}

void* operator new(std::size_t n) {
    void* p = std::malloc(n + 16);
    if (!p) throw std::bad_alloc();
    *static_cast<std::size_t*>(p) = n;
    g_live_bytes.fetch_add(static_cast<std::int64_t>(n), std::memory_order_relaxed);
    return static_cast<char*>(p) + 16;
}
void operator delete(void* p) noexcept {
    if (!p) return;
    void* base = static_cast<char*>(p) - 16;
    g_live_bytes.fetch_sub(static_cast<std::int64_t>(*static_cast<std::size_t*>(base)), std::memory_order_relaxed);
    std::free(base);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }

namespace {

namespace asio = boost::asio;
namespace sim = baton::sim;
using namespace std::chrono_literals;
using vclock = sim::virtual_clock;

double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

constexpr std::string_view worker_prefix = "t/workers/";

// Requests of each kind, what writes send (keys and bodies), and what reads and listings bring
// back: keys, versions, bodies. A scan lists the workers' prefix once (one page below 1,000
// workers), and nothing else lists it: those listings count the scans.
struct counts {
    long writes = 0, reads = 0, lists = 0, scans = 0;
    long long bytes_written = 0, bytes_returned = 0;
    // Told the key of every write as it is sent (the memory store applies it then).
    std::function<void(std::string_view)> on_write;

    bool on_request(bench::store_op op, std::string_view key, std::size_t body_bytes) {
        switch (op) {
        case bench::store_op::get: ++reads; break;
        case bench::store_op::put:
        case bench::store_op::erase:
            ++writes;
            bytes_written += static_cast<long long>(key.size() + body_bytes);
            if (on_write) on_write(key);
            break;
        case bench::store_op::list:
            ++lists;
            if (key == worker_prefix) ++scans;
            break;
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

// Owned shards per worker as stored (only owners whose worker record is held at that term),
// checked every 100 ms of virtual time. The store is read again only where a write was sent
// since the last check: reading and decoding every record at every check cost more CPU than
// the table it measures.
class ownership {
public:
    // `names`: the workers w0 .. w<names - 1> that may hold records. Every record is read at
    // the first check.
    ownership(baton::memory_backend& m, int shards, int names)
        : m_(m), workers_(static_cast<std::size_t>(names)), shards_(static_cast<std::size_t>(shards)) {
        for (std::size_t w = 0; w < workers_.size(); ++w) dirty_.emplace_back(true, w);
        for (std::size_t i = 0; i < shards_.size(); ++i) dirty_.emplace_back(false, i);
    }

    // A write was sent to `key`.
    void touched(std::string_view key) {
        for (auto [prefix, worker] : {std::pair{std::string_view("t/workers/w"), true}, std::pair{std::string_view("t/shards/s"), false}}) {
            if (key.substr(0, prefix.size()) != prefix) continue;
            std::size_t i = 0;
            auto const [end, ec] = std::from_chars(key.data() + prefix.size(), key.data() + key.size(), i);
            if (ec == std::errc{} && end == key.data() + key.size() && i < (worker ? workers_ : shards_).size())
                dirty_.emplace_back(worker, i);
        }
    }

    std::map<std::string, int> owners(int* unowned) {
        for (auto [worker, i] : dirty_) read(i, worker);
        dirty_.clear();
        std::map<std::string, std::uint64_t> live;
        for (std::size_t w = 0; w < workers_.size(); ++w)
            if (workers_[w].ok) live["w" + std::to_string(w)] = workers_[w].term;
        std::map<std::string, int> n;
        for (auto const& [w, t] : live) n[w] = 0;
        *unowned = 0;
        for (auto const& r : shards_) {
            auto const it = r.ok ? live.find(r.owner) : live.end();
            if (it == live.end() || it->second != r.term) ++*unowned;
            else ++n[r.owner];
        }
        return n;
    }

private:
    // A record as last read: `ok` for a worker record not released, or a shard record.
    struct seen {
        bool ok = false;
        std::string owner;
        std::uint64_t term = 0;
    };

    void read(std::size_t i, bool worker) {
        auto& s = (worker ? workers_ : shards_)[i];
        s = seen{};
        auto r = m_.peek((worker ? "t/workers/w" : "t/shards/s") + std::to_string(i));
        if (!r) return;
        baton::diagnostics d;
        if (!worker) {
            baton::detail::shard_body b;
            if (!baton::detail::decode_shard_body(r->body, b, d)) s = seen{true, b.owner, b.term};
        } else {
            baton::detail::lease_body b;
            if (!baton::detail::decode_lease_body(r->body, b, d) && !b.released) s = seen{true, {}, b.token};
        }
    }

    baton::memory_backend& m_;
    std::vector<seen> workers_, shards_;
    std::vector<std::pair<bool, std::size_t>> dirty_; // (a worker's record, its index)
};

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
    // What phase 1 measured of baton (per renew period, and the client's own cost).
    struct steady {
        double writes, bytes_written, reads, bytes_returned;
        double cpu_per_scan_us, scans_per_period, heap_per_shard;
        double cpu_start, cpu_settle, cpu_steady, cpu_dies, cpu_joins;
    };
    steady const b = [&] {
    steady m{};
    double const cpu0 = cpu_seconds();
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
    // The workers w0 .. w<workers - 1>, and the one that joins in phase 3.
    ownership truth(memory, shards, workers + 1);
    c->on_write = [&truth](std::string_view key) { truth.touched(key); };
    for (int w = 0; w < workers; ++w) start("w" + std::to_string(w));
    double const cpu1 = cpu_seconds();
    int unowned = 0;
    settle = until(sched, [&] { return balanced(truth.owners(&unowned), shards) && unowned == 0; });
    sched.run_for(30s);
    double const cpu2 = cpu_seconds();
    counts const before = *c;
    sched.run_for(renew_period * periods);
    double const cpu3 = cpu_seconds();
    m.writes = static_cast<double>(c->writes - before.writes) / periods;
    m.bytes_written = static_cast<double>(c->bytes_written - before.bytes_written) / periods;
    m.reads = static_cast<double>(c->reads - before.reads + c->lists - before.lists) / periods;
    m.bytes_returned = static_cast<double>(c->bytes_returned - before.bytes_returned) / periods;
    // Nothing but the workers runs in this window (no checks of the truth): its CPU is theirs,
    // their renewals included.
    m.scans_per_period = static_cast<double>(c->scans - before.scans) / periods;
    m.cpu_per_scan_us = (cpu3 - cpu2) * 1e6 / static_cast<double>(c->scans - before.scans);

    // ---- 2. a worker dies ------------------------------------------------------------------
    std::string const victim = "w0";
    int victim_shards = truth.owners(&unowned)[victim];
    tables.erase(victim); // abandoned: no release, its lease expires
    double const all_owned = until(sched, [&] {
        auto const n = truth.owners(&unowned);
        return unowned == 0 && !n.count(victim);
    });
    double const rebalanced = all_owned + until(sched, [&] { return balanced(truth.owners(&unowned), shards) && unowned == 0; });
    double const cpu4 = cpu_seconds();
    std::printf("\n2. one of %d workers dies (%d shards): all owned again after %.1f s (ttl x skew = %.0f s, scan %.1f s);"
                " balanced after %.1f s\n",
                workers, victim_shards, all_owned, std::chrono::duration<double>(ttl).count() * 2,
                std::chrono::duration<double>(scan_period).count(), rebalanced);
    // Per-shard renewal with the same ttl and scan: a taker sees a lease expired once its
    // counter has not moved for the ttl (no allowance for clock-rate skew), at its next scan.
    double const kcl_dead = std::chrono::duration<double>(ttl + scan_period).count();
    std::printf("   per-shard renewal (KCL model, no clock-skew allowance): owned again within ttl + scan = %.1f s;"
                " baton / model %.2fx\n",
                kcl_dead, all_owned / kcl_dead);

    // ---- 3. a worker joins -------------------------------------------------------------------
    std::string const joiner = "w" + std::to_string(workers);
    start(joiner);
    double const joined = until(sched, [&] {
        auto n = truth.owners(&unowned);
        return n.count(joiner) && balanced(n, shards) && unowned == 0;
    });
    double const cpu5 = cpu_seconds();
    std::printf("3. a worker joins: balanced after %.1f s (max %zu moves per scan and asker)\n", joined,
                options("x", 0).max_moves_per_cycle);
    // KCL's taker steals at most maxLeasesToStealAtOneTime (1 by default) leases per scan: a
    // joiner needs one scan per shard of its fair share, at the least.
    int const fair = shards / workers; // workers - 1 survivors and the joiner
    double const kcl_join = fair * std::chrono::duration<double>(scan_period).count();
    std::printf("   per-shard renewal (KCL model, 1 lease stolen per scan): %d scans of %.1f s = %.1f s at the least;"
                " baton / model %.2fx\n",
                fair, std::chrono::duration<double>(scan_period).count(), kcl_join, joined / kcl_join);
    // The heap the workers' table objects hold: what their destruction gives back, once the
    // handlers they left behind have run.
    std::int64_t const held = g_live_bytes.load();
    tables.clear();
    sched.run_for(1s);
    m.heap_per_shard = static_cast<double>(held - g_live_bytes.load()) / shards / workers;
    c->on_write = nullptr; // `truth` goes before the store
    m.cpu_start = cpu1 - cpu0;
    m.cpu_settle = cpu2 - cpu1;
    m.cpu_steady = cpu3 - cpu2;
    m.cpu_dies = cpu4 - cpu3;
    m.cpu_joins = cpu5 - cpu4;
    return m;
    }();
    // ---- 1. steady state: the per-shard renewal baseline (KCL) ----------------------------
    // Each worker owns S/W lease rows and rewrites each one (a conditional put) every renew
    // period, and lists the table (its lease taker's scan) every scan period; the list requests
    // are counted as KCL's Scan pages (which return the rows themselves).
    // Virtual time is process-wide: this simulation runs after the first one ended.
    double const kcpu0 = cpu_seconds();
    counts k{};
    {
        sim::scheduler ks(2);
        baton::memory_backend km(ks.get_executor());
        auto kc = std::make_shared<counts>();
        counting_store kstore(km, kc);
        // Per row: its key, version and body size, indexed by the number in the key.
        struct row {
            std::string key, version;
            std::size_t body = 0;
        };
        std::vector<row> rows(static_cast<std::size_t>(shards));
        for (int i = 0; i < shards; ++i) {
            // A lease row with what a baton shard record holds (owner, counter, checkpoint).
            auto& r = rows[static_cast<std::size_t>(i)];
            r.key = "kcl/s" + std::to_string(i);
            std::string body = kcl_row(i % workers, 0);
            kstore.async_put(r.key, body, baton::precondition::absent(), [&r, n = body.size()](baton::error_code, baton::put_result p) {
                r.version = p.version;
                r.body = n;
            });
        }
        ks.run_for(1s);
        counts const k0 = *kc;
        auto const start_at = vclock::now();
        long counter = 0;
        for (auto t = 0ms; t < std::chrono::duration_cast<std::chrono::milliseconds>(renew_period * periods); t += 100ms) {
            if (t % renew_period == 0ms)
                for (auto& r : rows) {
                    std::string body = kcl_row(0, ++counter);
                    auto const n = body.size();
                    kstore.async_put(r.key, std::move(body), baton::precondition::matches(r.version),
                                     [&r, n](baton::error_code ec, baton::put_result p) {
                                         if (ec) return;
                                         r.version = p.version;
                                         r.body = n;
                                     });
                }
            if (t % scan_period == 0ms)
                for (int w = 0; w < workers; ++w)
                    for (int page = 0; page * 1000 < shards; ++page)
                        // A Scan page returns the rows themselves: count their bodies too (as
                        // this harness last wrote them; nothing else writes them).
                        kstore.async_list("kcl/", "", 1000, [&rows, &kc](baton::error_code, baton::list_page p) {
                            for (auto const& e : p.entries) {
                                std::size_t i = 0;
                                std::from_chars(e.key.data() + 5, e.key.data() + e.key.size(), i);
                                kc->bytes_returned += static_cast<long long>(rows[i].body);
                            }
                        });
            ks.run_until(start_at + t + 100ms);
        }
        k.writes = kc->writes - k0.writes;
        k.reads = kc->reads - k0.reads + kc->lists - k0.lists;
        k.bytes_written = kc->bytes_written - k0.bytes_written;
        k.bytes_returned = kc->bytes_returned - k0.bytes_returned;
    }
    double const kcpu = cpu_seconds() - kcpu0;
    double const kw = static_cast<double>(k.writes) / periods, kr = static_cast<double>(k.reads) / periods;
    double const kbw = static_cast<double>(k.bytes_written) / periods, kbr = static_cast<double>(k.bytes_returned) / periods;
    std::printf("\n1. per renew period, nothing changing (mean of %d periods):\n", periods);
    std::printf("   %-34s %10s %14s %10s %16s\n", "", "writes", "bytes written", "reads", "bytes returned");
    std::printf("   %-34s %10.1f %14.0f %10.1f %16.0f\n", "baton lease table", b.writes, b.bytes_written, b.reads, b.bytes_returned);
    std::printf("   %-34s %10.1f %14.0f %10.1f %16.0f\n", "per-shard renewal (KCL baseline)", kw, kbw, kr, kbr);
    std::printf("   baton / baseline: writes %.4fx, bytes written %.4fx, reads %.2fx, bytes returned %.2fx (bound: writes <= W = %d)\n",
                b.writes / kw, b.bytes_written / kbw, b.reads / kr, b.bytes_returned / kbr, workers);
    std::printf("   (baton's reads: one listing per prefix and scan, which returns versions only, plus one read per\n"
                "    record whose version changed; checkpoints add one write each, and one read for each other worker)\n");
    std::printf("   client: CPU per scan of a worker %.0f us (%.1f ns per shard listed; %.1f scans per renew period,\n"
                "   the renewals and the simulation included); heap held per shard and worker %.0f bytes (%.0f per shard\n"
                "   for all %d workers; the baseline's taker keeps every row of the table too)\n",
                b.cpu_per_scan_us, b.cpu_per_scan_us * 1e3 / shards, b.scans_per_period, b.heap_per_shard,
                b.heap_per_shard * workers, workers);
    std::printf("   first balance after a cold start: %.1f s\n", settle);
    std::printf("\nCPU: start %.2f s, cold start to balance + 30 s %.2f s, steady %d periods %.2f s, a worker dies %.2f s,"
                " a worker joins %.2f s; baseline %.2f s\n",
                b.cpu_start, b.cpu_settle, periods, b.cpu_steady, b.cpu_dies, b.cpu_joins, kcpu);
    return 0;
}
