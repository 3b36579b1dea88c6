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
      its process's `sigkill`) never overlap across process incarnations. A
      stopped process cannot see its lease expire, so it is outside the time
      model while stopped and for `stop_grace_ns` after its `sigcont` (the time
      it needs to deliver the loss): an overlap lying wholly within the
      stopped windows of one of its two holders' incarnations is left to
      fencing, and its holder counts as *frozen*. Every other overlap is a
      violation;
    - fencing: a fenced write accepted (`ok`) carries a token no lower than
      that of every write accepted before it was called; a refused one was
      refused for a higher token (`winning > token`). A refusal proves that a
      write of token `winning` or higher was in the record before it returned,
      so a write accepted after that carries a token no lower than `winning`;
    - the final read shows the value of an `ok` or `unknown` write whose
      token is at least that of every `ok` write that returned before the read
      was called and every `winning` of a refusal that did, and that no such
      `ok` write followed; it finds no record only if neither returned before.
*/

#include <robustness/history.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace robustness {

/// How long after its `sigcont` a resumed process is still excused for holding a lease it lost while stopped:
/// baton needs a moment after resuming to notice the loss and deliver it.
inline constexpr std::int64_t stop_grace_ns = 1'000'000'000;

/// A closed span of time, [from, to], in nanoseconds; `to` may be `unbounded`.
struct time_span {
    std::int64_t from = 0;
    std::int64_t to = 0;
};

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
    std::size_t overlaps_left_to_fencing = 0;  ///< overlaps excused because this holder's process was stopped

    bool frozen() const { return overlaps_left_to_fencing > 0; }
};

/// The lease checks of a whole history.
struct lease_report {
    std::vector<hold_interval> intervals;  ///< by start
    std::size_t operations = 0;
    std::size_t never_returned = 0;
    std::size_t fenced_ok = 0;
    std::size_t frozen_overlaps = 0;  ///< overlaps left to fencing because a holder was stopped throughout
    std::size_t final_reads_checked = 0;
    std::vector<std::string> violations;
    std::vector<std::string> warnings;

    std::size_t frozen() const {
        return static_cast<std::size_t>(
            std::count_if(intervals.begin(), intervals.end(), [](hold_interval const& i) { return i.frozen(); }));
    }
};

namespace detail {

// For each of `later` (sorted by t0), the operation of highest `rank` among `earlier` (sorted by t1) that returned
// before it was called; `bad(max, b)` says whether that pair breaks the rule.
template <class Rank, class Bad>
void check_real_time_order(std::vector<operation const*> earlier, std::vector<operation const*> later, Rank rank,
                           Bad bad) {
    std::sort(earlier.begin(), earlier.end(), [](auto* a, auto* b) { return a->t1 < b->t1; });
    std::sort(later.begin(), later.end(), [](auto* a, auto* b) { return a->t0 < b->t0; });
    operation const* highest = nullptr;
    std::size_t a = 0;
    for (auto const* b : later) {
        for (; a < earlier.size() && earlier[a]->t1 < b->t0; ++a)
            if (!highest || rank(*earlier[a]) > rank(*highest)) highest = earlier[a];
        if (highest) bad(*highest, *b);
    }
}

// The times one process incarnation was stopped, given its events in time order: each from a `sigstop` to the next
// `sigcont` plus the grace, or to its `sigkill`, or for ever. Sorted, and joined where they meet or overlap.
inline std::vector<time_span> stopped_windows(std::vector<operation const*> const& events) {
    std::vector<time_span> spans;
    bool stopped = false;
    std::int64_t stopped_since = 0;
    for (auto const* e : events) {
        if (e->kind == op_kind::sigstop && !stopped) stopped = true, stopped_since = e->t0;
        else if (e->kind == op_kind::sigcont && stopped)
            spans.push_back({stopped_since, e->t0 + stop_grace_ns}), stopped = false;
        else if (e->kind == op_kind::sigkill && stopped)
            spans.push_back({stopped_since, e->t0}), stopped = false;
    }
    if (stopped) spans.push_back({stopped_since, unbounded});
    std::sort(spans.begin(), spans.end(), [](time_span a, time_span b) { return a.from < b.from; });
    std::vector<time_span> joined;
    for (auto const& s : spans)
        if (!joined.empty() && s.from <= joined.back().to) joined.back().to = std::max(joined.back().to, s.to);
        else joined.push_back(s);
    return joined;
}

// Whether [from, to) lies within one of `windows` (joined, so a stretch covered by their union is within one).
inline bool within(std::vector<time_span> const& windows, std::int64_t from, std::int64_t to) {
    return std::any_of(windows.begin(), windows.end(), [&](time_span w) { return w.from <= from && to <= w.to; });
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
    detail::check_real_time_order(acquired, acquired, token, [&](operation const& a, operation const& b) {
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
        r.intervals.push_back(iv);
    }
    std::sort(r.intervals.begin(), r.intervals.end(),
              [](hold_interval const& a, hold_interval const& b) { return a.start < b.start; });
    std::map<incarnation, std::vector<time_span>> stopped;
    for (auto const& [who, events] : by_incarnation) stopped[who] = detail::stopped_windows(events);
    auto holder = [](hold_interval const& iv) { return incarnation{iv.acquire->process, iv.acquire->incarnation}; };
    auto describe = [&](hold_interval const& iv) {
        return iv.acquire->process + "#" + std::to_string(iv.acquire->incarnation) + " token " +
               std::to_string(iv.token) + " [" + at(iv.start) + " .. " + at(iv.end) + ", " +
               std::string(name(iv.ended_by)) + "] (" + iv.acquire->where + ")";
    };
    // The holder's stopped windows that touch [from, to), to show why they do not excuse it.
    auto stops_during = [&](hold_interval const& iv, std::int64_t from, std::int64_t to) {
        std::string s;
        for (auto const& w : stopped[holder(iv)])
            if (w.from < to && from <= w.to)
                s += "; " + iv.acquire->process + "#" + std::to_string(iv.acquire->incarnation) + " stopped [" +
                     at(w.from) + " .. " + at(w.to) + "] (" + format_time(stop_grace_ns) +
                     " grace after a sigcont included), which does not cover it";
        return s;
    };
    for (std::size_t i = 0; i < r.intervals.size(); ++i) {
        auto& a = r.intervals[i];
        for (std::size_t j = i + 1; j < r.intervals.size() && r.intervals[j].start < a.end; ++j) {
            auto& b = r.intervals[j];
            std::int64_t const from = b.start, to = std::min(a.end, b.end);  // by start: b began last
            if (holder(a) == holder(b) || to <= from) continue;
            bool const a_stopped = detail::within(stopped[holder(a)], from, to);
            bool const b_stopped = detail::within(stopped[holder(b)], from, to);
            if (a_stopped || b_stopped) {
                ++r.frozen_overlaps;
                a.overlaps_left_to_fencing += a_stopped;
                b.overlaps_left_to_fencing += b_stopped;
                continue;
            }
            r.violations.push_back("lease: two holders at once over [" + at(from) + " .. " + at(to) +
                                   "): " + describe(a) + " and " + describe(b) + stops_during(a, from, to) +
                                   stops_during(b, from, to));
        }
    }

    // Fencing.
    std::vector<operation const*> refusals;
    for (auto const* w : fenced_all)
        if (w->res == outcome::refused) refusals.push_back(w);
    auto winning = [](operation const& op) { return *op.number("winning"); };
    detail::check_real_time_order(fenced_ok, fenced_ok, token, [&](operation const& a, operation const& b) {
        if (token(a) > token(b))
            r.violations.push_back("fenced: " + b.label() + " with token " + std::to_string(token(b)) +
                                   " was accepted after " + a.label() + " with token " + std::to_string(token(a)) +
                                   " had been (returned at " + at(a.t1) + ", the later one called at " + at(b.t0) + ")");
    });
    // A refusal returned only once a write of its winning token or higher was in the record.
    detail::check_real_time_order(refusals, fenced_ok, winning, [&](operation const& a, operation const& b) {
        if (winning(a) > token(b))
            r.violations.push_back("fenced: " + b.label() + " with token " + std::to_string(token(b)) +
                                   " was accepted after a refusal for token " + std::to_string(winning(a)) + ": " +
                                   a.label() + " returned at " + at(a.t1) + ", the later one called at " + at(b.t0));
    });
    std::set<std::uint64_t> tokens_acquired, unknown_winners;
    for (auto const* a : acquired) tokens_acquired.insert(token(*a));
    for (auto const* w : refusals) {
        if (winning(*w) <= token(*w))
            r.violations.push_back("fenced: " + w->label() + " with token " + std::to_string(token(*w)) +
                                   " was refused for token " + std::to_string(winning(*w)) + ", which is not higher");
        // An acquire of unknown outcome may have got it: worth a look, not a violation.
        if (!tokens_acquired.contains(winning(*w)) && unknown_winners.insert(winning(*w)).second)
            r.warnings.push_back("fenced: " + w->label() + " was refused for token " + std::to_string(winning(*w)) +
                                 ", but no acquire returned token " + std::to_string(winning(*w)));
    }

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
        operation const* proving = nullptr;  // the refusal of highest winning token that returned before the read
        for (auto const* w : refusals)
            if (w->t1 < read->t0 && (!proving || winning(*w) > winning(*proving))) proving = w;
        if (!read->flag("found").value_or(false)) {
            if (highest)
                r.violations.push_back("fenced: the final read " + read->label() + " found no record, after " +
                                       "writes were accepted (the last by " + last_ok->label() + ")");
            else if (proving)
                r.violations.push_back("fenced: the final read " + read->label() + " found no record, after " +
                                       proving->label() + " was refused for token " +
                                       std::to_string(winning(*proving)) + ", which was written");
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
        if (proving && token(writer) < winning(*proving))
            r.violations.push_back(shows + ", written by " + writer.label() + " with token " +
                                   std::to_string(token(writer)) + ", below token " +
                                   std::to_string(winning(*proving)) + ", which a refusal before the read proved " +
                                   "written: " + proving->label());
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
