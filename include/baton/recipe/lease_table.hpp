// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_LEASE_TABLE_HPP
#define BATON_RECIPE_LEASE_TABLE_HPP

/** @file
    Layer: recipes. `basic_lease_table`: shards (streams, partitions, tenants, queues) split among
    workers, with a fencing token per shard, fenced checkpoints, balancing and graceful handoff,
    at a steady-state cost of one write per worker per renew period, whatever the number of shards.

    @par Records (under the table's prefix `P`)
    - `P` + `workers/` + name: each worker's liveness lease (a lease/1 record, `basic_lease`). Its
      fencing token is the worker's **term**. Renewing it is the only steady-state write.
    - `P` + `shards/` + id: one record per shard: `{token, owner, term, retired, checkpoint,
      requested_by, requested_term}`. A shard is owned by the worker and term it names while that
      term lives. Shard records are never renewed; they are written only when a shard changes
      hands, is checkpointed, asked for, registered or retired, and are never deleted.

    @par What a worker does
    It holds its liveness lease, and every `scan_interval` lists both prefixes (reading only the
    records whose version changed since its last scan). From that view it: marks dead the workers
    whose record stayed unchanged for `ttl × max_clock_rate_skew` (a released marker written with
    `matches`, exactly a lease takeover without taking the lease); claims free shards (free, or
    naming an ended term) up to its fair share, ⌈shards / live workers⌉; when none are free, asks
    the most loaded worker for a shard (at most `max_moves_per_cycle` per scan, only while that
    worker has at least two more); grants requests on its own shards that even the two out; and
    starts the work for each shard its current term owns. The work gets the shard's fencing token
    and its last checkpoint, and a cancellation at the renew deadline of the worker's lease.

    @par Safety argument (checked by tests/sim/lease_table_sim_test.cpp on what the work sees)
    Every change of a shard record is a conditional write on the version its writer read, so the
    store orders them; a worker acts on a shard only from a write or read showing that shard with
    its own name and current term, until the first of: the renew deadline of that term (the
    lease's time model, docs/design.md §3), its own decision to stop, or a write or read showing another
    owner. Another worker can become the owner only by a write made from a record that
    (a) names no owner, (b) names an ended term, or (c) was handed to it. A term ends only
    (1) by its own release, which a worker writes only after every work of that term ended,
    (2) by a reaper's marker, written conditionally on a version the reaper saw unchanged for
    `ttl × max_clock_rate_skew` on its own clock, so that the holder's renew deadline passed first
    and no renewal of it can land after, or (3) by the worker itself, after its loss was delivered.
    A handoff (c) is written by the owner after its work stopped. Each case puts the old owner's
    last act before the new owner's first: no shard ever has two workers acting on it, outside
    the declared time model. A term that ended never lives again (the worker record only moves
    forward), so reading it as ended from a late or stale read is still true.

    Checkpoints are conditional writes on the version the owner last wrote or read, refused by the
    store itself once anyone else changed the record: a checkpoint from a worker that lost the
    shard never lands after the new owner's claim (if it lands before, the claim reads it and
    starts from it). So the stored checkpoint only moves forward through the writes of the owner
    of the moment, in the order it made them. Tokens rise by one at each change of owner, each
    made conditionally on the record it was computed from: strictly increasing, never shared.

    A worker writes no more than it needs to: a stop that started is never undone (the shard is
    handed over or left free by a write, so that a handoff whose answer was lost can never land
    under a resumed worker), and a write whose answer was lost is settled by reading it back.

    @par Cost
    W workers, S shards, nothing changing: W writes per renew period (the liveness leases), and
    per scan and worker one listing of each prefix (S3 and the file store page 1,000 keys;
    DynamoDB scans the table) plus one read per record that changed. A per-shard renewal, as the
    Kinesis Client Library does it, writes S records per renew period.

    @par Thread safety
    Distinct objects: safe. Shared objects: unsafe; construct it on a strand when the executor is
    multi-threaded. The work of each shard runs on the table's executor.
*/

#include <baton/core/clock.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/detail/default_token.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/core/error.hpp>
#include <baton/core/retry.hpp>
#include <baton/core/signer.hpp>
#include <baton/recipe/detail/lease_record.hpp>
#include <baton/store/detail/machine_op.hpp>
#include <baton/recipe/detail/pending_op.hpp>
#include <baton/recipe/detail/shard_record.hpp>
#include <baton/recipe/detail/table_plan.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/recipe/lease_options.hpp>
#include <baton/store/detail/machine_step.hpp>
#include <baton/store/detail/read_machines.hpp>
#include <baton/store/record_store.hpp>
#include <baton/store/settlement.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace baton {

/** How a lease table is laid out and how its workers behave.

    Rules, checked by `validate()` (and so by the constructor): the worker's lease options
    (ttl, renew interval and deadline, skew, poll interval) follow `lease_options`' rules;
    `scan_interval` is positive and at most `ttl`; `max_moves_per_cycle` is at least 1; names fit
    the store's key limit.
*/
struct lease_table_options {
    /// The key prefix that names the table, e.g. `tables/orders/` (empty: the whole store).
    std::string table;
    /// This worker's name, unique among the live workers of the table (host, pod, ...). Only
    /// needed to run as a worker; registering, retiring and reading the table need none.
    std::string worker;
    /// The worker lease's TTL: a dead worker's shards are taken `ttl × max_clock_rate_skew` (plus
    /// one scan) after its last renewal.
    std::chrono::milliseconds ttl{20000};
    /// Between renewals of the worker lease. Zero: `ttl` / 3.
    std::chrono::milliseconds renew_interval{0};
    /// When a worker whose renewals fail stops all its shards. Zero: 2/3 of `ttl`.
    std::chrono::milliseconds renew_deadline{0};
    /// The bound on the ratio of two workers' clock rates (docs/design.md §3).
    double max_clock_rate_skew = 2.0;
    /// Between scans of the table (jittered down by up to 20%). Zero: `ttl` / 2.
    std::chrono::milliseconds scan_interval{0};
    /// How often a worker that asked for a shard reads it, to start at once when it is handed over.
    std::chrono::milliseconds poll_interval{1000};
    /// Shards a worker asks other live workers for in one scan (free shards are claimed without
    /// this limit, up to the fair share).
    std::size_t max_moves_per_cycle = 4;
    /// Seeds the worker's randomness (simulations); empty: from `std::random_device`.
    std::optional<std::uint64_t> random_seed;

    /// The scan interval in force.
    std::chrono::milliseconds effective_scan_interval() const noexcept {
        return scan_interval.count() != 0 ? scan_interval : ttl / 2;
    }

    /// The worker's liveness lease options.
    lease_options worker_lease() const;

    /// Throws `config_error` with a message naming the first broken rule.
    void validate() const;
};

/// Where a shard is, as a snapshot sees it.
enum class table_shard_state {
    free,     ///< no owner: the next scan of a worker claims it
    owned,    ///< owned by a live term of a worker
    orphaned, ///< names a worker term that ended: free to claim
    retired,  ///< retired: never claimed; its token is kept for a later register
};

/// The name of a shard state (`free`, `owned`, `orphaned`, `retired`).
BATON_DECL char const* to_string(table_shard_state s) noexcept;

/// One shard in a snapshot.
struct table_shard_info {
    /// The shard's id.
    std::string shard;
    /// The worker it names; empty when none.
    std::string owner;
    /// The owner's term it names.
    std::uint64_t term = 0;
    /// The shard's fencing token (rises at every change of owner).
    std::uint64_t token = 0;
    /// The last checkpoint, if any.
    std::optional<std::string> checkpoint;
    /// What the snapshot makes of it.
    table_shard_state state = table_shard_state::free;
    /// A worker that asked for a graceful handoff; empty when none.
    std::string requested_by;
};

/// One worker in a snapshot.
struct table_worker_info {
    /// The worker's name.
    std::string name;
    /// Its term (its liveness lease's fencing token).
    std::uint64_t term = 0;
    /// True when its term ended (released, or marked dead by another worker).
    bool released = false;
    /// The TTL it declared.
    std::chrono::milliseconds ttl{0};
    /// Shards its current term owns.
    std::size_t shards = 0;
};

/// Every shard and worker of a table, as read at one time (one listing and one read per record).
struct table_snapshot {
    /// Workers, by name.
    std::vector<table_worker_info> workers;
    /// Shards, by id.
    std::vector<table_shard_info> shards;
};

/// What a worker is handed with each shard it acquires.
struct shard_grant {
    /// The shard's id.
    std::string shard;
    /// Strictly greater than every token an earlier owner of this shard had; pass it to fenced writes.
    std::uint64_t token = 0;
    /// The last checkpoint stored for the shard, where the work resumes; empty when none.
    std::optional<std::string> checkpoint;
};

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer>
class basic_lease_table;

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
    the coroutine) and completes `async_wait_stop` with `errc::lease_lost`.
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

    // The authority ended: the work is cancelled and told.
    void lose(boost::asio::any_io_executor const& ex) {
        if (lost) return;
        lost = true;
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

/** A lease table: shards owned by workers, with fencing tokens, fenced checkpoints, balancing
    and graceful handoff (see the file comment for records, cost and the safety argument).

    @tparam Backend a record store (memory, file, S3, DynamoDB, `basic_commit_protocol`)
    @tparam Clock the participant's monotonic clock (`steady_clock`; `sim::manual_clock` in simulations)
    @tparam RetryPolicy how failed requests are retried
    @tparam Signer how the backend authenticates (`backend_signer`: the backend keeps its own)

    One object is one participant: it registers, retires and reads shards, and (with
    `lease_table_options::worker` set) runs as a worker with `async_run`.

    @par Object lifetimes
    Destroying the object abandons its worker: its works are cancelled, its lease is no longer
    renewed, and other workers take its shards after `ttl × max_clock_rate_skew`. Stop it with
    `request_stop` (or by cancelling `async_run`) to hand its shards over at once.
*/
template <record_store Backend, clock_policy Clock = steady_clock, retry_policy RetryPolicy = standard_retry,
          signer_policy Signer = backend_signer>
class basic_lease_table {
public:
    struct impl;
    /// The executor that the table's work and completions run on.
    using executor_type = boost::asio::any_io_executor;
    /// The record store.
    using backend_type = Backend;
    /// A shard as its work holds it.
    using shard_type = table_shard<basic_lease_table>;
    /// The work run for each acquired shard: `(shard_type) -> asio::awaitable<void>`.
    using work_type = std::function<boost::asio::awaitable<void>(shard_type)>;

    /** Creates a table participant; nothing is sent until an operation is started.

        @throws config_error when `opts` breaks a rule (the message names it).
    */
    basic_lease_table(executor_type ex, Backend backend, lease_table_options opts, RetryPolicy retry = {},
                      Signer signer = {}, Clock clock = {})
        : impl_(std::make_shared<impl>(std::move(ex), std::move(backend), validated(std::move(opts)), std::move(retry),
                                       std::move(signer), std::move(clock))) {}

    basic_lease_table(basic_lease_table const&) = delete;
    basic_lease_table& operator=(basic_lease_table const&) = delete;
    /// Moves the participant; the moved-from object may only be destroyed.
    basic_lease_table(basic_lease_table&&) noexcept = default;

    /// Abandons the worker (see Object lifetimes).
    ~basic_lease_table() {
        if (impl_) impl_->abandon();
    }

    /// The executor.
    executor_type get_executor() const noexcept { return impl_->ex; }
    /// The options in force.
    lease_table_options const& options() const noexcept { return impl_->opts; }

    /** Adds shards to the table: each is created free, or made active again if it was retired
        (keeping its token, so tokens never repeat). Shards already active are left as they are.

        @par Handler signature
        `void(error_code)`. Errors: `errc::invalid_argument` (an empty id, one with a control
        character, or a key over the store's limit), `errc::foreign_record`, store errors.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_register(std::vector<std::string> shards, Token&& token = {}) {
        return run_op<void(error_code)>(std::forward<Token>(token), [shards = std::move(shards)](std::shared_ptr<impl> self) {
            return self->register_shards(shards, false);
        });
    }

    /** Retires shards: they are never claimed again; an owner stops gracefully at its next scan
        or checkpoint and leaves the shard unowned. The records stay (marked), keeping the tokens.

        @par Handler signature
        `void(error_code)`. Errors as for `async_register`; retiring an unknown shard is `errc::not_found`.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_retire(std::vector<std::string> shards, Token&& token = {}) {
        return run_op<void(error_code)>(std::forward<Token>(token), [shards = std::move(shards)](std::shared_ptr<impl> self) {
            return self->register_shards(shards, true);
        });
    }

    /** Reads the whole table: every worker and every shard, with what each shard's state is.

        @par Handler signature
        `void(error_code, table_snapshot)`.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_snapshot(Token&& token = {}) {
        return run_op<void(error_code, table_snapshot)>(std::forward<Token>(token),
                                                        [](std::shared_ptr<impl> self) { return self->snapshot(); });
    }

    /** Runs as a worker until stopped: holds the worker lease, scans, claims, balances, and runs
        `work` for each shard it acquires (see `table_shard`). After a loss of the worker lease it
        acquires it again, under a new term, and claims its shards back.

        @par Handler signature
        `void(error_code)`: success after a stop (every shard handed over, the lease released);
        `errc::lease_lost` after a stop when the worker lease was lost first (its shards could not
        be handed over: other workers take them when its takeover window ends), or the error of a
        release that did not land (the shards were handed over; the record expires);
        `errc::invalid_argument` without a worker name; `errc::operation_in_progress` when already
        running; `errc::foreign_record` or `errc::capability_missing` from the store.

        @par Per-Operation Cancellation
        All types: the same as `request_stop`.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_run(work_type work, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [](auto handler, std::shared_ptr<impl> self, work_type w) { self->start_run(std::move(handler), std::move(w)); },
            token, impl_, std::move(work));
    }

    /** Stops a running worker gracefully: each work is asked to stop, each shard is handed over
        (to a worker that asked for it, else to the least loaded live worker, else left free) with
        its last checkpoint, then the worker lease is released and `async_run` completes.
    */
    void request_stop() { impl_->request_stop(); }

    /// The worker's current term (its lease's fencing token); 0 before the first.
    std::uint64_t term() const noexcept { return impl_->term; }
    /// The shards whose work is running now.
    std::vector<std::string> running_shards() const {
        std::vector<std::string> out;
        for (auto const& [id, s] : impl_->sessions)
            if (!s->ended && !s->lost) out.push_back(id);
        return out;
    }
    /// What the store said about the last failure (e.g. `NoSuchBucket`), or why a call was refused.
    diagnostics const& last_diagnostics() const noexcept { return impl_->last_diag; }
    /// The liveness lease's Clock policy (a simulation reads participants' clocks through it).
    Clock const& clock() const noexcept { return impl_->clock; }

private:
    friend shard_type;
    friend struct detail::table_session<basic_lease_table>;

    static lease_table_options validated(lease_table_options o) {
        o.validate();
        return o;
    }

    template <class Sig, class Token, class Body>
    auto run_op(Token&& token, Body body) {
        return boost::asio::async_initiate<Token, Sig>(
            [](auto handler, std::shared_ptr<impl> self, Body b) {
                auto ex = self->ex;
                boost::asio::co_spawn(ex, impl::keep_alive(self, b(self)), [h = std::move(handler), ex](std::exception_ptr e, auto r) mutable {
                    if (e) std::rethrow_exception(e);
                    // Completed on the handler's own executor (a strand-bound handler on its strand).
                    if constexpr (std::is_same_v<decltype(r), error_code>)
                        detail::post_completion(ex, std::move(h), r);
                    else
                        std::apply([&](auto&&... a) { detail::post_completion(ex, std::move(h), std::move(a)...); }, std::move(r));
                });
            },
            token, impl_, std::move(body));
    }

public:
    /// Internal state, shared with the running coroutines (not part of the interface).
    struct impl : std::enable_shared_from_this<impl> {
        using session = detail::table_session<basic_lease_table>;
        using timer_clock = typename Clock::timer_clock;
        using timer = boost::asio::basic_waitable_timer<timer_clock, boost::asio::wait_traits<timer_clock>, executor_type>;
        using lease_type = basic_lease<Backend, Clock, RetryPolicy, Signer>;
        template <class T>
        using awaitable = boost::asio::awaitable<T>;
        static constexpr auto tuple_awaitable = boost::asio::as_tuple(boost::asio::use_awaitable);

        impl(executor_type e, Backend b, lease_table_options o, RetryPolicy r, Signer s, Clock c)
            : ex(std::move(e)), backend(std::move(b)), opts(std::move(o)), retry(std::move(r)), signer(std::move(s)),
              clock(std::move(c)), rng(seed_of(opts)), wake(ex) {
            detail::adopt_signer(backend, signer);
            view.own_ttl = opts.ttl;
            view.skew = opts.max_clock_rate_skew;
        }

        executor_type ex;
        Backend backend;
        lease_table_options opts;
        RetryPolicy retry;
        Signer signer;
        Clock clock;
        std::mt19937_64 rng;
        timer wake;
        bool poked = false;
        std::unique_ptr<lease_type> lease;
        std::uint64_t term = 0;
        bool held = false;
        bool running = false;
        bool stopping = false;
        bool abandoned = false;
        detail::pending_op<void(error_code)> run_pending;
        work_type work;
        detail::table_view view;
        std::map<std::string, std::shared_ptr<session>, std::less<>> sessions; // this term's works
        std::map<std::string, std::chrono::nanoseconds, std::less<>> awaiting;   // shards asked for: until when
        // Shards whose work this term stopped (ended, lost, or stopped for a handoff), with the
        // token of that work. A stop is never undone: a work starts again in this term only for a
        // record with a higher token (a later change of hands to us), never from a read or a view
        // that may predate our own handoff, which may still land.
        std::map<std::string, std::uint64_t, std::less<>> stopped;
        std::uint64_t scans = 0;

        static std::uint64_t seed_of(lease_table_options const& o) {
            if (o.random_seed) return *o.random_seed;
            std::random_device rd;
            return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
        }

        std::chrono::nanoseconds now() const { return clock.now().time_since_epoch(); }
        std::string worker_prefix() const { return opts.table + "workers/"; }
        std::string shard_prefix() const { return opts.table + "shards/"; }
        std::chrono::nanoseconds lease_remaining(std::uint64_t t) const {
            if (!lease || !held || t != term) return std::chrono::nanoseconds(0);
            return lease->remaining();
        }
        bool acting(std::uint64_t t) const { return lease_remaining(t) > std::chrono::nanoseconds(0) && !abandoned; }

        void poke() {
            poked = true;
            wake.cancel();
        }

        // ---- waiting ------------------------------------------------------------------------
        awaitable<void> sleep(std::chrono::nanoseconds d) {
            if (poked) {
                poked = false;
                co_return;
            }
            wake.expires_at(clock.timer_expiry(d));
            co_await wake.async_wait(tuple_awaitable);
            poked = false;
        }

        double uniform() { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

        // A store operation awaited as a tuple: the record store concept takes handlers, not tokens.
        template <class Result, class Start>
        static auto store_call(Start start) {
            return boost::asio::async_initiate<decltype(tuple_awaitable) const&, void(error_code, Result)>(
                [](auto handler, Start s) { s(std::move(handler)); }, tuple_awaitable, std::move(start));
        }
        auto store_put(std::string const& key, std::string const& body, precondition const& pc) {
            return store_call<put_result>([this, &key, &body, &pc](auto h) { backend.async_put(key, body, pc, std::move(h)); });
        }

        // The machines the table runs, each on the one driver (machine_op) and awaited as a tuple.
        // A retried read stops between attempts once this worker is abandoned; a shard change is
        // never stopped half-way, so abandoning the worker leaves none of its writes in doubt.
        template <class Spec>
        auto run_machine(std::string const& key, Spec spec) {
            return boost::asio::async_compose<decltype(tuple_awaitable) const&, void(error_code, typename Spec::result_type)>(
                detail::machine_op<impl, Spec>(this->shared_from_this(), key, std::move(spec)), tuple_awaitable, ex);
        }
        struct read_spec {
            using machine = detail::retried_get<RetryPolicy, std::mt19937_64>;
            using result_type = get_result;
            static std::unique_ptr<machine> make(impl& t, std::string const&) { return std::make_unique<machine>(t.retry, t.rng); }
            static bool stop_at_wait(impl& t) { return t.abandoned; }
            static result_type finish(impl&, std::string const&, machine& m, error_code) { return std::move(m.result()); }
        };
        struct listing {
            std::vector<list_entry> entries;
            diagnostics diag;
        };
        struct list_spec {
            using machine = detail::paged_list<RetryPolicy, std::mt19937_64>;
            using result_type = listing;
            static std::unique_ptr<machine> make(impl& t, std::string const&) { return std::make_unique<machine>(t.retry, t.rng); }
            static bool stop_at_wait(impl& t) { return t.abandoned; }
            static result_type finish(impl&, std::string const&, machine& m, error_code) {
                return listing{std::move(m.entries()), m.diag()};
            }
        };
        struct change_outcome {
            std::optional<detail::shard_seen> seen;
            bool wrote = false;
            diagnostics diag;
        };
        struct change_spec {
            using machine = detail::shard_write_machine<RetryPolicy, std::mt19937_64>;
            using result_type = change_outcome;
            detail::shard_change_fn change;
            std::optional<detail::shard_seen> known;
            std::unique_ptr<machine> make(impl& t, std::string const&) {
                return std::make_unique<machine>(std::move(change), std::move(known), t.retry, t.rng);
            }
            static result_type finish(impl&, std::string const&, machine& m, error_code ec) {
                change_outcome o{m.last_seen(), m.wrote(), {}};
                if (ec) o.diag = m.diag();
                return o;
            }
        };

        awaitable<std::tuple<error_code, get_result>> get(std::string const& key) {
            co_return co_await run_machine(key, read_spec{});
        }

        // Reads `keys`, up to 16 at a time (a scan of a thousand changed shards must not take a
        // thousand round trips end to end); `out[i]` is empty when key i could not be read.
        awaitable<void> get_many(std::vector<std::string> const& keys, std::vector<std::optional<get_result>>& out) {
            namespace ex_ = boost::asio::experimental;
            out.assign(keys.size(), std::nullopt);
            std::size_t next = 0;
            std::size_t const lanes = std::min<std::size_t>(16, keys.size());
            if (lanes == 0) co_return;
            using op_type = decltype(boost::asio::co_spawn(ex, read_lane(this->shared_from_this(), keys, out, next),
                                                           boost::asio::deferred));
            std::vector<op_type> ops;
            for (std::size_t i = 0; i < lanes; ++i)
                ops.push_back(boost::asio::co_spawn(ex, read_lane(this->shared_from_this(), keys, out, next), boost::asio::deferred));
            co_await ex_::make_parallel_group(std::move(ops)).async_wait(ex_::wait_for_all(), boost::asio::use_awaitable);
        }

        static awaitable<void> read_lane(std::shared_ptr<impl> self, std::vector<std::string> const& keys,
                                         std::vector<std::optional<get_result>>& out, std::size_t& next) {
            while (next < keys.size() && !self->abandoned) {
                std::size_t const i = next++;
                auto [ec, r] = co_await self->get(keys[i]);
                if (!ec) out[i] = std::move(r);
            }
        }

        awaitable<std::tuple<error_code, std::vector<list_entry>>> list_all(std::string const& prefix) {
            auto [ec, l] = co_await run_machine(prefix, list_spec{});
            if (ec) last_diag = std::move(l.diag);
            co_return std::tuple{ec, std::move(l.entries)};
        }

        // One settled change of one shard record (shard_record.hpp): the outcome, and the record
        // as the change left it (when known).
        // Coroutine parameters are references to the caller's named objects, never temporaries
        // (GCC 12 destroys some temporaries of a co_await expression twice).
        awaitable<std::tuple<error_code, std::optional<detail::shard_seen>, bool>> change_shard(
            std::string const& id, detail::shard_change_fn& change, std::optional<detail::shard_seen> const& known) {
            std::string const key = shard_prefix() + id;
            change_spec spec{change, known}; // named: GCC 12 destroys some temporaries of a co_await expression twice
            auto [ec, o] = co_await run_machine(key, std::move(spec));
            if (ec) last_diag = std::move(o.diag);
            if (o.seen) remember_shard(id, *o.seen);
            co_return std::tuple{ec, std::move(o.seen), o.wrote};
        }

        diagnostics last_diag;

        // ---- administration -----------------------------------------------------------------
        error_code check_shard_id(std::string const& id) {
            if (id.empty() || !detail::is_utf8(id) ||
                std::any_of(id.begin(), id.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; })) {
                last_diag.message = "shard ids must be non-empty UTF-8 without control characters";
                return errc::invalid_argument;
            }
            return store_limits::check_key(shard_prefix() + id, last_diag);
        }

        awaitable<error_code> register_shards(std::vector<std::string> ids, bool retire) {
            for (auto const& id : ids)
                if (auto ec = check_shard_id(id)) co_return ec;
            for (auto const& id : ids) {
                detail::shard_change_fn change =
                    [retire, &clk = clock](std::optional<detail::shard_body> const& now, detail::shard_body& next) {
                        if (retire) {
                            if (!now) return detail::shard_change::refuse(errc::not_found);
                            if (now->retired) return detail::shard_change::keep();
                            next.retired = true;
                            return detail::shard_change::write();
                        }
                        if (now && !now->retired) return detail::shard_change::keep();
                        next.retired = false;
                        // A new record starts at the wall-clock microsecond: if something outside
                        // baton deleted an earlier one, its tokens still rise above that one's.
                        if (!now) next.token = detail::wall_clock_token_floor(clk);
                        return detail::shard_change::write();
                    };
                std::optional<detail::shard_seen> const no_record;
                auto [ec, seen, wrote] = co_await change_shard(id, change, no_record);
                if (ec) {
                    if (ec == errc::not_found) last_diag.message = "no shard \"" + id + "\" in the table";
                    co_return ec;
                }
            }
            co_return error_code{};
        }

        awaitable<std::tuple<error_code, table_snapshot>> snapshot() {
            table_snapshot snap;
            detail::table_view v;
            std::string const wprefix = worker_prefix();
            auto [wec, workers] = co_await list_all(wprefix);
            if (wec) co_return std::tuple{wec, std::move(snap)};
            for (auto const& e : workers) {
                auto [ec, r] = co_await get(e.key);
                if (ec) co_return std::tuple{ec, std::move(snap)};
                if (!r.found) continue;
                detail::lease_body b;
                diagnostics d;
                if (auto dec = detail::decode_lease_body(r.found->body, b, d)) {
                    last_diag = d;
                    co_return std::tuple{dec, std::move(snap)};
                }
                auto& w = v.workers[e.key.substr(worker_prefix().size())];
                w.decoded = true;
                w.released = b.released;
                w.term = b.token;
                w.ttl = b.ttl;
            }
            std::string const sprefix = shard_prefix();
            auto [sec, shards] = co_await list_all(sprefix);
            if (sec) co_return std::tuple{sec, std::move(snap)};
            for (auto const& e : shards) {
                auto [ec, r] = co_await get(e.key);
                if (ec) co_return std::tuple{ec, std::move(snap)};
                if (!r.found) continue;
                detail::shard_body b;
                diagnostics d;
                if (auto dec = detail::decode_shard_body(r.found->body, b, d)) {
                    last_diag = d;
                    last_diag.message += " (key " + e.key + ")";
                    co_return std::tuple{dec, std::move(snap)};
                }
                v.shards[e.key.substr(shard_prefix().size())] = detail::shard_seen{r.found->version, std::move(b)};
            }
            auto counts = detail::owned_counts(v);
            for (auto const& [name, w] : v.workers)
                snap.workers.push_back(table_worker_info{name, w.term, w.released, w.ttl, counts[name]});
            for (auto const& [id, s] : v.shards) {
                table_shard_info i;
                i.shard = id;
                i.owner = s.body.owner;
                i.term = s.body.term;
                i.token = s.body.token;
                i.checkpoint = s.body.checkpoint;
                i.requested_by = s.body.requested_by;
                // A snapshot is one read: an owner without a record is shown orphaned at once.
                i.state = s.body.retired         ? table_shard_state::retired
                          : s.body.owner.empty() ? table_shard_state::free
                          : v.term_live(s.body.owner, s.body.term) ? table_shard_state::owned
                                                                   : table_shard_state::orphaned;
                snap.shards.push_back(std::move(i));
            }
            co_return std::tuple{error_code{}, std::move(snap)};
        }

        // ---- the worker -------------------------------------------------------------------
        template <class Handler>
        void start_run(Handler&& h, work_type w) {
            if (opts.worker.empty() || !w) {
                last_diag.message = "a worker needs lease_table_options::worker and a work function";
                return detail::post_completion(ex, std::forward<Handler>(h), error_code(errc::invalid_argument));
            }
            if (running) return detail::post_completion(ex, std::forward<Handler>(h), error_code(errc::operation_in_progress));
            running = true;
            stopping = false;
            work = std::move(w);
            run_pending.start(std::forward<Handler>(h), ex, this->weak_from_this(), [](impl& self) { self.request_stop(); });
            if (!lease) lease = std::make_unique<lease_type>(ex, backend, opts.worker_lease(), retry, signer, clock);
            boost::asio::co_spawn(ex, run_worker(this->shared_from_this()), [](std::exception_ptr e) {
                if (e) std::rethrow_exception(e);
            });
        }

        void request_stop() {
            if (!running || stopping) return;
            stopping = true;
            poke();
        }

        void abandon() {
            abandoned = true;
            for (auto& [id, s] : sessions) s->lose(ex);
            sessions.clear();
            if (running) run_pending.complete(ex, boost::asio::error::operation_aborted);
            running = false;
            wake.cancel();
            lease.reset();
        }

        void finish_run(error_code ec) {
            running = false;
            run_pending.complete(ex, ec);
        }

        static awaitable<void> run_worker(std::shared_ptr<impl> self) { co_await self->worker_loop(); }

        // Member coroutines hold only `this`: every one that is spawned runs under one of these,
        // which keeps the state alive until it ends (the table object may be gone before).
        template <class T>
        static awaitable<T> keep_alive(std::shared_ptr<impl> self, awaitable<T> a) {
            (void)self;
            co_return co_await std::move(a);
        }

        awaitable<void> worker_loop() {
            while (!abandoned) {
                if (stopping) {
                    // A worker that lost its lease before it could hand over says so: its shards
                    // stay claimed until other workers' takeover windows end.
                    finish_run(co_await release_all());
                    co_return;
                }
                // Hold the worker lease: a new term.
                auto [ec, grant] = co_await acquire();
                if (abandoned) co_return;
                if (ec) {
                    if (stopping) continue;
                    if (ec == errc::foreign_record || ec == errc::capability_missing || ec == errc::invalid_argument ||
                        ec == errc::auth_failed || ec == errc::not_found) {
                        last_diag = lease->last_diagnostics();
                        finish_run(ec);
                        co_return;
                    }
                    co_await sleep(std::chrono::nanoseconds(opts.poll_interval));
                    continue;
                }
                begin_term(grant.fencing_token);
                auto next_scan = now();
                auto last_act = now();
                while (held && !abandoned && !stopping) {
                    if (now() >= next_scan) {
                        co_await scan();
                        if (!held || abandoned || stopping) break;
                        last_act = now();
                        co_await act();
                        auto const scan_every = std::chrono::nanoseconds(opts.effective_scan_interval());
                        next_scan = now() + scan_every - std::chrono::nanoseconds(static_cast<std::int64_t>(
                                                                 uniform() * 0.2 * static_cast<double>(scan_every.count())));
                    } else if (auto due = next_takeover(last_act); due && *due <= now()) {
                        // A worker's takeover window just ended: reap and claim now, not at the next scan.
                        last_act = now();
                        co_await act();
                    }
                    if (!held || abandoned || stopping) break;
                    co_await settle_ended();
                    co_await poll_awaited();
                    auto wait = next_scan - now();
                    if (auto due = next_takeover(last_act)) wait = std::min(wait, *due - now());
                    if (!awaiting.empty()) wait = std::min<std::chrono::nanoseconds>(wait, opts.poll_interval);
                    if (wait > std::chrono::nanoseconds(0)) co_await sleep(wait);
                }
                if (abandoned) co_return;
                if (!held) end_term(); // lost: every work was cancelled; a new term claims the shards back
            }
        }

        // The earliest end of a takeover window after `after` among the workers that look alive.
        std::optional<std::chrono::nanoseconds> next_takeover(std::chrono::nanoseconds after) const {
            std::optional<std::chrono::nanoseconds> due;
            for (auto const& [name, w] : view.workers) {
                if (name == opts.worker || !w.decoded || w.released) continue;
                auto const t = w.observed_since + detail::lease_machine::takeover_window(w.ttl, opts.max_clock_rate_skew);
                if (t > after && (!due || t < *due)) due = t;
            }
            return due;
        }

        awaitable<std::tuple<error_code, lease_grant>> acquire() {
            auto [ec, g] = co_await lease->async_acquire(tuple_awaitable);
            co_return std::tuple{ec, g};
        }

        void begin_term(std::uint64_t t) {
            term = t;
            held = true;
            sessions.clear();
            awaiting.clear();
            stopped.clear();
            std::weak_ptr<impl> weak = this->shared_from_this();
            lease->async_wait_lost([weak, t](error_code) {
                auto self = weak.lock();
                if (!self || self->term != t || !self->held) return;
                self->held = false;
                for (auto& [id, s] : self->sessions) s->lose(self->ex);
                self->poke();
            });
        }

        void end_term() {
            for (auto& [id, s] : sessions) s->lose(ex);
            sessions.clear();
            awaiting.clear();
            stopped.clear();
        }

        // Lists both prefixes; reads the records whose version changed.
        awaitable<void> scan() {
            std::string const wprefix = worker_prefix();
            auto const sent = now();
            // Renewals change a worker record's version and nothing else: listing the version is
            // enough to see it alive. Its body (term, released) is read when first seen and at
            // every fourth scan (the facts it gives only move forward; a reaper reads it first).
            bool const full = scans++ % 4 == 0;
            // Workers a shard record names under a later term than this view read (as owner or
            // asker): the body this view holds is older than that term. A change of their record
            // that looked like a renewal was not one; read it again, or this view would judge a
            // live worker ended (its asks never granted) until a change happened to meet a full scan.
            std::set<std::string, std::less<>> named_later;
            for (auto const& [id, s] : view.shards)
                for (auto const& [name, t] : {std::pair{&s.body.owner, s.body.term},
                                              std::pair{&s.body.requested_by, s.body.requested_term}}) {
                    auto const it = view.workers.find(*name);
                    if (it != view.workers.end() && it->second.decoded && it->second.term < t) named_later.insert(*name);
                }
            auto [wec, workers] = co_await list_all(wprefix);
            auto const listed = now();
            if (!wec) {
                std::set<std::string, std::less<>> present;
                std::vector<std::string> keys, names;
                for (auto const& e : workers) {
                    std::string name = e.key.substr(worker_prefix().size());
                    present.insert(name);
                    auto& w = view.workers[name];
                    bool const stale = named_later.count(name) != 0;
                    if (w.version == e.version && w.decoded && !stale) continue;
                    // A version that had lived longer than half a TTL was no renewal of a live
                    // worker: a reaper's marker, a release, or a new term. Neither is a change of a
                    // record that says released (nobody renews it). Read those at once.
                    bool const long_lived = listed - w.observed_since >= std::chrono::nanoseconds(w.ttl) / 2;
                    if (w.version != e.version) w.observed_since = listed;
                    w.version = e.version;
                    if (w.decoded && !full && !long_lived && !stale && !w.released) continue;
                    keys.push_back(e.key);
                    names.push_back(std::move(name));
                }
                std::vector<std::optional<get_result>> got;
                co_await get_many(keys, got);
                for (std::size_t i = 0; i < keys.size(); ++i) {
                    auto& w = view.workers[names[i]];
                    auto const& r = got[i];
                    if (!r || !r->found) continue; // not read: judged from what was known, or not at all
                    detail::lease_body b;
                    diagnostics d;
                    if (detail::decode_lease_body(r->found->body, b, d)) { // foreign: never judged dead
                        w.decoded = false;
                        continue;
                    }
                    if (r->found->version != w.version) {
                        w.version = r->found->version;
                        w.observed_since = now();
                    }
                    w.decoded = true;
                    w.released = b.released;
                    w.term = b.token;
                    w.ttl = b.ttl;
                    w.instance = b.owner;
                    w.value = b.value;
                    w.body_version = r->found->version;
                    view.declared_ttl[names[i]] = b.ttl;
                }
                std::erase_if(view.workers, [&](auto const& kv) { return !present.count(kv.first); });
            }
            std::string const sprefix = shard_prefix();
            auto [sec, shards] = co_await list_all(sprefix);
            if (!sec) {
                std::set<std::string, std::less<>> present;
                std::vector<std::string> keys, ids;
                for (auto const& e : shards) {
                    std::string id = e.key.substr(shard_prefix().size());
                    present.insert(id);
                    auto it = view.shards.find(id);
                    if (it != view.shards.end() && it->second.version == e.version) continue;
                    // Another live worker's checkpoints change its shards' versions all the time; they
                    // are read at every fourth scan only (a change of hands to us, a request or the end
                    // of that worker's term makes us read them at once).
                    if (!full && it != view.shards.end() && !it->second.body.owner.empty() &&
                        it->second.body.owner != opts.worker && it->second.body.requested_by != opts.worker &&
                        view.term_live(it->second.body.owner, it->second.body.term))
                        continue;
                    keys.push_back(e.key);
                    ids.push_back(std::move(id));
                }
                std::vector<std::optional<get_result>> got;
                co_await get_many(keys, got);
                for (std::size_t i = 0; i < keys.size(); ++i) {
                    auto const& r = got[i];
                    if (!r || !r->found) continue;
                    detail::shard_body b;
                    diagnostics d;
                    if (detail::decode_shard_body(r->found->body, b, d)) continue; // foreign: left alone
                    remember_shard(ids[i], detail::shard_seen{r->found->version, std::move(b)});
                }
                std::erase_if(view.shards, [&](auto const& kv) { return !present.count(kv.first); });
                // Owners named by shards without a worker record: only from a listing of the
                // workers that succeeded now (a failed one proves no absence).
                std::set<std::string, std::less<>> named;
                if (!wec)
                    for (auto const& [id, s] : view.shards)
                        if (!s.body.owner.empty() && !view.workers.count(s.body.owner)) named.insert(s.body.owner);
                std::erase_if(view.missing, [&](auto const& kv) { return !named.count(kv.first); });
                for (auto const& n : named) view.saw_missing(n, sent, listed);
                lose_shards_taken();
            }
        }

        // Works whose shard this view no longer shows as theirs (gone from a listing that
        // succeeded, or read under another owner or token): their authority ended, and another
        // worker may act on the shard. Only the record can say so; a failed listing says nothing.
        void lose_shards_taken() {
            for (auto& [id, sess] : sessions) {
                if (sess->lost || sess->ended) continue;
                auto it = view.shards.find(id);
                if (it == view.shards.end() || !it->second.body.owned_by(opts.worker, term) ||
                    it->second.body.token != sess->grant.token)
                    sess->lose(ex);
            }
        }

        // Reaps dead workers, starts and stops works, claims, asks, grants.
        awaitable<void> act() {
            co_await reap();
            if (!held || stopping) co_return;
            auto counts = detail::owned_counts(view);
            // Our shards: start their works, stop those asked for or retired, and hand over again
            // those whose work stopped while the record still names us (a handoff that failed).
            std::vector<std::string> to_hand_over;
            for (auto const& [id, s] : view.shards) {
                if (!s.body.owned_by(opts.worker, term)) continue;
                auto it = sessions.find(id);
                if (it == sessions.end()) {
                    if (stopped_at(id, s.body.token) || s.body.retired) to_hand_over.push_back(id);
                    else start_session(id, s);
                    continue;
                }
                auto& sess = *it->second;
                if (s.body.retired) sess.request_stop(ex);
                else if (!sess.stop_requested && detail::grant_request(view, counts, opts.worker, s.body, false)) {
                    --counts[opts.worker];
                    sess.request_stop(ex);
                }
            }
            for (auto const& id : to_hand_over) {
                if (!acting(term)) co_return;
                mark_stopped(id, view.shards[id].body.token);
                co_await hand_over(id, counts, false); // to its requester, or unowned
            }
            auto plan = detail::plan_balance(view, opts.worker, term, opts.max_moves_per_cycle, awaiting.size(), rng);
            for (auto const& id : plan.claim) {
                if (!acting(term)) co_return;
                co_await claim(id);
            }
            for (auto const& [id, owner] : plan.request) {
                if (!acting(term)) co_return;
                co_await ask(id, owner);
            }
            co_await settle_ended();
        }

        // Marks dead the workers whose record stayed unchanged for the takeover window.
        awaitable<void> reap() {
            for (auto& [name, w] : view.workers) {
                if (name == opts.worker || !w.decoded || w.released) continue;
                auto const window_w = detail::lease_machine::takeover_window(w.ttl, opts.max_clock_rate_skew);
                if (now() - w.observed_since < window_w) continue;
                if (w.body_version != w.version) {
                    // The marker keeps the record's token: it must come from this very version.
                    std::string const key = worker_prefix() + name;
                    auto [gec, r] = co_await get(key);
                    detail::lease_body b;
                    diagnostics d;
                    if (gec || !r.found || detail::decode_lease_body(r.found->body, b, d)) continue;
                    w.released = b.released;
                    w.term = b.token;
                    w.ttl = b.ttl;
                    view.declared_ttl[name] = b.ttl;
                    w.instance = b.owner;
                    w.value = b.value;
                    w.body_version = r.found->version;
                    if (r.found->version != w.version) {
                        w.version = r.found->version;
                        w.observed_since = now();
                        continue;
                    }
                    if (w.released) continue;
                }
                std::string nonce = make_nonce(rng);
                std::string body = detail::encode_lease_body(w.instance, w.value, nonce, w.term, true, w.ttl);
                std::string const key = worker_prefix() + name;
                precondition const pc = precondition::matches(w.version);
                auto [ec, r] = co_await store_put(key, body, pc);
                if (!ec) {
                    w.version = r.version;
                    w.body_version = r.version;
                    w.released = true;
                    w.observed_since = now();
                } else {
                    w.version.clear(); // read it again at the next scan, whatever happened
                }
            }
        }

        // Notes that this term stops `id` at `token`: a stop only ever rises.
        void mark_stopped(std::string const& id, std::uint64_t token) {
            auto& at = stopped[id];
            at = std::max(at, token);
        }

        // True when this term stopped a work of `id` at a token of at least `token`.
        bool stopped_at(std::string const& id, std::uint64_t token) const {
            auto it = stopped.find(id);
            return it != stopped.end() && token <= it->second;
        }

        // Keeps a shard record read or written, unless the view already holds a later one (a
        // higher token; reads may be stale).
        void remember_shard(std::string const& id, detail::shard_seen s) {
            auto it = view.shards.find(id);
            if (it != view.shards.end() && s.body.token < it->second.body.token) return;
            view.saw_named(s.body, it == view.shards.end() ? nullptr : &it->second, now());
            view.shards[id] = std::move(s);
        }

        void start_session(std::string const& id, detail::shard_seen const& s) {
            if (!acting(term) || !work || sessions.count(id) || !s.body.owned_by(opts.worker, term) || s.body.retired ||
                stopped_at(id, s.body.token))
                return;
            auto sess = std::make_shared<session>();
            sess->table = this->weak_from_this();
            sess->grant = shard_grant{id, s.body.token, s.body.checkpoint};
            sess->term = term;
            sessions[id] = sess;
            awaiting.erase(id);
            std::weak_ptr<impl> weak = this->shared_from_this();
            // The session keeps its own copy of the work function: a lambda coroutine's captures
            // live in the closure, which must outlive the coroutine (the frame holds the session).
            sess->work = work;
            boost::asio::co_spawn(ex, sess->work(shard_type(sess)), work_done{weak, sess});
        }

        // The completion of a shard's work. An exception from the work ends its shard like a
        // return (the cancellation at a loss arrives as one). It names the session's cancellation
        // slot itself rather than through bind_cancellation_slot: a handler without an executor of
        // its own has co_spawn pass a cancellation on at once, where one with an executor has it
        // dispatched to the work's executor, and (Asio of Boost 1.81) that dispatched emit could
        // run after the work's completion had freed what it points to.
        struct work_done {
            std::weak_ptr<impl> table;
            std::shared_ptr<session> sess;
            using cancellation_slot_type = boost::asio::cancellation_slot;
            cancellation_slot_type get_cancellation_slot() const noexcept { return sess->cancel.slot(); }
            void operator()(std::exception_ptr) {
                sess->ended = true;
                if (auto self = table.lock()) self->poke();
            }
        };

        // Works that ended: their shards are handed over (or left free) by a write; a stop is
        // never undone, so that no handoff of ours can land under a resumed work.
        awaitable<void> settle_ended() {
            std::vector<std::string> done;
            for (auto it = sessions.begin(); it != sessions.end();) {
                auto const& s = *it->second;
                // A work is over once it returned and its last checkpoint is answered.
                if (s.checkpointing || !(s.ended || s.lost)) {
                    ++it;
                    continue;
                }
                mark_stopped(it->first, s.grant.token);
                if (!s.lost) done.push_back(it->first);
                it = sessions.erase(it);
            }
            if (done.empty()) co_return;
            auto counts = detail::owned_counts(view);
            for (auto const& id : done) {
                if (!held || abandoned) co_return;
                co_await hand_over(id, counts, stopping); // when it fails, the next scan sends it again
            }
        }

        // Writes the shard over to its requester (or, when stopping, to the least loaded live
        // worker), or leaves it free: only while the record still names this term.
        awaitable<void> hand_over(std::string const& id, std::map<std::string, std::size_t, std::less<>>& counts,
                                  bool to_anyone) {
            auto known = view.shards.count(id) ? std::optional(view.shards[id]) : std::nullopt;
            std::string const me = opts.worker;
            std::uint64_t const t = term;
            detail::table_view const& v = view;
            // The record read here may hold a later claim of ours than the view knew (a claim whose
            // answer was lost, read back now): the stop covers the token handed over, so that no
            // work starts for it afterwards from a view that predates this handoff.
            auto mark = [this, &id](std::uint64_t token) { mark_stopped(id, token); };
            detail::shard_change_fn change =
                [&v, &counts, me, t, to_anyone, mark](std::optional<detail::shard_body> const& now, detail::shard_body& next) {
                    if (!now || !now->owned_by(me, t)) return detail::shard_change::keep(); // not ours any more
                    mark(now->token);
                    std::optional<std::pair<std::string, std::uint64_t>> to;
                    // A token that can rise no more: the shard is left free, never handed on with 0.
                    if (!now->retired && now->token != detail::max_shard_token) {
                        if (!now->requested_by.empty() && v.term_live(now->requested_by, now->requested_term))
                            to = std::pair{now->requested_by, now->requested_term};
                        else if (to_anyone) {
                            auto tentative = counts; // counted once, when the handoff is written
                            to = detail::handoff_target(v, tentative, me, *now);
                        }
                    }
                    next.clear_request();
                    if (to) {
                        next.owner = to->first;
                        next.term = to->second;
                        next.token = now->token + 1;
                        // The TTL its record declares (read with the term the handoff names).
                        auto const w = v.workers.find(to->first);
                        next.owner_ttl_ms = w == v.workers.end() ? 0 : static_cast<std::uint64_t>(w->second.ttl.count());
                    } else {
                        next.owner.clear();
                        next.term = 0;
                        next.owner_ttl_ms = 0;
                    }
                    return detail::shard_change::write();
                };
            auto [ec, seen, wrote] = co_await change_shard(id, change, known);
            // When it failed, the record still names this term and the shard stays stopped: the
            // next scan sends the handoff again.
            if (!ec && wrote && seen && !seen->body.owner.empty()) ++counts[seen->body.owner];
        }

        awaitable<void> claim(std::string const& id) {
            auto it = view.shards.find(id);
            if (it == view.shards.end()) co_return;
            std::string const me = opts.worker;
            std::uint64_t const t = term;
            auto const ttl = static_cast<std::uint64_t>(opts.ttl.count());
            // The owner and term the view judged: a record read during the claim that names another
            // is refused and left to the next scan, which counts absences of that owner only from
            // then on (one seen before says nothing of a term it began since).
            std::string const judged_owner = it->second.body.owner;
            std::uint64_t const judged_term = it->second.body.term;
            detail::table_view const& v = view;
            detail::shard_change_fn change = [&v, me, t, ttl, judged_owner, judged_term](
                                                 std::optional<detail::shard_body> const& now, detail::shard_body& next) {
                    if (!now) return detail::shard_change::refuse(errc::not_found);
                    if (now->owned_by(me, t)) return detail::shard_change::keep(); // ours (an earlier attempt landed)
                    if (!now->owner.empty() && (now->owner != judged_owner || now->term != judged_term))
                        return detail::shard_change::refuse(errc::precondition_failed);
                    if (!v.claimable(*now)) return detail::shard_change::refuse(errc::precondition_failed);
                    next.owner = me;
                    next.term = t;
                    next.owner_ttl_ms = ttl;
                    next.token = now->token + 1;
                    next.clear_request();
                    return detail::shard_change::write();
                };
            std::optional<detail::shard_seen> const known = it->second;
            auto [ec, seen, wrote] = co_await change_shard(id, change, known);
            (void)wrote;
            if (!ec && seen && held && t == term) start_session(id, *seen);
        }

        awaitable<void> ask(std::string const& id, std::string const& owner) {
            auto it = view.shards.find(id);
            if (it == view.shards.end()) co_return;
            std::string const me = opts.worker;
            std::uint64_t const t = term;
            detail::table_view const& v = view;
            // What we will have once every shard asked for so far is ours: the owner grants only
            // while it has at least two more.
            std::uint64_t const count = detail::owned_counts(view)[me] + awaiting.size();
            detail::shard_change_fn change =
                [&v, me, t, owner, count](std::optional<detail::shard_body> const& now, detail::shard_body& next) {
                    if (!now || now->retired || now->owner != owner || !v.term_live(now->owner, now->term))
                        return detail::shard_change::refuse(errc::precondition_failed);
                    if (now->requested_by == me && now->requested_term == t) return detail::shard_change::keep();
                    if (!now->requested_by.empty() && v.term_live(now->requested_by, now->requested_term))
                        return detail::shard_change::refuse(errc::precondition_failed);
                    next.requested_by = me;
                    next.requested_term = t;
                    next.requested_count = count;
                    return detail::shard_change::write();
                };
            std::optional<detail::shard_seen> const known = it->second;
            auto [ec, seen, wrote] = co_await change_shard(id, change, known);
            (void)wrote;
            if (!ec) awaiting[id] = now() + 2 * std::chrono::nanoseconds(opts.effective_scan_interval());
        }

        // Takes back a request not granted in time: a stale count must not move a shard later.
        awaitable<void> withdraw(std::string const& id) {
            auto it = view.shards.find(id);
            if (it == view.shards.end()) co_return;
            std::string const me = opts.worker;
            std::uint64_t const t = term;
            detail::shard_change_fn change = [me, t](std::optional<detail::shard_body> const& now, detail::shard_body& next) {
                if (!now || now->requested_by != me || now->requested_term != t) return detail::shard_change::keep();
                next.clear_request();
                return detail::shard_change::write();
            };
            std::optional<detail::shard_seen> const known = it->second;
            auto [ec, seen, wrote] = co_await change_shard(id, change, known);
            (void)ec;
            (void)seen;
            (void)wrote;
        }

        // Reads each shard asked for, to start its work as soon as it is handed over.
        awaitable<void> poll_awaited() {
            if (awaiting.empty()) co_return;
            std::vector<std::string> ids;
            for (auto const& [id, until] : awaiting) ids.push_back(id);
            for (auto const& id : ids) {
                if (!held || abandoned || stopping) co_return;
                std::string const key = shard_prefix() + id;
                auto [ec, r] = co_await get(key);
                if (ec) continue;
                if (!r.found) {
                    awaiting.erase(id);
                    continue;
                }
                detail::shard_body b;
                diagnostics d;
                if (detail::decode_shard_body(r.found->body, b, d)) {
                    awaiting.erase(id);
                    continue;
                }
                detail::shard_seen s{r.found->version, std::move(b)};
                remember_shard(id, s);
                if (s.body.owned_by(opts.worker, term)) {
                    start_session(id, s);
                    awaiting.erase(id);
                } else if (s.body.requested_by != opts.worker || s.body.requested_term != term) {
                    awaiting.erase(id);
                } else if (now() >= awaiting[id]) {
                    awaiting.erase(id);
                    co_await withdraw(id);
                }
            }
        }

        // Stopping: every work is asked to stop; each shard is handed over as its work ends;
        // then the lease is released.
        // Success when nothing of this worker is left claimed: its shards handed over and its
        // lease released, or it never held a term; `errc::lease_lost` when the lease was lost
        // first; else why the release failed.
        awaitable<error_code> release_all() {
            for (auto& [id, s] : sessions) s->request_stop(ex);
            for (;;) {
                if (!held) break;
                co_await settle_ended();
                // Shards still ours without a work (never started, or a handoff that failed).
                auto counts = detail::owned_counts(view);
                std::vector<std::string> left;
                for (auto const& [id, s] : view.shards)
                    if (s.body.owned_by(opts.worker, term) && !sessions.count(id)) left.push_back(id);
                for (auto const& id : left) {
                    mark_stopped(id, view.shards[id].body.token);
                    co_await hand_over(id, counts, true);
                }
                if (sessions.empty() && left.empty()) break;
                co_await sleep(std::chrono::nanoseconds(opts.poll_interval));
            }
            error_code ec = term == 0 ? error_code{} : error_code(errc::lease_lost);
            if (lease && held) {
                held = false;
                std::tie(ec) = co_await lease->async_release(tuple_awaitable);
                if (ec == errc::not_held) ec = errc::lease_lost; // its deadline passed while it handed over
            }
            end_term();
            co_return ec;
        }

        // ---- checkpoints ----------------------------------------------------------------------
        void start_checkpoint(std::shared_ptr<session> s, std::string value,
                              boost::asio::any_completion_handler<void(error_code)> h) {
            auto complete = [this](auto handler, error_code ec) {
                detail::post_completion(ex, std::move(handler), ec);
            };
            if (!detail::is_utf8(value) || value.size() > detail::max_checkpoint_bytes) {
                last_diag.message = "a checkpoint must be UTF-8 text of at most 16 KiB";
                return complete(std::move(h), errc::invalid_argument);
            }
            if (s->checkpointing) return complete(std::move(h), errc::operation_in_progress);
            // Checked when the write is sent: a worker past its deadline sends nothing.
            if (s->lost || !acting(s->term)) return complete(std::move(h), errc::lease_lost);
            s->checkpointing = true;
            boost::asio::co_spawn(ex, keep_alive(this->shared_from_this(), checkpoint(s, std::move(value))),
                                  [h = std::move(h), s](std::exception_ptr e, error_code ec) mutable {
                                      s->checkpointing = false;
                                      if (e) std::rethrow_exception(e);
                                      if (auto t = s->table.lock()) detail::post_completion(t->ex, std::move(h), ec);
                                  });
        }

        awaitable<error_code> checkpoint(std::shared_ptr<session> s, std::string value) {
            std::string const me = opts.worker;
            std::uint64_t const t = s->term;
            auto it = view.shards.find(s->grant.shard);
            std::optional<detail::shard_seen> known;
            if (it != view.shards.end() && it->second.body.owned_by(me, t)) known = it->second;
            detail::shard_change_fn change =
                [me, t, token = s->grant.token, value](std::optional<detail::shard_body> const& now, detail::shard_body& next) {
                    // The same owner, term and token: this work's own tenure of the shard.
                    if (!now || !now->owned_by(me, t) || now->token != token) return detail::shard_change::refuse(errc::lease_lost);
                    next.checkpoint = value;
                    return detail::shard_change::write();
                };
            auto [ec, seen, wrote] = co_await change_shard(s->grant.shard, change, known);
            (void)wrote;
            if (ec == errc::lease_lost) {
                last_diag.message = "the shard is no longer this worker's (" +
                                    (seen ? "owner now \"" + seen->body.owner + "\", token " + std::to_string(seen->body.token)
                                          : std::string("record missing")) +
                                    ")";
                s->lose(ex);
            } else if (!ec && seen && seen->body.retired) {
                s->request_stop(ex); // retired: stop at this checkpoint, not only at the next scan
                poke();
            } else if (!ec && seen && !seen->body.requested_by.empty()) {
                poke(); // asked for: the loop decides at once whether to grant it
            }
            co_return ec;
        }
    };

private:
    std::shared_ptr<impl> impl_;
};

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/lease_table.ipp>
#endif

#endif
