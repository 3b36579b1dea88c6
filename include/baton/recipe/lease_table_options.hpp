// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_LEASE_TABLE_OPTIONS_HPP
#define BATON_RECIPE_LEASE_TABLE_OPTIONS_HPP

/** @file
    Layer: recipes. The settings of a lease table (`lease_table_options`) and what it reports:
    a snapshot of workers and shards, and the grant a worker's work is handed with each shard
    (recipe/lease_table.hpp).
*/

#include <baton/core/detail/config.hpp>
#include <baton/recipe/lease_options.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
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
    /** At most this many shards worked on at once by this worker; 0: no limit. The worker
        claims and asks for no more, hands over any it is given beyond it, and publishes it in
        its worker record: the others then share the rest among themselves (so a fair share is
        the smallest count that, with each worker at its limit or at that count, covers every
        active shard). Shards beyond the sum of every worker's limit stay free.
    */
    std::size_t max_shards = 0;
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
    /// The most shards it works on at once (`lease_table_options::max_shards`); 0: no limit.
    std::size_t max_shards = 0;
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

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/lease_table.ipp>
#endif

#endif
