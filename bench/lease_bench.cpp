// Lease benchmarks on the memory backend. Prints one JSON
// line per measurement and a table. Measures the library's own cost: the
// memory store's work is a map lookup under a mutex.
//
//   cycle        acquire+release cycles/s on one key, and heap allocations per cycle
//   renewal      10,000 leases held by one process on a real steady clock:
//                CPU time per renewal and heap bytes per held lease
//   round_trips  store requests per operation: acquire free, renew, release,
//                re-acquire after own release, takeover of a silent holder

#include <baton/backend/memory.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/sim.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <new>
#include <optional>
#include <vector>

#include <sys/resource.h>

// ---- heap accounting ---------------------------------------------------------
namespace {
std::atomic<std::uint64_t> g_allocs{0};
std::atomic<std::int64_t> g_live_bytes{0};
}

void* operator new(std::size_t n) {
    void* p = std::malloc(n + 16);
    if (!p) throw std::bad_alloc();
    *static_cast<std::size_t*>(p) = n;
    g_allocs.fetch_add(1, std::memory_order_relaxed);
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
using namespace std::chrono_literals;

double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

baton::lease_options opts(std::string key, std::chrono::milliseconds ttl = 20s) {
    baton::lease_options o;
    o.key = std::move(key);
    o.owner = "bench";
    o.ttl = ttl;
    o.poll_interval = std::min<std::chrono::milliseconds>(1000ms, ttl);
    o.random_seed = 1;
    return o;
}

void bench_cycle(int n) {
    asio::io_context ioc(1);
    baton::memory_backend store(ioc.get_executor());
    // The cost of a cycle, so without the fairness yield (a pause each turn when nobody else waits).
    auto o = opts("bench/cycle");
    o.yield_after = std::chrono::milliseconds::max();
    baton::basic_lease<baton::memory_backend> lease(ioc.get_executor(), store, o);
    int done = 0;
    std::uint64_t allocs_start = 0;
    auto t0 = std::chrono::steady_clock::now();
    std::function<void()> cycle = [&] {
        lease.async_acquire([&](baton::error_code ec, baton::lease_grant) {
            if (ec) std::abort();
            lease.async_release([&](baton::error_code ec2) {
                if (ec2) std::abort();
                if (++done == 100) { // warm-up done
                    allocs_start = g_allocs.load();
                    t0 = std::chrono::steady_clock::now();
                }
                if (done < n + 100) cycle();
            });
        });
    };
    cycle();
    ioc.run();
    double const secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double const per_cycle_allocs = static_cast<double>(g_allocs.load() - allocs_start) / n;
    auto c = store.counts();
    std::printf("{\"bench\":\"cycle\",\"cycles\":%d,\"cycles_per_s\":%.0f,\"us_per_cycle\":%.2f,\"allocs_per_cycle\":%.1f,"
                "\"puts\":%llu,\"gets\":%llu}\n",
                n, n / secs, secs * 1e6 / n, per_cycle_allocs, static_cast<unsigned long long>(c.puts),
                static_cast<unsigned long long>(c.gets));
}

void bench_renewal(int leases, std::chrono::milliseconds ttl, std::chrono::seconds run_for) {
    asio::io_context ioc(1);
    baton::memory_backend store(ioc.get_executor());
    std::vector<std::unique_ptr<baton::basic_lease<baton::memory_backend>>> ls;
    ls.reserve(static_cast<std::size_t>(leases));
    int acquired = 0;
    std::int64_t const bytes_before = g_live_bytes.load();
    for (int i = 0; i < leases; ++i) {
        auto o = opts("bench/held/" + std::to_string(i), ttl);
        o.random_seed = static_cast<std::uint64_t>(i) + 1;
        ls.push_back(std::make_unique<baton::basic_lease<baton::memory_backend>>(ioc.get_executor(), store, o));
    }
    std::int64_t const bytes_objects = g_live_bytes.load() - bytes_before;
    for (auto& l : ls) l->async_acquire([&](baton::error_code ec, baton::lease_grant) { acquired += !ec; });
    while (acquired < leases) ioc.run_one();
    ioc.run_for(100ms); // let the first renewal timers settle
    // While held: the lease object, its armed timers and pending handlers; the
    // store's copy of each record (memory backend) is counted apart.
    std::int64_t const bytes_total = g_live_bytes.load() - bytes_before;
    // Store-side bytes (the records themselves) are not the lease's cost: measured apart below.
    auto const puts0 = store.counts().puts;
    double const cpu0 = cpu_seconds();
    ioc.run_for(run_for);
    double const cpu = cpu_seconds() - cpu0;
    auto const renewals = store.counts().puts - puts0;
    int still = 0;
    for (auto& l : ls) still += l->is_held();
    // The store's side: the same records written into an empty memory store, its bytes per record.
    std::vector<baton::record> records;
    records.reserve(static_cast<std::size_t>(leases));
    for (int i = 0; i < leases; ++i) records.push_back(*store.peek("bench/held/" + std::to_string(i)));
    double store_bytes_per_record = 0;
    {
        asio::io_context ioc2(1);
        baton::memory_backend copy(ioc2.get_executor());
        std::int64_t const before_copy = g_live_bytes.load();
        for (auto& r : records)
            copy.async_put(r.key, r.body, baton::precondition::none(), [](baton::error_code, baton::put_result) {});
        ioc2.run();
        store_bytes_per_record = static_cast<double>(g_live_bytes.load() - before_copy) / leases;
    }
    std::printf("{\"bench\":\"renewal\",\"leases\":%d,\"ttl_ms\":%lld,\"seconds\":%lld,\"renewals\":%llu,"
                "\"cpu_us_per_renewal\":%.2f,\"bytes_per_lease_object\":%.0f,\"bytes_per_held_lease\":%.0f,"
                "\"store_bytes_per_record\":%.0f,\"still_held\":%d}\n",
                leases, static_cast<long long>(ttl.count()), static_cast<long long>(run_for.count()),
                static_cast<unsigned long long>(renewals), renewals ? cpu * 1e6 / static_cast<double>(renewals) : 0.0,
                static_cast<double>(bytes_objects) / leases,
                static_cast<double>(bytes_total) / leases - store_bytes_per_record, store_bytes_per_record, still);
}

struct counts_delta {
    std::uint64_t gets, puts;
};

void bench_round_trips() {
    baton::sim::scheduler sched(1);
    baton::memory_backend store(sched.get_executor());
    auto snap = [&] { auto c = store.counts(); return counts_delta{c.gets, c.puts}; };
    auto diff = [&](counts_delta a) { auto b = snap(); return counts_delta{b.gets - a.gets, b.puts - a.puts}; };
    using sim_lease = baton::basic_lease<baton::memory_backend, baton::sim::manual_clock>;
    // The first participant re-acquires after its own release at once: no fairness turn (with one,
    // a re-acquisition after the turn first leaves the record to waiters for 1.25 poll intervals).
    auto oa = opts("rt/key");
    oa.yield_after = std::chrono::milliseconds::max();
    auto a = std::make_unique<sim_lease>(sched.get_executor(), store, oa, baton::standard_retry{},
                                         baton::backend_signer{}, baton::sim::manual_clock{});
    auto ob = opts("rt/key");
    ob.random_seed = 2; // a different participant
    sim_lease b(sched.get_executor(), store, ob, baton::standard_retry{}, baton::backend_signer{},
                baton::sim::manual_clock{});
    auto report = [](char const* what, counts_delta d, char const* goal) {
        std::printf("{\"bench\":\"round_trips\",\"operation\":\"%s\",\"reads\":%llu,\"writes\":%llu,\"goal\":\"%s\"}\n", what,
                    static_cast<unsigned long long>(d.gets), static_cast<unsigned long long>(d.puts), goal);
    };
    auto s = snap();
    a->async_acquire([](baton::error_code, baton::lease_grant) {});
    sched.run_for(1ms);
    report("acquire free lease", diff(s), "1 write");
    s = snap();
    sched.run_for(7s); // one renewal at ~ttl/3
    report("renew", diff(s), "1 write");
    s = snap();
    a->async_release([](baton::error_code) {});
    sched.run_for(1ms);
    report("release", diff(s), "1 write");
    s = snap();
    a->async_acquire([](baton::error_code, baton::lease_grant) {});
    sched.run_for(1ms);
    report("re-acquire after own release", diff(s), "1 write");
    // The holder dies silently; b waits ttl x skew, polling, then takes over.
    a.reset();
    sched.run_for(1ms);
    s = snap();
    bool took = false;
    b.async_acquire([&](baton::error_code ec, baton::lease_grant g) { took = !ec && g.took_over; });
    sched.run_for(45s);
    auto d = diff(s);
    std::printf("{\"bench\":\"round_trips\",\"operation\":\"takeover of a silent holder\",\"reads\":%llu,\"writes\":%llu,"
                "\"took_over\":%s,\"goal\":\"2 writes: a create refused with the current record, which starts the "
                "observation, and the takeover; plus the polls while waiting (about one per 0.75 poll interval)\"}\n",
                static_cast<unsigned long long>(d.gets), static_cast<unsigned long long>(d.puts), took ? "true" : "false");
}

} // namespace

int main(int argc, char** argv) {
    bool const quick = argc > 1 && std::string(argv[1]) == "--quick";
    bench_round_trips();
    bench_cycle(quick ? 20000 : 200000);
    bench_renewal(10000, 6s, quick ? 3s : 12s);
    return 0;
}
