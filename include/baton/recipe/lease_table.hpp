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
#include <baton/core/detail/random.hpp>
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
#include <baton/recipe/lease_observer.hpp>
#include <baton/recipe/lease_options.hpp>
#include <baton/recipe/lease_table_options.hpp>
#include <baton/recipe/table_shard.hpp>
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

#include <algorithm>
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
/** A lease table: shards owned by workers, with fencing tokens, fenced checkpoints, balancing
    and graceful handoff (see the file comment for records, cost and the safety argument).

    @tparam Backend a record store (memory, file, S3, DynamoDB, `basic_commit_protocol`)
    @tparam Clock the participant's monotonic clock (`steady_clock`; `sim::manual_clock` in simulations)
    @tparam RetryPolicy how failed requests are retried
    @tparam Signer how the backend authenticates (`backend_signer`: the backend keeps its own)
    @tparam Observer sees the worker lease's events, as a `basic_lease`'s observer does
            (`<baton/recipe/lease_observer.hpp>`: acquisitions, renewals with their margin,
            losses, releases, store answers); the default `no_lease_observer` costs nothing

    One object is one participant: it registers, retires and reads shards, and (with
    `lease_table_options::worker` set) runs as a worker with `async_run`.

    @par Object lifetimes
    Destroying the object abandons its worker: its works are cancelled, its lease is no longer
    renewed, and other workers take its shards after `ttl × max_clock_rate_skew`. Stop it with
    `request_stop` (or by cancelling `async_run`) to hand its shards over at once.
*/
template <record_store Backend, clock_policy Clock = steady_clock, retry_policy RetryPolicy = standard_retry,
          signer_policy Signer = backend_signer, class Observer = no_lease_observer>
class basic_lease_table {
public:
    /// The executor that the table's work and completions run on.
    using executor_type = boost::asio::any_io_executor;
    /// The record store.
    using backend_type = Backend;
    /// A shard as its work holds it.
    using shard_type = table_shard<basic_lease_table>;
    /// The work run for each acquired shard: `(shard_type) -> asio::awaitable<void>`.
    using work_type = std::function<boost::asio::awaitable<void>(shard_type)>;
    /// The worker lease's observer type.
    using observer_type = Observer;

    /** Creates a table participant; nothing is sent until an operation is started. `observer`
        is copied into the worker lease, which reports to it on the table's executor (its
        `key` is the worker record's, `P` + `workers/` + name).

        @throws config_error when `opts` breaks a rule (the message names it).
    */
    basic_lease_table(executor_type ex, Backend backend, lease_table_options opts, RetryPolicy retry = {},
                      Signer signer = {}, Clock clock = {}, Observer observer = {})
        : impl_(std::make_shared<impl>(std::move(ex), std::move(backend), validated(std::move(opts)), std::move(retry),
                                       std::move(signer), std::move(clock), std::move(observer))) {}

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
    // The state shared with the running coroutines (recipe/impl/lease_table.hpp).
    struct impl;
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


private:
    std::shared_ptr<impl> impl_;
};

} // namespace baton

#include <baton/recipe/impl/lease_table.hpp>

#endif
