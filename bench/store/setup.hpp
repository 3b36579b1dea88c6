// Part of store_bench (bench/store/main.cpp): arguments, environment, the client's cost (CPU,
// allocations) and running the io_context.
#ifndef BATON_BENCH_STORE_SETUP_HPP
#define BATON_BENCH_STORE_SETUP_HPP

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


} // namespace

#endif
