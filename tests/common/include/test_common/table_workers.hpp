// Lease-table workers for tests and the simulation: each consumes numbered records of the
// shards it is handed (record n+1 after checkpoint n), checkpointing after each, and logs what
// it does as the application sees it. The checks judge the log, never the table's internals:
//   - no two works act on one shard at once (each work's start and records form one unbroken
//     run in time: a work that processes a record after another work started was acting with it);
//   - every work starts at or after the last acknowledged checkpoint (checkpoints never go back);
//   - with `exactly_once`, no record is processed twice (graceful handoffs only, no crash).
#ifndef BATON_TEST_COMMON_TABLE_WORKERS_HPP
#define BATON_TEST_COMMON_TABLE_WORKERS_HPP

#include <baton/recipe/lease_table.hpp>
#include <baton/sim.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace test_common {

struct table_event {
    // erased: the shard's record was deleted outside baton, its checkpoints with it (a test's event).
    enum class kind { start, record, checkpoint_ack, checkpoint_failed, end, erased };
    kind what;
    std::int64_t at;      // virtual ns
    std::string worker;
    std::string shard;
    std::uint64_t token;  // identifies the work (one token per owner change)
    std::uint64_t n;      // start: checkpoint it resumed from; record: its number; ack, failed: the value
    bool unknown = false; // checkpoint_failed: with unknown_outcome (it may have landed)
};

struct table_log {
    std::vector<table_event> events;
    void add(table_event e) { events.push_back(std::move(e)); }

    // Violations of the checks above, one line each.
    std::vector<std::string> check(bool exactly_once) const {
        std::vector<std::string> out;
        // Per shard, the works in the order their records happened: a work that appears again
        // after another one acted is acting at the same time as that one.
        std::map<std::string, std::vector<table_event const*>> by_shard;
        for (auto const& e : events) by_shard[e.shard].push_back(&e);
        for (auto& [shard, evs] : by_shard) {
            std::set<std::pair<std::string, std::uint64_t>> finished; // works another work started or acted after
            std::pair<std::string, std::uint64_t> current{"", 0};
            std::uint64_t acked = 0;
            std::set<std::uint64_t> processed;
            std::map<std::pair<std::string, std::uint64_t>, std::uint64_t> next_of;
            // When each work processed each record (its checkpoint was sent right after), and the
            // last deletion of the shard's record: a checkpoint sent before it went with it.
            std::map<std::tuple<std::string, std::uint64_t, std::uint64_t>, std::int64_t> processed_at;
            std::int64_t erased_at = -1;
            for (auto const* e : evs) {
                std::pair<std::string, std::uint64_t> const work{e->worker, e->token};
                switch (e->what) {
                case table_event::kind::start:
                    // A work acts from its start: whoever acted before it must have stopped.
                    if (work != current) {
                        if (!current.first.empty()) finished.insert(current);
                        current = work;
                    }
                    if (e->n < acked)
                        out.push_back("shard " + shard + ": work of " + e->worker + " (token " + std::to_string(e->token) +
                                      ") starts from checkpoint " + std::to_string(e->n) + " after " +
                                      std::to_string(acked) + " was acknowledged");
                    next_of[work] = e->n + 1;
                    break;
                case table_event::kind::record:
                    if (work != current) {
                        if (finished.count(work))
                            out.push_back("shard " + shard + ": " + e->worker + " (token " + std::to_string(e->token) +
                                          ") processes record " + std::to_string(e->n) + " after another work started or acted");
                        if (!current.first.empty()) finished.insert(current);
                        current = work;
                    }
                    if (next_of.count(work) && next_of[work] != e->n)
                        out.push_back("shard " + shard + ": " + e->worker + " skipped to record " + std::to_string(e->n));
                    next_of[work] = e->n + 1;
                    processed_at[{e->worker, e->token, e->n}] = e->at;
                    if (exactly_once && !processed.insert(e->n).second)
                        out.push_back("shard " + shard + ": record " + std::to_string(e->n) + " processed twice");
                    break;
                case table_event::kind::checkpoint_ack: {
                    auto const sent = processed_at.find({e->worker, e->token, e->n});
                    if (sent == processed_at.end() || sent->second > erased_at) acked = std::max(acked, e->n);
                    break;
                }
                case table_event::kind::erased:
                    acked = 0;
                    erased_at = e->at;
                    break;
                case table_event::kind::checkpoint_failed:
                case table_event::kind::end:
                    break;
                }
            }
        }
        return out;
    }

    // The highest record processed per shard.
    std::map<std::string, std::uint64_t> progress() const {
        std::map<std::string, std::uint64_t> p;
        for (auto const& e : events)
            if (e.what == table_event::kind::record) p[e.shard] = std::max(p[e.shard], e.n);
        return p;
    }
};

// What the works below share: a timer of virtual time, its clock's reading, and the start of a
// work (its first record number, from the grant's checkpoint, and the log's start event).
using work_timer = boost::asio::basic_waitable_timer<baton::sim::virtual_clock, boost::asio::wait_traits<baton::sim::virtual_clock>,
                                                     boost::asio::any_io_executor>;
inline std::int64_t virtual_now() { return baton::sim::virtual_clock::now().time_since_epoch().count(); }
template <class Shard>
std::uint64_t start_work(table_log& log, std::string const& worker, Shard& s) {
    std::uint64_t const n = s.grant().checkpoint ? std::stoull(*s.grant().checkpoint) : 0;
    log.add({table_event::kind::start, virtual_now(), worker, s.shard(), s.token(), n});
    return n;
}

// The work: one record every `step` of the worker's own time, a checkpoint after each.
// `unknown_as_failure`: a checkpoint whose outcome was unknown is logged as failed (what a
// caller that guesses "not landed" believes), for checks that must catch it.
template <class Table>
typename Table::work_type numbered_records_work(std::shared_ptr<table_log> log, std::string worker,
                                                baton::sim::manual_clock clock, std::chrono::nanoseconds step,
                                                bool unknown_as_failure = false) {
    return [log, worker, clock, step, unknown_as_failure](typename Table::shard_type s) -> boost::asio::awaitable<void> {
        namespace asio = boost::asio;
        auto const now = virtual_now;
        std::uint64_t n = start_work(*log, worker, s);
        work_timer t(co_await asio::this_coro::executor);
        for (;;) {
            if (s.stop_requested()) break;
            // A record is only started with the budget to finish it; else wait for a renewal.
            bool const budget = s.remaining() > step;
            t.expires_at(clock.timer_expiry(budget ? step : step / 4));
            auto [wec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            if (wec || s.stop_requested()) break;
            if (!budget || s.remaining() <= std::chrono::nanoseconds(0)) continue;
            ++n;
            log->add({table_event::kind::record, now(), worker, s.shard(), s.token(), n});
            std::string value = std::to_string(n);
            auto [ec] = co_await s.async_checkpoint(std::move(value), asio::as_tuple(asio::use_awaitable));
            if (ec) {
                log->add({table_event::kind::checkpoint_failed, now(), worker, s.shard(), s.token(), n,
                          ec == baton::errc::unknown_outcome && !unknown_as_failure});
                break;
            }
            log->add({table_event::kind::checkpoint_ack, now(), worker, s.shard(), s.token(), n});
        }
        log->add({table_event::kind::end, now(), worker, s.shard(), s.token(), n});
    };
}

// A broken work, only for checks that must catch it: it does not honour its loss. It processes a
// record every `step` whatever its budget, swallows the cancellation and refused checkpoints of
// a loss, and ends three records after it (a graceful stop it still honours).
template <class Table>
typename Table::work_type loss_ignoring_work(std::shared_ptr<table_log> log, std::string worker,
                                             baton::sim::manual_clock clock, std::chrono::nanoseconds step) {
    return [log, worker, clock, step](typename Table::shard_type s) -> boost::asio::awaitable<void> {
        namespace asio = boost::asio;
        auto const now = virtual_now;
        std::uint64_t n = start_work(*log, worker, s);
        work_timer t(co_await asio::this_coro::executor);
        for (int after_loss = 0; after_loss < 3;) {
            if (s.stop_requested() && !s.lost()) break;
            t.expires_at(clock.timer_expiry(step));
            auto [wec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            if (wec) co_await asio::this_coro::reset_cancellation_state();
            if (s.lost()) ++after_loss;
            ++n;
            log->add({table_event::kind::record, now(), worker, s.shard(), s.token(), n});
            auto [ec] = co_await s.async_checkpoint(std::to_string(n), asio::as_tuple(asio::use_awaitable));
            if (!ec) log->add({table_event::kind::checkpoint_ack, now(), worker, s.shard(), s.token(), n});
        }
        log->add({table_event::kind::end, now(), worker, s.shard(), s.token(), n});
    };
}

} // namespace test_common

#endif
