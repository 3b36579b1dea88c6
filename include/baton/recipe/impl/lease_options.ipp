// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_LEASE_OPTIONS_IPP
#define BATON_RECIPE_IMPL_LEASE_OPTIONS_IPP

// Layer: recipes, internal. The compiled part of recipe/lease_options.hpp: the options' rules.
#include <baton/recipe/lease_options.hpp>

namespace baton {

BATON_DECL void lease_options::validate() const {
    auto ms = [](std::chrono::milliseconds d) { return std::to_string(d.count()) + "ms"; };
    if (key.empty()) throw config_error("lease_options: key must not be empty");
    if (key.size() > store_limits::max_key_bytes)
        throw config_error("lease_options: key must be at most 1024 bytes (it is " + std::to_string(key.size()) + ")");
    if (ttl.count() <= 0) throw config_error("lease_options: ttl must be positive");
    if (ttl > std::chrono::hours(24))
        throw config_error("lease_options: ttl (" + ms(ttl) +
                           ") must be at most 24 hours (86400000ms), the longest a lease record may declare");
    auto const ri = effective_renew_interval();
    auto const rd = effective_renew_deadline();
    if (ri.count() <= 0) throw config_error("lease_options: renew_interval must be positive");
    if (ttl < 3 * ri)
        throw config_error("lease_options: ttl (" + ms(ttl) + ") must be at least 3 x renew_interval (" + ms(ri) + ")");
    if (rd >= ttl)
        throw config_error("lease_options: renew_deadline (" + ms(rd) + ") must be less than ttl (" + ms(ttl) + ")");
    if (rd <= ri)
        throw config_error("lease_options: renew_deadline (" + ms(rd) + ") must be greater than renew_interval (" +
                           ms(ri) + ") so that a renewal is tried before it");
    if (!(max_clock_rate_skew >= 1.0))
        throw config_error("lease_options: max_clock_rate_skew must be at least 1 (a contender must wait at least a full ttl)");
    // Also refuses infinity: ttl x skew must be a real time span (a contender's takeover window).
    if (!(max_clock_rate_skew <= 1000.0))
        throw config_error("lease_options: max_clock_rate_skew must be a finite number of at most 1000 "
                           "(ttl x max_clock_rate_skew is how long a contender waits)");
    if (poll_interval.count() <= 0) throw config_error("lease_options: poll_interval must be positive");
    if (poll_interval > ttl)
        throw config_error("lease_options: poll_interval (" + ms(poll_interval) + ") must not exceed ttl (" + ms(ttl) + ")");
    if (yield_after.count() < 0) throw config_error("lease_options: yield_after must not be negative");
    if (yield_after > std::chrono::hours(24) && yield_after != std::chrono::milliseconds::max())
        throw config_error("lease_options: yield_after (" + ms(yield_after) +
                           ") must be at most 24 hours, or milliseconds::max() to never yield");
    if (value.size() > 8 * 1024) throw config_error("lease_options: value must be at most 8 KiB");
    if (owner.size() > 1024) throw config_error("lease_options: owner must be at most 1 KiB");
    // Both travel in a JSON record that every contender must be able to read back.
    if (!detail::is_utf8(owner)) throw config_error("lease_options: owner must be valid UTF-8");
    if (!detail::is_utf8(value)) throw config_error("lease_options: value must be valid UTF-8");
}

} // namespace baton

#endif
