// Benchmarks on real stores, and the HTTP client on one kept-alive connection.
// bench/run-store-bench.sh runs every figure next to the peer harnesses in
// ../shared/peers on the same servers; this program measures baton's side.
// Each run prints one JSON line with ops_per_s, p50_ms and p99_ms (the peers'
// format) and figure-specific fields.
//
//   store_bench ddb-cycle    [--n 2000] [--warmup 50] [--max-seconds 30]
//       N sequential acquire+release cycles of one baton::dynamodb_lease on one key.
//   store_bench ddb-paired   [--blocks 20] [--block 200] [--warmup 100] [--floor signed|unsigned] [--control 0|1]
//       Figure 1 paired: the ddb-cycle lease and the blocking Beast client's cycle
//       (http-ddb --op cycle-signed, or cycle-unsigned) in one process, in alternating blocks of --block cycles;
//       prints both sides' figures and the median and quartiles of the per-block ratios.
//       --control 1 puts a second blocking client in the lease's place: the method's own bias.
//   store_bench ddb-contend  [--procs 8] [--seconds 10] [--hold-ms 2] [--poll-ms 5] [--ttl-ms 20000] [--yield-ms 0]
//       K OS processes, one lease each, loop acquire (waiting) -> hold -> release on one key.
//       Counts store requests on the wire (every HTTP request is signed once: a counting
//       signer) and at the record-store level (a counting adapter: failed conditional
//       writes), checks that the [acquired, release called] intervals, taken on
//       CLOCK_MONOTONIC in every process, never overlap, and reports per-process counts.
//   store_bench s3-cycle     [--n 1000] [--warmup 50] [--max-seconds 30]
//       The cycle figure with baton::s3_lease (BATON_S3_* : Ceph RGW).
//   store_bench http-ddb     [--n 5000] [--op cycle-unsigned|cycle-signed|put-unsigned|put-signed|get-signed]
//                            [--client baton|beast-sync]
//       Sequential requests over one keep-alive connection to dynalite. cycle-unsigned sends
//       e_raw_floor.js's cycle (conditional PutItem + conditional DeleteItem): the wire floor
//       of one acquire+release from C++, against which the lease's own cost shows.
//   store_bench kv           [--store ddb|s3] [--n 300] [--clients 8]
//       The kv and fenced recipes against the raw floor, in one run: (floor) N sequential
//       read + conditional write pairs straight on the backend, the least a read-modify-write
//       can cost; (update) N sequential kv updates from one client; (contended) N updates of
//       one key by K clients, each updating in a loop (exact final count checked); (fenced) requests
//       per fenced write: a new holder's first write, then its next ones.
//   store_bench commit       [--n 300]
//       The commit protocol's put-if-absent (a Delta-style log entry) and read, N of each in
//       sequence, in one run: native conditional PUT on RGW; objects in s3rver (which ignores
//       preconditions) with commits in dynalite; objects in RGW with commits in dynalite (the
//       same object store as native, so the ratio is the protocol's cost). Requests counted.
//   store_bench http-local   [--n 20000] [--client baton|beast-sync]
//       The same against a trivial in-process Beast server on another thread (client overhead).
//
// Servers come from the environment that tests/servers/with-servers.sh exports
// (BATON_DYNAMODB_*, BATON_S3_*, BATON_S3RVER_*). Every loop is bounded in count and time.

#include <baton/baton.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using baton::errc;
using baton::error_code;
using clock_type = std::chrono::steady_clock; // CLOCK_MONOTONIC on Linux, like the peers' process.hrtime
using namespace std::chrono_literals;

[[noreturn]] void die(std::string const& why) {
    std::fprintf(stderr, "store_bench: %s\n", why.c_str());
    std::exit(1);
}

// ---- arguments and environment -------------------------------------------------------

struct args {
    std::map<std::string, std::string> kv;

    args(int argc, char** argv, int first) {
        for (int i = first; i < argc; ++i) {
            std::string a = argv[i];
            if (!a.starts_with("--")) die("unexpected argument '" + a + "' (options are --name value)");
            if (i + 1 >= argc) die("option " + a + " needs a value");
            kv[a.substr(2)] = argv[++i];
        }
    }
    std::string str(std::string const& k, std::string def) const {
        auto it = kv.find(k);
        return it == kv.end() ? def : it->second;
    }
    long long num(std::string const& k, long long def) const {
        auto it = kv.find(k);
        if (it == kv.end()) return def;
        char* end = nullptr;
        long long v = std::strtoll(it->second.c_str(), &end, 10);
        if (!end || *end) die("--" + k + " must be an integer");
        return v;
    }
};

std::string env(char const* name) {
    char const* v = std::getenv(name);
    return v ? v : "";
}

std::string need_env(char const* name) {
    auto v = env(name);
    if (v.empty()) die(std::string(name) + " is not set: run under tests/servers/with-servers.sh (see bench/README.md)");
    return v;
}

std::string random_suffix() {
    std::random_device rd;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%d-%08x", static_cast<int>(::getpid()), rd());
    return buf;
}

double ms_since(clock_type::time_point t) { return std::chrono::duration<double, std::milli>(clock_type::now() - t).count(); }

std::int64_t mono_ns(clock_type::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

} // namespace

// Heap allocations of each thread: the client's, not those of an in-process server thread.
namespace {
thread_local std::uint64_t t_allocs = 0;
}
void* operator new(std::size_t n) {
    ++t_allocs;
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
// Not inlined: GCC would see free() called on what operator new returned (-Wmismatched-new-delete).
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

// What the client's thread has spent so far: its CPU time (user + system; the client's own
// cost, which the other tenants of a shared machine disturb far less than wall-clock rates), the
// user part alone (the client's own instructions: the system part moves by a third from run to
// run on loopback, as the TCP work of a packet is charged to whichever side's system call or
// interrupt handles it) and its heap allocations. A run's cost is the difference of two samples.
struct client_cost {
    double cpu = 0, user = 0; // seconds
    std::uint64_t allocs = 0;

    static client_cost now() {
        rusage ru{};
        ::getrusage(RUSAGE_THREAD, &ru);
        auto const seconds = [](timeval const& t) {
            return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
        };
        return {seconds(ru.ru_utime) + seconds(ru.ru_stime), seconds(ru.ru_utime), t_allocs};
    }
    friend client_cost operator-(client_cost const& a, client_cost const& b) {
        return {a.cpu - b.cpu, a.user - b.user, a.allocs - b.allocs};
    }
};

// Nearest-rank percentile, as lib/common.js computes it.
double pct(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    auto idx = static_cast<long>(std::ceil(p / 100.0 * static_cast<double>(v.size()))) - 1;
    idx = std::clamp<long>(idx, 0, static_cast<long>(v.size()) - 1);
    return v[static_cast<std::size_t>(idx)];
}

// Runs the io_context until `done` or the time limit.
template <class Pred>
bool run_until(asio::io_context& ioc, Pred done, std::chrono::milliseconds limit) {
    auto const end = clock_type::now() + limit;
    while (!done()) {
        if (clock_type::now() >= end) return false;
        if (ioc.stopped()) ioc.restart();
        ioc.run_one_for(50ms);
    }
    return true;
}

// ---- request counting --------------------------------------------------------------

// Wire requests by operation. Every HTTP request a backend sends is signed
// exactly once, so a signer that counts before signing sees all of them,
// including the GetItem the DynamoDB backend adds after a failed condition.
struct wire_counts {
    std::uint64_t get = 0, put = 0, erase = 0, other = 0;
    // Only requests signed inside [from, until) are counted (the measured window).
    clock_type::time_point from = clock_type::time_point::min(), until = clock_type::time_point::max();

    void note(baton::http::request const& r) {
        auto const now = clock_type::now();
        if (now < from || now >= until) return;
        std::string_view target;
        if (auto it = r.find("X-Amz-Target"); it != r.end()) target = std::string_view(it->value().data(), it->value().size());
        if (target.ends_with(".GetItem") || (target.empty() && r.method() == bhttp::verb::get)) ++get;
        else if (target.ends_with(".PutItem") || (target.empty() && r.method() == bhttp::verb::put)) ++put;
        else if (target.ends_with(".DeleteItem") || (target.empty() && r.method() == bhttp::verb::delete_)) ++erase;
        else ++other;
    }
    std::uint64_t total() const { return get + put + erase + other; }
};

template <class Inner>
struct counting_signer {
    Inner inner;
    std::shared_ptr<wire_counts> counts;

    error_code sign(baton::http::request& r, baton::aws::credentials const& c, baton::aws::signing_params const& p,
                    std::chrono::system_clock::time_point now) const {
        counts->note(r);
        return inner.sign(r, c, p, now);
    }
};

// Record-store operations and their outcomes, as the lease sees them.
struct store_counts {
    std::uint64_t gets = 0, puts = 0, puts_precondition_failed = 0, puts_other_error = 0, erases = 0;
    clock_type::time_point from = clock_type::time_point::min(), until = clock_type::time_point::max();
    bool in_window() const {
        auto const now = clock_type::now();
        return now >= from && now < until;
    }
};

// A record store that forwards to `Inner` and counts. Satisfies baton::record_store;
// a lease hands its Signer to it, and it passes a counting signer on to `Inner`.
template <class Inner>
class counting_store {
public:
    using executor_type = typename Inner::executor_type;

    counting_store(Inner inner, std::shared_ptr<store_counts> sc, std::shared_ptr<wire_counts> wc)
        : inner_(std::move(inner)), sc_(std::move(sc)), wc_(std::move(wc)) {}

    executor_type get_executor() const { return inner_.get_executor(); }

    template <class S>
    void use_signer(S s) {
        inner_.use_signer(counting_signer<S>{std::move(s), wc_});
    }

    template <class Token>
    auto async_get(std::string key, Token&& token) {
        return asio::async_initiate<Token, void(error_code, baton::get_result)>(
            [](auto h, Inner inner, std::shared_ptr<store_counts> sc, std::string k) {
                if (sc->in_window()) ++sc->gets;
                inner.async_get(std::move(k), observe(std::move(h), inner, [](auto&, error_code, auto&) {}));
            },
            token, inner_, sc_, std::move(key));
    }

    template <class Token>
    auto async_put(std::string key, std::string body, baton::precondition pc, Token&& token) {
        return asio::async_initiate<Token, void(error_code, baton::put_result)>(
            [](auto h, Inner inner, std::shared_ptr<store_counts> sc, std::string k, std::string b, baton::precondition c) {
                bool const counted = sc->in_window();
                if (counted) ++sc->puts;
                inner.async_put(std::move(k), std::move(b), std::move(c),
                                observe(std::move(h), inner, [sc, counted](auto&, error_code ec, auto&) {
                                    if (!counted || !ec) return;
                                    if (ec == errc::precondition_failed) ++sc->puts_precondition_failed;
                                    else ++sc->puts_other_error;
                                }));
            },
            token, inner_, sc_, std::move(key), std::move(body), std::move(pc));
    }

    template <class Token>
    auto async_erase(std::string key, baton::precondition pc, Token&& token) {
        return asio::async_initiate<Token, void(error_code, baton::erase_result)>(
            [](auto h, Inner inner, std::shared_ptr<store_counts> sc, std::string k, baton::precondition c) {
                if (sc->in_window()) ++sc->erases;
                inner.async_erase(std::move(k), std::move(c), observe(std::move(h), inner, [](auto&, error_code, auto&) {}));
            },
            token, inner_, sc_, std::move(key), std::move(pc));
    }

    template <class Token>
    auto async_list(std::string prefix, std::string after, std::size_t limit, Token&& token) {
        return inner_.async_list(std::move(prefix), std::move(after), limit, std::forward<Token>(token));
    }

    template <class Token>
    auto async_probe(Token&& token) {
        return inner_.async_probe(std::forward<Token>(token));
    }

private:
    // Wraps `h` so that `note` sees the outcome first; keeps h's executor and cancellation slot.
    template <class Handler, class Note>
    static auto observe(Handler h, Inner const& inner, Note note) {
        auto ex = asio::get_associated_executor(h, inner.get_executor());
        auto slot = asio::get_associated_cancellation_slot(h);
        return asio::bind_cancellation_slot(
            slot, asio::bind_executor(ex, [h = std::move(h), note = std::move(note)](error_code ec, auto r) mutable {
                note(h, ec, r);
                std::move(h)(ec, std::move(r));
            }));
    }

    Inner inner_;
    std::shared_ptr<store_counts> sc_;
    std::shared_ptr<wire_counts> wc_;
};

static_assert(baton::record_store<counting_store<baton::dynamodb_backend>>);

// ---- DynamoDB setup ------------------------------------------------------------------

constexpr char const* bench_table = "baton-bench";

baton::dynamodb_backend_params ddb_params() {
    baton::dynamodb_backend_params p;
    p.endpoint = need_env("BATON_DYNAMODB_ENDPOINT");
    p.region = env("BATON_DYNAMODB_REGION").empty() ? "us-east-1" : env("BATON_DYNAMODB_REGION");
    p.credentials.access_key_id = need_env("BATON_DYNAMODB_ACCESS_KEY");
    p.credentials.secret_access_key = need_env("BATON_DYNAMODB_SECRET_KEY");
    p.table = bench_table;
    return p;
}

// Makes the table (or accepts it with this key schema) and waits until it is ACTIVE.
void ensure_table(std::string table = bench_table, std::string partition_key = "pk") {
    asio::io_context ioc(1);
    auto params = ddb_params();
    params.table = std::move(table);
    params.partition_key = std::move(partition_key);
    baton::dynamodb_backend b(ioc.get_executor(), std::move(params));
    std::optional<std::pair<error_code, baton::dynamodb_table_info>> out;
    b.async_create_table([&](error_code ec, baton::dynamodb_table_info i) { out.emplace(ec, std::move(i)); });
    if (!run_until(ioc, [&] { return out.has_value(); }, 30s)) die("CreateTable did not complete in 30 s");
    if (out->first) die("CreateTable: " + out->second.diag.to_string());
}

// Settings a user of a short critical section would write down: only the poll
// interval and the TTL are set; renewals, deadlines and skew stay at their defaults.
// Figures 1 and 3 (one client, back-to-back cycles) measure what a cycle costs on the wire, so
// they turn the fairness yield off: with it, a client without rivals pauses 1.25 poll intervals
// after each turn (1, 2, 4 ... 16 poll intervals long), which would be measured as latency.
// Figure 2 (contention) runs with the default yield.
enum class yield { by_default, never };

baton::lease_options lease_opts(std::string key, std::string owner, std::chrono::milliseconds poll,
                                 std::chrono::milliseconds ttl, yield y = yield::by_default) {
    baton::lease_options o;
    o.key = std::move(key);
    o.owner = std::move(owner);
    o.ttl = ttl;
    o.poll_interval = poll;
    if (y == yield::never) o.yield_after = std::chrono::milliseconds::max();
    return o;
}

// ---- figure 1 and 3: sequential acquire+release cycles --------------------------------

struct cycle_result {
    std::vector<double> lat;
    double secs = 0;
    client_cost cost;
    std::string error;
};

template <class Lease>
cycle_result run_cycles(asio::io_context& ioc, Lease& lease, int warmup, int n, std::chrono::seconds max_time) {
    cycle_result out;
    out.lat.reserve(static_cast<std::size_t>(n));
    int done = 0;
    bool finished = false;
    clock_type::time_point t0 = clock_type::now(), t_cycle, deadline = clock_type::time_point::max();
    client_cost cost0;
    std::function<void()> next = [&] {
        if (done == warmup) {
            t0 = clock_type::now();
            cost0 = client_cost::now();
            deadline = t0 + max_time;
        }
        if (done >= warmup + n || clock_type::now() >= deadline) {
            out.secs = std::chrono::duration<double>(clock_type::now() - t0).count();
            out.cost = client_cost::now() - cost0;
            finished = true;
            return;
        }
        t_cycle = clock_type::now();
        lease.async_acquire([&](error_code ec, baton::lease_grant) {
            if (ec) {
                out.error = "acquire: " + ec.message() + " " + lease.last_diagnostics().to_string();
                finished = true;
                return;
            }
            lease.async_release([&](error_code ec2) {
                if (ec2) {
                    out.error = "release: " + ec2.message() + " " + lease.last_diagnostics().to_string();
                    finished = true;
                    return;
                }
                if (done >= warmup) out.lat.push_back(ms_since(t_cycle));
                ++done;
                next();
            });
        });
    };
    next();
    if (!run_until(ioc, [&] { return finished; }, max_time + 60s)) out.error = "timed out";
    return out;
}

// One JSON line per measured run: rates, latency percentiles and the client's cost per operation.
void print_result(char const* harness, std::string const& variant, std::vector<double> const& lat, double secs,
                  client_cost const& cost, std::string const& extra) {
    auto const n = static_cast<double>(lat.size());
    std::printf("{\"harness\":\"%s\",\"variant\":\"%s\",\"n\":%zu,\"secs\":%.3f,\"ops_per_s\":%.1f,\"p50_ms\":%.3f,"
                "\"p99_ms\":%.3f,\"max_ms\":%.3f,\"client_cpu_us_per_op\":%.1f,\"client_user_us_per_op\":%.1f,"
                "\"client_allocs_per_op\":%.1f%s}\n",
                harness, variant.c_str(), lat.size(), secs, n / secs, pct(lat, 50), pct(lat, 99), pct(lat, 100),
                cost.cpu * 1e6 / n, cost.user * 1e6 / n, static_cast<double>(cost.allocs) / n, extra.c_str());
    std::fflush(stdout);
}

void print_cycle(char const* harness, char const* variant, cycle_result const& r, std::string const& extra) {
    if (!r.error.empty()) die(std::string(harness) + ": " + r.error);
    print_result(harness, variant, r.lat, r.secs, r.cost, extra);
}

int cmd_ddb_cycle(args const& a) {
    int const n = static_cast<int>(a.num("n", 2000)), warmup = static_cast<int>(a.num("warmup", 50));
    ensure_table();
    asio::io_context ioc(1);
    baton::dynamodb_backend store(ioc.get_executor(), ddb_params());
    baton::dynamodb_lease lease(ioc.get_executor(), store,
                                lease_opts("bench/cycle/" + random_suffix(), "bench", 1000ms, 20000ms, yield::never));
    // Count wire requests with the exact alias: wrap the signer the lease adopted (same signing work).
    auto wc = std::make_shared<wire_counts>();
    lease.backend().use_signer(counting_signer<baton::aws::sigv4_signer>{baton::aws::sigv4_signer{}, wc});
    auto r = run_cycles(ioc, lease, warmup, n, std::chrono::seconds(a.num("max-seconds", 30)));
    char extra[256];
    double const cycles = static_cast<double>(r.lat.size() + static_cast<std::size_t>(warmup));
    std::snprintf(extra, sizeof extra,
                  ",\"requests_per_cycle\":%.2f,\"put\":%" PRIu64 ",\"get\":%" PRIu64 ",\"delete\":%" PRIu64
                  ",\"connections_opened\":%" PRIu64,
                  static_cast<double>(wc->total()) / cycles, wc->put, wc->get, wc->erase,
                  lease.backend().client().connections_opened());
    print_cycle("baton_dynamodb_lease", "cycle", r, extra);
    return 0;
}

// The S3 store of the figures: BATON_S3_* (Ceph RGW under with-servers.sh), bucket --bucket.
baton::s3_backend_params s3_params(args const& a) {
    baton::s3_backend_params p;
    p.endpoint = need_env("BATON_S3_ENDPOINT");
    p.region = env("BATON_S3_REGION").empty() ? "us-east-1" : env("BATON_S3_REGION");
    p.credentials.access_key_id = need_env("BATON_S3_ACCESS_KEY");
    p.credentials.secret_access_key = need_env("BATON_S3_SECRET_KEY");
    p.bucket = a.str("bucket", "baton-bench");
    return p;
}

int cmd_s3_cycle(args const& a) {
    int const n = static_cast<int>(a.num("n", 1000)), warmup = static_cast<int>(a.num("warmup", 50));
    asio::io_context ioc(1);
    baton::s3_backend_params const p = s3_params(a);
    baton::s3_backend store(ioc.get_executor(), p);
    {
        std::optional<error_code> done;
        baton::diagnostics diag;
        store.async_create_bucket([&](error_code ec, baton::diagnostics d) {
            done = ec;
            diag = std::move(d);
        });
        if (!run_until(ioc, [&] { return done.has_value(); }, 30s)) die("CreateBucket did not complete in 30 s");
        if (*done && *done != errc::precondition_failed) die("CreateBucket: " + diag.to_string());
    }
    // The probe (five to nine requests, once per backend) runs in the warm-up.
    baton::s3_lease lease(ioc.get_executor(), store, lease_opts("bench/cycle/" + random_suffix(), "bench", 1000ms, 20000ms, yield::never));
    auto r = run_cycles(ioc, lease, warmup, n, std::chrono::seconds(a.num("max-seconds", 30)));
    char extra[160];
    std::snprintf(extra, sizeof extra, ",\"connections_opened\":%" PRIu64 ",\"if_match_unquoted\":%s",
                  lease.backend().client().connections_opened(),
                  lease.backend().sends_unquoted_etags() ? "true" : "false");
    print_cycle("baton_s3_lease", "cycle", r, extra);
    return 0;
}

// ---- figure 2: contention across processes --------------------------------------------

using counted_ddb_lease =
    baton::basic_lease<counting_store<baton::dynamodb_backend>, baton::steady_clock, baton::standard_retry,
                       baton::aws::sigv4_signer>;

// A contender's lease: --poll-ms, --ttl-ms, and --yield-ms (lease_options::yield_after; 0, the
// default, is two poll intervals; -1 never yields).
baton::lease_options contender_opts(args const& a, int id) {
    auto o = lease_opts(a.str("key", ""), "bench-" + std::to_string(id), std::chrono::milliseconds(a.num("poll-ms", 5)),
                        std::chrono::milliseconds(a.num("ttl-ms", 20000)));
    auto const y = a.num("yield-ms", 0);
    o.yield_after = y < 0 ? std::chrono::milliseconds::max() : std::chrono::milliseconds(y);
    return o;
}

// One contender: loops acquire (waiting) -> hold -> release between `start` and `deadline`,
// then writes its intervals and counts to --out.
int cmd_contend_child(args const& a) {
    auto const start = clock_type::time_point(std::chrono::nanoseconds(a.num("start-ns", 0)));
    auto const deadline = clock_type::time_point(std::chrono::nanoseconds(a.num("deadline-ns", 0)));
    auto const hold = std::chrono::milliseconds(a.num("hold-ms", 2));
    std::string const out_path = a.str("out", "");
    int const id = static_cast<int>(a.num("id", 0));

    asio::io_context ioc(1);
    auto sc = std::make_shared<store_counts>();
    auto wc = std::make_shared<wire_counts>();
    sc->from = wc->from = start;
    sc->until = wc->until = deadline;
    counting_store<baton::dynamodb_backend> store(baton::dynamodb_backend(ioc.get_executor(), ddb_params()), sc, wc);
    counted_ddb_lease lease(ioc.get_executor(), store,
                            contender_opts(a, id));
    asio::steady_timer hold_timer(ioc);

    struct interval {
        std::int64_t acquired, released;
    };
    std::vector<interval> intervals;
    std::vector<double> waits;
    std::uint64_t acquire_errors = 0, release_errors = 0;
    std::string last_error;
    bool finished = false;

    std::this_thread::sleep_until(start);
    std::function<void()> loop = [&] {
        auto const w0 = clock_type::now();
        if (w0 >= deadline) {
            finished = true;
            return;
        }
        baton::acquire_options o;
        o.timeout = std::chrono::ceil<std::chrono::milliseconds>(deadline - w0);
        lease.async_acquire(o, [&, w0](error_code ec, baton::lease_grant) {
            if (ec) {
                if (ec != errc::timeout) {
                    ++acquire_errors;
                    last_error = "acquire: " + ec.message() + " " + lease.last_diagnostics().to_string();
                }
                finished = true;
                return;
            }
            auto const t_acquired = clock_type::now();
            hold_timer.expires_after(hold);
            hold_timer.async_wait([&, w0, t_acquired](error_code) {
                auto const t_release = clock_type::now();
                if (t_acquired < deadline) {
                    intervals.push_back({mono_ns(t_acquired), mono_ns(t_release)});
                    waits.push_back(std::chrono::duration<double, std::milli>(t_acquired - w0).count());
                }
                lease.async_release([&](error_code ec2) {
                    if (ec2) {
                        ++release_errors;
                        last_error = "release: " + ec2.message() + " " + lease.last_diagnostics().to_string();
                    }
                    loop();
                });
            });
        });
    };
    loop();
    if (!run_until(ioc, [&] { return finished; }, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - start) + 30s))
        die("contender " + std::to_string(id) + " did not finish");

    std::FILE* f = std::fopen(out_path.c_str(), "w");
    if (!f) die("cannot write " + out_path);
    std::fprintf(f, "C %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                    " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
                 sc->gets, sc->puts, sc->puts_precondition_failed, sc->puts_other_error, sc->erases, wc->get, wc->put,
                 wc->erase, wc->other, acquire_errors, release_errors);
    for (std::size_t i = 0; i < intervals.size(); ++i)
        std::fprintf(f, "I %" PRId64 " %" PRId64 " %.4f\n", intervals[i].acquired, intervals[i].released, waits[i]);
    std::fprintf(f, "U %.6f\n", client_cost::now().cpu);
    if (!last_error.empty()) std::fprintf(f, "E %s\n", last_error.c_str());
    std::fclose(f);
    return 0;
}

int cmd_ddb_contend(args const& a) {
    int const procs = static_cast<int>(a.num("procs", 8));
    long long const seconds = a.num("seconds", 10), hold_ms = a.num("hold-ms", 2), poll_ms = a.num("poll-ms", 5),
                    ttl_ms = a.num("ttl-ms", 20000), yield_ms = a.num("yield-ms", 0);
    if (procs < 1 || procs > 64 || seconds < 1 || seconds > 120) die("--procs 1..64, --seconds 1..120");
    ensure_table();
    std::string const key = "bench/contended/" + random_suffix();
    char dir_template[] = "/tmp/baton-store-bench.XXXXXX";
    char* dir = ::mkdtemp(dir_template);
    if (!dir) die("mkdtemp failed");
    auto const start = clock_type::now() + 300ms; // children are up in a few ms
    auto const deadline = start + std::chrono::seconds(seconds);

    std::vector<pid_t> kids;
    std::vector<std::string> outs;
    for (int i = 0; i < procs; ++i) {
        outs.push_back(std::string(dir) + "/child-" + std::to_string(i));
        std::vector<std::string> argv_s = {"store_bench",  "ddb-contend-child",
                                           "--id",         std::to_string(i),
                                           "--key",        key,
                                           "--start-ns",   std::to_string(mono_ns(start)),
                                           "--deadline-ns", std::to_string(mono_ns(deadline)),
                                           "--hold-ms",    std::to_string(hold_ms),
                                           "--poll-ms",    std::to_string(poll_ms),
                                           "--ttl-ms",     std::to_string(ttl_ms),
                                           "--yield-ms",   std::to_string(yield_ms),
                                           "--out",        outs.back()};
        std::vector<char*> argv_c;
        for (auto& s : argv_s) argv_c.push_back(s.data());
        argv_c.push_back(nullptr);
        pid_t pid = 0;
        if (int rc = ::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv_c.data(), environ); rc != 0)
            die("posix_spawn: " + std::string(std::strerror(rc)));
        kids.push_back(pid);
    }
    bool all_ok = true;
    for (pid_t pid : kids) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) all_ok = false;
    }
    if (!all_ok) die("a contender failed (see its message above)");

    struct iv {
        std::int64_t a, r;
        int who;
    };
    std::vector<iv> all;
    std::vector<double> waits;
    std::vector<std::uint64_t> per_proc(static_cast<std::size_t>(procs), 0);
    std::array<std::uint64_t, 11> sum{};
    std::string errors;
    double cpu_total = 0; // whole life of each contender, set-up included
    for (int i = 0; i < procs; ++i) {
        std::FILE* f = std::fopen(outs[static_cast<std::size_t>(i)].c_str(), "r");
        if (!f) die("contender " + std::to_string(i) + " wrote no result");
        char line[4096];
        while (std::fgets(line, sizeof line, f)) {
            if (line[0] == 'C') {
                std::array<unsigned long long, 11> c{};
                if (std::sscanf(line + 2, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &c[0], &c[1], &c[2],
                                &c[3], &c[4], &c[5], &c[6], &c[7], &c[8], &c[9], &c[10]) != 11)
                    die("bad counts line from contender " + std::to_string(i));
                for (std::size_t k = 0; k < c.size(); ++k) sum[k] += c[k];
            } else if (line[0] == 'I') {
                long long ta = 0, tr = 0;
                double w = 0;
                if (std::sscanf(line + 2, "%lld %lld %lf", &ta, &tr, &w) != 3) die("bad interval line");
                all.push_back({ta, tr, i});
                waits.push_back(w);
                ++per_proc[static_cast<std::size_t>(i)];
            } else if (line[0] == 'U') {
                cpu_total += std::strtod(line + 2, nullptr);
            } else if (line[0] == 'E') {
                std::string e = line + 2;
                while (!e.empty() && (e.back() == '\n' || e.back() == '"' || e.back() == '\\')) e.pop_back();
                for (auto& ch : e)
                    if (ch == '"' || ch == '\\') ch = '\'';
                errors += (errors.empty() ? "" : "; ") + e;
            }
        }
        std::fclose(f);
        std::remove(outs[static_cast<std::size_t>(i)].c_str());
    }
    ::rmdir(dir);

    // Mutual exclusion: sorted by acquisition, every interval must start after all earlier ones ended.
    std::sort(all.begin(), all.end(), [](iv const& x, iv const& y) { return x.a < y.a; });
    std::uint64_t overlaps = 0, handovers = 0; // handover: acquired by another process than the last holder
    for (std::size_t i = 1; i < all.size(); ++i) handovers += all[i].who != all[i - 1].who;
    std::int64_t max_end = std::numeric_limits<std::int64_t>::min(), min_gap = std::numeric_limits<std::int64_t>::max();
    for (auto const& x : all) {
        if (x.a < max_end) ++overlaps;
        else if (max_end != std::numeric_limits<std::int64_t>::min()) min_gap = std::min(min_gap, x.a - max_end);
        max_end = std::max(max_end, x.r);
    }
    std::uint64_t const acq = all.size();
    double const per = acq ? 1.0 / static_cast<double>(acq) : 0.0;
    auto const [gets, puts, put_pf, put_err, erases, w_get, w_put, w_del, w_other, acq_err, rel_err] = sum;
    (void)erases;
    std::uint64_t const wire = w_get + w_put + w_del + w_other;
    std::uint64_t served = 0, min_pp = ~0ull, max_pp = 0;
    std::string pp;
    double pp_sum = 0, pp_squares = 0; // Jain's fairness index: (sum x)^2 / (n sum x^2), 1 = all equal
    for (auto c : per_proc) {
        pp_sum += static_cast<double>(c);
        pp_squares += static_cast<double>(c) * static_cast<double>(c);
    }
    double const jain = pp_squares > 0 ? pp_sum * pp_sum / (static_cast<double>(procs) * pp_squares) : 0.0;
    for (auto c : per_proc) {
        served += c > 0;
        min_pp = std::min(min_pp, c);
        max_pp = std::max(max_pp, c);
        pp += (pp.empty() ? "" : ",") + std::to_string(c);
    }
    // Puts split by purpose: an acquisition's winning write and its release are 2 per
    // acquisition; the rest are lost races (failed conditions) or other errors.
    std::printf("{\"harness\":\"baton_dynamodb_lease_contention\",\"variant\":\"procs-k%d-poll%lldms%s\",\"k\":%d,"
                "\"seconds\":%lld,\"hold_ms\":%lld,\"poll_ms\":%lld,\"ttl_ms\":%lld,\"acquisitions\":%" PRIu64
                ",\"ops_per_s\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_wait_ms\":%.3f,"
                "\"requests_per_acq\":%.2f,\"wire_get_per_acq\":%.2f,\"wire_put_per_acq\":%.2f,"
                "\"poll_reads_per_acq\":%.2f,\"reads_after_failed_put_per_acq\":%.2f,"
                "\"failed_cond_puts_per_acq\":%.2f,\"other_put_errors\":%" PRIu64 ",\"acquire_errors\":%" PRIu64
                ",\"release_errors\":%" PRIu64 ",\"handovers_per_s\":%.1f,\"clients_that_acquired\":%" PRIu64 ",\"min_per_client\":%" PRIu64
                ",\"max_per_client\":%" PRIu64 ",\"per_client\":[%s],\"jain\":%.3f,\"overlaps\":%" PRIu64
                ",\"min_handover_gap_ms\":%.3f,\"client_cpu_us_per_acq\":%.1f,\"wire\":{\"GetItem\":%" PRIu64 ",\"PutItem\":%" PRIu64
                ",\"DeleteItem\":%" PRIu64 ",\"other\":%" PRIu64 "},\"store\":{\"get\":%" PRIu64 ",\"put\":%" PRIu64
                "}%s%s%s}\n",
                procs, poll_ms, yield_ms == 0 ? "" : ("-yield" + std::to_string(yield_ms) + "ms").c_str(), procs,
                seconds, hold_ms, poll_ms, ttl_ms, acq,
                static_cast<double>(acq) / static_cast<double>(seconds), pct(waits, 50), pct(waits, 99),
                pct(waits, 100), static_cast<double>(wire) * per, static_cast<double>(w_get) * per,
                static_cast<double>(w_put) * per, static_cast<double>(gets) * per,
                static_cast<double>(w_get > gets ? w_get - gets : 0) * per, static_cast<double>(put_pf) * per,
                put_err, acq_err, rel_err, static_cast<double>(handovers) / static_cast<double>(seconds), served, min_pp == ~0ull ? 0 : min_pp, max_pp, pp.c_str(), jain, overlaps,
                min_gap == std::numeric_limits<std::int64_t>::max() ? 0.0 : static_cast<double>(min_gap) / 1e6,
                cpu_total * 1e6 * per, w_get,
                w_put, w_del, w_other, gets, puts, errors.empty() ? "" : ",\"errors\":\"", errors.c_str(),
                errors.empty() ? "" : "\"");
    std::fflush(stdout);
    return overlaps == 0 ? 0 : 3;
}

// ---- figure 4: requests over one keep-alive connection --------------------------------

// The exact bytes of ../shared/peers/e_raw_floor_curl.sh: an unsigned PutItem with the
// dummy Authorization header dynalite accepts (it checks the shape, not the signature).
constexpr std::string_view floor_put_body =
    R"({"TableName":"peer-floor","Item":{"id":{"S":"curl-put"},"owner":{"S":"curl"},"lease_ms":{"N":"10000"}}})";
constexpr std::string_view dummy_auth =
    "AWS4-HMAC-SHA256 Credential=AKIDLOCALPEERS/20250101/us-east-1/dynamodb/aws4_request, "
    "SignedHeaders=content-type;host;x-amz-date;x-amz-target, "
    "Signature=0000000000000000000000000000000000000000000000000000000000000000";

baton::http::request ddb_request(baton::http::endpoint const& ep, std::string_view op, std::string body) {
    baton::http::request req{bhttp::verb::post, "/", 11};
    req.set(bhttp::field::host, ep.host_header());
    req.set(bhttp::field::content_type, "application/x-amz-json-1.0");
    req.set("X-Amz-Target", "DynamoDB_20120810." + std::string(op));
    req.body() = std::move(body);
    req.prepare_payload();
    return req;
}

struct http_case {
    // A fresh request per call (signing included in the time): part `part` of operation `op`.
    std::function<baton::http::request(int op, int part)> make;
    int parts = 1; // requests per operation, sent one after the other
    baton::http::endpoint ep;
};

// Sequential requests through baton::http::client (one connection, kept alive).
void run_baton_client(http_case const& c, int warmup, int n, std::string const& variant) {
    asio::io_context ioc(1);
    baton::http::client client(ioc.get_executor());
    std::vector<double> lat;
    lat.reserve(static_cast<std::size_t>(n));
    int done = 0, non2xx = 0;
    bool finished = false;
    std::string error;
    clock_type::time_point t0, t_req;
    client_cost cost0, cost;
    int part = 0;
    auto info = std::make_shared<baton::http::request_info>();
    std::function<void()> next = [&] {
        if (part == 0) {
            if (done == warmup) {
                t0 = clock_type::now();
                cost0 = client_cost::now();
            }
            if (done >= warmup + n) {
                cost = client_cost::now() - cost0;
                finished = true;
                return;
            }
            t_req = clock_type::now();
        }
        *info = {};
        client.async_request(c.ep, c.make(done, part), *info, [&](error_code ec, baton::http::response res) {
            if (ec) {
                error = ec.message() + " " + info->diag.to_string();
                finished = true;
                return;
            }
            if (res.result_int() / 100 != 2) ++non2xx;
            if (++part == c.parts) {
                part = 0;
                if (done >= warmup) lat.push_back(ms_since(t_req));
                ++done;
            }
            next();
        });
    };
    next();
    if (!run_until(ioc, [&] { return finished; }, 120s)) die("http: timed out");
    if (!error.empty()) die("http: " + error);
    double const secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    char extra[128];
    std::snprintf(extra, sizeof extra, ",\"non2xx\":%d,\"connections_opened\":%" PRIu64, non2xx,
                  client.connections_opened());
    print_result("baton_http_client", variant, lat, secs, cost, extra);
}

// The same with a blocking Beast client on one socket: the least a client can do.
struct blocking_client {
    asio::io_context ioc{1};
    tcp::socket sock{ioc};
    boost::beast::flat_buffer buf;
    int non2xx = 0;

    explicit blocking_client(baton::http::endpoint const& ep) {
        sock.connect(tcp::endpoint(asio::ip::make_address(ep.host), ep.port));
        sock.set_option(tcp::no_delay(true));
    }

    // Operations [first, first + n) of `c`, each one's latency in ms appended to `lat` unless it is null.
    void run(http_case const& c, int first, int n, std::vector<double>* lat) {
        for (int i = first; i < first + n; ++i) {
            auto const t = clock_type::now();
            for (int part = 0; part < c.parts; ++part) {
                auto req = c.make(i, part);
                bhttp::write(sock, req);
                bhttp::response<bhttp::string_body> res;
                bhttp::read(sock, buf, res);
                if (res.result_int() / 100 != 2) ++non2xx;
                if (!res.keep_alive()) die("beast-sync: the server closed the connection");
            }
            if (lat) lat->push_back(ms_since(t));
        }
    }
};

// Operations [first, first + n) of `c` on `bc`, timed: latencies, wall time, the client's cost.
cycle_result run_timed(blocking_client& bc, http_case const& c, int first, int n) {
    cycle_result r;
    r.lat.reserve(static_cast<std::size_t>(n));
    auto const t0 = clock_type::now();
    auto const cost0 = client_cost::now();
    bc.run(c, first, n, &r.lat);
    r.secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    r.cost = client_cost::now() - cost0;
    return r;
}

void run_beast_sync(http_case const& c, int warmup, int n, std::string const& variant) {
    blocking_client bc(c.ep);
    bc.run(c, 0, warmup, nullptr);
    auto const r = run_timed(bc, c, warmup, n);
    print_result("beast_sync_client", variant, r.lat, r.secs, r.cost,
               ",\"non2xx\":" + std::to_string(bc.non2xx) + ",\"connections_opened\":1");
}

// e_raw_floor.js --variant cycle, in C++: PutItem attribute_not_exists + DeleteItem owner = :o,
// unsigned (dynalite checks the Authorization header's shape, not the signature).
http_case unsigned_cycle_case(baton::http::endpoint const& ep) {
    http_case c;
    c.ep = ep;
    c.parts = 2;
    c.make = [ep](int i, int part) {
        std::string const owner = "cxx-raw-" + std::to_string(i);
        auto r = part == 0
                     ? ddb_request(ep, "PutItem",
                                   R"({"TableName":"peer-floor","Item":{"id":{"S":"cxx-raw-lock"},"owner":{"S":")" +
                                       owner +
                                       R"j("},"lease_ms":{"N":"10000"}},"ConditionExpression":"attribute_not_exists(id)"})j")
                     : ddb_request(ep, "DeleteItem",
                                   R"({"TableName":"peer-floor","Key":{"id":{"S":"cxx-raw-lock"}},"ConditionExpression":"#o = :o",)"
                                   R"("ExpressionAttributeNames":{"#o":"owner"},"ExpressionAttributeValues":{":o":{"S":")" +
                                       owner + R"("}}})");
        r.set("X-Amz-Date", "20250101T000000Z");
        r.set(bhttp::field::authorization, dummy_auth);
        return r;
    };
    return c;
}

// The lease's own cycle, written by hand: a conditional PutItem of the held record, then one of
// the released record, each conditioned on the version the one before wrote, of the same shape
// and size as dynamodb_lease's, signed (cached key) as AWS requires. Table peer-floor, key id.
http_case signed_cycle_case(baton::http::endpoint const& ep, baton::aws::credentials creds,
                            baton::aws::signing_params const& signing) {
    baton::aws::sigv4_signer signer;
    http_case c;
    c.ep = ep;
    c.parts = 2;
    struct versions {
        std::uint64_t next = 0;
        std::string current; // empty: the item does not exist yet
    };
    auto v = std::make_shared<versions>();
    // A key of this run's own: its first write is conditioned on the item's absence.
    std::string const key = "cxx-signed-lock-" + std::to_string(::getpid()) + "-" +
                            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    c.make = [ep, creds, signing, signer, v, key](int i, int part) {
        char ver[33], nonce[33];
        std::snprintf(ver, sizeof ver, "%016llx%016llx", 0x5eedULL, static_cast<unsigned long long>(++v->next));
        std::snprintf(nonce, sizeof nonce, "%032llx", static_cast<unsigned long long>(i));
        std::string const token = std::to_string(i + 1);
        char const* const state = part == 0 ? "held" : "released";
        std::string body = R"({"TableName":"peer-floor","Item":{"id":{"S":")" + key + R"("},"ver":{"S":")";
        body += ver;
        body += R"("},"body":{"S":"{\"baton\":\"lease/1\",\"owner\":\"bench#04143e896126d105\",\"token\":)";
        body += token;
        body += R"(,\"nonce\":\")";
        body += nonce;
        body += R"(\",\"state\":\")";
        body += state;
        body += R"(\",\"ttl_ms\":20000,\"value\":\"\"}"},"baton":{"S":"lease/1"},"owner":{"S":"bench#04143e896126d105"},)";
        body += R"("token":{"N":")";
        body += token;
        body += R"("},"nonce":{"S":")";
        body += nonce;
        body += R"("},"state":{"S":")";
        body += state;
        body += R"("},"ttl_ms":{"N":"20000"},"value":{"S":""}},)";
        if (v->current.empty()) {
            body += R"j("ConditionExpression":"attribute_not_exists(#k)","ExpressionAttributeNames":{"#k":"id"})j";
        } else {
            body += R"("ConditionExpression":"#v = :v","ExpressionAttributeNames":{"#v":"ver"},)";
            body += R"("ExpressionAttributeValues":{":v":{"S":")" + v->current + R"("}})";
        }
        body += R"(,"ReturnValuesOnConditionCheckFailure":"ALL_OLD"})";
        v->current = ver;
        auto r = ddb_request(ep, "PutItem", std::move(body));
        r.set(bhttp::field::accept_encoding, "identity");
        if (signer.sign(r, creds, signing, std::chrono::system_clock::now())) die("signing failed");
        return r;
    };
    return c;
}

int cmd_http_ddb(args const& a) {
    int const n = static_cast<int>(a.num("n", 5000)), warmup = static_cast<int>(a.num("warmup", 200));
    std::string const op = a.str("op", "put-unsigned"), client = a.str("client", "baton");
    auto const p = ddb_params();
    auto const ep = baton::http::endpoint::from_url(p.endpoint);
    // The floor's table (peer-floor, key id) is made by the peers; make it here too so that this runs
    // alone. ensure_table waits until it is ACTIVE: before, dynalite answers ResourceNotFoundException
    // (for half a second), which a short run would measure instead of the writes.
    ensure_table("peer-floor", "id");
    http_case c;
    c.ep = ep;
    auto creds = p.credentials;
    auto const signing = baton::aws::signing_params::for_service("dynamodb", p.region);
    baton::aws::sigv4_signer signer;
    if (op == "cycle-unsigned") {
        c = unsigned_cycle_case(ep);
    } else if (op == "cycle-signed") {
        c = signed_cycle_case(ep, creds, signing);
    } else if (op == "put-unsigned") {
        c.make = [ep](int, int) {
            auto r = ddb_request(ep, "PutItem", std::string(floor_put_body));
            r.set("X-Amz-Date", "20250101T000000Z");
            r.set(bhttp::field::authorization, dummy_auth);
            return r;
        };
    } else if (op == "put-signed" || op == "get-signed") {
        bool const put = op == "put-signed";
        c.make = [ep, creds, signing, signer, put](int, int) {
            auto r = put ? ddb_request(ep, "PutItem", std::string(floor_put_body))
                         : ddb_request(ep, "GetItem",
                                       R"({"TableName":"peer-floor","Key":{"id":{"S":"curl-put"}},"ConsistentRead":true})");
            if (signer.sign(r, creds, signing, std::chrono::system_clock::now())) die("signing failed");
            return r;
        };
    } else {
        die("--op cycle-unsigned|cycle-signed|put-unsigned|put-signed|get-signed");
    }
    if (client == "baton") run_baton_client(c, warmup, n, "ddb-" + op);
    else if (client == "beast-sync") run_beast_sync(c, warmup, n, "ddb-" + op);
    else die("--client baton|beast-sync");
    return 0;
}

// Figure 1, paired: the lease's cycle and the blocking client's cycle (--floor signed: the same
// two requests, signed; unsigned: e_raw_floor.js's smaller cycle) in one process, in alternating
// blocks, the order swapped every block. Both then meet the server in the same state: dynalite's rate drifts by a third between runs a few
// seconds apart, which runs of one client after the other measure as a difference between them.
// One JSON line: the lease's figures, the floor's (floor_*), and the per-block ratios' median and
// quartiles (ratio_*: lease / floor; throughput higher is better, CPU lower).
int cmd_ddb_paired(args const& a) {
    int const blocks = static_cast<int>(a.num("blocks", 20)), block = static_cast<int>(a.num("block", 200)),
              warmup = static_cast<int>(a.num("warmup", 100));
    if (blocks < 1 || block < 1 || warmup < 0) die("--blocks and --block must be at least 1, --warmup at least 0");
    ensure_table();
    ensure_table("peer-floor", "id");
    auto const p = ddb_params();
    auto const ep = baton::http::endpoint::from_url(p.endpoint);
    asio::io_context ioc(1);
    baton::dynamodb_backend store(ioc.get_executor(), ddb_params());
    baton::dynamodb_lease lease(ioc.get_executor(), store,
                                lease_opts("bench/paired/" + random_suffix(), "bench", 1000ms, 20000ms, yield::never));
    std::string const floor_kind = a.str("floor", "signed");
    if (floor_kind != "signed" && floor_kind != "unsigned") die("--floor signed|unsigned");
    auto const make_case = [&] {
        return floor_kind == "signed"
                   ? signed_cycle_case(ep, p.credentials, baton::aws::signing_params::for_service("dynamodb", p.region))
                   : unsigned_cycle_case(ep);
    };
    http_case const floor = make_case();
    blocking_client bc(ep);
    // --control 1: the lease's side is a second blocking client (its own connection and key)
    // sending the floor's cycle, so the ratios measure the method itself; they should be ~1.
    bool const control = a.num("control", 0) != 0;
    http_case const twin = make_case(); // its own key
    std::optional<blocking_client> bc_twin;
    if (control) {
        if (floor_kind == "unsigned") die("--control needs --floor signed (the unsigned cycle has one fixed key)");
        bc_twin.emplace(ep);
    }

    auto blocking_block = [](blocking_client& c, http_case const& h, int& next, int n) {
        auto r = run_timed(c, h, next, n);
        next += n;
        return r;
    };
    int floor_next = 0, twin_next = 0;
    auto lease_block = [&](int n) {
        if (control) return blocking_block(*bc_twin, twin, twin_next, n);
        auto r = run_cycles(ioc, lease, 0, n, 60s);
        if (!r.error.empty()) die("baton_dynamodb_lease: " + r.error);
        return r;
    };
    auto floor_block = [&](int n) { return blocking_block(bc, floor, floor_next, n); };
    if (warmup > 0) {
        lease_block(warmup);
        floor_block(warmup);
    }
    struct side {
        std::vector<double> lat;
        double secs = 0;
        client_cost cost;
        void add(cycle_result const& r) {
            lat.insert(lat.end(), r.lat.begin(), r.lat.end());
            secs += r.secs;
            cost.cpu += r.cost.cpu;
            cost.user += r.cost.user;
            cost.allocs += r.cost.allocs;
        }
    } L, F;
    std::vector<double> ratio_ops, ratio_cpu, ratio_user;
    for (int b = 0; b < blocks; ++b) {
        cycle_result l, f;
        if (b % 2 == 0) {
            l = lease_block(block);
            f = floor_block(block);
        } else {
            f = floor_block(block);
            l = lease_block(block);
        }
        L.add(l);
        F.add(f);
        ratio_ops.push_back(f.secs / l.secs); // same count: the rates' ratio
        if (f.cost.cpu > 0) ratio_cpu.push_back(l.cost.cpu / f.cost.cpu);
        if (f.cost.user > 0) ratio_user.push_back(l.cost.user / f.cost.user);
    }
    if (bc.non2xx != 0 || (bc_twin && bc_twin->non2xx != 0)) die("beast-sync: some answers were not 2xx");
    double const n = static_cast<double>(F.lat.size());
    char extra[768];
    std::snprintf(extra, sizeof extra,
                  ",\"blocks\":%d,\"block\":%d,\"floor_ops_per_s\":%.1f,\"floor_p50_ms\":%.3f,\"floor_p99_ms\":%.3f,"
                  "\"floor_cpu_us_per_op\":%.1f,\"floor_user_us_per_op\":%.1f,\"floor_allocs_per_op\":%.1f,"
                  "\"ratio_ops\":%.3f,\"ratio_ops_q1\":%.3f,\"ratio_ops_q3\":%.3f,\"ratio_cpu\":%.3f,"
                  "\"ratio_cpu_q1\":%.3f,\"ratio_cpu_q3\":%.3f,\"ratio_user\":%.3f,\"ratio_user_q1\":%.3f,"
                  "\"ratio_user_q3\":%.3f,\"connections_opened\":%" PRIu64,
                  blocks, block, n / F.secs, pct(F.lat, 50), pct(F.lat, 99), F.cost.cpu * 1e6 / n, F.cost.user * 1e6 / n,
                  static_cast<double>(F.cost.allocs) / n, pct(ratio_ops, 50), pct(ratio_ops, 25), pct(ratio_ops, 75),
                  pct(ratio_cpu, 50), pct(ratio_cpu, 25), pct(ratio_cpu, 75), pct(ratio_user, 50),
                  pct(ratio_user, 25), pct(ratio_user, 75), lease.backend().client().connections_opened());
    print_result(control ? "beast_sync_client" : "baton_dynamodb_lease",
                 (control ? "control-paired-" : "cycle-paired-") + floor_kind, L.lat, L.secs, L.cost, extra);
    return 0;
}

// A trivial HTTP/1.1 server on its own thread: answers every request with a small JSON body.
class local_server {
public:
    local_server() : acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
        port_ = acceptor_.local_endpoint().port();
        thread_ = std::thread([this] { serve(); });
    }
    ~local_server() {
        stop_ = true;
        // Wake the accept or the read with a connection that closes at once.
        try {
            asio::io_context ioc;
            tcp::socket s(ioc);
            s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
        } catch (...) {
        }
        thread_.join();
    }
    unsigned short port() const { return port_; }

private:
    void serve() {
        while (!stop_) {
            tcp::socket sock(ioc_);
            error_code ec;
            acceptor_.accept(sock, ec);
            if (ec || stop_) return;
            sock.set_option(tcp::no_delay(true), ec);
            boost::beast::flat_buffer buf;
            for (;;) {
                bhttp::request<bhttp::string_body> req;
                bhttp::read(sock, buf, req, ec);
                if (ec) break;
                bhttp::response<bhttp::string_body> res{bhttp::status::ok, 11};
                res.set(bhttp::field::content_type, "application/x-amz-json-1.0");
                res.body() = R"({"Item":{"id":{"S":"k"}}})";
                res.keep_alive(req.keep_alive());
                res.prepare_payload();
                bhttp::write(sock, res, ec);
                if (ec || !req.keep_alive()) break;
            }
        }
    }

    asio::io_context ioc_;
    tcp::acceptor acceptor_;
    unsigned short port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

int cmd_http_local(args const& a) {
    int const n = static_cast<int>(a.num("n", 20000)), warmup = static_cast<int>(a.num("warmup", 500));
    std::string const client = a.str("client", "baton");
    local_server server;
    http_case c;
    c.ep = baton::http::endpoint::from_url("http://127.0.0.1:" + std::to_string(server.port()));
    auto const ep = c.ep;
    c.make = [ep](int, int) {
        auto r = ddb_request(ep, "GetItem", R"({"TableName":"peer-floor","Key":{"id":{"S":"curl-put"}},"ConsistentRead":true})");
        r.set("X-Amz-Date", "20250101T000000Z");
        r.set(bhttp::field::authorization, dummy_auth);
        return r;
    };
    if (client == "baton") run_baton_client(c, warmup, n, "local");
    else if (client == "beast-sync") run_beast_sync(c, warmup, n, "local");
    else die("--client baton|beast-sync");
    return 0;
}

} // namespace

// ---- kv and fenced against the raw floor ------------------------------------------------

template <class Backend>
int run_kv_figure(asio::io_context& ioc, std::function<Backend()> make, std::string const& store_name, args const& a) {
    int const n = static_cast<int>(a.num("n", 300)), clients = static_cast<int>(a.num("clients", 8));
    std::string const prefix = "bench/kv/" + random_suffix() + "/";
    auto rate = [](int ops, double ms) { return ops / (ms / 1000.0); };

    // (floor) read, then write conditional on the version read: 2 requests, no recipe.
    Backend raw = make();
    double floor_ms = 0;
    {
        auto const t0 = clock_type::now();
        for (int i = 0; i < n; ++i) {
            std::optional<baton::get_result> got;
            raw.async_get(prefix + "floor", [&](error_code ec, baton::get_result r) {
                if (ec) die("floor get: " + r.diag.to_string());
                got = std::move(r);
            });
            if (!run_until(ioc, [&] { return got.has_value(); }, 30s)) die("floor get timed out");
            auto pc = got->found ? baton::precondition::matches(got->found->version) : baton::precondition::absent();
            bool put = false;
            raw.async_put(prefix + "floor", std::to_string(i), pc, [&](error_code ec, baton::put_result r) {
                if (ec) die("floor put: " + r.diag.to_string());
                put = true;
            });
            if (!run_until(ioc, [&] { return put; }, 30s)) die("floor put timed out");
        }
        floor_ms = ms_since(t0);
    }
    auto increment = [](std::optional<baton::kv_entry> const& cur) -> std::optional<std::string> {
        return std::to_string(cur ? std::stoull(cur->value) + 1 : 1);
    };
    // (update) one client, sequential.
    double update_ms = 0;
    unsigned update_requests = 0;
    {
        baton::basic_kv<Backend> kv(ioc.get_executor(), make());
        auto const t0 = clock_type::now();
        for (int i = 0; i < n; ++i) {
            bool done = false;
            kv.async_update(prefix + "seq", increment, [&](error_code ec, baton::kv_write_result r) {
                if (ec) die("update: " + ec.message() + " " + r.diag.to_string());
                update_requests += r.requests;
                done = true;
            });
            if (!run_until(ioc, [&] { return done; }, 60s)) die("update timed out");
        }
        update_ms = ms_since(t0);
    }
    // (contended) K clients, N updates of one key at once.
    double contended_ms = 0;
    unsigned contended_requests = 0;
    int contended_ok = 0, contended_failed = 0;
    std::uint64_t final_count = 0;
    {
        std::vector<baton::basic_kv<Backend>> kvs;
        for (int c = 0; c < clients; ++c) kvs.emplace_back(ioc.get_executor(), make());
        // Each client runs its share one after another, as K workers of a service would.
        int done = 0;
        std::function<void(int, int)> next = [&](int c, int left) {
            if (left == 0) return;
            kvs[static_cast<std::size_t>(c)].async_update(prefix + "hot", increment, [&, c, left](error_code ec, baton::kv_write_result r) {
                ++done;
                contended_requests += r.requests;
                if (ec) ++contended_failed;
                else ++contended_ok;
                next(c, left - 1);
            });
        };
        auto const t0 = clock_type::now();
        for (int c = 0; c < clients; ++c) next(c, n / clients + (c < n % clients ? 1 : 0));
        if (!run_until(ioc, [&] { return done == n; }, 300s)) die("contended updates timed out");
        contended_ms = ms_since(t0);
        std::optional<baton::kv_entry> e;
        bool got = false;
        kvs[0].async_get(prefix + "hot", [&](error_code ec, std::optional<baton::kv_entry> v) {
            if (ec) die("get: " + ec.message());
            e = std::move(v);
            got = true;
        });
        run_until(ioc, [&] { return got; }, 30s);
        final_count = e ? std::stoull(e->value) : 0;
        if (final_count != static_cast<std::uint64_t>(contended_ok)) die("contended: final count differs from updates done");
    }
    // (fenced) a new holder's first write, then n more with its token.
    unsigned first_write = 0, next_writes = 0;
    {
        baton::basic_fenced<Backend> f(ioc.get_executor(), make());
        for (int i = 0; i <= n; ++i) {
            bool done = false;
            f.async_write(prefix + "fenced", std::to_string(i), 7, [&](error_code ec, baton::fenced_write_result r) {
                if (ec) die("fenced write: " + ec.message() + " " + r.diag.to_string());
                (i == 0 ? first_write : next_writes) += r.requests;
                done = true;
            });
            if (!run_until(ioc, [&] { return done; }, 30s)) die("fenced write timed out");
        }
    }
    std::printf("{\"harness\":\"baton_kv\",\"store\":\"%s\",\"n\":%d,\"clients\":%d,"
                "\"floor_ops_per_s\":%.1f,\"update_ops_per_s\":%.1f,\"update_vs_floor\":%.2f,\"requests_per_update\":%.2f,"
                "\"contended_ops_per_s\":%.1f,\"contended_vs_floor\":%.2f,\"contended_requests_per_update\":%.2f,"
                "\"contended_done\":%d,\"contended_failed\":%d,\"final_count\":%" PRIu64 ","
                "\"fenced_first_write_requests\":%u,\"fenced_requests_per_write\":%.2f}\n",
                store_name.c_str(), n, clients, rate(n, floor_ms), rate(n, update_ms), floor_ms / update_ms,
                double(update_requests) / n, rate(contended_ok, contended_ms), floor_ms / n / (contended_ms / std::max(1, contended_ok)),
                double(contended_requests) / std::max(1, contended_ok), contended_ok, contended_failed, final_count, first_write,
                double(next_writes) / n);
    return 0;
}

int cmd_kv(args const& a) {
    asio::io_context ioc(1);
    auto const store = a.str("store", "ddb");
    if (store == "ddb") {
        ensure_table();
        return run_kv_figure<baton::dynamodb_backend>(ioc, [&] { return baton::dynamodb_backend(ioc.get_executor(), ddb_params()); },
                                                      "dynalite", a);
    }
    if (store == "s3") {
        baton::s3_backend_params const p = s3_params(a);
        {
            baton::s3_backend b(ioc.get_executor(), p);
            std::optional<error_code> done;
            b.async_create_bucket([&](error_code ec, baton::diagnostics) { done = ec; });
            if (!run_until(ioc, [&] { return done.has_value(); }, 30s)) die("CreateBucket did not complete in 30 s");
        }
        // One backend per client, probed once each (as separate processes would be) before timing starts.
        return run_kv_figure<baton::s3_backend>(ioc, [&] {
            baton::s3_backend b(ioc.get_executor(), p);
            std::optional<error_code> done;
            b.async_probe([&](error_code ec, baton::capabilities) { done = ec; });
            if (!run_until(ioc, [&] { return done.has_value(); }, 30s) || *done) die("probe failed");
            return b;
        }, "rgw", a);
    }
    die("--store must be ddb or s3");
}

// ---- the commit protocol: put-if-absent and reads, composed and native -------------------

// Any record store, with every request it sends counted (the protocol's own cleanups included).
template <class B>
class counted {
public:
    using executor_type = typename B::executor_type;
    counted(B b, std::shared_ptr<std::uint64_t> n) : b_(std::move(b)), n_(std::move(n)) {}
    executor_type get_executor() const { return b_.get_executor(); }
    template <class T> auto async_get(std::string k, T&& t) { ++*n_; return b_.async_get(std::move(k), std::forward<T>(t)); }
    template <class T> auto async_put(std::string k, std::string v, baton::precondition pc, T&& t) {
        ++*n_;
        return b_.async_put(std::move(k), std::move(v), std::move(pc), std::forward<T>(t));
    }
    template <class T> auto async_erase(std::string k, baton::precondition pc, T&& t) {
        ++*n_;
        return b_.async_erase(std::move(k), std::move(pc), std::forward<T>(t));
    }
    template <class T> auto async_list(std::string p, std::string a, std::size_t l, T&& t) {
        ++*n_;
        return b_.async_list(std::move(p), std::move(a), l, std::forward<T>(t));
    }
    template <class T> auto async_probe(T&& t) { return b_.async_probe(std::forward<T>(t)); }

private:
    B b_;
    std::shared_ptr<std::uint64_t> n_;
};

struct commit_figure {
    double commits_per_s = 0, requests_per_commit = 0, gets_per_s = 0, requests_per_get = 0;
};

// n put-if-absent of fresh keys, one after another, then n reads of them; requests counted by `sent`.
template <class Store>
commit_figure run_commits(asio::io_context& ioc, Store& store, std::uint64_t const& sent, int n, std::string const& prefix) {
    commit_figure f;
    std::uint64_t const before_puts = sent;
    auto const t0 = clock_type::now();
    for (int i = 0; i < n; ++i) {
        bool done = false;
        store.async_put(prefix + std::to_string(i) + ".json", "{\"entry\":" + std::to_string(i) + "}", baton::precondition::absent(),
                        [&](error_code ec, baton::put_result r) {
                            if (ec) die("put-if-absent: " + ec.message() + " " + r.diag.to_string());
                            done = true;
                        });
        if (!run_until(ioc, [&] { return done; }, 30s)) die("put-if-absent timed out");
    }
    double const put_ms = ms_since(t0);
    run_until(ioc, [] { return false; }, 200ms); // cleanups in flight land before the reads are counted
    f.commits_per_s = n / (put_ms / 1000.0);
    f.requests_per_commit = double(sent - before_puts) / n;
    std::uint64_t const before_gets = sent;
    auto const t1 = clock_type::now();
    for (int i = 0; i < n; ++i) {
        bool done = false;
        store.async_get(prefix + std::to_string(i) + ".json", [&](error_code ec, baton::get_result r) {
            if (ec || !r.found) die("get: " + ec.message() + " " + r.diag.to_string());
            done = true;
        });
        if (!run_until(ioc, [&] { return done; }, 30s)) die("get timed out");
    }
    f.gets_per_s = n / (ms_since(t1) / 1000.0);
    f.requests_per_get = double(sent - before_gets) / n;
    return f;
}

int cmd_commit(args const& a) {
    int const n = static_cast<int>(a.num("n", 300));
    asio::io_context ioc(1);
    ensure_table();
    auto make_bucket = [&](baton::s3_backend_params const& p) {
        baton::s3_backend b(ioc.get_executor(), p);
        std::optional<error_code> done;
        b.async_create_bucket([&](error_code ec, baton::diagnostics) { done = ec; });
        if (!run_until(ioc, [&] { return done.has_value(); }, 30s)) die("CreateBucket did not complete in 30 s");
    };
    std::string const prefix = "_delta_log/" + random_suffix() + "/";
    // Native: RGW's own conditional PUT (probed first, as a lease would).
    baton::s3_backend_params const rgw = s3_params(a);
    make_bucket(rgw);
    auto native_sent = std::make_shared<std::uint64_t>(0);
    counted<baton::s3_backend> native(baton::s3_backend(ioc.get_executor(), rgw), native_sent);
    {
        std::optional<error_code> done;
        native.async_probe([&](error_code ec, baton::capabilities) { done = ec; });
        if (!run_until(ioc, [&] { return done.has_value(); }, 30s) || *done) die("RGW probe failed");
    }
    auto const nat = run_commits(ioc, native, *native_sent, n, prefix);
    // Composed: objects in s3rver (no preconditions), commits in dynalite; and objects in RGW, commits in dynalite.
    baton::s3_backend_params s3rver;
    s3rver.endpoint = need_env("BATON_S3RVER_ENDPOINT");
    s3rver.region = "us-east-1";
    s3rver.credentials.access_key_id = "S3RVER";
    s3rver.credentials.secret_access_key = "S3RVER";
    s3rver.bucket = a.str("bucket", "baton-bench");
    make_bucket(s3rver);
    using composed = baton::basic_commit_protocol<counted<baton::s3_backend>, counted<baton::dynamodb_backend>>;
    auto run_composed = [&](baton::s3_backend_params const& objects, std::string const& sub) {
        auto sent = std::make_shared<std::uint64_t>(0);
        composed store(counted<baton::s3_backend>(baton::s3_backend(ioc.get_executor(), objects), sent),
                       counted<baton::dynamodb_backend>(baton::dynamodb_backend(ioc.get_executor(), ddb_params()), sent));
        std::optional<error_code> done;
        store.async_probe([&](error_code ec, baton::capabilities) { done = ec; });
        if (!run_until(ioc, [&] { return done.has_value(); }, 30s) || *done) die("composed probe failed");
        // The lock store's probe, which the first write would run, is out of the timing too.
        bool warm = false;
        store.async_put(prefix + "warm", "x", baton::precondition::none(), [&](error_code ec, baton::put_result r) {
            if (ec) die("warm-up put: " + r.diag.to_string());
            warm = true;
        });
        if (!run_until(ioc, [&] { return warm; }, 30s)) die("warm-up timed out");
        return run_commits(ioc, store, *sent, n, prefix + sub);
    };
    auto const on_s3rver = run_composed(s3rver, "s3rver/");
    auto const on_rgw = run_composed(rgw, "rgw/");
    std::printf("{\"harness\":\"baton_commit\",\"n\":%d,"
                "\"native_rgw_commits_per_s\":%.1f,\"native_rgw_requests_per_commit\":%.2f,\"native_rgw_gets_per_s\":%.1f,\"native_rgw_requests_per_get\":%.2f,"
                "\"s3rver_dynalite_commits_per_s\":%.1f,\"s3rver_dynalite_requests_per_commit\":%.2f,\"s3rver_dynalite_gets_per_s\":%.1f,\"s3rver_dynalite_requests_per_get\":%.2f,"
                "\"rgw_dynalite_commits_per_s\":%.1f,\"rgw_dynalite_requests_per_commit\":%.2f,\"rgw_dynalite_gets_per_s\":%.1f,\"rgw_dynalite_requests_per_get\":%.2f,"
                "\"rgw_dynalite_vs_native_commits\":%.2f,\"rgw_dynalite_vs_native_gets\":%.2f}\n",
                n, nat.commits_per_s, nat.requests_per_commit, nat.gets_per_s, nat.requests_per_get, on_s3rver.commits_per_s,
                on_s3rver.requests_per_commit, on_s3rver.gets_per_s, on_s3rver.requests_per_get, on_rgw.commits_per_s,
                on_rgw.requests_per_commit, on_rgw.gets_per_s, on_rgw.requests_per_get, on_rgw.commits_per_s / nat.commits_per_s,
                on_rgw.gets_per_s / nat.gets_per_s);
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: store_bench ddb-cycle|ddb-paired|ddb-contend|s3-cycle|http-ddb|http-local|kv|commit [--name value]...\n"
                             "       (see the comment at the top of bench/store_bench.cpp)\n");
        return 2;
    }
    std::string const cmd = argv[1];
    args const a(argc, argv, 2);
    try {
        if (cmd == "ddb-cycle") return cmd_ddb_cycle(a);
        if (cmd == "ddb-contend") return cmd_ddb_contend(a);
        if (cmd == "ddb-contend-child") return cmd_contend_child(a);
        if (cmd == "s3-cycle") return cmd_s3_cycle(a);
        if (cmd == "http-ddb") return cmd_http_ddb(a);
        if (cmd == "ddb-paired") return cmd_ddb_paired(a);
        if (cmd == "http-local") return cmd_http_local(a);
        if (cmd == "kv") return cmd_kv(a);
        if (cmd == "commit") return cmd_commit(a);
    } catch (std::exception const& e) {
        die(cmd + ": " + e.what());
    }
    die("unknown command '" + cmd + "'");
}
