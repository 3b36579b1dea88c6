// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_TABLE_PLAN_IPP
#define BATON_RECIPE_IMPL_TABLE_PLAN_IPP

// Layer: recipes, internal. The compiled part of recipe/detail/table_plan.hpp: what a lease-table
// worker judges of its table's terms and shares.
#include <baton/recipe/detail/table_plan.hpp>

#include <charconv>
#include <limits>

namespace baton::detail {

BATON_DECL void table_view::saw_missing(std::string const& owner, std::chrono::nanoseconds sent,
                                        std::chrono::nanoseconds listed) {
    auto const since = named_since.find(owner);
    if (since != named_since.end() && sent < since->second) return; // sent before that read: says nothing
    auto [it, fresh] = missing.try_emplace(owner, absence{sent, listed, sent});
    if (fresh) return;
    if (since != named_since.end() && it->second.first_sent < since->second) it->second = absence{sent, listed, sent};
    else it->second.last_sent = sent;
}

BATON_DECL void table_view::saw_named(shard_body const& now, shard_seen const* before, std::chrono::nanoseconds at) {
    if (now.owner.empty() || (before && before->body.owner == now.owner && before->body.term == now.term)) return;
    auto& since = named_since[now.owner];
    since = std::max(since, at);
}

BATON_DECL std::chrono::nanoseconds table_view::missing_window(shard_body const& b) const {
    std::chrono::milliseconds ttl{static_cast<std::chrono::milliseconds::rep>(b.owner_ttl_ms)};
    if (ttl.count() <= 0) {
        ttl = own_ttl;
        for (auto const& [name, t] : declared_ttl) ttl = std::max(ttl, t);
    }
    return lease_machine::takeover_window(ttl, skew);
}

BATON_DECL bool table_view::live(std::string_view w) const {
    auto it = workers.find(w);
    return it != workers.end() && it->second.decoded && !it->second.released;
}

BATON_DECL bool table_view::term_live(std::string_view w, std::uint64_t t) const {
    auto it = workers.find(w);
    return it != workers.end() && it->second.decoded && !it->second.released && it->second.term == t;
}

BATON_DECL bool table_view::term_ended(std::string_view w, std::uint64_t t,
                                       std::chrono::nanoseconds missing_window) const {
    auto it = workers.find(w);
    if (it != workers.end()) {
        // A record at an earlier term than the shard names is older than the shard record:
        // it says nothing about term `t` (the worker moved on since this view read it).
        if (!it->second.decoded || it->second.term < t) return false;
        return it->second.term > t || it->second.released;
    }
    auto m = missing.find(w);
    if (m == missing.end()) return false;
    if (auto since = named_since.find(w); since != named_since.end() && m->second.first_sent < since->second) return false;
    return m->second.last_sent - m->second.first_answer >= missing_window;
}

BATON_DECL bool table_view::claimable(shard_body const& b) const {
    if (b.retired || b.token == max_shard_token) return false;
    return b.owner.empty() || term_ended(b.owner, b.term, missing_window(b));
}

BATON_DECL std::size_t table_view::max_shards(std::string_view w, std::string_view me) const {
    std::size_t limit = 0;
    if (w == me) limit = own_max_shards;
    else if (auto it = workers.find(w); it != workers.end()) limit = it->second.max_shards;
    return limit == 0 ? std::numeric_limits<std::size_t>::max() : limit;
}

BATON_DECL std::size_t worker_max_shards(std::string_view value) noexcept {
    constexpr std::string_view key = "max_shards=";
    if (value.substr(0, key.size()) != key) return 0;
    std::size_t n = 0;
    auto const digits = value.substr(key.size());
    auto const [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc{} || end != digits.data() + digits.size()) return 0;
    return n;
}

BATON_DECL std::map<std::string, std::size_t, std::less<>> owned_counts(table_view const& v) {
    std::map<std::string, std::size_t, std::less<>> counts;
    for (auto const& [name, w] : v.workers)
        if (v.live(name)) counts[name] = 0;
    for (auto const& [id, s] : v.shards)
        if (!s.body.retired && !s.body.owner.empty() && v.term_live(s.body.owner, s.body.term)) ++counts[s.body.owner];
    return counts;
}

BATON_DECL std::size_t fair_ceiling(table_view const& v, std::map<std::string, std::size_t, std::less<>> const& counts,
                                    std::string_view me) {
    std::size_t active = 0;
    for (auto const& [id, s] : v.shards) active += s.body.retired ? 0 : 1;
    if (counts.empty()) return active;
    std::vector<std::size_t> limits;
    std::size_t unlimited = 0;
    for (auto const& [name, n] : counts) {
        auto const limit = v.max_shards(name, me);
        if (limit == std::numeric_limits<std::size_t>::max()) ++unlimited;
        else limits.push_back(limit);
    }
    if (limits.empty()) return (active + unlimited - 1) / unlimited;
    // Water-filling: the smallest c with sum(min(limit, c)) >= active, found by bisection
    // (the sum only grows with c).
    auto covered = [&](std::size_t c) {
        std::size_t sum = c * unlimited;
        for (auto l : limits) sum += std::min(l, c);
        return sum >= active;
    };
    std::size_t hi = active;
    if (!covered(hi)) return *std::max_element(limits.begin(), limits.end());
    std::size_t lo = 0;
    while (lo < hi) {
        std::size_t const mid = lo + (hi - lo) / 2;
        if (covered(mid)) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

BATON_DECL bool grant_request(table_view const& v, std::map<std::string, std::size_t, std::less<>> const& counts,
                              std::string_view me, shard_body const& b, bool stopping) {
    if (b.requested_by.empty() || b.requested_by == me || !v.term_live(b.requested_by, b.requested_term)) return false;
    if (stopping) return true;
    auto const mine = counts.find(me);
    std::size_t const m = mine == counts.end() ? 0 : mine->second;
    return m >= b.requested_count + 2;
}

BATON_DECL std::optional<std::pair<std::string, std::uint64_t>> handoff_target(
    table_view const& v, std::map<std::string, std::size_t, std::less<>>& counts, std::string_view me, shard_body const& b) {
    if (!b.requested_by.empty() && b.requested_by != me && v.term_live(b.requested_by, b.requested_term)) {
        ++counts[b.requested_by];
        return std::pair{b.requested_by, b.requested_term};
    }
    auto best = counts.end();
    for (auto it = counts.begin(); it != counts.end(); ++it)
        if (it->first != me && v.live(it->first) && it->second < v.max_shards(it->first, me) &&
            (best == counts.end() || it->second < best->second))
            best = it;
    if (best == counts.end()) return std::nullopt;
    ++best->second;
    return std::pair{best->first, v.workers.find(best->first)->second.term};
}

} // namespace baton::detail

#endif
