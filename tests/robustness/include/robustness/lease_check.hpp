// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef ROBUSTNESS_LEASE_CHECK_HPP
#define ROBUSTNESS_LEASE_CHECK_HPP

/** @file
    The lease checks of tests/robustness/README.md, on the `lease` workload
    and the process events:

    - tokens: acquisitions' tokens are distinct and rise in real-time order
      (A returned before B was called: A's token is below B's);
    - holds: the intervals during which an application held a token (from its
      acquire's `t1` to the first of its `lost` delivery, its release's `t0`,
      its process's `sigkill`) never overlap across processes. An interval
      during which its process was stopped (a `sigstop` at or after the
      acquire's `t0`, before the interval's end) is *frozen*: a stopped
      process cannot see its lease expire, so it is judged by fencing alone;
    - fencing: a fenced write accepted (`ok`) carries a token no lower than
      that of every write accepted before it was called; a refused one was
      refused for a higher token (`winning > token`);
    - the final read shows the value of an `ok` or `unknown` write whose
      token is at least that of every `ok` write that returned before the read
      was called, and that no such write followed.
*/

#include <robustness/history.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace robustness {

/// How a hold interval ended.
enum class hold_end { lost, release, sigkill, last_event };

inline constexpr std::string_view name(hold_end e) {
    constexpr std::string_view names[] = {"lost", "release", "sigkill", "last event"};
    return names[static_cast<int>(e)];
}

/// One application's hold of the lease.
struct hold_interval {
    operation const* acquire = nullptr;
    std::uint64_t token = 0;
    std::int64_t start = 0;  ///< the acquire's t1
    std::int64_t end = 0;
    hold_end ended_by = hold_end::last_event;
    std::optional<std::int64_t> stopped_at;  ///< the sigstop that froze it

    bool frozen() const { return stopped_at.has_value(); }
};

/// The lease checks of a whole history.
struct lease_report {
    std::vector<hold_interval> intervals;  ///< by start
    std::size_t operations = 0;
    std::size_t never_returned = 0;
    std::size_t fenced_ok = 0;
    std::size_t frozen_overlaps = 0;  ///< overlaps left to fencing because an interval was frozen
    std::size_t final_reads_checked = 0;
    std::vector<std::string> violations;
    std::vector<std::string> warnings;

    std::size_t frozen() const {
        return static_cast<std::size_t>(
            std::count_if(intervals.begin(), intervals.end(), [](hold_interval const& i) { return i.frozen(); }));
    }
};

namespace detail {

// For each of `later` (sorted by t0), the operation of highest token among `earlier` (sorted by t1) that returned
// before it was called; `bad(max, b)` says whether that pair breaks the rule.
template <class Bad>
void check_real_time_order(std::vector<operation const*> earlier, std::vector<operation const*> later,
                           Bad bad) {
    std::sort(earlier.begin(), earlier.end(), [](auto* a, auto* b) { return a->t1 < b->t1; });
    std::sort(later.begin(), later.end(), [](auto* a, auto* b) { return a->t0 < b->t0; });
    operation const* highest = nullptr;
    std::size_t a = 0;
    for (auto const* b : later) {
        for (; a < earlier.size() && earlier[a]->t1 < b->t0; ++a)
            if (!highest || *earlier[a]->number("token") > *highest->number("token")) highest = earlier[a];
        if (highest) bad(*highest, *b);
    }
}

}  // namespace detail

/// Runs the lease checks on `h`.
inline lease_report check_lease(history const& h) {
    lease_report r;
    std::int64_t const origin = h.origin();
    auto at = [origin](std::int64_t t) { return format_time(t, origin); };
    auto token = [](operation const& op) { return *op.number("token"); };
    using incarnation = std::pair<std::string, std::uint64_t>;

    std::vector<operation const*> acquired, fenced_ok, fenced_all, final_reads;
    std::map<incarnation, std::vector<operation const*>> by_incarnation;
    std::map<incarnation, std::int64_t> last_event;
    for (auto const& op : h.ops) {
        if (op.w == workload::kv) continue;
        by_incarnation[{op.process, op.incarnation}].push_back(&op);
        auto& last = last_event[{op.process, op.incarnation}];
        last = std::max(last, op.t1 == unbounded ? op.t0 : op.t1);
        if (op.w != workload::lease) continue;
        ++r.operations;
        r.never_returned += !op.returned;
        if (op.kind == op_kind::acquire && op.res == outcome::ok) acquired.push_back(&op);
        if (op.kind == op_kind::fenced) fenced_all.push_back(&op);
        if (op.kind == op_kind::fenced && op.res == outcome::ok) fenced_ok.push_back(&op);
        if (op.kind == op_kind::fenced_read) final_reads.push_back(&op);
    }
    r.fenced_ok = fenced_ok.size();

    // Tokens: distinct, and rising in real-time order (a repeated token in order is reported once, as a repeat).
    std::map<std::uint64_t, operation const*> first_with;
    for (auto const* a : acquired) {
        auto const [it, fresh] = first_with.emplace(token(*a), a);
        if (!fresh)
            r.violations.push_back("lease: token " + std::to_string(token(*a)) + " acquired twice: " +
                                   it->second->label() + " and " + a->label());
    }
    detail::check_real_time_order(acquired, acquired, [&](operation const& a, operation const& b) {
        if (token(a) > token(b))
            r.violations.push_back("lease: token went down in real-time order: " + a.label() + " got token " +
                                   std::to_string(token(a)) + " and returned at " + at(a.t1) + ", then " + b.label() +
                                   " called at " + at(b.t0) + " got token " + std::to_string(token(b)));
    });

    // Hold intervals.
    for (auto const* a : acquired) {
        hold_interval iv;
        iv.acquire = a;
        iv.token = token(*a);
        iv.start = a->t1;
        iv.end = unbounded;
        incarnation const who{a->process, a->incarnation};
        for (auto const* e : by_incarnation[who]) {
            std::optional<std::int64_t> t;
            hold_end why{};
            if (e->kind == op_kind::lost && e->t0 >= a->t0 && e->number("token").value_or(iv.token) == iv.token)
                t = e->t0, why = hold_end::lost;
            else if (e->kind == op_kind::release && e->t0 >= a->t0 && token(*e) == iv.token)
                t = e->t0, why = hold_end::release;
            else if (e->kind == op_kind::sigkill && e->t0 >= a->t0)
                t = e->t0, why = hold_end::sigkill;
            if (t && *t < iv.end) iv.end = *t, iv.ended_by = why;
        }
        if (iv.end == unbounded) {
            iv.end = last_event[who];
            iv.ended_by = hold_end::last_event;
            r.warnings.push_back("lease: " + a->label() + " (token " + std::to_string(iv.token) +
                                 ") has no lost, release or sigkill: its hold is taken to end at the incarnation's "
                                 "last recorded event, " + at(iv.end));
        }
        for (auto const* e : by_incarnation[who])
            if (e->kind == op_kind::sigstop && e->t0 >= a->t0 && e->t0 < iv.end &&
                (!iv.stopped_at || e->t0 < *iv.stopped_at))
                iv.stopped_at = e->t0;
        r.intervals.push_back(iv);
    }
    std::sort(r.intervals.begin(), r.intervals.end(),
              [](hold_interval const& a, hold_interval const& b) { return a.start < b.start; });
    auto describe = [&](hold_interval const& iv) {
        return iv.acquire->process + "#" + std::to_string(iv.acquire->incarnation) + " token " +
               std::to_string(iv.token) + " [" + at(iv.start) + " .. " + at(iv.end) + ", " +
               std::string(name(iv.ended_by)) + "] (" + iv.acquire->where + ")";
    };
    for (std::size_t i = 0; i < r.intervals.size(); ++i) {
        auto const& a = r.intervals[i];
        for (std::size_t j = i + 1; j < r.intervals.size() && r.intervals[j].start < a.end; ++j) {
            auto const& b = r.intervals[j];
            bool const same = a.acquire->process == b.acquire->process && a.acquire->incarnation == b.acquire->incarnation;
            if (same || b.end <= b.start || a.end <= a.start) continue;
            if (a.frozen() || b.frozen()) {
                ++r.frozen_overlaps;
                continue;
            }
            r.violations.push_back("lease: two holders at once: " + describe(a) + " and " + describe(b));
        }
    }

    // Fencing.
    detail::check_real_time_order(fenced_ok, fenced_ok, [&](operation const& a, operation const& b) {
        if (token(a) > token(b))
            r.violations.push_back("fenced: " + b.label() + " with token " + std::to_string(token(b)) +
                                   " was accepted after " + a.label() + " with token " + std::to_string(token(a)) +
                                   " had been (returned at " + at(a.t1) + ", the later one called at " + at(b.t0) + ")");
    });
    for (auto const* w : fenced_all)
        if (w->res == outcome::refused && *w->number("winning") <= token(*w))
            r.violations.push_back("fenced: " + w->label() + " with token " + std::to_string(token(*w)) +
                                   " was refused for token " + std::to_string(*w->number("winning")) +
                                   ", which is not higher");

    // The final read.
    if (final_reads.empty() && !fenced_all.empty())
        r.warnings.push_back("fenced: no final read: the record's final value is not checked");
    for (auto const* read : final_reads) {
        if (read->res != outcome::ok) {
            r.warnings.push_back("fenced: the final read " + read->label() + " did not succeed: not checked");
            continue;
        }
        ++r.final_reads_checked;
        std::optional<std::uint64_t> highest;  // of the ok writes that returned before the read
        operation const* last_ok = nullptr;
        for (auto const* w : fenced_ok) {
            if (w->t1 >= read->t0) continue;
            if (!highest || token(*w) > *highest) highest = token(*w);
            if (!last_ok || w->t0 > last_ok->t0) last_ok = w;
        }
        if (!read->flag("found").value_or(false)) {
            if (highest)
                r.violations.push_back("fenced: the final read " + read->label() + " found no record, after " +
                                       "writes were accepted (the last by " + last_ok->label() + ")");
            continue;
        }
        std::string const value = *read->text("value");
        auto const w = std::find_if(fenced_all.begin(), fenced_all.end(),
                                    [&](operation const* f) { return f->text("value") == value; });
        std::string const shows = "fenced: the final read " + read->label() + " shows '" + value + "'";
        if (w == fenced_all.end()) {
            r.violations.push_back(shows + ", which no fenced write wrote");
            continue;
        }
        operation const& writer = **w;
        if (writer.res == outcome::refused || writer.res == outcome::failed) {
            r.violations.push_back(shows + ", written by " + writer.label() + ", reported " +
                                   std::string(name(writer.res)) + ": that write landed");
            continue;
        }
        if (highest && token(writer) < *highest)
            r.violations.push_back(shows + ", written by " + writer.label() + " with token " +
                                   std::to_string(token(writer)) + ", below token " + std::to_string(*highest) +
                                   " of a write accepted before");
        if (token(writer) != *read->number("token"))
            r.violations.push_back(shows + " with token " + std::to_string(*read->number("token")) +
                                   ", but its write carried token " + std::to_string(token(writer)));
        // An accepted write that began after this one returned overwrote it (a linearizable record).
        if (writer.res == outcome::ok)
            for (auto const* later : fenced_ok)
                if (later->t0 > writer.t1 && later->t1 < read->t0) {
                    r.violations.push_back(shows + ", written by " + writer.label() + ", but " + later->label() +
                                           " was accepted after it, before the read");
                    break;
                }
    }
    return r;
}

}  // namespace robustness

#endif
