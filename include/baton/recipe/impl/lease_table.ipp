// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_LEASE_TABLE_IPP
#define BATON_RECIPE_IMPL_LEASE_TABLE_IPP

// Layer: recipes, internal. The compiled part of recipe/lease_table_options.hpp: the options' worker
// lease and rules, and the shard states' names.
#include <baton/recipe/lease_table_options.hpp>

#include <string>

namespace baton {

BATON_DECL lease_options lease_table_options::worker_lease() const {
    lease_options o;
    o.key = table + "workers/" + worker;
    o.owner = worker;
    o.ttl = ttl;
    o.renew_interval = renew_interval;
    o.renew_deadline = renew_deadline;
    o.max_clock_rate_skew = max_clock_rate_skew;
    o.poll_interval = std::min(poll_interval, ttl);
    o.random_seed = random_seed;
    // Other workers read the limit from here (detail::worker_max_shards decodes it).
    if (max_shards != 0) o.value = "max_shards=" + std::to_string(max_shards);
    // A deleted worker record, created again, still gets a term above every earlier one.
    o.wall_clock_tokens = true;
    return o;
}

BATON_DECL void lease_table_options::validate() const {
    if (table.size() > 512) throw config_error("lease_table_options: table prefix must be at most 512 bytes");
    if (!detail::is_utf8(table)) throw config_error("lease_table_options: table prefix must be valid UTF-8");
    if (worker.size() > 256) throw config_error("lease_table_options: worker name must be at most 256 bytes");
    if (!detail::is_utf8(worker)) throw config_error("lease_table_options: worker name must be valid UTF-8");
    if (worker.find('/') != std::string::npos)
        throw config_error("lease_table_options: worker name must not contain '/'");
    auto w = worker_lease();
    if (w.key.size() > store_limits::max_key_bytes || worker.empty()) w.key = table + "workers/x";
    try {
        w.validate();
    } catch (config_error const& e) {
        throw config_error(std::string("lease_table_options (worker lease): ") + e.what());
    }
    auto const scan = effective_scan_interval();
    if (scan.count() <= 0) throw config_error("lease_table_options: scan_interval must be positive");
    if (scan > ttl) throw config_error("lease_table_options: scan_interval must not exceed ttl");
    if (max_moves_per_cycle == 0) throw config_error("lease_table_options: max_moves_per_cycle must be at least 1");
}

BATON_DECL char const* to_string(table_shard_state s) noexcept {
    switch (s) {
    case table_shard_state::free: return "free";
    case table_shard_state::owned: return "owned";
    case table_shard_state::orphaned: return "orphaned";
    case table_shard_state::retired: return "retired";
    }
    return "unknown";
}

} // namespace baton

#endif
