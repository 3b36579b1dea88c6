// file_backend in real time: the lease scenarios on a directory with short TTLs,
// and races between real processes (fork) on one key in one directory: lease
// terms that must never overlap, and create-if-absent / replace-if-matching
// that must have exactly one winner.
//
//   build/tests/baton_integration -ts='file*'
//
// Needs no servers. Every wait is bounded (io_context runs, child processes).
#include <baton/baton.hpp>

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using baton::errc;
using baton::error_code;
using baton::precondition;
using steady = std::chrono::steady_clock;

// Short real-time settings: renew every ~200 ms, stop acting at 400 ms, take over after 1.2 s.
constexpr auto ttl = 600ms;
constexpr auto poll_every = 50ms;
constexpr double skew = 2.0;
constexpr auto takeover_window = 1200ms; // ttl x skew

struct temp_dir {
    fs::path path;
    temp_dir() {
        std::string tmpl = (fs::temp_directory_path() / "baton-file-it-XXXXXX").string();
        REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
        path = tmpl;
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    temp_dir(temp_dir const&) = delete;
    temp_dir& operator=(temp_dir const&) = delete;
};

baton::file_backend_params params_for(fs::path const& root) {
    baton::file_backend_params p;
    p.root = root;
    return p;
}

baton::lease_options options(std::string owner) {
    baton::lease_options o;
    o.key = "jobs/nightly";
    o.owner = std::move(owner);
    o.value = "addr-of-" + o.owner;
    o.ttl = ttl;
    o.poll_interval = poll_every;
    o.max_clock_rate_skew = skew;
    return o;
}

// Runs `ioc` until `done()` or `limit` passes; false on timeout.
template <class Pred>
bool run_until(asio::io_context& ioc, Pred done, steady::duration limit) {
    auto const end = steady::now() + limit;
    while (!done()) {
        auto const now = steady::now();
        if (now >= end) return false;
        if (ioc.stopped()) ioc.restart();
        if (ioc.run_one_for(std::min<steady::duration>(end - now, 20ms)) == 0) std::this_thread::sleep_for(1ms);
    }
    return true;
}

// Lets real time pass while timers and renewals run.
void run_for(asio::io_context& ioc, steady::duration d) {
    auto const end = steady::now() + d;
    run_until(ioc, [&] { return steady::now() >= end; }, d + 1s);
}

struct acquired {
    std::optional<error_code> ec;
    baton::lease_grant grant;
    steady::time_point at{};
};
auto on_acquired(acquired& r) {
    return [&r](error_code ec, baton::lease_grant g) {
        r.ec = ec;
        r.grant = g;
        r.at = steady::now();
    };
}

error_code release(asio::io_context& ioc, baton::file_lease& l) {
    std::optional<error_code> out;
    l.async_release([&](error_code ec) { out = ec; });
    REQUIRE(run_until(ioc, [&] { return out.has_value(); }, 5s));
    return *out;
}

std::optional<baton::lease_info> inspect(asio::io_context& ioc, baton::file_lease& l) {
    std::optional<std::pair<error_code, std::optional<baton::lease_info>>> out;
    l.async_inspect([&](error_code ec, std::optional<baton::lease_info> i) { out.emplace(ec, std::move(i)); });
    REQUIRE(run_until(ioc, [&] { return out.has_value(); }, 5s));
    REQUIRE_FALSE(out->first);
    return out->second;
}

// ---- child processes --------------------------------------------------------

std::int64_t mono_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void sleep_until_ns(std::int64_t t) {
    timespec ts{};
    ts.tv_sec = t / 1000000000;
    ts.tv_nsec = t % 1000000000;
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
}

// Runs `body` in a child process, which exits with its result (never returning into doctest).
template <class Body>
pid_t spawn(Body&& body) {
    std::fflush(nullptr);
    pid_t const pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int rc = 99;
        try {
            rc = body();
        } catch (std::exception const& e) {
            std::fprintf(stderr, "child %d: exception: %s\n", int(::getpid()), e.what());
        } catch (...) {
            std::fprintf(stderr, "child %d: unknown exception\n", int(::getpid()));
        }
        std::fflush(nullptr);
        ::_exit(rc); // no destructors: the parent owns the temporary directory
    }
    return pid;
}

// Waits for every child (bounded); kills the ones still running at the deadline. pid -> exit status (-1: killed/abnormal).
std::map<pid_t, int> wait_all(std::vector<pid_t> const& pids, steady::duration limit) {
    std::map<pid_t, int> status;
    auto const end = steady::now() + limit;
    while (status.size() < pids.size() && steady::now() < end) {
        int st = 0;
        pid_t const p = ::waitpid(-1, &st, WNOHANG);
        if (p > 0) {
            if (std::find(pids.begin(), pids.end(), p) != pids.end()) status[p] = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        } else {
            std::this_thread::sleep_for(5ms);
        }
    }
    for (pid_t p : pids) {
        if (status.count(p)) continue;
        ::kill(p, SIGKILL); // only our own children, by pid
        ::waitpid(p, nullptr, 0);
        status[p] = -1;
    }
    return status;
}

// One line per write(2) on an O_APPEND descriptor: lines from many processes never interleave.
void log_line(int fd, std::string const& line) {
    std::string const l = line + "\n";
    [[maybe_unused]] auto n = ::write(fd, l.data(), l.size());
}

// A holder that crashes: acquires, logs its term, and dies without releasing (no destructors).
int crashing_holder(fs::path const& dir, fs::path const& log) {
    asio::io_context ioc;
    baton::file_backend store(ioc.get_executor(), params_for(dir));
    int const log_fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (log_fd < 0) return 10;
    baton::file_lease lease(ioc.get_executor(), store, options("crasher"));
    acquired a;
    lease.async_try_acquire(on_acquired(a));
    if (!run_until(ioc, [&] { return a.ec.has_value(); }, 5s) || *a.ec) return 13;
    std::string const me = " " + std::to_string(::getpid());
    log_line(log_fd, "start " + std::to_string(lease.fencing_token()) + " " + std::to_string(mono_ns()) + me);
    run_for(ioc, 20ms);
    log_line(log_fd, "end " + std::to_string(lease.fencing_token()) + " " + std::to_string(mono_ns()) + me);
    std::fflush(nullptr);
    ::_exit(0); // as if killed: the record stays, unreleased, and nothing is cleaned up
}

// A child's life in the lease race: `rounds` terms, each acquired (waiting, or trying
// repeatedly), logged, held briefly with renewals running, logged, and released.
int lease_racer(fs::path const& dir, fs::path const& log, int index, int rounds) {
    asio::io_context ioc;
    baton::file_backend store(ioc.get_executor(), params_for(dir));
    int const log_fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (log_fd < 0) return 10;
    std::mt19937 rng(static_cast<unsigned>(::getpid()) * 2654435761u);
    auto pause = [&](int lo_ms, int hi_ms) {
        run_for(ioc, std::chrono::milliseconds(std::uniform_int_distribution<int>(lo_ms, hi_ms)(rng)));
    };
    auto const give_up = steady::now() + 20s;
    for (int r = 0; r < rounds; ++r) {
        auto lease = std::make_unique<baton::file_lease>(ioc.get_executor(), store,
                                                         options("child-" + std::to_string(index)));
        bool const trying = (index + r) % 3 == 0; // some rounds try once in a loop, others wait
        for (;;) {
            if (steady::now() > give_up) {
                std::fprintf(stderr, "child %d: no lease within 20 s\n", index);
                return 11;
            }
            acquired a;
            if (trying) {
                lease->async_try_acquire(on_acquired(a));
            } else {
                baton::acquire_options o;
                o.timeout = 15s;
                lease->async_acquire(o, on_acquired(a));
            }
            if (!run_until(ioc, [&] { return a.ec.has_value(); }, 16s)) return 12;
            if (!*a.ec) break;
            if (*a.ec == errc::held_by_other || *a.ec == errc::precondition_failed) {
                pause(5, 40);
                continue;
            }
            std::fprintf(stderr, "child %d: acquire failed: %s (%s)\n", index, a.ec->message().c_str(),
                         lease->last_diagnostics().to_string().c_str());
            return 13;
        }
        std::uint64_t const token = lease->fencing_token();
        std::string const me = " " + std::to_string(::getpid());
        log_line(log_fd, "start " + std::to_string(token) + " " + std::to_string(mono_ns()) + me);
        pause(5, 30); // protected work; renewals keep running
        bool const held = lease->is_held();
        log_line(log_fd, std::string(held ? "end " : "late-end ") + std::to_string(token) + " " +
                             std::to_string(mono_ns()) + me);
        std::optional<error_code> rel;
        lease->async_release([&](error_code ec) { rel = ec; });
        if (!run_until(ioc, [&] { return rel.has_value(); }, 5s)) return 14;
        if (*rel) {
            std::fprintf(stderr, "child %d: release failed: %s\n", index, rel->message().c_str());
            return 15;
        }
        lease.reset();
        pause(0, 20);
    }
    ::close(log_fd);
    return 0;
}

struct term {
    std::uint64_t token = 0;
    std::int64_t start = -1, end = -1;
    std::string start_pid, end_pid;
    int starts = 0, ends = 0;
    bool late = false;
};

} // namespace

TEST_SUITE("file") {

TEST_CASE("acquire, renew and release round trips on a directory, in real time") {
    temp_dir dir;
    asio::io_context ioc;
    baton::file_backend store_a(ioc.get_executor(), params_for(dir.path));
    baton::file_backend store_b(ioc.get_executor(), params_for(dir.path));
    baton::file_lease a(ioc.get_executor(), store_a, options("a"));
    CHECK_FALSE(inspect(ioc, a).has_value());
    auto const before = store_a.counts();

    acquired got;
    a.async_acquire(on_acquired(got));
    REQUIRE(run_until(ioc, [&] { return got.ec.has_value(); }, 5s));
    REQUIRE_FALSE(*got.ec);
    CHECK(got.grant.fencing_token == 1);
    CHECK_FALSE(got.grant.took_over);
    CHECK(store_a.counts().puts == before.puts + 1); // a free lease is one put, and no read
    CHECK(store_a.counts().gets == before.gets);

    // Renewals keep it held well past the ttl; each is one put under the last version.
    auto const v1 = inspect(ioc, a)->version;
    run_for(ioc, 1500ms);
    CHECK(a.is_held());
    CHECK(a.state() == baton::lease_state::held);
    auto const renewals = store_a.counts().puts - before.puts - 1;
    CHECK(renewals >= 5);
    CHECK(renewals <= 10);
    auto const info = inspect(ioc, a);
    REQUIRE(info.has_value());
    CHECK(info->version != v1);
    CHECK(info->fencing_token == 1);
    CHECK(info->owner == a.owner());
    CHECK(info->value == "addr-of-a");
    CHECK_FALSE(info->released);

    // Meanwhile a contender trying once is refused.
    baton::file_lease b(ioc.get_executor(), store_b, options("b"));
    acquired refused;
    b.async_try_acquire(on_acquired(refused));
    REQUIRE(run_until(ioc, [&] { return refused.ec.has_value(); }, 5s));
    CHECK(*refused.ec == errc::held_by_other);

    // Release keeps the token in a released marker; the next holder gets the next token at once.
    REQUIRE_FALSE(release(ioc, a));
    CHECK(a.state() == baton::lease_state::released);
    auto const marker = inspect(ioc, b);
    REQUIRE(marker.has_value());
    CHECK(marker->released);
    CHECK(marker->fencing_token == 1);
    acquired next;
    auto const t0 = steady::now();
    b.async_try_acquire(on_acquired(next));
    REQUIRE(run_until(ioc, [&] { return next.ec.has_value(); }, 5s));
    REQUIRE_FALSE(*next.ec);
    CHECK(next.grant.fencing_token == 2);
    CHECK_FALSE(next.grant.took_over);
    CHECK(next.at - t0 < 200ms);
    REQUIRE_FALSE(release(ioc, b));
}

TEST_CASE("a holder destroyed without release is taken over after ttl x skew, not before") {
    temp_dir dir;
    asio::io_context ioc;
    baton::file_backend store(ioc.get_executor(), params_for(dir.path));
    auto a = std::make_unique<baton::file_lease>(ioc.get_executor(), store, options("a"));
    acquired first;
    a->async_acquire(on_acquired(first));
    REQUIRE(run_until(ioc, [&] { return first.ec.has_value(); }, 5s));
    REQUIRE_FALSE(*first.ec);
    run_for(ioc, 250ms); // at least one renewal
    a.reset();           // abandoned: the record stays, unreleased
    ioc.poll();

    baton::file_lease b(ioc.get_executor(), store, options("b"));
    acquired taken;
    auto const t0 = steady::now();
    b.async_acquire(on_acquired(taken));
    REQUIRE(run_until(ioc, [&] { return taken.ec.has_value(); }, 5s));
    REQUIRE_FALSE(*taken.ec);
    auto const waited = taken.at - t0;
    MESSAGE("takeover after " << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() << " ms");
    CHECK(waited >= takeover_window);
    CHECK(waited < takeover_window + 800ms);
    CHECK(taken.grant.took_over);
    CHECK(taken.grant.fencing_token == first.grant.fencing_token + 1);
    REQUIRE_FALSE(release(ioc, b));
}

TEST_CASE("a release hands the lease to a waiting contender within a poll; tokens strictly increase") {
    temp_dir dir;
    asio::io_context ioc;
    baton::file_backend store(ioc.get_executor(), params_for(dir.path));
    std::uint64_t last_token = 0;
    auto holder = std::make_unique<baton::file_lease>(ioc.get_executor(), store, options("p0"));
    acquired got;
    holder->async_acquire(on_acquired(got));
    REQUIRE(run_until(ioc, [&] { return got.ec.has_value(); }, 5s));
    REQUIRE_FALSE(*got.ec);
    last_token = got.grant.fencing_token;
    for (int i = 1; i <= 5; ++i) {
        CAPTURE(i);
        auto next = std::make_unique<baton::file_lease>(ioc.get_executor(), store, options("p" + std::to_string(i)));
        acquired waiting;
        next->async_acquire(on_acquired(waiting));
        run_for(ioc, 300ms); // polling, while the holder renews
        REQUIRE_FALSE(waiting.ec.has_value());
        CHECK(holder->is_held());
        REQUIRE_FALSE(release(ioc, *holder));
        auto const released_at = steady::now();
        REQUIRE(run_until(ioc, [&] { return waiting.ec.has_value(); }, 5s));
        REQUIRE_FALSE(*waiting.ec);
        CHECK(waiting.at - released_at <= poll_every + 150ms);
        CHECK_FALSE(waiting.grant.took_over);
        CHECK(waiting.grant.fencing_token > last_token);
        last_token = waiting.grant.fencing_token;
        holder = std::move(next);
    }
    CHECK(last_token == 6);
    REQUIRE_FALSE(release(ioc, *holder));
}

TEST_CASE("an election on a directory: one leader, observed by the others, handed over on resignation") {
    temp_dir dir;
    asio::io_context ioc;
    baton::file_backend store(ioc.get_executor(), params_for(dir.path));
    baton::file_election x(ioc.get_executor(), store, options("x"));
    baton::file_election y(ioc.get_executor(), store, options("y"));
    acquired lx, ly;
    x.async_campaign(on_acquired(lx));
    REQUIRE(run_until(ioc, [&] { return lx.ec.has_value(); }, 5s));
    REQUIRE_FALSE(*lx.ec);
    y.async_campaign(on_acquired(ly));
    run_for(ioc, 200ms);
    CHECK_FALSE(ly.ec.has_value());
    std::optional<std::pair<error_code, std::optional<baton::lease_info>>> leader;
    y.async_leader([&](error_code ec, std::optional<baton::lease_info> i) { leader.emplace(ec, std::move(i)); });
    REQUIRE(run_until(ioc, [&] { return leader.has_value(); }, 5s));
    REQUIRE_FALSE(leader->first);
    REQUIRE(leader->second.has_value());
    CHECK(leader->second->value == "addr-of-x");
    std::optional<error_code> resigned;
    x.async_resign([&](error_code ec) { resigned = ec; });
    REQUIRE(run_until(ioc, [&] { return ly.ec.has_value(); }, 5s));
    REQUIRE(resigned.has_value());
    CHECK_FALSE(*resigned);
    CHECK_FALSE(*ly.ec);
    CHECK(ly.grant.fencing_token == lx.grant.fencing_token + 1);
    std::optional<error_code> resigned_y;
    y.async_resign([&](error_code ec) { resigned_y = ec; });
    REQUIRE(run_until(ioc, [&] { return resigned_y.has_value(); }, 5s));
}

TEST_CASE("8 processes racing for one lease: one holder per term, tokens increase, terms never overlap") {
    temp_dir dir;
    fs::path const store_dir = dir.path / "store";
    fs::path const log = dir.path / "holders.log";
    { std::ofstream(log).flush(); }
    constexpr int children = 8, rounds = 3;
    // First term: a process that dies holding the lease, so the racers must take over across processes.
    pid_t const crasher = spawn([&] { return crashing_holder(store_dir, log); });
    auto const crashed = wait_all({crasher}, 10s);
    REQUIRE(crashed.at(crasher) == 0);
    std::vector<pid_t> pids;
    for (int i = 0; i < children; ++i) pids.push_back(spawn([&, i] { return lease_racer(store_dir, log, i, rounds); }));
    auto const status = wait_all(pids, 25s);
    for (auto const& [pid, st] : status) {
        CAPTURE(pid);
        CHECK(st == 0);
    }

    // Parse the log: "start|end|late-end TOKEN MONOTONIC_NS PID".
    std::map<std::uint64_t, term> terms;
    std::ifstream in(log);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string what, pid;
        std::uint64_t token = 0;
        std::int64_t ns = 0;
        REQUIRE_MESSAGE(static_cast<bool>(ls >> what >> token >> ns >> pid), line);
        auto& t = terms[token];
        t.token = token;
        if (what == "start") {
            ++t.starts;
            t.start = ns;
            t.start_pid = pid;
        } else {
            ++t.ends;
            t.end = ns;
            t.end_pid = pid;
            t.late = what == "late-end";
        }
    }
    CHECK(terms.size() == std::size_t(1 + children * rounds));
    std::vector<term> by_start;
    for (auto const& [token, t] : terms) {
        CAPTURE(token);
        CHECK(t.starts == 1); // exactly one holder per term
        CHECK(t.ends == 1);
        CHECK(t.start_pid == t.end_pid);
        CHECK(t.start <= t.end);
        CHECK_FALSE(t.late); // every holder was still within its renew deadline when it stopped
        by_start.push_back(t);
    }
    std::sort(by_start.begin(), by_start.end(), [](term const& a, term const& b) { return a.start < b.start; });
    REQUIRE(by_start.size() >= 2);
    CHECK(by_start[0].token == 1);
    CHECK(by_start[0].start_pid == std::to_string(crasher));
    // The crashed holder's term was taken over only after the takeover window (its acquiring
    // write came just before its start line, hence the small allowance).
    auto const takeover_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(takeover_window - 20ms).count();
    CHECK(by_start[1].start - by_start[0].start >= takeover_ns);
    std::int64_t longest_handover = 0;
    for (std::size_t i = 1; i < by_start.size(); ++i) {
        CAPTURE(i);
        CHECK(by_start[i].token > by_start[i - 1].token);      // tokens strictly increase in start order
        CHECK(by_start[i].start >= by_start[i - 1].end);       // intervals never overlap
        CHECK(by_start[i].token == by_start[i - 1].token + 1); // every change of holder is exactly +1
        if (i > 1) longest_handover = std::max(longest_handover, by_start[i].start - by_start[i - 1].end);
    }
    MESSAGE(by_start.size() << " terms; takeover after the crash "
                            << (by_start[1].start - by_start[0].start) / 1000000 << " ms; longest release hand-over "
                            << longest_handover / 1000000 << " ms");
}

TEST_CASE("32 processes racing put(absent), then put(matches), on one key: exactly one winner each time") {
    temp_dir dir;
    constexpr int contenders = 32;
    asio::io_context ioc;
    baton::file_backend store(ioc.get_executor(), params_for(dir.path));
    auto get = [&](std::string const& key) {
        std::optional<std::pair<error_code, baton::get_result>> out;
        store.async_get(key, [&](error_code ec, baton::get_result r) { out.emplace(ec, std::move(r)); });
        REQUIRE(run_until(ioc, [&] { return out.has_value(); }, 5s));
        REQUIRE_FALSE(out->first);
        return std::move(out->second);
    };

    for (int round = 0; round < 3; ++round) {
        CAPTURE(round);
        std::string const key = "race/" + std::to_string(round);
        // Even rounds create; odd rounds replace the version every contender read.
        bool const replace = round % 2 == 1;
        std::string base_version;
        if (replace) {
            std::optional<std::pair<error_code, baton::put_result>> out;
            store.async_put(key, "base", precondition::absent(),
                            [&](error_code ec, baton::put_result r) { out.emplace(ec, std::move(r)); });
            REQUIRE(run_until(ioc, [&] { return out.has_value(); }, 5s));
            REQUIRE_FALSE(out->first);
            base_version = out->second.version;
        }
        std::int64_t const start_at = mono_ns() + 300'000'000; // everyone forked and waiting by then
        std::vector<pid_t> pids;
        std::map<pid_t, int> index_of;
        for (int i = 0; i < contenders; ++i) {
            pid_t const p = spawn([&, i] {
                asio::io_context cioc;
                baton::file_backend s(cioc.get_executor(), params_for(dir.path));
                auto const pc = replace ? precondition::matches(base_version) : precondition::absent();
                sleep_until_ns(start_at);
                std::optional<error_code> res;
                s.async_put(key, "winner " + std::to_string(i), pc, [&](error_code ec, baton::put_result) { res = ec; });
                cioc.run_for(10s);
                if (!res) return 3;
                if (!*res) return 0;
                return *res == errc::precondition_failed ? 1 : 2;
            });
            pids.push_back(p);
            index_of[p] = i;
        }
        auto const status = wait_all(pids, 20s);
        int winners = 0, losers = 0, winner = -1;
        for (auto const& [pid, st] : status) {
            if (st == 0) {
                ++winners;
                winner = index_of[pid];
            } else if (st == 1) {
                ++losers;
            }
        }
        CHECK(winners == 1);
        CHECK(losers == contenders - 1);
        auto const r = get(key);
        REQUIRE(r.found.has_value());
        CHECK(r.found->body == "winner " + std::to_string(winner));
        CHECK(r.found->version != base_version);
    }
    // Nothing but records and their lock files is left: no temporary files from the losers.
    for (auto const& e : fs::directory_iterator(dir.path)) {
        auto const name = e.path().filename().string();
        CHECK((name.starts_with("r.") || name.starts_with(".lock.r.")));
    }
}

}
