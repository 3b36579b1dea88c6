// The lease simulation suite: several contenders per run on one key, under
// injected faults, frozen participants and skewed clock rates, checked in
// virtual real time. Each seed is a deterministic run; a failure prints its
// seed, and BATON_SIM_SEED=<seed> replays just that one (BATON_SIM_TRACE=1
// prints its events). BATON_SIM_SEEDS sets how many, BATON_SIM_FIRST where to start,
// BATON_SIM_MAX_FAILURES how many flagged seeds end the run (default 5).
//
// Properties (docs/design.md §13):
// (a) never two holders whose own clocks both call the lease valid at once;
// (b) fencing tokens strictly increase across acquisitions, none twice;
// (c) once faults stop, some contender holds within
//     ttl x skew + one poll interval (converted to real time by the slowest
//     clock rate, plus the bounded rests, backoffs and network latency);
// (d) a released lease is taken within two poll intervals (same conversion):
//     a waiter reads at least once a poll interval, or once every two while
//     the record it last read states its holder's turn (a holder re-acquiring
//     back to back states one); which record a sleeping waiter read is not
//     visible here, so the bound is two polls for every release;
// (e) what the application sees: from each successful acquire until its
//     async_wait_lost completes (or its release completes), no other running
//     participant's application holds. A frozen participant runs nothing, so
//     it is left out while frozen; its loss is delivered the instant it thaws.
//     Every waiter of a term is told the same thing, before the next term.
// (f) an election observer's leaders never go back in token order, and a
//     leader it reports expired was not held, throughout the read, by a
//     running application;
// (g) what the store holds agrees with what applications are told: a release
//     reported done left our marker (or a later holder came in through it), a
//     release reported lost left no record of ours, and a loss told before
//     the renew deadline (a refusal) left no record of ours.
// Seeds with stale reads (a lagging replica; no baton backend has one) check
// safety only: (a), (b), (e).
//
// Odd seeds' store answers a refused write without the current record, as S3 and
// dynalite do; even seeds' with it, as DynamoDB and the memory store do.
//
// Some seeds run a slow network: the client's attempt timeout is longer than
// the renew deadline and answers come back up to 25 s late, so answers of an
// ended term arrive during the next one.

#include <baton/backend/memory.hpp>
#include <baton/recipe/election.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/sim.hpp>

#include <doctest/doctest.h>
#include <test_common/sim_seeds.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using baton::sim::virtual_clock;
using sim_backend = baton::sim::faulty_backend<baton::memory_backend>;
using sim_lease = baton::basic_lease<sim_backend, baton::sim::manual_clock, baton::standard_retry>;
using sim_election = baton::basic_election<sim_backend, baton::sim::manual_clock, baton::standard_retry>;
using vtime = virtual_clock::time_point;
using timer_t = boost::asio::basic_waitable_timer<virtual_clock, boost::asio::wait_traits<virtual_clock>,
                                                   boost::asio::any_io_executor>;

struct sim_config {
    std::chrono::milliseconds ttl = 20s; // the longest; participants draw theirs from ttl/2 .. ttl
    std::chrono::milliseconds poll = 1s;
    double skew = 2.0;          // the real bound on any two clocks' rate ratio
    double lease_skew = 2.0;    // what the leases declare (at least `skew`, up to 1.5x it; below 1 only to prove the checker bites)
    bool freezes = true;
    std::chrono::nanoseconds fault_phase = 150s;
    std::chrono::nanoseconds total = 240s;
};

struct outcome {
    std::vector<std::string> violations;
    std::uint64_t acquisitions = 0, takeovers = 0, releases = 0, losses = 0, freezes = 0, try_once = 0, cancelled = 0,
                  restarts = 0, late_acquires = 0, leader_reads = 0, expired_leaders = 0, abandoned_claims = 0,
                  duplicates = 0, stale_reads = 0, throttled_applied = 0;
    void add(outcome const& o) {
        acquisitions += o.acquisitions, takeovers += o.takeovers, releases += o.releases, losses += o.losses;
        freezes += o.freezes, try_once += o.try_once, cancelled += o.cancelled, restarts += o.restarts;
        late_acquires += o.late_acquires, leader_reads += o.leader_reads, expired_leaders += o.expired_leaders;
        abandoned_claims += o.abandoned_claims, duplicates += o.duplicates, stale_reads += o.stale_reads;
        throttled_applied += o.throttled_applied;
    }
};

class lease_sim {
public:
    lease_sim(std::uint64_t seed, sim_config cfg) : cfg_(cfg), sched_(seed), store_(sched_.get_executor()) {
        auto& rng = sched_.rng();
        int const n = 3 + static_cast<int>(rng() % 3);
        // Fault mix for this seed: each kind on or off, at varying rates.
        baton::sim::fault_profile fp;
        auto maybe = [&](double hi) { return sched_.uniform() < 0.6 ? sched_.uniform() * hi : 0.0; };
        fp.drop_request = maybe(0.08);
        fp.drop_response = maybe(0.08);
        fp.conflict = maybe(0.05);
        fp.precondition = maybe(0.03);
        fp.server_error = maybe(0.05);
        fp.unavailable = maybe(0.05);
        fp.throttle = maybe(0.05);
        fp.throttle_applied = maybe(0.03);
        fp.duplicate = maybe(0.05);
        fp.delay = maybe(0.1);
        // Stale reads: no baton backend gives them (S3 is strongly consistent, DynamoDB reads are
        // consistent), but safety must not depend on it. Seeds with them check safety only.
        if (sched_.uniform() < 0.2) fp.stale_read = sched_.uniform() * 0.2;
        stale_ = fp.stale_read > 0;
        double const network = sched_.uniform();
        if (network < 0.2) { // a slow network: answers of an ended term arrive in the next one
            fp.request_timeout = 30s;
            fp.max_extra_delay = 25s;
            fp.delay = std::max(fp.delay, 0.05);
        } else if (network < 0.3) { // writes landing a minute after their sender gave up on them
            fp.max_extra_delay = 60s;
            fp.delay = std::max(fp.delay, 0.05);
        }
        // Odd seeds: refusals carry no record, as S3 and dynalite answer (a seed bit, not a draw).
        fp.refusals_carry_record = seed % 2 == 0;
        profile_ = fp;
        double const max_rate = std::sqrt(cfg_.skew);
        for (int i = 0; i < n; ++i) {
            auto p = std::make_unique<participant>();
            p->index = i;
            p->ex = sched_.make_participant_executor();
            // Clock rates spread within the declared bound: any two differ by at most `skew`.
            double const rate = std::exp((sched_.uniform() * 2 - 1) * std::log(max_rate));
            p->clock = baton::sim::manual_clock(rate, std::chrono::seconds(static_cast<int>(rng() % 1000)));
            min_rate_ = std::min(min_rate_, rate);
            p->backend.emplace(store_, sched_.get_executor(), rng(), fp);
            // Each participant its own ttl and declared skew (never below the real bound, unless broken on purpose).
            p->ttl = std::chrono::milliseconds(cfg_.ttl.count() / 2 + static_cast<std::int64_t>(rng() % (cfg_.ttl.count() / 2 + 1)));
            p->skew = cfg_.lease_skew >= cfg_.skew ? cfg_.lease_skew * (1.0 + 0.5 * sched_.uniform()) : cfg_.lease_skew;
            max_window_ = std::max(max_window_, std::chrono::nanoseconds(static_cast<std::int64_t>(
                                                    static_cast<double>(std::chrono::nanoseconds(cfg_.ttl).count()) * p->skew)));
            p->is_election = sched_.uniform() < 0.4;
            p->timer.emplace(p->ex);
            p->cancel_timer.emplace(p->ex);
            p->observe_timer.emplace(p->ex);
            make_object(*p);
            participants_.push_back(std::move(p));
        }
        freeze_timer_.emplace(sched_.get_executor());
        sched_.on_step([this](vtime t) { check(t); });
    }

    outcome run() {
        for (auto& p : participants_) {
            start_cycle(*p, 0ms);
            if (p->is_election && sched_.uniform() < 0.5) observe(*p, p->epoch);
        }
        if (cfg_.freezes) schedule_freeze();
        sched_.run_until(vtime(cfg_.fault_phase));
        // Faults stop: no new ones, everyone thaws.
        faults_on_ = false;
        for (auto& p : participants_) {
            p->backend->set_faults_enabled(false);
            if (p->ex.frozen()) p->ex.thaw();
        }
        settle_at_ = vtime(cfg_.fault_phase) + profile_.max_extra_delay + profile_.request_timeout;
        sched_.run_until(vtime(cfg_.total));
        stopping_ = true;
        if (!first_holder_after_settle_)
            violate(vtime(cfg_.total), "(c) nobody held the lease after faults stopped");
        // Let everything wind down so no handler outlives the participants.
        for (auto& p : participants_) {
            ++p->epoch;
            p->election.reset();
            p->lease.reset();
        }
        sched_.run_for(10s);
        for (auto& p : participants_) {
            out_.duplicates += p->backend->counts().duplicated;
            out_.stale_reads += p->backend->counts().stale_reads;
            out_.throttled_applied += p->backend->counts().throttled_applied;
        }
        return out_;
    }

private:
    struct participant {
        int index = 0;
        int generation = 0; // restarts under a new owner name
        std::uint64_t epoch = 0; // bumped when the object is replaced: older handlers stand down
        baton::sim::pausable_executor ex{boost::asio::io_context().get_executor()};
        baton::sim::manual_clock clock;
        std::chrono::milliseconds ttl{};
        double skew = 2.0;
        bool is_election = false;
        std::optional<sim_backend> backend;
        std::optional<sim_lease> lease;
        std::optional<sim_election> election;
        std::optional<timer_t> timer, cancel_timer, observe_timer;
        boost::asio::cancellation_signal cancel;
        std::uint64_t acquisition = 0;
        bool holding = false;   // the application's hold phase (until it releases, restarts or is told of a loss)
        bool waiting = false;
        bool app_holds = false; // from a successful acquire until its loss or release is delivered
        std::uint64_t token = 0; // the token the application holds (or last held)
        int waiters = 0;         // async_wait_lost calls of the current term not completed yet
        std::optional<baton::error_code> term_end; // what the first waiter of the term was told
        std::chrono::nanoseconds deadline{0};      // the renew deadline last seen while held (own time)
        std::uint64_t last_leader_token = 0;
        std::uint64_t term_id = 0; // grants so far: tells one term of the application from the next

        sim_lease& l() { return is_election ? election->lease() : *lease; }
    };

    void make_object(participant& p) {
        baton::lease_options o;
        o.key = "jobs/nightly";
        o.owner = "p" + std::to_string(p.index) + (p.generation ? "r" + std::to_string(p.generation) : "");
        o.ttl = p.ttl;
        o.poll_interval = cfg_.poll;
        o.max_clock_rate_skew = p.skew;
        o.random_seed = sched_.rng()();
        if (p.is_election)
            p.election.emplace(baton::detail::unchecked, p.ex, *p.backend, o, baton::standard_retry{}, baton::backend_signer{},
                               p.clock);
        else
            p.lease.emplace(baton::detail::unchecked, p.ex, *p.backend, o, baton::standard_retry{}, baton::backend_signer{},
                            p.clock);
    }

    // Limits used by (c) and (d), in real (virtual) time.
    std::chrono::nanoseconds max_latency() const { return profile_.max_latency; }
    static constexpr auto max_rest = 2s;
    static constexpr auto max_backoff = 2s; // standard_retry: throttling base x 2 at the last retry

    bool in_tail(vtime t) const { return !faults_on_ && t >= settle_at_; }

    template <class D>
    std::chrono::nanoseconds own_to_real(D d) const {
        return std::chrono::nanoseconds(static_cast<std::int64_t>(
            std::ceil(static_cast<double>(std::chrono::nanoseconds(d).count()) / min_rate_)));
    }

    std::chrono::nanoseconds bound_c() const {
        return own_to_real(max_window_ + cfg_.poll + max_rest + max_backoff) + 8 * max_latency() + 10ms;
    }

    std::chrono::nanoseconds bound_d() const { return own_to_real(2 * cfg_.poll) + 4 * max_latency() + 10ms; }

    // BATON_SIM_TRACE=1 prints each participant's events, for replaying one seed.
    void trace(participant const& p, std::string const& what) {
        if (!trace_) return;
        std::printf("%12.6f p%d %s\n", std::chrono::duration<double>(virtual_clock::now().time_since_epoch()).count(),
                    p.index, what.c_str());
    }

    void violate(vtime t, std::string what) {
        std::ostringstream s;
        s << "t=" << std::chrono::duration<double>(t.time_since_epoch()).count() << "s " << what;
        out_.violations.push_back(s.str());
    }

    template <class F>
    void after_own(participant& p, timer_t& timer, std::chrono::nanoseconds d, F&& f) {
        timer.expires_at(p.clock.timer_expiry(d));
        timer.async_wait(std::forward<F>(f));
    }

    std::chrono::nanoseconds random_between(std::chrono::nanoseconds lo, std::chrono::nanoseconds hi) {
        return lo + std::chrono::nanoseconds(static_cast<std::int64_t>(sched_.uniform() * static_cast<double>((hi - lo).count())));
    }

    // The record as stored now, decoded; empty when absent.
    std::optional<baton::detail::lease_body> stored() const {
        auto r = store_.peek("jobs/nightly");
        if (!r) return std::nullopt;
        baton::detail::lease_body b;
        baton::diagnostics d;
        if (baton::detail::decode_lease_body(r->body, b, d)) return std::nullopt;
        return b;
    }

    void start_cycle(participant& p, std::chrono::nanoseconds rest) {
        if (stopping_) return;
        auto const epoch = p.epoch;
        after_own(p, *p.timer, rest, [this, &p, epoch](baton::error_code ec) {
            if (ec || stopping_ || epoch != p.epoch) return;
            acquire(p);
        });
    }

    void acquire(participant& p) {
        auto const epoch = p.epoch;
        auto const id = ++p.acquisition;
        baton::acquire_options o;
        double const mode = sched_.uniform();
        bool cancel = false;
        if (mode < 0.2) {
            o.wait = false; // try once
            ++out_.try_once;
        } else if (mode < 0.35 && faults_on_) {
            cancel = true;
        } else if (faults_on_ && sched_.uniform() < 0.3) {
            o.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(random_between(5s, 60s));
        }
        p.waiting = true;
        trace(p, std::string("acquiring") + (o.wait ? "" : " (try once)") + (cancel ? " (to be cancelled)" : ""));
        auto handler = [this, &p, epoch, id](baton::error_code ec, baton::lease_grant g) {
            if (epoch != p.epoch) return;
            p.waiting = false;
            p.cancel_timer->cancel();
            if (stopping_) return;
            if (ec) {
                trace(p, "acquire failed: " + ec.message());
                check_not_abandoned(p, id);
                return start_cycle(p, random_between(0s, max_rest));
            }
            trace(p, "acquired token " + std::to_string(g.fencing_token) + (g.took_over ? " (takeover)" : ""));
            on_acquired(p, g);
        };
        if (cancel) {
            after_own(p, *p.cancel_timer, random_between(0s, 10s), [this, &p, epoch, id](baton::error_code ec) {
                if (ec || epoch != p.epoch || id != p.acquisition || !p.waiting) return;
                trace(p, "cancelling");
                ++out_.cancelled;
                cancelled_[&p] = id;
                p.cancel.emit(boost::asio::cancellation_type::terminal);
            });
            p.l().async_acquire(o, boost::asio::bind_cancellation_slot(p.cancel.slot(), std::move(handler)));
        } else if (p.is_election && o.wait && !o.timeout) {
            p.election->async_campaign(std::move(handler));
        } else {
            p.l().async_acquire(o, std::move(handler));
        }
    }

    // A cancelled acquisition whose claim landed should not leave it unseen; it still can, when
    // the claim lands after the read back (delayed in the network) or that read fails. Counted,
    // not checked: the unit tests script the cases the settlement must win.
    void check_not_abandoned(participant& p, std::uint64_t id) {
        if (!cancelled_.count(&p) || cancelled_[&p] != id) return;
        cancelled_.erase(&p);
        auto b = stored();
        if (b && !b->released && b->owner == p.l().owner() && b->token > last_token_) ++out_.abandoned_claims;
    }

    void on_acquired(participant& p, baton::lease_grant const& g) {
        vtime const t = virtual_clock::now();
        ++out_.acquisitions;
        if (g.took_over) ++out_.takeovers;
        if (tokens_.count(g.fencing_token))
            violate(t, "(b) token " + std::to_string(g.fencing_token) + " acquired twice (p" + std::to_string(p.index) + ")");
        if (g.fencing_token <= last_token_)
            violate(t, "(b) token " + std::to_string(g.fencing_token) + " after " + std::to_string(last_token_) + " (p" +
                           std::to_string(p.index) + ")");
        if (p.waiters > 0)
            violate(t, "(e) p" + std::to_string(p.index) + " began token " + std::to_string(g.fencing_token) +
                           " while a waiter of its previous term (token " + std::to_string(p.token) + ") was not told");
        tokens_.insert(g.fencing_token);
        last_token_ = std::max(last_token_, g.fencing_token);
        if (release_pending_check_) {
            if (t - *release_pending_check_ > bound_d())
                violate(t, "(d) released lease taken after " +
                               std::to_string(std::chrono::duration<double>(t - *release_pending_check_).count()) + "s");
            release_pending_check_.reset();
        }
        p.holding = true;
        p.app_holds = true;
        ++p.term_id;
        p.token = g.fencing_token;
        p.term_end.reset();
        auto const epoch = p.epoch;
        // One to three waiters: every one of them is told, the same thing, before the next term.
        int const n = 1 + static_cast<int>(sched_.rng()() % 3);
        p.waiters = n;
        for (int i = 0; i < n; ++i) {
            p.l().async_wait_lost([this, &p, epoch, token = g.fencing_token](baton::error_code ec) {
                if (epoch != p.epoch) return;
                --p.waiters;
                if (p.term_end) {
                    if (*p.term_end != ec)
                        violate(virtual_clock::now(), "(e) p" + std::to_string(p.index) + "'s waiters of token " +
                                                          std::to_string(token) + " were told " + p.term_end->message() +
                                                          " and " + ec.message());
                    return;
                }
                p.term_end = ec;
                p.app_holds = false;
                if (ec == baton::errc::lease_lost) {
                    trace(p, "lost");
                    ++out_.losses;
                    check_loss(p, token);
                    if (!p.holding) return; // the application already moved on (a release or an acquire)
                    p.holding = false;
                    p.timer->cancel();
                    start_cycle(p, random_between(0s, max_rest));
                }
            });
        }
        // Hold for a while, unless lost first.
        auto hold = faults_on_ ? random_between(1s, 40s) : random_between(1s, 5s);
        after_own(p, *p.timer, hold, [this, &p, epoch](baton::error_code ec) {
            if (ec || stopping_ || !p.holding || epoch != p.epoch) return;
            p.holding = false;
            double const u = sched_.uniform();
            if (faults_on_ && u < 0.08) return restart(p); // a crash, and a new process under a new name
            if (!p.l().is_held() && u < 0.5) {
                // Past the deadline (a pause), before the lease's own timer ran: the application acquires again.
                ++out_.late_acquires;
                trace(p, "acquiring again past the deadline");
                return acquire(p);
            }
            release(p);
        });
    }

    void release(participant& p) {
        auto const epoch = p.epoch;
        auto const token = p.token;
        auto const owner = p.l().owner();
        auto done = [this, &p, epoch, token, owner](baton::error_code ec) {
            if (epoch != p.epoch) return;
            p.app_holds = false;
            if (stopping_) return;
            trace(p, "release: " + ec.message());
            check_release(p, ec, token, owner);
            if (!ec) {
                ++out_.releases;
                vtime const t = virtual_clock::now();
                bool const someone_waiting = std::any_of(participants_.begin(), participants_.end(), [&](auto const& q) {
                    return q.get() != &p && q->waiting && !q->ex.frozen();
                });
                // Unless someone already took it while our release response travelled back.
                if (in_tail(t) && someone_waiting && valid_holders() == 0 && !release_pending_check_)
                    release_pending_check_ = t;
            }
            start_cycle(p, random_between(0s, max_rest));
        };
        if (p.is_election)
            p.election->async_resign(std::move(done));
        else
            p.lease->async_release(std::move(done));
    }

    // What a release reports matches the store: released means our marker (or a later holder
    // that came in through it); lease_lost means the record is not ours.
    void check_release(participant& p, baton::error_code ec, std::uint64_t token, std::string const& owner) {
        if (stale_ || (ec && ec != baton::errc::lease_lost)) return;
        auto b = stored();
        auto const who = "p" + std::to_string(p.index) + " (token " + std::to_string(token) + ")";
        bool const ours = b && b->owner == owner && b->token == token;
        if (!ec && !(b && ((ours && b->released) || b->token > token)))
            violate(virtual_clock::now(), "(g) " + who + " told released, but the record is " + describe(b));
        if (ec == baton::errc::lease_lost && ours)
            violate(virtual_clock::now(), "(g) " + who + " told lease_lost, but the record is still its own: " + describe(b));
    }

    // A loss before the deadline comes from the store: the record must not be ours any more.
    void check_loss(participant& p, std::uint64_t token) {
        if (stale_ || p.clock.now().time_since_epoch() >= p.deadline) return;
        auto b = stored();
        if (b && !b->released && b->owner == p.l().owner() && b->token == token)
            violate(virtual_clock::now(), "(g) p" + std::to_string(p.index) + " told lease_lost before its deadline while the record is its own: " +
                                              describe(b) + " (" + std::to_string(std::chrono::duration<double>(p.deadline - p.clock.now().time_since_epoch()).count()) + "s before)");
    }

    static std::string describe(std::optional<baton::detail::lease_body> const& b) {
        if (!b) return "absent";
        return b->owner + " token " + std::to_string(b->token) + (b->released ? " released" : "");
    }

    // A crash: the object is destroyed without releasing, and the process comes back under a new name.
    void restart(participant& p) {
        ++out_.restarts;
        trace(p, "crashed");
        ++p.epoch;
        p.app_holds = false;
        p.waiting = false;
        p.waiters = 0;
        p.election.reset();
        p.lease.reset();
        ++p.generation;
        make_object(p);
        start_cycle(p, random_between(1s, 10s));
        if (p.is_election && sched_.uniform() < 0.5) observe(p, p.epoch);
    }

    // Applications holding when a read is sent: (participant, term), running ones only.
    std::vector<std::pair<participant const*, std::uint64_t>> holders_now() const {
        std::vector<std::pair<participant const*, std::uint64_t>> h;
        for (auto& q : participants_)
            if (q->app_holds && !q->ex.frozen()) h.emplace_back(q.get(), q->term_id);
        return h;
    }

    // An election candidate watching the leader: async_leader every poll, wait_for_change now and then.
    void observe(participant& p, std::uint64_t epoch) {
        if (stopping_ || epoch != p.epoch) return;
        auto on_leader = [this, &p, epoch, holders = holders_now()](baton::error_code ec, std::optional<baton::lease_info> l) {
            if (epoch != p.epoch || stopping_) return;
            ++out_.leader_reads;
            if (!ec && l) check_leader(p, *l, holders);
            after_own(p, *p.observe_timer, cfg_.poll, [this, &p, epoch](baton::error_code e) {
                if (!e) observe(p, epoch);
            });
        };
        if (sched_.uniform() < 0.2) {
            p.election->async_leader([this, &p, epoch, on_leader](baton::error_code ec, std::optional<baton::lease_info> l) mutable {
                if (epoch != p.epoch || stopping_) return;
                if (ec) return on_leader(ec, std::move(l));
                // The change's read is sent inside the watch: nobody is known to hold across it.
                p.election->async_wait_for_change(std::move(l), [this, &p, epoch](baton::error_code ec, std::optional<baton::lease_info> l) {
                    if (epoch != p.epoch || stopping_) return;
                    ++out_.leader_reads;
                    if (!ec && l) check_leader(p, *l, {});
                    after_own(p, *p.observe_timer, cfg_.poll, [this, &p, epoch](baton::error_code e) {
                        if (!e) observe(p, epoch);
                    });
                });
            });
        } else {
            p.election->async_leader(std::move(on_leader));
        }
    }

    // (f) an observer's leaders never go back in token order, and one reported expired is not held
    // by an application that held it, running, from the read's sending to its answer (an answer
    // speaks for when the read reached the store: the leader may have renewed since).
    void check_leader(participant& p, baton::lease_info const& l,
                      std::vector<std::pair<participant const*, std::uint64_t>> const& held_at_send) {
        vtime const t = virtual_clock::now();
        trace(p, "leader token " + std::to_string(l.fencing_token) + " version " + l.version + " unchanged for " +
                     std::to_string(std::chrono::duration<double>(l.unchanged_for).count()) + "s" + (l.expired ? " expired" : ""));
        if (!stale_ && l.fencing_token < p.last_leader_token)
            violate(t, "(f) p" + std::to_string(p.index) + " saw leader token " + std::to_string(l.fencing_token) +
                           " after " + std::to_string(p.last_leader_token));
        p.last_leader_token = std::max(p.last_leader_token, l.fencing_token);
        if (!l.expired) return;
        ++out_.expired_leaders;
        if (stale_) return; // "unchanged" means something only when reads are current (every baton backend's are)
        for (auto const& [q, term] : held_at_send)
            if (q->token == l.fencing_token) expired_reports_.push_back({p.index, q, term}); // checked at the end of this instant, like (e)
    }

    void schedule_freeze() {
        auto const wait = random_between(5s, 40s);
        freeze_timer_->expires_at(baton::sim::manual_clock{}.timer_expiry(wait));
        freeze_timer_->async_wait([this](baton::error_code ec) {
            if (ec || !faults_on_) return;
            auto& p = *participants_[sched_.rng()() % participants_.size()];
            if (!p.ex.frozen()) {
                ++out_.freezes;
                p.ex.freeze();
                trace(p, "frozen");
                // Past its TTL, sometimes far past.
                auto const len = random_between(std::chrono::nanoseconds(cfg_.ttl) / 2, std::chrono::nanoseconds(cfg_.ttl) * 3);
                auto t = std::make_shared<timer_t>(sched_.get_executor());
                t->expires_at(baton::sim::manual_clock{}.timer_expiry(len));
                t->async_wait([this, t, &p](baton::error_code) {
                    if (!p.ex.frozen()) return;
                    trace(p, "thawed");
                    p.ex.thaw();
                });
            }
            schedule_freeze();
        });
    }

    // Participants whose own clock calls their lease valid now.
    int valid_holders(std::string* who = nullptr) {
        int valid = 0;
        for (auto& p : participants_) {
            if (!p->lease && !p->election) continue;
            auto until = p->l().valid_until();
            if (until && p->clock.now() < *until) {
                ++valid;
                if (who) *who += " p" + std::to_string(p->index) + "(token " + std::to_string(p->l().fencing_token()) + ")";
            }
        }
        return valid;
    }

    void check(vtime t) {
        if (stopping_) return;
        // The renew deadline each holder last had, for telling a loss by deadline from one the store reported.
        for (auto& p : participants_) {
            if (!p->lease && !p->election) continue;
            if (auto until = p->l().valid_until()) {
                auto const rd = p->l().options().effective_renew_deadline();
                p->deadline = until->time_since_epoch() - std::chrono::nanoseconds(p->ttl) + std::chrono::nanoseconds(rd);
            }
        }
        // (e) at most one running participant whose application was told it holds and not yet told otherwise.
        std::string apps;
        int holding_apps = 0;
        for (auto& p : participants_)
            if (p->app_holds && !p->ex.frozen()) {
                ++holding_apps;
                apps += " p" + std::to_string(p->index) + "(token " + std::to_string(p->token) + ")";
            }
        if (holding_apps > 1 && !two_apps_reported_) {
            two_apps_reported_ = true;
            violate(t, "(e) two applications hold:" + apps);
        }
        // (f) a leader reported expired in this instant is not held by any running application.
        for (auto const& r : expired_reports_)
            if (r.holder->app_holds && !r.holder->ex.frozen() && r.holder->term_id == r.term)
                violate(t, "(f) p" + std::to_string(r.reporter) + " reported leader token " + std::to_string(r.holder->token) +
                               " expired while p" + std::to_string(r.holder->index) + "'s application held it throughout");
        expired_reports_.clear();
        // (a) at most one participant whose own clock calls its lease valid.
        std::string who;
        int const valid = valid_holders(&who);
        if (valid > 1 && !two_holders_reported_) {
            two_holders_reported_ = true;
            violate(t, "(a) two valid holders:" + who);
        }
        // (c) after faults stop and stragglers settle, someone holds within the bound.
        if (in_tail(t) && !first_holder_after_settle_ && valid > 0) {
            first_holder_after_settle_ = t;
            if (t - settle_at_ > bound_c())
                violate(t, "(c) first holder after faults stopped took " +
                               std::to_string(std::chrono::duration<double>(t - settle_at_).count()) + "s");
        }
        if (in_tail(t) && !first_holder_after_settle_ && t - settle_at_ > bound_c() && !c_reported_) {
            c_reported_ = true;
            violate(t, "(c) no holder within " + std::to_string(std::chrono::duration<double>(bound_c()).count()) +
                           "s of faults stopping");
        }
        if (release_pending_check_ && t - *release_pending_check_ > bound_d() && valid == 0) {
            violate(t, "(d) released lease not taken within " +
                           std::to_string(std::chrono::duration<double>(bound_d()).count()) + "s");
            release_pending_check_.reset();
        }
    }

    sim_config cfg_;
    baton::sim::scheduler sched_;
    baton::memory_backend store_;
    baton::sim::fault_profile profile_;
    bool stale_ = false;
    std::vector<std::unique_ptr<participant>> participants_;
    std::optional<timer_t> freeze_timer_;
    double min_rate_ = 1.0;
    std::chrono::nanoseconds max_window_{0};
    bool trace_ = std::getenv("BATON_SIM_TRACE") != nullptr;
    bool faults_on_ = true, stopping_ = false, two_holders_reported_ = false, two_apps_reported_ = false,
         c_reported_ = false;
    vtime settle_at_ = vtime::max();
    std::optional<vtime> first_holder_after_settle_;
    std::optional<vtime> release_pending_check_;
    std::set<std::uint64_t> tokens_;
    std::uint64_t last_token_ = 0;
    struct expired_report {
        int reporter;
        participant const* holder;
        std::uint64_t term;
    };
    std::vector<expired_report> expired_reports_; // this instant's
    std::map<participant const*, std::uint64_t> cancelled_; // the acquisition cancelled last, per participant
    outcome out_;
};

} // namespace

TEST_SUITE("simulation") {

TEST_CASE("lease safety and liveness hold over many seeds") {
    auto const range = test_common::seed_range::from_env();
    std::uint64_t const seeds = range.count;
    outcome total;
    std::uint64_t const failed = test_common::run_seeds(range, total, [](std::uint64_t s) { return lease_sim(s, sim_config{}).run(); });
    MESSAGE(seeds << " seeds: " << total.acquisitions << " acquisitions, " << total.takeovers << " takeovers, "
                  << total.releases << " releases, " << total.losses << " losses, " << total.freezes << " freezes, "
                  << total.try_once << " try-once, " << total.cancelled << " cancelled, " << total.late_acquires
                  << " acquires past the deadline, " << total.restarts << " restarts, " << total.leader_reads
                  << " leader reads (" << total.expired_leaders << " expired), " << total.duplicates << " duplicated, "
                  << total.stale_reads << " stale reads, " << total.throttled_applied << " throttled but applied, "
                  << total.abandoned_claims << " claims left by cancellation");
    CHECK(failed == 0);
    if (seeds >= 100) { // a replay of one seed need not show every event
        CHECK(total.takeovers > 0);
        CHECK(total.losses > 0);
        CHECK(total.releases > seeds);
    }
}

TEST_CASE("the checker bites: a skew factor below 1 lets two holders overlap") {
    sim_config broken;
    broken.lease_skew = 0.5; // contenders wait only half a ttl
    std::uint64_t const runs = 200;
    auto const f = test_common::count_flagged(runs, "(a)", [&](std::uint64_t s) { return lease_sim(s, broken).run(); });
    MESSAGE("broken policy: " << f.caught << " of " << runs << " runs flagged; e.g. " << f.example);
    CHECK(f.caught > 0);
}

}
