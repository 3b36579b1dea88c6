// The fenced-write simulation: writers that take over one after another with
// increasing tokens keep writing after they were superseded (as a paused
// holder does), under every fault of the sim kit, writes delivered up to a
// minute after their sender gave up, duplicates, stale reads, and
// cancellations. What the store applied is recorded at the store itself, so
// the checks see exactly what landed, in order:
//
//   (h1) per key, the tokens of applied fenced writes never go down: a write
//        whose token is below one already accepted never lands;
//   (h2) every write reported successful landed, with its token;
//   (h3) every write refused with errc::fenced was below a token the key had
//        accepted by then;
//   (h4) every write completes, and only with a documented outcome (success,
//        fenced, unknown_outcome, operation_aborted, or a transient error
//        once the retry policy gave up); never foreign_record, invalid_*;
//   (h5) per key, one writer's writes land in the order it made them: a write
//        delayed in the network never lands over a later one of the same writer;
//   (h6) what each caller is told is true, to the end of the run: a write reported
//        written landed exactly once; one reported fenced, cancelled or failed never
//        landed and never lands later; unknown_outcome (the only answer allowed when
//        neither is known) at most once.
// In a third of the seeds the fleet is upgraded while it runs: writers start on record format
// 1 (what older versions read) or 2, and those on 1 move to 2 at a random time.
//
// BATON_SIM_SEEDS (a quarter of it) / BATON_SIM_FIRST / BATON_SIM_SEED / BATON_SIM_MAX_FAILURES
// as for the lease suite (test_common/sim_seeds.hpp).

#include <baton/backend/memory.hpp>
#include <baton/recipe/fenced.hpp>
#include <baton/sim.hpp>

#include <doctest/doctest.h>
#include <test_common/recording_backend.hpp>
#include <test_common/sim_seeds.hpp>

#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace sim = baton::sim;
using namespace std::chrono_literals;
using baton::errc;
using baton::error_code;
using sim::virtual_clock;
using vtime = virtual_clock::time_point;

// A fenced write the store applied: (key, token, value).
struct applied_write {
    std::string key;
    std::uint64_t token;
    std::string value;
};

// The fenced writes among what the store applied, in order.
std::vector<applied_write> fenced_writes(test_common::applied_log const& log) {
    std::vector<applied_write> out;
    for (auto const& a : log) {
        baton::detail::fenced_body b;
        baton::diagnostics d;
        if (!baton::detail::decode_fenced(a.body, b, d)) out.push_back({a.key, b.token, b.value});
    }
    return out;
}

using test_common::applied_log;
using timer_t = asio::basic_waitable_timer<virtual_clock, asio::wait_traits<virtual_clock>, asio::any_io_executor>;

struct fenced_outcome {
    std::uint64_t writes = 0, ok = 0, fenced = 0, unknown = 0, aborted = 0, transient = 0, settled = 0, takeovers = 0,
                  format1 = 0;
    std::vector<std::string> violations;
    void add(fenced_outcome const& o) {
        writes += o.writes, ok += o.ok, fenced += o.fenced, unknown += o.unknown, aborted += o.aborted;
        transient += o.transient, settled += o.settled, takeovers += o.takeovers, format1 += o.format1;
    }
};

// `Store`: the recording memory store, with or without the fenced-write hook (one conditional
// write checked against the stored token, as DynamoDB does it).
template <class Store>
class basic_fenced_sim {
    using net_t = sim::faulty_backend<Store>;
    using fenced_t = baton::basic_fenced<net_t, sim::manual_clock>;

public:
    // Broken variants, only to prove that the checker catches them. `check_then_write`: the
    // writers check the token themselves and write unconditionally (what fencing by caller
    // discipline does). `unknown_as_failure`: the caller is told a plain failure whenever the
    // outcome was unknown (what a recipe that guesses "not landed" does).
    enum class variant { sound, check_then_write, unknown_as_failure };
    explicit basic_fenced_sim(std::uint64_t seed, variant v = variant::sound)
        : sched_(seed), broken_(v == variant::check_then_write), guesses_(v == variant::unknown_as_failure) {}

    fenced_outcome run() {
        auto log = std::make_shared<applied_log>();
        log_ = log;
        sim::fault_profile const fp = test_common::random_write_faults(sched_);
        net_t net(Store(baton::memory_backend(sched_.get_executor()), log), sched_.get_executor(),
                  sched_.rng()(), fp);
        net_ = &net;

        int const n = 3 + static_cast<int>(sched_.rng()() % 3);
        keys_ = {"data/a", "data/b"};
        bool const upgrade = sched_.seed() % 3 == 0;
        for (int i = 0; i < n; ++i) {
            auto w = std::make_unique<writer>(sched_.make_participant_executor());
            w->index = i;
            w->retry.max_attempts = 1 + static_cast<unsigned>(sched_.rng()() % 4);
            if (upgrade && sched_.uniform() < 0.5) {
                w->format = 1;
                w->upgrade_at = vtime(between(30s, 200s));
            }
            make_handle(*w);
            w->timer = std::make_unique<timer_t>(sched_.get_executor());
            writers_.push_back(std::move(w));
        }
        // Takeovers: a writer gets the next token; the others keep theirs (they have not noticed).
        takeover_timer_ = std::make_unique<timer_t>(sched_.get_executor());
        schedule_takeover();
        for (auto& w : writers_) schedule_write(*w);

        sched_.run_until(vtime(240s));
        stopping_ = true;
        net.set_faults_enabled(false);
        sched_.run_until(vtime(480s)); // everything in flight completes or lands

        for (auto const& [id, p] : pending_)
            violate("(h4) write " + id + " never completed");
        // (h2): everything reported successful was applied, with its token.
        std::set<std::pair<std::string, std::string>> applied_values;
        std::map<std::string, int> times_applied; // value (one per call) -> writes of it that landed
        std::map<std::string, std::uint64_t> high;
        std::map<std::pair<std::string, std::string>, int> last_n;
        for (auto const& a : fenced_writes(*log)) {
            if (a.token < high[a.key]) // (h1)
                violate("(h1) " + a.key + ": token " + std::to_string(a.token) + " applied after token " +
                        std::to_string(high[a.key]) + " (" + a.value + ")");
            high[a.key] = std::max(high[a.key], a.token);
            applied_values.insert({a.key, a.value});
            ++times_applied[a.value];
            // "w<index>-<n>-t<token>": the writer's n-th write.
            auto const dash = a.value.find('-'), dash2 = a.value.find('-', dash + 1);
            std::string const writer = a.value.substr(0, dash);
            int const n = std::stoi(a.value.substr(dash + 1, dash2 - dash - 1));
            int& last = last_n[{a.key, writer}];
            if (n < last) // (h5)
                violate("(h5) " + a.key + ": " + a.value + " landed after " + writer + "'s write " + std::to_string(last));
            last = std::max(last, n);
        }
        for (auto const& [key, value] : acknowledged_)
            if (!applied_values.count({key, value})) violate("(h2) " + value + " on " + key + " reported written, never applied");
        // (h6): against what landed by the end of the run, late deliveries included.
        for (auto const& [value, told] : told_) {
            int const landed = times_applied.count(value) ? times_applied[value] : 0;
            if (landed > 1) violate("(h6) " + value + " (" + told + ") landed " + std::to_string(landed) + " times");
            else if (landed == 1 && told != "written" && told != "unknown_outcome")
                violate("(h6) " + value + " was reported " + told + ", but landed");
            else if (landed == 0 && told == "written" && !broken_)
                violate("(h6) " + value + " was reported written, but never landed");
        }
        return out_;
    }

private:
    struct writer {
        explicit writer(sim::pausable_executor e) : ex(std::move(e)) {}
        int index = 0;
        sim::pausable_executor ex;
        baton::retry_params retry;
        unsigned format = 2;            // the record format it writes
        std::optional<vtime> upgrade_at; // when a writer on format 1 moves to 2
        std::unique_ptr<fenced_t> f;
        std::unique_ptr<timer_t> timer;
        std::uint64_t token = 0;
        int n = 0;
        asio::cancellation_signal cancel;
    };
    struct pending_write {
        std::string key;
        std::uint64_t token;
    };

    std::chrono::nanoseconds between(std::chrono::nanoseconds lo, std::chrono::nanoseconds hi) {
        return lo + std::chrono::nanoseconds(static_cast<std::int64_t>(sched_.uniform() * static_cast<double>((hi - lo).count())));
    }

    void violate(std::string what) {
        std::ostringstream s;
        s << "t=" << std::chrono::duration<double>(virtual_clock::now().time_since_epoch()).count() << "s " << what;
        out_.violations.push_back(s.str());
    }

    void make_handle(writer& w) {
        baton::fenced_options o;
        o.record_format = w.format;
        w.f = std::make_unique<fenced_t>(w.ex, *net_, o, baton::standard_retry(w.retry), sim::manual_clock{}, sched_.rng()());
    }

    void schedule_takeover() {
        takeover_timer_->expires_at(sim::manual_clock{}.timer_expiry(between(2s, 25s)));
        takeover_timer_->async_wait([this](error_code ec) {
            if (ec || stopping_) return;
            auto& w = *writers_[sched_.rng()() % writers_.size()];
            w.token = ++next_token_;
            ++out_.takeovers;
            // Sometimes the new holder is paused for a while too (its writes queue up behind it).
            if (sched_.uniform() < 0.2 && !w.ex.frozen()) {
                w.ex.freeze();
                auto t = std::make_shared<timer_t>(sched_.get_executor());
                t->expires_at(sim::manual_clock{}.timer_expiry(between(1s, 30s)));
                t->async_wait([t, &w](error_code) { w.ex.thaw(); });
            }
            schedule_takeover();
        });
    }

    void schedule_write(writer& w) {
        if (stopping_) return;
        w.timer->expires_at(sim::manual_clock{}.timer_expiry(between(100ms, 3s)));
        w.timer->async_wait([this, &w](error_code ec) {
            if (ec || stopping_) return;
            if (w.token == 0) return schedule_write(w); // never held yet
            write(w);
        });
    }

    void write(writer& w) {
        if (w.upgrade_at && virtual_clock::now() >= *w.upgrade_at) { // restarted with the new format
            w.upgrade_at.reset();
            w.format = 2;
            make_handle(w);
        }
        if (w.format == 1) ++out_.format1;
        auto const& key = keys_[sched_.rng()() % keys_.size()];
        std::string value = "w" + std::to_string(w.index) + "-" + std::to_string(++w.n) + "-t" + std::to_string(w.token);
        std::string const id = value;
        pending_[id] = {key, w.token};
        ++out_.writes;
        bool const cancel = !broken_ && sched_.uniform() < 0.1;
        auto done = [this, &w, id, key, value, token = w.token, cancel](error_code ec, baton::fenced_write_result r) {
            pending_.erase(id);
            if (ec == asio::error::operation_aborted && !cancel) // (h4)
                violate("(h4) " + value + " reported cancelled, but nobody cancelled it: " + r.diag.to_string());
            classify(key, value, token, ec, r);
            schedule_write(w);
        };
        if (broken_) {
            w.f->async_read(key, [this, key, value, token = w.token, done](error_code ec, std::optional<baton::fenced_value> v) mutable {
                if (ec) return done(ec, {});
                if (v && v->token > token) {
                    baton::fenced_write_result r;
                    r.winning_token = v->token;
                    return done(errc::fenced, r);
                }
                net_->async_put(key, baton::detail::encode_fenced(token, "00", value), baton::precondition::none(),
                                [done](error_code ec, baton::put_result) mutable { done(ec, {}); });
            });
        } else if (cancel) {
            // Cancelled a little later (possibly after the write was sent).
            w.f->async_write(key, value, w.token, asio::bind_cancellation_slot(w.cancel.slot(), std::move(done)));
            auto t = std::make_shared<timer_t>(sched_.get_executor());
            t->expires_at(sim::manual_clock{}.timer_expiry(between(0ms, 3s)));
            t->async_wait([t, &w](error_code) { w.cancel.emit(asio::cancellation_type::terminal); });
        } else {
            w.f->async_write(key, value, w.token, std::move(done));
        }
    }

    void classify(std::string const& key, std::string const& value, std::uint64_t token, error_code ec,
                  baton::fenced_write_result const& r) {
        if (guesses_ && ec == errc::unknown_outcome) ec = errc::timeout;
        told_[value] = !ec ? std::string("written") : ec == errc::unknown_outcome ? std::string("unknown_outcome") : ec.message();
        if (!ec) {
            ++out_.ok;
            if (r.settled_by_read) ++out_.settled;
            acknowledged_.push_back({key, value});
            return;
        }
        if (ec == errc::fenced) {
            ++out_.fenced;
            std::uint64_t const high = highest_token(key);
            if (!(high > token)) // (h3)
                violate("(h3) " + value + " refused as fenced, but " + key + " accepted at most token " + std::to_string(high));
            if (r.winning_token <= token) violate("(h3) " + value + " refused naming winning token " + std::to_string(r.winning_token));
            return;
        }
        if (ec == errc::unknown_outcome) return void(++out_.unknown);
        if (ec == asio::error::operation_aborted) return void(++out_.aborted);
        if (baton::is_retryable(ec) || ec == errc::precondition_failed) return void(++out_.transient);
        violate("(h4) " + value + " failed with " + ec.message() + ": " + r.diag.to_string()); // (h4)
    }

    // The highest token `key` has accepted so far (the log is scanned once, as it grows).
    std::uint64_t highest_token(std::string const& key) {
        for (; scanned_ < log_->size(); ++scanned_) {
            auto const& a = (*log_)[scanned_];
            baton::detail::fenced_body b;
            baton::diagnostics d;
            if (!baton::detail::decode_fenced(a.body, b, d)) high_[a.key] = std::max(high_[a.key], b.token);
        }
        return high_[key];
    }

    sim::scheduler sched_;
    std::size_t scanned_ = 0;
    std::map<std::string, std::uint64_t> high_;
    bool broken_ = false;
    bool guesses_ = false;
    net_t* net_ = nullptr;
    std::shared_ptr<applied_log> log_;
    std::vector<std::string> keys_;
    std::vector<std::unique_ptr<writer>> writers_;
    std::unique_ptr<timer_t> takeover_timer_;
    std::uint64_t next_token_ = 0;
    bool stopping_ = false;
    std::map<std::string, pending_write> pending_;
    std::vector<std::pair<std::string, std::string>> acknowledged_;
    std::map<std::string, std::string> told_; // value -> what its caller was told
    fenced_outcome out_;
};

using fenced_sim = basic_fenced_sim<test_common::recording_backend>;
using hooked_fenced_sim = basic_fenced_sim<test_common::hooked_recording_backend>;
using naive_hooked_fenced_sim = basic_fenced_sim<test_common::naive_hooked_recording_backend>;

} // namespace

TEST_SUITE("simulation") {

TEST_CASE("fenced writes: stale tokens never land, acknowledged writes landed, refusals are justified") {
    auto const range = test_common::seed_range::from_env(4); // a quarter of BATON_SIM_SEEDS: each seed is denser
    std::uint64_t const seeds = range.count;
    fenced_outcome total;
    std::uint64_t const failed = test_common::run_seeds(range, total, [](std::uint64_t s) { return fenced_sim(s).run(); }, 10);
    MESSAGE(seeds << " seeds: " << total.writes << " fenced writes, " << total.takeovers << " takeovers; " << total.ok
                  << " written (" << total.settled << " settled by reading back), " << total.fenced << " fenced, "
                  << total.unknown << " unknown outcome, " << total.aborted << " cancelled, " << total.transient
                  << " failed transiently; " << total.format1 << " written in format 1 by fleets being upgraded");
    CHECK(failed == 0);
    if (seeds >= 100) {
        CHECK(total.fenced > 0);
        CHECK(total.settled > 0);
        CHECK(total.format1 > 0);
    }
}

TEST_CASE("fenced writes through a store's fenced-write hook (DynamoDB's one request): the same properties") {
    auto const range = test_common::seed_range::from_env(8);
    fenced_outcome total;
    std::uint64_t const failed = test_common::run_seeds(range, total, [](std::uint64_t s) { return hooked_fenced_sim(s).run(); }, 10);
    MESSAGE(range.count << " seeds with the hook: " << total.writes << " fenced writes; " << total.ok << " written ("
                        << total.settled << " settled by reading back), " << total.fenced << " fenced, " << total.unknown
                        << " unknown outcome, " << total.aborted << " cancelled, " << total.transient << " failed transiently");
    CHECK(failed == 0);
}

TEST_CASE("the fenced checker bites: a hook that lets an equal token through without the version is caught") {
    std::uint64_t const runs = 50;
    auto const f = test_common::count_flagged(runs, "(h5)", [](std::uint64_t s) { return naive_hooked_fenced_sim(s).run(); });
    MESSAGE("naive hook (fence <= token): " << f.caught << " of " << runs << " runs flagged; e.g. " << f.example);
    CHECK(f.caught > 0);
}

TEST_CASE("the fenced checker bites: a caller told a plain failure where the outcome was unknown is caught") {
    std::uint64_t const runs = 50;
    auto const f = test_common::count_flagged(runs, "(h6)", [](std::uint64_t s) {
        return fenced_sim(s, fenced_sim::variant::unknown_as_failure).run();
    });
    MESSAGE("unknown_outcome told as a failure: " << f.caught << " of " << runs << " runs flagged; e.g. " << f.example);
    CHECK(f.caught > 0);
}

TEST_CASE("the fenced checker bites: writers that check the token themselves and write unconditionally are caught") {
    std::uint64_t const runs = 50;
    auto const f = test_common::count_flagged(runs, "(h1)", [](std::uint64_t s) { return fenced_sim(s, fenced_sim::variant::check_then_write).run(); });
    MESSAGE("check-then-write: " << f.caught << " of " << runs << " runs flagged; e.g. " << f.example);
    CHECK(f.caught > 0);
}

}
