// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_TABLE_PLAN_HPP
#define BATON_RECIPE_DETAIL_TABLE_PLAN_HPP

// Layer: recipes, internal. What a lease-table worker knows of its table (the worker records and
// the shard records as its last scan read them) and what it decides from that, without any I/O:
// which terms have ended, which shards are free to claim, how many shards are a fair share, which
// shards to claim or to ask another worker for, whether to grant such a request, and to whom a
// stopping worker hands its shards. Safety never rests on these decisions (every change is a
// conditional write, see lease_table.hpp); they only decide who tries what.

#include <baton/core/detail/config.hpp>
#include <baton/recipe/detail/lease_machine.hpp>
#include <baton/recipe/detail/shard_record.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace baton::detail {

// A worker's liveness record (a lease/1 record) as last read.
struct table_worker_entry {
    std::string version;                        // the store's version, as last listed
    bool decoded = false;                       // the body below was read for this version
    bool released = false;                      // its term ended: released, or marked dead by a reaper
    std::uint64_t term = 0;                     // the record's fencing token: the worker's term
    std::chrono::milliseconds ttl{0};           // as declared by its holder
    std::string instance, value;                // kept in a reaper's marker
    std::size_t max_shards = 0;                 // the limit its value publishes; 0: none
    std::string body_version;                   // the version the fields above were read from
    std::chrono::nanoseconds observed_since{0}; // own time of the first read answer that showed `version`
};

struct table_view {
    std::map<std::string, table_worker_entry, std::less<>> workers; // by worker name
    std::map<std::string, shard_seen, std::less<>> shards;          // by shard id
    // Owners named by some shard that have no worker record. A record can only be missing if
    // something outside baton deleted it (its holder's renewals then fail), so its term ends once
    // listings show it absent for a full takeover window: from the answer of the first listing
    // that showed it absent to the sending of the latest one (own time; a pause in between proves
    // nothing, as for a lease contender). Only listings sent after this worker read a shard
    // record naming the owner's latest term count: an absence seen before says nothing of a term
    // the owner began afterwards (it recreated its record and claimed in between).
    struct absence {
        std::chrono::nanoseconds first_sent{0};
        std::chrono::nanoseconds first_answer{0};
        std::chrono::nanoseconds last_sent{0};
    };
    std::map<std::string, absence, std::less<>> missing;
    // Per owner: when a read last showed a shard naming a term of it not seen before (own time).
    std::map<std::string, std::chrono::nanoseconds, std::less<>> named_since;

    // A listing sent at `sent` and answered at `listed` showed `owner` without a record.
    void saw_missing(std::string const& owner, std::chrono::nanoseconds sent, std::chrono::nanoseconds listed);
    // A read answered by `at` showed a shard under `owner` and `term`; `before` is what the view held.
    void saw_named(shard_body const& now, shard_seen const* before, std::chrono::nanoseconds at);
    // The TTL each worker name declared when last read, kept after its record is gone; this
    // worker's own TTL, and the clock-rate skew that every window is measured with.
    std::map<std::string, std::chrono::milliseconds, std::less<>> declared_ttl;
    std::chrono::milliseconds own_ttl{0};
    double skew = 2.0;
    // This worker's own limit on shards at once (its record may not be in the view yet); 0: none.
    std::size_t own_max_shards = 0;

    // The most shards worker `w` takes: its published limit (`me`: the own one), else no limit.
    std::size_t max_shards(std::string_view w, std::string_view me) const;

    // How long the owner a shard names must stay missing before its term ends: the owner's own
    // declared TTL × skew, as a reaper waits while its record exists (the shard record carries
    // that TTL: the owner's record may be gone before anyone read it). A record written by an
    // older baton names no TTL: the largest known then.
    std::chrono::nanoseconds missing_window(shard_body const& b) const;

    // The worker holds a record that is not released (a dead worker counts until reaped).
    bool live(std::string_view w) const;
    bool term_live(std::string_view w, std::uint64_t t) const;
    // Whether the term a shard names has ended, judged so that a doubt keeps the owner: its
    // record released, or at a later term, or missing for `missing_window`.
    bool term_ended(std::string_view w, std::uint64_t t, std::chrono::nanoseconds missing_window) const;
    // Nobody may act on it: free, or its owner's term ended. Retired shards are never claimed,
    // nor one whose token can rise no more.
    bool claimable(shard_body const& b) const;
};

// Shards per live worker, counting only shards owned under the owner's current term.
BATON_DECL std::map<std::string, std::size_t, std::less<>> owned_counts(table_view const& v);

// The limit on shards at once that a worker record's value publishes ("max_shards=N"); 0: none
// (a record of an older baton, or of a worker without a limit).
BATON_DECL std::size_t worker_max_shards(std::string_view value) noexcept;

// The fair share: the smallest count c such that the live workers (the keys of `counts`), each
// taking min(its limit, c), cover every active shard; ceil(active shards / live workers) when
// none has a limit. Nobody should own more, and a worker with fewer (and under its limit) may
// claim. When the limits together cannot cover them, the largest limit.
BATON_DECL std::size_t fair_ceiling(table_view const& v, std::map<std::string, std::size_t, std::less<>> const& counts,
                                    std::string_view me);

struct balance_plan {
    std::vector<std::string> claim;                            // shard ids nobody may act on
    std::vector<std::pair<std::string, std::string>> request;  // (shard, its owner) to ask for
};

// What worker `me` (term `term`) tries this cycle. It claims free shards up to the fair ceiling
// or its own limit (its own shards of an earlier term first, the rest in random order so that
// workers spread out); with none left it asks the most loaded worker (of several that tie, the
// one its name picks) for one shard at a time,
// while that worker has at least two more than it would and it is under both, and at most
// `max_moves` shards are asked for at once (`pending` are still outstanding; they count as its own).
template <class Rng>
balance_plan plan_balance(table_view const& v, std::string_view me, std::uint64_t term, std::size_t max_moves,
                          std::size_t pending, Rng& rng) {
    balance_plan plan;
    auto counts = owned_counts(v);
    if (!v.term_live(me, term)) counts[std::string(me)]; // our own record may not be in the scan yet
    std::size_t const ceiling = std::min(fair_ceiling(v, counts, me), v.max_shards(me, me));
    std::size_t mine = counts[std::string(me)] + pending;

    std::vector<std::string> ours_before, others;
    for (auto const& [id, s] : v.shards) {
        if (!v.claimable(s.body)) continue;
        (s.body.owner == me ? ours_before : others).push_back(id);
    }
    std::shuffle(others.begin(), others.end(), rng);
    for (auto* list : {&ours_before, &others})
        for (auto const& id : *list) {
            if (mine >= ceiling) break;
            plan.claim.push_back(id);
            ++mine;
        }
    if (!ours_before.empty() || !others.empty()) return plan; // free shards first; ask only when none are left

    // Each asker's own pick among the workers that tie for the most shards (FNV-1a of its name:
    // no draw from `rng`, the same on every platform). Askers that all took the first of them by
    // name were granted one shard per round of asks between them (an owner grants while it has
    // two more than the asker): after one worker of 100 died, the 49 workers left one short of
    // the floor were balanced in one round (two scans) at a time.
    std::uint64_t spread = 14695981039346656037ull;
    for (char ch : me) spread = (spread ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
    for (std::size_t moves = pending; moves < max_moves; ++moves) {
        std::size_t top = 0, ties = 0;
        for (auto const& [name, n] : counts) {
            if (name == me) continue;
            if (ties == 0 || n > top) {
                top = n;
                ties = 1;
            } else if (n == top) {
                ++ties;
            }
        }
        auto most = counts.end();
        if (ties != 0) {
            auto pick = static_cast<std::size_t>(spread % ties);
            for (auto it = counts.begin(); it != counts.end(); ++it)
                if (it->first != me && it->second == top && pick-- == 0) {
                    most = it;
                    break;
                }
        }
        if (most == counts.end() || most->second < mine + 2 || mine >= ceiling) break;
        // One of its shards that no live worker has asked for yet.
        std::vector<std::string> candidates;
        for (auto const& [id, s] : v.shards) {
            auto const& b = s.body;
            if (b.retired || b.owner != most->first || !v.term_live(b.owner, b.term)) continue;
            if (!b.requested_by.empty() && v.term_live(b.requested_by, b.requested_term)) continue;
            // `shard_id` because clang 14 cannot capture a structured binding (`id`) in a lambda.
            auto const& shard_id = id;
            if (std::any_of(plan.request.begin(), plan.request.end(), [&](auto const& r) { return r.first == shard_id; })) continue;
            candidates.push_back(id);
        }
        if (candidates.empty()) break;
        plan.request.emplace_back(candidates[rng() % candidates.size()], most->first);
        --most->second;
        ++mine;
    }
    return plan;
}

// Whether `me` grants a request on one of its shards: the requester's term is live, and moving
// the shard evens the two out (`me` has at least two more than the requester said it had: its
// own count, fresher than this view of it), or `me` is stopping.
BATON_DECL bool grant_request(table_view const& v, std::map<std::string, std::size_t, std::less<>> const& counts,
                              std::string_view me, shard_body const& b, bool stopping);

// Whom a stopping worker hands a shard to: its requester when live, else the live worker other
// than `me` with the fewest shards among those under their limit (`counts` is updated), else
// nobody (the shard is left free).
BATON_DECL std::optional<std::pair<std::string, std::uint64_t>> handoff_target(
    table_view const& v, std::map<std::string, std::size_t, std::less<>>& counts, std::string_view me, shard_body const& b);

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/table_plan.ipp>
#endif

#endif
