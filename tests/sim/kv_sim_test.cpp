// The kv simulation: clients update counters, write and erase a document with
// conditions, and write fenced with tokens that change hands, under every
// fault of the sim kit: writes delivered up to a minute after their sender
// gave up, duplicates, stale reads, 5xx applied or not, cancellations.
// What the store applied is recorded at the store itself, so the checks see
// exactly what landed, in order:
//
//   (k1) per key, every applied write's version is one more than the version
//        applied before it (1 after nothing): versions strictly increase, also
//        across erase and re-create, and no write lands on a version it did
//        not name;
//   (k2) every counter update reported done landed exactly once; none landed
//        twice; one reported failed without doubt never landed (the counter's
//        value names each update it carries);
//   (k3) every acknowledged put or erase landed, with the version reported;
//        a conditional one landed on the version it named;
//   (k4) per fenced key, the fence of applied writes never goes down: a write
//        whose token is below one already accepted never lands;
//   (k5) every operation completes, only with a documented outcome; a
//        cancellation nobody asked for is flagged;
//   (k6) what each caller is told is true, to the end of the run (every write the
//        store applied is traced to the call that sent it, by its nonce): a call
//        reported done landed exactly one write if it wrote, none if it did not; one
//        reported refused, fenced, cancelled or failed never landed a write and never
//        lands one later; unknown_outcome (the only answer allowed when neither is
//        known) at most one.
//
// BATON_SIM_SEEDS (a quarter of it) / BATON_SIM_FIRST / BATON_SIM_SEED / BATON_SIM_MAX_FAILURES
// as for the lease suite (test_common/sim_seeds.hpp).

#include <baton/backend/memory.hpp>
#include <baton/recipe/kv.hpp>
#include <baton/sim.hpp>

#include <doctest/doctest.h>
#include <test_common/recording_backend.hpp>
#include <test_common/sim_seeds.hpp>

#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
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
using baton::kv_condition;
using sim::virtual_clock;
using vtime = virtual_clock::time_point;

using net_t = sim::faulty_backend<test_common::recording_backend>;
// The nonce of a kv record's body, to trace each write the store applied to the call that sent it.
struct kv_nonce {
    std::string operator()(std::string const& body) const {
        baton::detail::kv_body b;
        baton::diagnostics d;
        return baton::detail::decode_kv(body, b, d) ? std::string() : b.nonce;
    }
};
using client_store = test_common::attributing_store<net_t, kv_nonce>;
using kv_t = baton::basic_kv<client_store, sim::manual_clock>;
using timer_t = asio::basic_waitable_timer<virtual_clock, asio::wait_traits<virtual_clock>, asio::any_io_executor>;

// A counter's value: how many updates it carries and which ("3 u0-1 u2-1 u1-4").
std::vector<std::string> update_ids(std::string const& value) {
    std::istringstream in(value);
    std::vector<std::string> ids;
    std::uint64_t count = 0;
    in >> count;
    for (std::string id; in >> id;) ids.push_back(id);
    return ids;
}

struct kv_outcome {
    std::uint64_t ops = 0, ok = 0, refused = 0, fenced = 0, unknown = 0, aborted = 0, transient = 0, settled = 0;
    std::vector<std::string> violations;
    void add(kv_outcome const& o) {
        ops += o.ops, ok += o.ok, refused += o.refused, fenced += o.fenced, unknown += o.unknown;
        aborted += o.aborted, transient += o.transient, settled += o.settled;
    }
};

class kv_sim {
public:
    // Broken variants, only to prove that the checker catches them. `hand_rolled`: counter
    // updates as people write them by hand (read, compute, write with the version, on any error
    // start over, no settlement). `unknown_as_failure`: the caller is told a plain failure
    // whenever the outcome was unknown (what a recipe that guesses "not landed" does).
    enum class variant { sound, hand_rolled, unknown_as_failure };
    explicit kv_sim(std::uint64_t seed, variant v = variant::sound)
        : sched_(seed), broken_(v == variant::hand_rolled), guesses_(v == variant::unknown_as_failure) {}

    kv_outcome run() {
        log_ = std::make_shared<test_common::applied_log>();
        sim::fault_profile const fp = test_common::random_write_faults(sched_);
        net_t net(test_common::recording_backend(baton::memory_backend(sched_.get_executor()), log_), sched_.get_executor(),
                  sched_.rng()(), fp);
        net_ = &net;

        int const n = 3 + static_cast<int>(sched_.rng()() % 3);
        for (int i = 0; i < n; ++i) {
            auto c = std::make_unique<client>(sched_.make_participant_executor());
            c->index = i;
            baton::retry_params rp;
            rp.max_attempts = 1 + static_cast<unsigned>(sched_.rng()() % 4);
            c->kv = std::make_unique<kv_t>(c->ex, client_store(net, attributions_, c->current), baton::standard_retry(rp),
                                           sim::manual_clock{}, sched_.rng()());
            c->timer = std::make_unique<timer_t>(sched_.get_executor());
            clients_.push_back(std::move(c));
        }
        takeover_timer_ = std::make_unique<timer_t>(sched_.get_executor());
        schedule_takeover();
        for (auto& c : clients_) schedule_op(*c);

        sched_.run_until(vtime(240s));
        stopping_ = true;
        net.set_faults_enabled(false);
        sched_.run_until(vtime(480s)); // everything in flight completes or lands

        for (auto const& id : pending_) violate("(k5) " + id + " never completed");
        check_log();
        return out_;
    }

private:
    struct client {
        explicit client(sim::pausable_executor e) : ex(std::move(e)) {}
        int index = 0;
        sim::pausable_executor ex;
        std::unique_ptr<kv_t> kv;
        std::unique_ptr<timer_t> timer;
        std::uint64_t token = 0;
        int n = 0;
        asio::cancellation_signal cancel;
        std::shared_ptr<std::string> current = std::make_shared<std::string>(); // the call its writes belong to
    };
    // What a put or erase was told, to check against what landed.
    struct acked_write {
        std::string key, id;
        std::uint64_t version;
        std::optional<std::uint64_t> named; // kv_condition::version(v)
        bool absent = false;                // kv_condition::absent()
        bool erase = false;
    };

    std::chrono::nanoseconds between(std::chrono::nanoseconds lo, std::chrono::nanoseconds hi) {
        return lo + std::chrono::nanoseconds(static_cast<std::int64_t>(sched_.uniform() * static_cast<double>((hi - lo).count())));
    }

    void violate(std::string what) {
        std::ostringstream s;
        s << "t=" << std::chrono::duration<double>(virtual_clock::now().time_since_epoch()).count() << "s " << what;
        out_.violations.push_back(s.str());
    }

    void schedule_takeover() {
        takeover_timer_->expires_at(sim::manual_clock{}.timer_expiry(between(2s, 25s)));
        takeover_timer_->async_wait([this](error_code ec) {
            if (ec || stopping_) return;
            auto& c = *clients_[sched_.rng()() % clients_.size()];
            c.token = ++next_token_;
            if (sched_.uniform() < 0.2 && !c.ex.frozen()) { // the new holder is paused for a while too
                c.ex.freeze();
                auto t = std::make_shared<timer_t>(sched_.get_executor());
                t->expires_at(sim::manual_clock{}.timer_expiry(between(1s, 30s)));
                t->async_wait([t, &c](error_code) { c.ex.thaw(); });
            }
            schedule_takeover();
        });
    }

    void schedule_op(client& c) {
        if (stopping_) return;
        c.timer->expires_at(sim::manual_clock{}.timer_expiry(between(50ms, 2s)));
        c.timer->async_wait([this, &c](error_code ec) {
            if (ec || stopping_) return;
            double const u = sched_.uniform();
            if (broken_ || u < 0.5) update(c);
            else if (u < 0.8) doc_write(c);
            else if (c.token) fenced_write(c);
            else update(c);
        });
    }

    // Completion bookkeeping shared by every operation: (k5), counts, the next operation.
    template <class OnOk>
    auto finish(client& c, std::string id, bool cancel, OnOk on_ok) {
        pending_.insert(id);
        ++out_.ops;
        *c.current = id;
        return [this, &c, id, cancel, on_ok](error_code ec, baton::kv_write_result r) {
            pending_.erase(id);
            if (guesses_ && ec == errc::unknown_outcome) ec = errc::timeout;
            told_[id] = !ec ? (r.written ? "written" : "done without writing")
                            : ec == errc::unknown_outcome ? std::string("unknown_outcome") : ec.message();
            if (ec == asio::error::operation_aborted && !cancel)
                violate("(k5) " + id + " reported cancelled, but nobody cancelled it: " + r.diag.to_string());
            if (!ec) {
                ++out_.ok;
                if (r.settled_by_read) ++out_.settled;
                on_ok(r);
            } else if (ec == errc::precondition_failed) {
                ++out_.refused;
            } else if (ec == errc::fenced) {
                ++out_.fenced;
            } else if (ec == errc::unknown_outcome) {
                ++out_.unknown;
            } else if (ec == asio::error::operation_aborted) {
                ++out_.aborted;
            } else if (baton::is_retryable(ec)) {
                ++out_.transient;
            } else {
                violate("(k5) " + id + " failed with " + ec.message() + ": " + r.diag.to_string());
            }
            if (ec && ec != errc::unknown_outcome && ec != asio::error::operation_aborted) {
                failed_.insert(id);
                why_failed_[id] = ec.message() + (r.diag.empty() ? std::string() : ": " + r.diag.to_string());
            }
            schedule_op(c);
        };
    }

    // Cancels `c`'s operation a little later, sometimes (possibly after its write was sent).
    // Only operations that may be cancelled are bound to the client's signal (`bind`).
    bool maybe_cancel(client& c) {
        if (sched_.uniform() >= 0.1) return false;
        auto t = std::make_shared<timer_t>(sched_.get_executor());
        t->expires_at(sim::manual_clock{}.timer_expiry(between(0ms, 3s)));
        t->async_wait([t, &c](error_code) { c.cancel.emit(asio::cancellation_type::terminal); });
        return true;
    }

    void update(client& c) {
        std::string const key = "counter/" + std::to_string(sched_.rng()() % 2);
        std::string const id = "u" + std::to_string(c.index) + "-" + std::to_string(++c.n);
        updates_[id] = key;
        if (broken_) return hand_rolled_update(c, key, id);
        bool const cancel = maybe_cancel(c);
        auto done = finish(c, id, cancel, [this, id](baton::kv_write_result const& r) {
            if (r.written) done_updates_.insert(id);
            else unchanged_updates_.insert(id);
        });
        // Not a pure function of the value: some rounds decide to leave the counter alone.
        auto fn = [this, id](std::optional<baton::kv_entry> const& cur) -> std::optional<std::string> {
            if (sched_.uniform() < 0.05) return std::nullopt;
            auto ids = cur ? update_ids(cur->value) : std::vector<std::string>{};
            std::string v = std::to_string(ids.size() + 1);
            for (auto const& i : ids) v += ' ' + i;
            return v + ' ' + id;
        };
        if (cancel) c.kv->async_update(key, fn, asio::bind_cancellation_slot(c.cancel.slot(), std::move(done)));
        else c.kv->async_update(key, fn, std::move(done));
    }

    // The hand-rolled read-modify-write: any failure starts over from a fresh read, and an
    // ambiguous write is assumed lost.
    void hand_rolled_update(client& c, std::string const& key, std::string const& id, int attempt = 0) {
        if (attempt == 0) {
            pending_.insert(id);
            ++out_.ops;
        }
        auto again = [this, &c, key, id, attempt] {
            if (attempt >= 8 || stopping_) {
                pending_.erase(id);
                schedule_op(c);
            } else {
                hand_rolled_update(c, key, id, attempt + 1);
            }
        };
        net_->async_get(key, [this, &c, key, id, again](error_code ec, baton::get_result r) {
            if (ec) return again();
            std::vector<std::string> ids;
            std::uint64_t version = 0;
            baton::detail::kv_body b;
            baton::diagnostics d;
            if (r.found && !baton::detail::decode_kv(r.found->body, b, d)) {
                ids = update_ids(b.value);
                version = b.version;
            }
            std::string v = std::to_string(ids.size() + 1);
            for (auto const& i : ids) v += ' ' + i;
            v += ' ' + id;
            auto pc = r.found ? baton::precondition::matches(r.found->version) : baton::precondition::absent();
            net_->async_put(key, baton::detail::encode_kv(baton::detail::kv_body{version + 1, "00", 0, {}, true, v}), pc,
                            [this, &c, id, again](error_code ec, baton::put_result) {
                                if (ec) return again();
                                pending_.erase(id);
                                ++out_.ok;
                                done_updates_.insert(id);
                                schedule_op(c);
                            });
        });
    }

    // A put or erase of the document with a condition from what this client last read.
    void doc_write(client& c) {
        std::string const id = "d" + std::to_string(c.index) + "-" + std::to_string(++c.n);
        c.kv->async_get("doc", [this, &c, id](error_code ec, std::optional<baton::kv_entry> e) {
            if (ec) return schedule_op(c);
            double const u = sched_.uniform();
            kv_condition cond = kv_condition::none();
            acked_write w{"doc", id, 0, std::nullopt, false, false};
            if (!e || u < 0.2) {
                cond = kv_condition::absent();
                w.absent = true;
            } else if (u < 0.8) {
                cond = kv_condition::version(e->version);
                w.named = e->version;
            }
            bool const erase = e && ((u > 0.6 && u < 0.8) || u > 0.95); // with a version named, or none
            w.erase = erase;
            bool const cancel = maybe_cancel(c);
            auto done = finish(c, id, cancel, [this, w](baton::kv_write_result const& r) {
                if (!r.written) return;
                acked_.push_back(w);
                acked_.back().version = r.version;
            });
            asio::cancellation_slot slot = cancel ? c.cancel.slot() : asio::cancellation_slot();
            if (erase) c.kv->async_erase("doc", cond, asio::bind_cancellation_slot(slot, std::move(done)));
            else c.kv->async_put("doc", id, cond, asio::bind_cancellation_slot(slot, std::move(done)));
        });
    }

    void fenced_write(client& c) {
        std::string const id = "f" + std::to_string(c.index) + "-" + std::to_string(++c.n) + "-t" + std::to_string(c.token);
        bool const cancel = maybe_cancel(c);
        auto done = finish(c, id, cancel, [this, id](baton::kv_write_result const& r) {
            acked_.push_back(acked_write{"fenced", id, r.version, std::nullopt, false, false});
        });
        asio::cancellation_slot slot = cancel ? c.cancel.slot() : asio::cancellation_slot();
        c.kv->async_put("fenced", id, kv_condition::none().with_fence(c.token), asio::bind_cancellation_slot(slot, std::move(done)));
    }

    void check_log() {
        struct landed {
            std::uint64_t version;
            std::uint64_t previous; // the version before it (0: none)
            bool previous_live;
            int times = 0;
        };
        std::map<std::string, std::uint64_t> version, fence;
        std::map<std::string, bool> live;
        std::map<std::string, landed> puts;                       // key + "\n" + value -> where it landed
        std::set<std::pair<std::string, std::uint64_t>> tombstones; // (key, version)
        std::map<std::string, int> times_applied;                 // update id -> writes that added it
        std::map<std::string, std::string> where_applied;         // update id -> the writes that added it
        std::map<std::string, std::string> last_value;
        for (auto const& a : *log_) {
            baton::detail::kv_body b;
            baton::diagnostics d;
            if (baton::detail::decode_kv(a.body, b, d)) {
                violate("(k1) " + a.key + ": a record that is not kv landed: " + d.message);
                continue;
            }
            if (b.version != version[a.key] + 1)
                violate("(k1) " + a.key + ": version " + std::to_string(b.version) + " applied after version " +
                        std::to_string(version[a.key]));
            if (b.fence < fence[a.key])
                violate("(k4) " + a.key + ": fence " + std::to_string(b.fence) + " applied after fence " +
                        std::to_string(fence[a.key]) + " (" + b.value + ")");
            if (a.key.rfind("counter/", 0) == 0) {
                // An update adds its own id to what it read: the ids that are new here are this write's.
                std::map<std::string, int> added;
                for (auto const& id : update_ids(b.value)) ++added[id];
                for (auto const& id : update_ids(last_value[a.key])) --added[id];
                for (auto const& [id, n] : added)
                    if (n > 0) {
                        times_applied[id] += n;
                        where_applied[id] += " " + a.key + "@v" + std::to_string(b.version);
                    }
            } else if (b.live) {
                auto& l = puts[a.key + "\n" + b.value];
                l = landed{b.version, version[a.key], live[a.key], l.times + 1};
            } else {
                tombstones.insert({a.key, b.version});
            }
            version[a.key] = b.version;
            fence[a.key] = b.fence;
            live[a.key] = b.live;
            last_value[a.key] = b.live ? b.value : std::string();
        }
        for (auto const& [id, n] : times_applied)
            if (n > 1) violate("(k2) update " + id + " landed " + std::to_string(n) + " times:" + where_applied[id]);
        for (auto const& id : done_updates_)
            if (!times_applied.count(id)) violate("(k2) update " + id + " reported done, never landed");
        for (auto const& id : unchanged_updates_)
            if (times_applied.count(id)) violate("(k2) update " + id + " reported writing nothing, but landed");
        for (auto const& id : failed_)
            if (times_applied.count(id)) violate("(k2) " + id + " reported failed without doubt, but landed (" + why_failed_[id] + ")");
        for (auto const& [value, l] : puts)
            if (l.times > 1) violate("(k3) a put landed " + std::to_string(l.times) + " times: " + value);
        for (auto const& w : acked_) {
            if (w.erase) {
                if (!tombstones.count({w.key, w.version}))
                    violate("(k3) erase " + w.id + " reported as version " + std::to_string(w.version) + ", no such tombstone");
                continue;
            }
            auto it = puts.find(w.key + "\n" + w.id);
            if (it == puts.end()) {
                violate("(k3) " + w.id + " reported written, never landed");
                continue;
            }
            auto const& l = it->second;
            if (l.version != w.version)
                violate("(k3) " + w.id + " reported version " + std::to_string(w.version) + ", landed as " + std::to_string(l.version));
            if (w.named && (l.previous != *w.named || !l.previous_live))
                violate("(k3) " + w.id + " named version " + std::to_string(*w.named) + ", landed over version " +
                        std::to_string(l.previous) + (l.previous_live ? "" : " (no value)"));
            if (w.absent && l.previous_live && l.previous != 0)
                violate("(k3) " + w.id + " was to be written only without a value, landed over version " + std::to_string(l.previous));
        }
        for (auto const& id : failed_)
            if (id[0] != 'u' && puts.count((id[0] == 'f' ? "fenced\n" : "doc\n") + id))
                violate("(k3) " + id + " reported failed without doubt, but landed (" + why_failed_[id] + ")");
        // (k6): every write applied, traced to its call by its nonce, against what the call was told.
        std::map<std::string, int> landed;
        for (auto const& a : *log_)
            if (auto n = kv_nonce{}(a.body); !n.empty())
                if (auto it = attributions_->find(n); it != attributions_->end()) ++landed[it->second];
        for (auto const& [id, told] : told_) {
            int const n = landed.count(id) ? landed[id] : 0;
            bool const ok = told == "written" ? n == 1 : told == "unknown_outcome" ? n <= 1 : n == 0;
            if (!ok) violate("(k6) " + id + " was reported " + told + ", and " + std::to_string(n) + " of its writes landed");
        }
    }

    sim::scheduler sched_;
    bool broken_ = false;
    bool guesses_ = false;
    std::shared_ptr<client_store::attributions> attributions_ = std::make_shared<client_store::attributions>();
    std::map<std::string, std::string> told_; // call -> what it was told
    net_t* net_ = nullptr;
    std::shared_ptr<test_common::applied_log> log_;
    std::vector<std::unique_ptr<client>> clients_;
    std::unique_ptr<timer_t> takeover_timer_;
    std::uint64_t next_token_ = 0;
    bool stopping_ = false;
    std::set<std::string> pending_;
    std::map<std::string, std::string> updates_;
    std::set<std::string> done_updates_, unchanged_updates_, failed_;
    std::map<std::string, std::string> why_failed_;
    std::vector<acked_write> acked_;
    kv_outcome out_;
};

} // namespace

TEST_SUITE("simulation") {

TEST_CASE("kv: versions rise by one, updates land once, conditions and fences hold, under every fault") {
    auto const range = test_common::seed_range::from_env(4); // a quarter of BATON_SIM_SEEDS: each seed is denser
    kv_outcome total;
    std::uint64_t const failed = test_common::run_seeds(range, total, [](std::uint64_t s) { return kv_sim(s).run(); }, 10);
    MESSAGE(range.count << " seeds: " << total.ops << " kv writes; " << total.ok << " done (" << total.settled
                        << " settled by reading back), " << total.refused << " refused by their condition, " << total.fenced
                        << " fenced, " << total.unknown << " unknown outcome, " << total.aborted << " cancelled, "
                        << total.transient << " failed transiently");
    CHECK(failed == 0);
    if (range.count >= 100) {
        CHECK(total.fenced > 0);
        CHECK(total.settled > 0);
        CHECK(total.refused > 0);
    }
}

TEST_CASE("the kv checker bites: hand-rolled read-modify-write without settlement is caught") {
    std::uint64_t const runs = 50;
    auto const f = test_common::count_flagged(runs, "(k2)", [](std::uint64_t s) { return kv_sim(s, kv_sim::variant::hand_rolled).run(); });
    MESSAGE("hand-rolled updates: " << f.caught << " of " << runs << " runs flagged; e.g. " << f.example);
    CHECK(f.caught > 0);
}

TEST_CASE("the kv checker bites: a caller told a plain failure where the outcome was unknown is caught") {
    std::uint64_t const runs = 50;
    auto const f = test_common::count_flagged(runs, "(k6)", [](std::uint64_t s) { return kv_sim(s, kv_sim::variant::unknown_as_failure).run(); });
    MESSAGE("unknown_outcome told as a failure: " << f.caught << " of " << runs << " runs flagged; e.g. " << f.example);
    CHECK(f.caught > 0);
}

}
