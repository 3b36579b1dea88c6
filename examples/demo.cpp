// baton demo: three candidates elect a leader on the in-process memory store.
//
// Everything runs on virtual time (baton::sim), so the two minutes of the
// story take milliseconds and every run prints the same timeline:
//   - alice wins and runs protected work under her fencing token;
//   - alice's process freezes (think: a long GC pause) past her lease;
//   - the others wait until alice's record has stayed unchanged for
//     ttl x max_clock_rate_skew on their own clocks, then one takes over;
//   - alice resumes, finds her lease invalid by her own clock, and her
//     protected work is cancelled;
//   - the new leader's renewal is applied but its response is lost: it reads
//     back, finds its nonce, and keeps leading;
//   - the leader resigns and the next candidate takes over at once.

#include <baton/baton.hpp>
#include <baton/sim.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using store_type = baton::sim::faulty_backend<baton::memory_backend>;
using election_type = baton::basic_election<store_type, baton::sim::manual_clock>;
using vclock = baton::sim::virtual_clock;
using vtimer = asio::basic_waitable_timer<vclock, asio::wait_traits<vclock>, asio::any_io_executor>;

namespace {

double seconds_now() { return std::chrono::duration<double>(vclock::now().time_since_epoch()).count(); }

bool quiet = false;

void say(std::string const& who, std::string const& what) {
    if (quiet) return;
    std::printf("%8.3fs  %-8s %s\n", seconds_now(), who.c_str(), what.c_str());
}

std::string secs(std::chrono::nanoseconds d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s", std::chrono::duration<double>(d).count());
    return buf;
}

struct candidate {
    std::string name;
    baton::sim::pausable_executor ex;
    baton::sim::manual_clock clock;
    store_type store;
    std::optional<election_type> election;
    std::vector<std::uint64_t> terms;
};

asio::awaitable<void> sleep_for(candidate& c, std::chrono::nanoseconds d) {
    vtimer t(co_await asio::this_coro::executor);
    t.expires_at(c.clock.timer_expiry(d));
    co_await t.async_wait(asio::use_awaitable);
}

// Campaign, lead with protected work until the lease is lost or resigned, repeat.
asio::awaitable<void> run_candidate(candidate& c, std::chrono::nanoseconds start_after) {
    co_await sleep_for(c, start_after);
    for (int round = 0; round < 3; ++round) {
        say(c.name, "campaigns");
        auto ec = co_await baton::run_while_held(c.election->lease(), [&](baton::lease_grant g) -> asio::awaitable<void> {
            c.terms.push_back(g.fencing_token);
            say(c.name, "LEADS with fencing token " + std::to_string(g.fencing_token) +
                            (g.took_over ? " (took over a silent leader)" : ""));
            for (int batch = 1;; ++batch) {
                co_await sleep_for(c, 4s);
                if (!c.election->is_leader()) {
                    // Resumed after a pause: by my own clock the lease may have
                    // expired. Never act on it; the loss notice follows.
                    say(c.name, "resumed, but my lease is no longer valid by my own clock: not acting");
                    continue;
                }
                say(c.name, "writes batch " + std::to_string(batch) + " under token " + std::to_string(g.fencing_token) +
                                " (" + secs(c.election->lease().remaining()) + " left before renew deadline)");
            }
        });
        if (ec == baton::errc::lease_lost) say(c.name, "LOST leadership: protected work cancelled");
        else if (!ec || ec == baton::errc::released) say(c.name, "stepped down (resigned)");
        else say(c.name, "stopped: " + ec.message());
        co_await sleep_for(c, 1s);
    }
}

// Watch the leader from the outside, as a client of the service would.
asio::awaitable<void> observe(candidate& watcher) {
    std::optional<baton::lease_info> known;
    for (;;) {
        auto [ec, leader] = co_await watcher.election->async_wait_for_change(known, asio::as_tuple(asio::use_awaitable));
        if (ec) co_return;
        say("observer", leader ? "leader is now " + leader->owner.substr(0, leader->owner.find('#')) + " (token " +
                                     std::to_string(leader->fencing_token) + ")"
                               : std::string("no leader"));
        known = leader;
    }
}

} // namespace

int main() {
    baton::sim::scheduler sched(2026);
    baton::memory_backend memory(sched.get_executor());
    std::vector<std::unique_ptr<candidate>> cs;
    char const* names[] = {"alice", "bob", "carol"};
    double const rates[] = {1.0, 1.3, 0.8}; // clocks that disagree on how fast time passes (within skew 2)
    for (int i = 0; i < 3; ++i) {
        auto ex = sched.make_participant_executor();
        auto c = std::unique_ptr<candidate>(new candidate{names[i], ex, baton::sim::manual_clock(rates[i]),
                                                          store_type(memory, sched.get_executor(), 100 + i), {}, {}});
        baton::lease_options o;
        o.key = "services/report-generator/leader";
        o.owner = names[i];
        o.value = std::string("10.0.0.") + std::to_string(i + 1) + ":8080";
        o.random_seed = 7 + i;
        c->election.emplace(ex, c->store, o, baton::standard_retry{}, baton::backend_signer{}, c->clock);
        cs.push_back(std::move(c));
    }
    std::printf("baton demo: 3 candidates, ttl 20 s, renew every ~6.7 s, renew deadline 13.3 s, max clock-rate skew 2\n");
    std::printf("clock rates: alice 1.0x, bob 1.3x, carol 0.8x (each measures time on its own clock)\n\n");

    for (int i = 0; i < 3; ++i)
        asio::co_spawn(cs[i]->ex, run_candidate(*cs[i], std::chrono::milliseconds(100 * i)), asio::detached);
    asio::co_spawn(cs[2]->ex, observe(*cs[2]), asio::detached);

    auto leader_now = [&]() -> candidate* {
        for (auto& c : cs)
            if (c->election->is_leader()) return c.get();
        return nullptr;
    };

    sched.run_until(vclock::time_point(10s));
    say("--", "alice's process FREEZES for 55 s (a long GC pause); her clock keeps running");
    cs[0]->ex.freeze();
    sched.run_until(vclock::time_point(65s));
    say("--", "alice's process RESUMES");
    cs[0]->ex.thaw();
    sched.run_until(vclock::time_point(80s));
    if (auto* l = leader_now()) {
        say("--", "network: " + l->name + "'s next write will be APPLIED but its RESPONSE LOST");
        l->store.inject_next(baton::sim::fault_kind::drop_response);
    }
    sched.run_until(vclock::time_point(100s));
    if (auto* l = leader_now()) {
        say("--", l->name + " still leads (token " + std::to_string(l->election->fencing_token()) + "): " +
                      std::to_string(l->store.counts().dropped_responses) +
                      " lost response, settled by reading back the write's nonce");
        say("--", l->name + " RESIGNS (hand-off)");
        l->election->async_resign([](baton::error_code) {});
    }
    sched.run_until(vclock::time_point(110s));

    std::printf("\nterms (fencing tokens) per candidate:");
    std::uint64_t last = 0;
    bool increasing = true;
    std::vector<std::uint64_t> all;
    for (auto& c : cs) {
        std::printf(" %s [", c->name.c_str());
        for (auto t : c->terms) std::printf(" %llu", static_cast<unsigned long long>(t));
        std::printf(" ]");
        all.insert(all.end(), c->terms.begin(), c->terms.end());
    }
    std::sort(all.begin(), all.end());
    for (auto t : all) {
        increasing = increasing && t > last;
        last = t;
    }
    auto counts = memory.counts();
    std::printf("\nevery term had its own, larger token: %s\n", increasing ? "yes" : "NO");
    std::printf("store requests: %llu reads, %llu conditional writes (%llu refused by their precondition)\n",
                static_cast<unsigned long long>(counts.gets), static_cast<unsigned long long>(counts.puts),
                static_cast<unsigned long long>(counts.refused));
    quiet = true;
    // The candidates' coroutines still use their elections: stop them running (freeze their
    // executors) before the elections go, so that none resumes into a destroyed one.
    for (auto& c : cs) c->ex.freeze();
    for (auto& c : cs) c->election.reset();
    sched.run_for(5s);
    return increasing ? 0 : 1;
}
