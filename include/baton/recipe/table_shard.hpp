// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_TABLE_SHARD_HPP
#define BATON_RECIPE_TABLE_SHARD_HPP

/** @file
    Layer: recipes. `table_shard`: one shard of a lease table as its work holds it (the grant,
    fenced checkpoints, and how its authority ends), and what the table and the work share.
*/

#include <baton/core/clock.hpp>
#include <baton/core/detail/post_completion.hpp>
#include <baton/core/error.hpp>
#include <baton/core/retry.hpp>
#include <baton/core/signer.hpp>
#include <baton/recipe/detail/pending_op.hpp>
#include <baton/recipe/lease_table_options.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace baton {

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Observer>
class basic_lease_table;

/// Why a worker lost a shard (`table_shard::loss_reason`): its authority ended without a graceful stop.
enum class shard_loss {
    /// Not lost.
    none,
    /// The worker lease's renew deadline passed without a renewal that landed.
    renew_deadline,
    /// The worker lease was lost otherwise: its record changed (another worker marked this one
    /// dead), vanished, or no longer reads as a lease record.
    worker_lease_lost,
    /// The shard record names another owner, term or token (read by a scan, or by a checkpoint
    /// the store refused).
    shard_taken,
    /// The shard record is gone (a scan's listing lacks it, or a checkpoint found none).
    shard_record_missing,
    /// The table object was destroyed, abandoning the worker.
    table_destroyed,
};

/// The words for `r` in logs and metrics: `none`, `renew deadline passed`, `worker lease lost`,
/// `shard taken`, `shard record missing`, `table destroyed`.
constexpr char const* to_string(shard_loss r) noexcept {
    switch (r) {
    case shard_loss::none: return "none";
    case shard_loss::renew_deadline: return "renew deadline passed";
    case shard_loss::worker_lease_lost: return "worker lease lost";
    case shard_loss::shard_taken: return "shard taken";
    case shard_loss::shard_record_missing: return "shard record missing";
    case shard_loss::table_destroyed: return "table destroyed";
    }
    return "none";
}

namespace detail {
template <class Table>
struct table_session;
}

/** One shard as its work holds it: the grant, the fenced checkpoint, and the two ways its
    authority ends. A cheap handle; copies refer to the same shard.

    A **graceful stop** (the shard is asked for by another worker, retired, or the worker shuts
    down) sets `stop_requested()` and completes `async_wait_stop` with `errc::released`: finish
    the record at hand, checkpoint, and return; the table then hands the shard over with that
    checkpoint, and the taker starts at once from it. A **loss** (the worker lease's renew
    deadline passed, or the shard was found taken) cancels the work (a terminal cancellation of
    the coroutine) and completes `async_wait_stop` with `errc::lease_lost`; `loss_reason()` then
    says why.
*/
template <class Table>
class table_shard {
public:
    /// The grant: shard id, fencing token, checkpoint at acquisition.
    shard_grant const& grant() const noexcept { return s_->grant; }
    /// The shard's id.
    std::string const& shard() const noexcept { return s_->grant.shard; }
    /// The shard's fencing token.
    std::uint64_t token() const noexcept { return s_->grant.token; }
    /// True once a graceful stop was asked for (or the shard was lost): return soon.
    bool stop_requested() const noexcept { return s_->stop_requested || s_->lost; }
    /// True once the authority over this shard ended: do nothing more for it.
    bool lost() const noexcept { return s_->lost; }
    /// Why the authority ended, once `lost()`; `shard_loss::none` before (and after a graceful stop).
    shard_loss loss_reason() const noexcept { return s_->loss; }
    /// Time left before the worker lease's renew deadline; zero once lost. The budget of one step.
    std::chrono::nanoseconds remaining() const noexcept { return s_->remaining(); }

    /** Stores `value` as the shard's checkpoint: one conditional write on the version this worker
        last saw, refused by the store once the worker no longer owns the shard.

        @par Handler signature
        `void(error_code)`. Errors: `errc::lease_lost` (the shard is no longer this worker's:
        taken, or the worker lease's deadline passed; nothing was written), `errc::invalid_argument`
        (not UTF-8, or over 16 KiB), `errc::operation_in_progress` (one checkpoint at a time),
        `errc::unknown_outcome` (it may have landed; the next one settles it), store errors after
        the retry policy gave up.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_checkpoint(std::string value, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [](auto handler, std::shared_ptr<session_type> s, std::string v) {
                session_type::start_checkpoint(std::move(s), std::move(v), std::move(handler));
            },
            token, s_, std::move(value));
    }

    /** Completes when this shard's work should end: `errc::released` for a graceful stop,
        `errc::lease_lost` for a loss (at once when either already happened).

        @par Per-Operation Cancellation
        All types: completes with `operation_aborted`; the shard is unaffected.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_wait_stop(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [](auto handler, std::shared_ptr<session_type> s) { session_type::start_wait_stop(std::move(s), std::move(handler)); },
            token, s_);
    }

    /// Made by the table for each shard it acquires.
    explicit table_shard(std::shared_ptr<detail::table_session<Table>> s) : s_(std::move(s)) {}

private:
    using session_type = detail::table_session<Table>;
    std::shared_ptr<session_type> s_;
};

namespace detail {

// One shard's work in one term of a worker: what the table and the work share.
template <class Table>
struct table_session : std::enable_shared_from_this<table_session<Table>> {
    using impl_type = typename Table::impl;

    std::weak_ptr<impl_type> table;
    typename Table::work_type work;
    shard_grant grant;
    std::uint64_t term = 0;
    bool stop_requested = false;
    bool lost = false;
    shard_loss loss = shard_loss::none; // why, once lost
    bool ended = false;      // the work returned
    bool checkpointing = false;
    boost::asio::cancellation_signal cancel; // emitted (terminal) on loss
    struct waiter {
        std::uint64_t id;
        pending_op<void(error_code)> op;
    };
    std::vector<std::unique_ptr<waiter>> waiters;
    std::uint64_t next_waiter = 1;

    std::chrono::nanoseconds remaining() const {
        if (lost) return std::chrono::nanoseconds(0);
        auto t = table.lock();
        return t ? t->lease_remaining(term) : std::chrono::nanoseconds(0);
    }

    void finish_waiters(error_code ec, boost::asio::any_io_executor const& ex) {
        auto ws = std::move(waiters);
        waiters.clear();
        for (auto& w : ws) w->op.complete(ex, ec);
    }

    // A graceful stop: the work is told, nothing is cancelled.
    void request_stop(boost::asio::any_io_executor const& ex) {
        if (stop_requested || lost) return;
        stop_requested = true;
        finish_waiters(errc::released, ex);
    }

    // The authority ended: the work is cancelled and told (the first cause is the one kept).
    void lose(boost::asio::any_io_executor const& ex, shard_loss why) {
        if (lost) return;
        lost = true;
        loss = why;
        finish_waiters(errc::lease_lost, ex);
        if (!ended) cancel.emit(boost::asio::cancellation_type::terminal);
    }

    template <class Handler>
    static void start_wait_stop(std::shared_ptr<table_session> s, Handler&& h) {
        auto t = s->table.lock();
        boost::asio::any_io_executor ex = t ? t->ex : boost::asio::any_io_executor(boost::asio::get_associated_executor(h));
        if (!t || s->lost || s->stop_requested) {
            error_code const ec = (!t || s->lost) ? error_code(errc::lease_lost) : error_code(errc::released);
            return post_completion(ex, std::forward<Handler>(h), ec);
        }
        auto w = std::make_unique<waiter>();
        w->id = s->next_waiter++;
        std::weak_ptr<table_session> weak = s;
        auto const id = w->id;
        w->op.start(std::forward<Handler>(h), ex, weak, [id, ex](table_session& self) {
            for (auto it = self.waiters.begin(); it != self.waiters.end(); ++it)
                if ((*it)->id == id) {
                    auto mine = std::move(*it);
                    self.waiters.erase(it);
                    mine->op.complete(ex, boost::asio::error::operation_aborted);
                    return;
                }
        });
        s->waiters.push_back(std::move(w));
    }

    template <class Handler>
    static void start_checkpoint(std::shared_ptr<table_session> s, std::string value, Handler&& h) {
        auto t = s->table.lock();
        if (!t) {
            auto ex = boost::asio::get_associated_executor(h);
            return boost::asio::post(ex, boost::asio::append(std::forward<Handler>(h), error_code(errc::lease_lost)));
        }
        t->start_checkpoint(std::move(s), std::move(value), any_completion_handler<void(error_code)>(std::forward<Handler>(h)));
    }

    template <class Sig>
    using any_completion_handler = boost::asio::any_completion_handler<Sig>;
};

} // namespace detail

} // namespace baton

#endif
