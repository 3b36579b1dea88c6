// The commit protocol in simulation: writers put and erase two keys with conditions through
// basic_commit_protocol over two faulty stores (an object store and a lock store, each with every
// fault of the sim kit: requests that wait in the network up to a minute after their sender gave
// up and then land, lost answers, duplicates, 5xx applied or not), writers frozen mid-protocol
// for up to 30 s, and a collector deleting garbage all along. The checks see only what the
// users of the store see (acknowledgements and reads), so they judge any implementation:
//
//   (c1) no two writes succeed on the same precondition `matches(v)` of a key;
//   (c2) a version names one content: every read of version v returns the same bytes, those of
//        the write acknowledged as v;
//   (c3) every acknowledged write stays: a read begun after its acknowledgement returns it or a
//        write that descends from it (a chain of conditions back to it, through erases whose
//        condition descends from it), never something that does not;
//   (c4) every operation completes, only with a documented outcome (never invalid_response:
//        no committed object goes missing);
//   (c5) what each writer is told is true, to the end of the run (the commits the lock store
//        applied are traced to their writes through the objects they name): a put reported
//        written committed exactly once, one refused by its condition never committed and never
//        commits later, an unknown or transient outcome at most once.
//
// The same driver runs the design of arrow-rs's DynamoCommit (a lock in the lock store, the
// write to the real path under a timeout): the checker catches it, which is the proof it bites.
// The lock store's reads are consistent (the protocol's stated condition: DynamoDB's consistent
// reads); the object store's may lag (a read may repeat an older answer).
//
// BATON_SIM_SEEDS (a quarter of it) / BATON_SIM_FIRST / BATON_SIM_SEED / BATON_SIM_MAX_FAILURES.

#include <baton/backend/memory.hpp>
#include <baton/sim.hpp>
#include <baton/store/commit_protocol.hpp>

#include <doctest/doctest.h>
#include <test_common/recording_backend.hpp>
#include <test_common/sim_seeds.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

// A namespace of its own: a unity build (-Dunity_tests=true) puts several test files in one TU.
namespace commit_sim_tests {

namespace {

namespace asio = boost::asio;
namespace sim = baton::sim;
using namespace std::chrono_literals;
using baton::errc;
using baton::error_code;
using baton::precondition;
using sim::virtual_clock;
using vtime = virtual_clock::time_point;
// Both stores record what they apply: the checks trace each commit to the write that sent it.
using net_t = sim::faulty_backend<test_common::recording_backend>;
using timer_t = asio::basic_waitable_timer<virtual_clock, asio::wait_traits<virtual_clock>, asio::any_io_executor>;
constexpr auto await_tuple = asio::as_tuple(asio::use_awaitable);

// arrow-rs's DynamoCommit, transcribed: take a lock item in the lock store (taken over after
// `lock_ttl` of the same version on the taker's clock), read the object at its real path, check
// the condition, write the object unconditionally under the request timeout, unlock. A timeout
// does not stop a request already sent.
class timeout_locked_store {
public:
    using executor_type = asio::any_io_executor;
    timeout_locked_store(net_t objects, net_t locks, executor_type ex) : o_(objects), l_(locks), ex_(ex) {}
    executor_type get_executor() const { return ex_; }

    template <class Token>
    auto async_get(std::string key, Token&& token) { return o_.async_get(std::move(key), std::forward<Token>(token)); }
    template <class Token>
    auto async_put(std::string key, std::string body, precondition pc, Token&& token) {
        return asio::co_spawn(ex_, write(std::move(key), std::move(body), std::move(pc), false), std::forward<Token>(token));
    }
    template <class Token>
    auto async_erase(std::string key, precondition pc, Token&& token) {
        return asio::co_spawn(ex_, erase(std::move(key), std::move(pc)), std::forward<Token>(token));
    }

private:
    asio::awaitable<baton::erase_result> erase(std::string key, precondition pc) {
        co_await write(std::move(key), {}, std::move(pc), true);
        co_return baton::erase_result{};
    }
    // Errors travel as exceptions through co_spawn's (exception_ptr, result) completion.
    asio::awaitable<baton::put_result> write(std::string key, std::string body, precondition pc, bool erase) {
        std::string const lock = "lock/" + key;
        std::string lock_version, seen;
        vtime seen_since{};
        for (int round = 0; lock_version.empty(); ++round) {
            if (round > 200) throw boost::system::system_error(error_code(errc::timeout));
            auto [ec, r] = co_await l_.async_put(lock, "held", precondition::absent(), await_tuple);
            if (!ec) {
                lock_version = r.version;
                break;
            }
            if (ec != errc::precondition_failed) throw boost::system::system_error(ec);
            auto [gec, g] = co_await l_.async_get(lock, await_tuple);
            if (!gec && g.found) {
                if (g.found->version != seen) {
                    seen = g.found->version;
                    seen_since = virtual_clock::now();
                } else if (virtual_clock::now() - seen_since >= 5s) { // expired: take it over
                    auto [tec, t] = co_await l_.async_put(lock, "held", precondition::matches(seen), await_tuple);
                    if (!tec) lock_version = t.version;
                    continue;
                }
            }
            timer_t wait(l_.get_executor());
            wait.expires_at(sim::manual_clock{}.timer_expiry(200ms));
            co_await wait.async_wait(await_tuple);
        }
        error_code result;
        baton::put_result out;
        auto [gec, cur] = co_await o_.async_get(key, await_tuple);
        if (gec) {
            result = gec;
        } else if ((pc.which() == precondition::kind::absent && cur.found) ||
                   (pc.which() == precondition::kind::matches && (!cur.found || cur.found->version != pc.version()))) {
            result = errc::precondition_failed;
        } else if (erase) {
            auto [eec, e] = co_await o_.async_erase(key, precondition::none(), await_tuple);
            result = eec;
        } else {
            auto [pec, p] = co_await o_.async_put(key, body, precondition::none(), await_tuple);
            result = pec;
            out.version = p.version;
        }
        co_await l_.async_erase(lock, precondition::matches(lock_version), await_tuple);
        if (result) throw boost::system::system_error(result);
        co_return out;
    }

    net_t o_, l_;
    executor_type ex_;
};

// co_spawn completes with (exception_ptr, T); the driver wants (error_code, T).
error_code error_of(std::exception_ptr const& e) {
    if (!e) return {};
    try {
        std::rethrow_exception(e);
    } catch (boost::system::system_error const& s) {
        return s.code();
    } catch (...) {
        return errc::invalid_response;
    }
}

struct commit_outcome {
    std::uint64_t writes = 0, ok = 0, refused = 0, unknown = 0, failed = 0, reads = 0, collected = 0;
    std::vector<std::string> violations;
    void add(commit_outcome const& o) {
        writes += o.writes, ok += o.ok, refused += o.refused, unknown += o.unknown, failed += o.failed;
        reads += o.reads, collected += o.collected;
    }
};

template <class Store>
class commit_sim {
public:
    explicit commit_sim(std::uint64_t seed) : sched_(seed) {}

    commit_outcome run() {
        sim::fault_profile fo = test_common::random_write_faults(sched_), fl = test_common::random_write_faults(sched_);
        fl.stale_read = 0; // consistent reads of the lock store (see the file comment); objects may lag
        net_t objects(test_common::recording_backend(baton::memory_backend(sched_.get_executor()), objects_log_),
                      sched_.get_executor(), sched_.rng()(), fo);
        net_t locks(test_common::recording_backend(baton::memory_backend(sched_.get_executor()), locks_log_),
                    sched_.get_executor(), sched_.rng()(), fl);
        objects_ = &objects;
        locks_ = &locks;

        int const n = 3 + static_cast<int>(sched_.rng()() % 3);
        for (int i = 0; i < n; ++i) {
            auto c = std::make_unique<client>(sched_.make_participant_executor(), i);
            c->store = std::make_unique<Store>(make_store(objects, locks, c->ex));
            clients_.push_back(std::move(c));
        }
        for (auto& c : clients_) asio::co_spawn(c->ex, drive(*c), asio::detached);
        asio::co_spawn(sched_.get_executor(), freezer(), asio::detached);
        if constexpr (requires(Store& s) { s.async_collect(std::string(), asio::detached); })
            asio::co_spawn(sched_.get_executor(), collector(), asio::detached);

        sched_.run_until(vtime(180s));
        stopping_ = true;
        for (auto& c : clients_) c->ex.thaw();
        objects.set_faults_enabled(false);
        locks.set_faults_enabled(false);
        sched_.run_until(vtime(400s)); // everything in flight completes or lands

        for (auto const& id : pending_) violate("(c4) " + id + " never completed");
        final_reads();
        check();
        if constexpr (std::is_base_of_v<baton::basic_commit_protocol<net_t, net_t>, Store>) check_told();
        return out_;
    }

private:
    struct client {
        client(sim::pausable_executor e, int i) : ex(std::move(e)), index(i) {}
        sim::pausable_executor ex;
        int index;
        std::unique_ptr<Store> store;
        int n = 0;
    };
    struct write_op {
        std::string id, key;
        precondition pre = precondition::none();
        bool erase = false;
        vtime started{}, ended{};
        enum { pending, ok, refused, unknown, failed } outcome = pending;
        std::string version; // acknowledged
    };
    struct read_op {
        std::string key;
        vtime started{}, ended{};
        std::optional<std::pair<std::string, std::string>> found; // (version, body)
    };

    Store make_store(net_t& objects, net_t& locks, sim::pausable_executor const& ex) {
        if constexpr (std::is_same_v<Store, timeout_locked_store>)
            return Store(objects, locks, ex);
        else
            return Store(objects, locks, {}, sched_.rng()());
    }
    std::chrono::nanoseconds between(std::chrono::nanoseconds lo, std::chrono::nanoseconds hi) {
        return lo + std::chrono::nanoseconds(static_cast<std::int64_t>(sched_.uniform() * static_cast<double>((hi - lo).count())));
    }
    void violate(std::string what) {
        std::ostringstream s;
        s << "t=" << std::chrono::duration<double>(virtual_clock::now().time_since_epoch()).count() << "s " << what;
        out_.violations.push_back(s.str());
    }
    asio::awaitable<void> sleep(std::chrono::nanoseconds d) {
        timer_t t(sched_.get_executor());
        t.expires_at(sim::manual_clock{}.timer_expiry(d));
        co_await t.async_wait(await_tuple);
    }

    asio::awaitable<void> freezer() {
        while (!stopping_) {
            co_await sleep(between(2s, 20s));
            if (stopping_) break;
            auto& c = *clients_[sched_.rng()() % clients_.size()];
            if (c.ex.frozen()) continue;
            c.ex.freeze(); // mid-protocol, wherever it is
            auto t = std::make_shared<timer_t>(sched_.get_executor());
            t->expires_at(sim::manual_clock{}.timer_expiry(between(1s, 30s)));
            t->async_wait([t, &c, this](error_code) { if (!stopping_) c.ex.thaw(); });
        }
    }

    asio::awaitable<void> collector() {
        Store gc(*objects_, *locks_, {}, sched_.rng()());
        while (!stopping_) {
            co_await sleep(between(1s, 8s));
            auto [ec, r] = co_await gc.async_collect("", await_tuple);
            if (!ec) out_.collected += r.collected;
        }
    }

    asio::awaitable<void> drive(client& c) {
        while (!stopping_) {
            co_await sleep(between(50ms, 2s));
            if (stopping_) break;
            std::string const key = "k" + std::to_string(sched_.rng()() % 2);
            read_op rd{key, virtual_clock::now(), {}, {}};
            auto [gec, g] = co_await c.store->async_get(key, await_tuple);
            ++out_.reads;
            if (gec) {
                if (!baton::is_retryable(gec) && !baton::outcome_unknown(gec))
                    violate("(c4) a read of " + key + " failed with " + gec.message() + ": " + g.diag.to_string());
                continue;
            }
            rd.ended = virtual_clock::now();
            if (g.found) rd.found = std::make_pair(g.found->version, g.found->body);
            reads_.push_back(rd);

            write_op w;
            w.id = "w" + std::to_string(c.index) + "-" + std::to_string(++c.n);
            w.key = key;
            double const u = sched_.uniform();
            if (!g.found || u < 0.1) w.pre = precondition::absent();
            else w.pre = precondition::matches(g.found->version);
            w.erase = g.found && u > 0.85;
            w.started = virtual_clock::now();
            pending_.insert(w.id);
            ++out_.writes;
            error_code ec;
            std::string version;
            if (w.erase) {
                auto [e, r] = co_await c.store->async_erase(key, w.pre, await_tuple);
                ec = adapt(e);
            } else {
                auto [e, r] = co_await c.store->async_put(key, w.id, w.pre, await_tuple);
                ec = adapt(e);
                version = r.version;
            }
            pending_.erase(w.id);
            w.ended = virtual_clock::now();
            if (!ec) {
                ++out_.ok;
                w.outcome = write_op::ok;
                w.version = version;
            } else if (ec == errc::precondition_failed || ec == errc::not_found) {
                ++out_.refused;
                w.outcome = write_op::refused;
            } else if (baton::outcome_unknown(ec)) {
                ++out_.unknown;
                w.outcome = write_op::unknown;
            } else if (baton::is_retryable(ec) || ec == errc::conflict) {
                ++out_.failed;
                w.outcome = write_op::unknown; // a transient failure may still have landed
            } else {
                violate("(c4) " + w.id + " failed with " + ec.message());
                w.outcome = write_op::failed;
            }
            writes_.push_back(std::move(w));
        }
    }
    static error_code adapt(error_code ec) { return ec; }
    static error_code adapt(std::exception_ptr const& e) { return error_of(e); }

    void final_reads() {
        Store reader = make_reader();
        for (std::string key : {"k0", "k1"}) {
            read_op rd{key, virtual_clock::now(), {}, {}};
            std::optional<std::pair<error_code, baton::get_result>> got;
            reader.async_get(key, [&](error_code ec, baton::get_result r) { got.emplace(ec, std::move(r)); });
            sched_.run_for(10s);
            if (!got || got->first) {
                violate("(c4) the final read of " + key + " failed" + (got ? ": " + got->first.message() + " " + got->second.diag.to_string() : ""));
                continue;
            }
            rd.ended = virtual_clock::now();
            if (got->second.found) rd.found = std::make_pair(got->second.found->version, got->second.found->body);
            reads_.push_back(rd);
        }
    }
    Store make_reader() {
        if constexpr (std::is_same_v<Store, timeout_locked_store>)
            return Store(*objects_, *locks_, sched_.get_executor());
        else
            return Store(*objects_, *locks_, {}, sched_.rng()());
    }

    // (c5): every commit the lock store applied, traced through the object it names to the write
    // whose bytes (its id) the object holds, against what that write was told.
    void check_told() {
        std::map<std::string, std::string> object_body;
        for (auto const& a : *objects_log_) object_body[a.key] = a.body;
        std::map<std::string, int> committed;
        for (auto const& a : *locks_log_) {
            baton::detail::commit_pointer p;
            baton::diagnostics d;
            if (baton::detail::decode_commit_pointer(a.body, p, d) || p.erased) continue;
            auto it = object_body.find(p.object);
            if (it == object_body.end()) {
                violate("(c5) a commit names " + p.object + ", which was never written");
                continue;
            }
            ++committed[it->second];
        }
        for (auto const& w : writes_) {
            if (w.erase) continue;
            int const n = committed.count(w.id) ? committed[w.id] : 0;
            char const* told = w.outcome == write_op::ok ? "written" : w.outcome == write_op::refused ? "refused" : "unknown";
            bool const ok = w.outcome == write_op::ok ? n == 1 : w.outcome == write_op::refused ? n == 0 : n <= 1;
            if (!ok) violate("(c5) " + w.id + " was reported " + told + ", and committed " + std::to_string(n) + " times");
        }
    }

    // ---- the checks, from acknowledgements and reads only ----

    void check() {
        std::map<std::string, write_op*> by_id;
        for (auto& w : writes_) by_id[w.id] = &w;
        // (c2) version -> the write that produced it, from acknowledgements, then from reads.
        std::map<std::pair<std::string, std::string>, write_op*> by_version; // (key, version)
        for (auto& w : writes_)
            if (w.outcome == write_op::ok && !w.erase) by_version[{w.key, w.version}] = &w;
        for (auto const& r : reads_) {
            if (!r.found) continue;
            auto const& [version, body] = *r.found;
            auto it = by_id.find(body);
            if (it == by_id.end()) {
                violate("(c2) " + r.key + " read bytes no write sent: " + body);
                continue;
            }
            write_op& w = *it->second;
            if (w.outcome == write_op::ok && w.version != version)
                violate("(c2) " + w.id + " was acknowledged as version " + w.version + " but read as " + version);
            auto [pos, fresh] = by_version.emplace(std::make_pair(r.key, version), &w);
            if (!fresh && pos->second != &w)
                violate("(c2) version " + version + " of " + r.key + " read as " + w.id + " and as " + pos->second->id);
        }
        // (c1) no two successes on one condition.
        std::map<std::pair<std::string, std::string>, std::string> won;
        for (auto const& w : writes_) {
            if (w.outcome != write_op::ok || w.pre.which() != precondition::kind::matches) continue;
            auto [pos, fresh] = won.emplace(std::make_pair(w.key, w.pre.version()), w.id);
            if (!fresh) violate("(c1) " + w.id + " and " + pos->second + " both succeeded on version " + w.pre.version() + " of " + w.key);
        }
        // (c3) acknowledged writes stay: what may follow a version is what was written on it
        // (a write naming it, an erase naming it and then any creation), transitively.
        std::map<write_op const*, std::string> version_of;
        for (auto const& [kv, w] : by_version) version_of[w] = kv.second;
        std::map<std::pair<std::string, std::string>, std::vector<std::string>> written_on; // (key, v) -> versions after
        std::set<std::pair<std::string, std::string>> erased_on;                           // (key, v) erased by a write that may have landed
        std::map<std::string, std::vector<std::string>> created;                           // key -> versions written on absent
        for (auto const& w : writes_) {
            bool const may_have_landed = w.outcome != write_op::refused && w.outcome != write_op::failed;
            if (!may_have_landed) continue;
            if (w.erase) {
                if (w.pre.which() == precondition::kind::matches) erased_on.insert({w.key, w.pre.version()});
                continue;
            }
            auto v = version_of.find(&w);
            if (v == version_of.end()) continue; // never seen: nothing read descends through it
            if (w.pre.which() == precondition::kind::matches) written_on[{w.key, w.pre.version()}].push_back(v->second);
            else created[w.key].push_back(v->second);
        }
        for (auto const& p : writes_) {
            if (p.outcome != write_op::ok || p.erase) continue;
            std::set<std::string> reach{p.version};
            std::vector<std::string> todo{p.version};
            bool absent_reachable = false;
            while (!todo.empty()) {
                std::string v = todo.back();
                todo.pop_back();
                auto add = [&](std::string const& n) {
                    if (reach.insert(n).second) todo.push_back(n);
                };
                if (auto it = written_on.find({p.key, v}); it != written_on.end())
                    for (auto const& n : it->second) add(n);
                if (!absent_reachable && erased_on.count({p.key, v})) {
                    absent_reachable = true;
                    for (auto const& n : created[p.key]) add(n);
                }
            }
            for (auto const& r : reads_) {
                if (r.key != p.key || r.started <= p.ended) continue;
                if (!r.found) {
                    if (!absent_reachable)
                        violate("(c3) " + p.id + " (version " + p.version + " of " + p.key + ") was acknowledged, then " +
                                p.key + " read absent with no erase after it");
                } else if (!reach.count(r.found->first)) {
                    violate("(c3) " + p.id + " (version " + p.version + " of " + p.key + ") was acknowledged, then " + p.key +
                            " read as " + r.found->second + " (version " + r.found->first + "), which does not descend from it");
                }
            }
        }
    }

    sim::scheduler sched_;
    net_t* objects_ = nullptr;
    net_t* locks_ = nullptr;
    std::shared_ptr<test_common::applied_log> objects_log_ = std::make_shared<test_common::applied_log>();
    std::shared_ptr<test_common::applied_log> locks_log_ = std::make_shared<test_common::applied_log>();
    std::vector<std::unique_ptr<client>> clients_;
    bool stopping_ = false;
    std::set<std::string> pending_;
    std::vector<write_op> writes_;
    std::vector<read_op> reads_;
    commit_outcome out_;
};

using commit_t = baton::basic_commit_protocol<net_t, net_t>;

// The protocol with a caller-facing guess: a commit whose answer was lost is reported refused
// (what a store that assumes "not applied" does), only to prove that the checker catches it.
class guessing_commit : public commit_t {
public:
    using commit_t::commit_t;
    template <class Token>
    auto async_put(std::string key, std::string body, precondition pc, Token&& token) {
        return asio::async_initiate<Token, void(error_code, baton::put_result)>(
            [self = this](auto h, std::string k, std::string b, precondition p) {
                self->commit_t::async_put(std::move(k), std::move(b), std::move(p), [h = std::move(h)](error_code ec, baton::put_result r) mutable {
                    if (baton::outcome_unknown(ec)) ec = errc::precondition_failed;
                    std::move(h)(ec, std::move(r));
                });
            },
            token, std::move(key), std::move(body), std::move(pc));
    }
};

} // namespace

TEST_SUITE("simulation") {

TEST_CASE("commit protocol: conditional writes linearizable, acknowledged writes stay, over two faulty stores") {
    auto const range = test_common::seed_range::from_env(4); // a quarter of BATON_SIM_SEEDS
    commit_outcome total;
    std::uint64_t const failed =
        test_common::run_seeds(range, total, [](std::uint64_t s) { return commit_sim<commit_t>(s).run(); }, 10);
    MESSAGE(range.count << " seeds: " << total.writes << " writes; " << total.ok << " acknowledged, " << total.refused
                        << " refused by their condition, " << total.unknown << " unknown or transient, " << total.reads
                        << " reads; " << total.collected << " objects collected");
    CHECK(failed == 0);
    if (range.count >= 50) {
        CHECK(total.ok > 0);
        CHECK(total.refused > 0);
        CHECK(total.collected > 0);
    }
}

TEST_CASE("the commit checker bites: a commit whose answer was lost, reported refused, is caught") {
    std::uint64_t const runs = 40;
    auto const f = test_common::count_flagged(runs, "(c5)", [](std::uint64_t s) { return commit_sim<guessing_commit>(s).run(); });
    MESSAGE("lost answers told as refusals: " << f.caught << " of " << runs << " runs flagged; e.g. " << f.example);
    CHECK(f.caught > 0);
}

TEST_CASE("the commit checker bites: arrow-rs's lock and a write under a timeout is caught") {
    std::uint64_t const runs = 40;
    auto const f = test_common::count_flagged(runs, "(c3)", [](std::uint64_t s) { return commit_sim<timeout_locked_store>(s).run(); });
    MESSAGE("lock + timeout: " << f.caught << " of " << runs << " runs flagged; e.g. " << f.example);
    CHECK(f.caught > 0);
}

}

} // namespace commit_sim_tests
