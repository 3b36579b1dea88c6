// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef ROBUSTNESS_LINEARIZABILITY_HPP
#define ROBUSTNESS_LINEARIZABILITY_HPP

/** @file
    A linearizability checker for one partition of a history, generic over
    the sequential model: the Wing–Gong search with Lowe's memoisation, as
    Porcupine's `checkSingle` does it.

    Calls and returns sit in one list in time order. The search walks it from
    the head: at a call it tries the operation in the current state, and when
    the model allows it and the pair (set of operations linearized, new state)
    is new, it takes the operation out of the list and starts again from the
    head; at a return whose operation is not yet linearized it backtracks. The
    cache of pairs is what keeps this from retrying the same situation along
    every path that leads to it. Operations that never returned have no
    return to wait for; they sit in a list of their own.

    Intervals are closed: operations that share an endpoint are concurrent
    (a monotonic clock can give two events one time). An operation whose
    return time is `unbounded` (an unknown outcome) may take effect at any
    point after its call, or never: the search succeeds as soon as every
    operation with a bounded return has been linearized.

    Where several operations could come next, the search tries those that
    returned before those that did not: an unknown operation is placed only
    where nothing else fits, which finds the order of a correct history
    without wandering through every place an unknown write could have gone.
    The order of trial changes what is found first, never what is found.
*/

#include <robustness/history.hpp>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace robustness {

/// One operation of a partition with its interval. `ret == unbounded`: it may also never take effect.
template <class Op>
struct timed_op {
    Op op;
    std::int64_t call = 0;
    std::int64_t ret = unbounded;
};

/// What a check concluded.
enum class verdict {
    ok,           ///< the history is linearizable (or the property holds)
    violation,    ///< it is not
    inconclusive  ///< the time limit ran out first: a failure, never a pass
};

inline constexpr std::string_view name(verdict v) {
    switch (v) {
    case verdict::ok: return "ok";
    case verdict::violation: return "violation";
    case verdict::inconclusive: return "inconclusive";
    }
    return "?";
}

/** A sequential model whose steps may branch.

    `m.step(s, op)` gives every state the model may be in after `op` applied
    in state `s`; none when `op` cannot take effect there. States need `==`
    and a `std::hash`: equal states must hash equally. `describe` names an
    operation and a state in reports.
*/
template <class M>
concept sequential_model = requires(M const& m, typename M::state_type const& s, typename M::op_type const& op) {
    { m.initial() } -> std::convertible_to<typename M::state_type>;
    { m.step(s, op) } -> std::convertible_to<std::vector<typename M::state_type>>;
    { m.describe(op) } -> std::convertible_to<std::string>;
    { m.describe(s) } -> std::convertible_to<std::string>;
    { std::hash<typename M::state_type>{}(s) } -> std::convertible_to<std::size_t>;
    { s == s } -> std::convertible_to<bool>;
};

/** A model that can tell interchangeable operations (optional).

    Operations that never returned and have the same non-empty `twin(op)`
    have the same effect in every state (two unknown increments of one
    counter): only the orders that take them in call order need searching,
    which turns 2^k subsets of k pending twins into k + 1.
*/
template <class M>
concept model_with_twins = sequential_model<M> && requires(M const& m, typename M::op_type const& op) {
    { m.twin(op) } -> std::convertible_to<std::string>;
};

/** A model that can tell observers, operations such as reads (optional).

    `m.observes_only(op)` promises: in any order the model accepts, moving
    `op` earlier, to a point where the model allows it, leaves the order
    accepted and its final state unchanged (it changes nothing a later step
    checks). Such an operation, allowed in the current state, can go first in
    any order that completes from there (and breaks no real-time constraint
    there, being called before every remaining return). So the search takes
    it at once and tries nothing else in its place: concurrent reads cost one
    order, not every subset of them.
*/
template <class M>
concept model_with_observers = sequential_model<M> && requires(M const& m, typename M::op_type const& op) {
    { m.observes_only(op) } -> std::convertible_to<bool>;
};

/// A model that can say why it refuses an operation in a state (optional, for reports).
template <class M>
concept model_with_reasons = sequential_model<M> && requires(M const& m, typename M::state_type const& s,
                                                             typename M::op_type const& op) {
    { m.why_not(s, op) } -> std::convertible_to<std::string>;
};

/// Limits and presentation of a search.
struct search_options {
    /// Past it the search gives up: `inconclusive`.
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    /// With more (set, state) pairs in its cache the search gives up too (a few hundred bytes each).
    std::size_t max_cached = 4'000'000;
    /// Times in reports are printed after this origin.
    std::int64_t time_origin = 0;
    /// How many of the last operations of the longest order a report shows.
    std::size_t context = 8;
};

/// The result of a search, with a report when it is not `ok`.
struct search_result {
    verdict result = verdict::ok;
    std::size_t operations = 0;       ///< in the partition
    std::size_t required = 0;         ///< with a bounded return: they must all be linearized
    std::size_t most_linearized = 0;  ///< the largest set of operations linearized at once
    std::uint64_t steps = 0;
    std::string explanation;          ///< empty when `ok`
};

namespace detail {

// A set of operations (those linearized) with a hash kept up to date as it changes: each operation has a
// random key, and the hash is the xor of the keys of the members.
class op_set {
public:
    explicit op_set(std::size_t n) : words_((n + 63) / 64), keys_(n) {
        std::uint64_t x = 0x9e3779b97f4a7c15ull * (n + 1);
        for (auto& k : keys_) {  // splitmix64
            std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            k = z ^ (z >> 31);
        }
    }
    void set(std::size_t i) {
        words_[i / 64] |= bit(i);
        hash_ ^= keys_[i];
    }
    void clear(std::size_t i) {
        words_[i / 64] &= ~bit(i);
        hash_ ^= keys_[i];
    }
    std::uint64_t hash() const { return hash_; }
    std::vector<std::uint64_t> const& words() const { return words_; }

private:
    static std::uint64_t bit(std::size_t i) { return std::uint64_t{1} << (i % 64); }
    std::vector<std::uint64_t> words_;
    std::vector<std::uint64_t> keys_;
    std::uint64_t hash_ = 0;
};

// Lowe's cache: the (set linearized, state) pairs the search has been in. Every pair it holds that is not on
// the current path led nowhere.
template <class State>
class visited_cache {
public:
    // Adds the pair; false if it was there.
    bool insert(op_set const& done, State const& s) {
        std::uint64_t const h = done.hash() ^ (std::hash<State>{}(s) * 0x9e3779b97f4a7c15ull);
        auto& bucket = buckets_[h];
        for (auto const& [words, state] : bucket)
            if (state == s && words == done.words()) return false;
        bucket.emplace_back(done.words(), s);
        ++size_;
        return true;
    }
    std::size_t size() const { return size_; }

private:
    std::unordered_map<std::uint64_t, std::vector<std::pair<std::vector<std::uint64_t>, State>>> buckets_;
    std::size_t size_ = 0;
};

}  // namespace detail

/** Checks that `ops` (one partition) is linearizable against `model`.

    Succeeds when an order exists that respects real time (an operation that
    returned before another was called comes first), that the model accepts
    step by step, and that contains every operation with a bounded return;
    those with `ret == unbounded` may be in it or not. On a violation the
    explanation gives the longest order found, the state it led to, and the
    operations that could have come next, each with whether the model
    refused it there.
*/
template <sequential_model M>
search_result check_linearizable(M const& model, std::vector<timed_op<typename M::op_type>> const& ops,
                                 search_options const& opt = {}) {
    using state_type = typename M::state_type;
    std::size_t const n = ops.size();
    search_result out;
    out.operations = n;
    for (auto const& o : ops) out.required += o.ret != unbounded;
    if (out.required == 0) return out;
    auto optional = [&](std::size_t i) { return ops[i].ret == unbounded; };
    constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

    // The operations that returned: a call and a return entry each, in one list sorted by time, calls
    // before returns on a tie (closed intervals). A circular doubly linked list; `head` is its sentinel.
    struct entry {
        std::int64_t time;
        bool call;
        std::size_t op;
    };
    std::vector<entry> entries;
    for (std::size_t i = 0; i < n; ++i) {
        if (optional(i)) continue;
        entries.push_back({ops[i].call, true, i});
        entries.push_back({ops[i].ret, false, i});
    }
    std::stable_sort(entries.begin(), entries.end(), [](entry const& a, entry const& b) {
        if (a.time != b.time) return a.time < b.time;
        return a.call && !b.call;
    });
    std::size_t const head = entries.size();
    std::vector<std::size_t> next(head + 1), prev(head + 1), match(head, none);
    {
        std::vector<std::size_t> call_of(n, none);
        for (std::size_t e = 0; e < head; ++e)
            if (entries[e].call) call_of[entries[e].op] = e;
            else match[call_of[entries[e].op]] = e;
        for (std::size_t e = 0; e <= head; ++e) {
            next[e] = e == head ? 0 : e + 1;
            prev[e] = e == 0 ? head : e - 1;
        }
    }

    // The operations that never returned, in a second list kept apart so that the walk through the first
    // does not pass them at every step. Twins share one node, which stands for the first of them not yet
    // linearized: they are taken in call order only (see `model_with_twins`).
    struct pending {
        std::vector<std::size_t> ops;  // one, or the twins in call order
        std::size_t taken = 0;         // twins: how many are linearized
        std::size_t op() const { return taken < ops.size() ? ops[taken] : none; }
    };
    std::vector<pending> unknowns;
    {
        std::vector<std::size_t> by_call;
        for (std::size_t i = 0; i < n; ++i)
            if (optional(i)) by_call.push_back(i);
        std::stable_sort(by_call.begin(), by_call.end(),
                         [&](std::size_t a, std::size_t b) { return ops[a].call < ops[b].call; });
        std::map<std::string, std::size_t> class_of;
        for (auto i : by_call) {
            std::string twin;
            if constexpr (model_with_twins<M>) twin = model.twin(ops[i].op);
            if (!twin.empty()) {
                auto [it, fresh] = class_of.try_emplace(std::move(twin), unknowns.size());
                if (!fresh) {
                    unknowns[it->second].ops.push_back(i);
                    continue;
                }
            }
            unknowns.push_back(pending{{i}});
        }
    }
    std::size_t const unknown_head = unknowns.size();
    std::vector<std::size_t> unext(unknown_head + 1), uprev(unknown_head + 1);
    for (std::size_t u = 0; u <= unknown_head; ++u) {
        unext[u] = u == unknown_head ? 0 : u + 1;
        uprev[u] = u == 0 ? unknown_head : u - 1;
    }

    auto observes_only = [&](std::size_t i) {
        if constexpr (model_with_observers<M>) return static_cast<bool>(model.observes_only(ops[i].op));
        else return false;
    };

    // A choice made: which operation came next (`node`: an entry, or in the second pass a node of the
    // unknown list), from which state, into which of the states the model allowed (the rest to try).
    struct frame {
        bool unknown_pass;
        std::size_t node;
        std::size_t op;
        state_type before;
        std::vector<state_type> choices;
        std::size_t next_choice;
        bool observer;  // taken at once: when it leads nowhere, neither does the state it was taken in
    };
    // Lifting takes a linearized operation out of the lists; undone in reverse (LIFO) order, as the
    // search backtracks, which keeps the unlinked nodes' own links valid (dancing links).
    auto lift = [&](frame const& f) {
        if (!f.unknown_pass) {
            for (std::size_t e : {f.node, match[f.node]}) {
                next[prev[e]] = next[e];
                prev[next[e]] = prev[e];
            }
        } else if (++unknowns[f.node].taken == unknowns[f.node].ops.size()) {
            unext[uprev[f.node]] = unext[f.node];
            uprev[unext[f.node]] = uprev[f.node];
        }
    };
    auto unlift = [&](frame const& f) {
        if (!f.unknown_pass) {
            for (std::size_t e : {match[f.node], f.node}) {
                next[prev[e]] = e;
                prev[next[e]] = e;
            }
        } else if (unknowns[f.node].taken-- == unknowns[f.node].ops.size()) {
            unext[uprev[f.node]] = f.node;
            uprev[unext[f.node]] = f.node;
        }
    };

    std::vector<frame> stack;
    detail::visited_cache<state_type> cache;
    detail::op_set done(n);
    state_type state = model.initial();
    std::size_t required_done = 0;
    std::vector<std::size_t> best_order;
    state_type best_state = state;

    // Takes the first of `choices` from `from` on whose (set, state) pair is new; false if none is.
    auto try_choices = [&](bool unknown_pass, std::size_t node, std::size_t i, std::vector<state_type>&& choices,
                           std::size_t from) {
        done.set(i);
        for (std::size_t c = from; c < choices.size(); ++c) {
            if (!cache.insert(done, choices[c])) continue;
            state_type next_state = choices[c];
            stack.push_back(frame{unknown_pass, node, i, std::move(state), std::move(choices), c + 1, observes_only(i)});
            state = std::move(next_state);
            lift(stack.back());
            required_done += !unknown_pass;
            if (stack.size() > best_order.size()) {
                best_order.clear();
                for (auto const& f : stack) best_order.push_back(f.op);
                best_state = state;
            }
            return true;
        }
        done.clear(i);
        return false;
    };
    // Unknown operations may come next if called no later than the first return still ahead.
    auto unknown_limit = [&] {
        for (std::size_t e = next[head]; e != head; e = next[e])
            if (!entries[e].call) return entries[e].time;
        return unbounded;
    };

    // The candidates to come next: first the calls before the first return in the list of operations that
    // returned, then (`unknown_pass`) the unknown operations called by then.
    bool unknown_pass = false;
    std::size_t node = next[head];
    std::int64_t limit = 0;
    for (;;) {
        if ((++out.steps & 0xff) == 0 &&
            (std::chrono::steady_clock::now() > opt.deadline || cache.size() > opt.max_cached)) {
            out.result = verdict::inconclusive;
            break;
        }
        std::size_t i = none;
        if (!unknown_pass) {
            if (node != head && entries[node].call) {
                i = entries[node].op;
            } else {
                unknown_pass = true;
                node = unext[unknown_head];
                limit = unknown_limit();
                continue;
            }
        } else if (node != unknown_head) {
            i = unknowns[node].op();
            if (ops[i].call > limit) {
                node = unext[node];
                continue;
            }
        }
        if (i != none) {
            auto choices = model.step(state, ops[i].op);
            bool const allowed = !choices.empty();
            if (try_choices(unknown_pass, node, i, std::move(choices), 0)) {
                if (required_done == out.required) break;
                unknown_pass = false;
                node = next[head];
                continue;
            }
            // An observer allowed here whose pair is cached already led nowhere: so does this state.
            if (!allowed || !observes_only(i)) {
                node = unknown_pass ? unext[node] : next[node];
                continue;
            }
        }
        // This state leads nowhere: undo the last choice, and try the next one.
        bool exhausted = true;
        while (!stack.empty()) {
            frame f = std::move(stack.back());
            stack.pop_back();
            state = std::move(f.before);
            done.clear(f.op);
            unlift(f);
            required_done -= !f.unknown_pass;
            if (f.observer) continue;
            exhausted = false;
            if (try_choices(f.unknown_pass, f.node, f.op, std::move(f.choices), f.next_choice)) {
                unknown_pass = false;
                node = next[head];
            } else {
                unknown_pass = f.unknown_pass;
                node = unknown_pass ? unext[f.node] : next[f.node];
                if (unknown_pass) limit = unknown_limit();
            }
            break;
        }
        if (exhausted) {
            out.result = verdict::violation;
            break;
        }
        if (required_done == out.required) break;
    }
    out.most_linearized = best_order.size();
    if (out.result == verdict::ok) return out;
    std::vector<std::size_t> earlier_twin(n, none);
    for (auto const& u : unknowns)
        for (std::size_t k = 1; k < u.ops.size(); ++k) earlier_twin[u.ops[k]] = u.ops[k - 1];

    // The report: the longest order found, where it ended, and what could have come next.
    auto when = [&](std::size_t i) {
        return "[" + format_time(ops[i].call, opt.time_origin) + " .. " + format_time(ops[i].ret, opt.time_origin) + "]";
    };
    std::string& x = out.explanation;
    if (out.result == verdict::inconclusive)
        x += (cache.size() > opt.max_cached ? "memory limit (" + std::to_string(opt.max_cached) + " states) reached"
                                            : std::string("time limit reached")) +
             " after " + std::to_string(out.steps) + " steps; ";
    else
        x += "not linearizable; ";
    x += "the longest order found has " + std::to_string(best_order.size()) + " of " + std::to_string(n) +
         " operations (" + std::to_string(out.required) + " returned and must be in it; the other " +
         std::to_string(n - out.required) + " may never have taken effect)\n";
    if (out.result == verdict::inconclusive) return out;
    std::size_t const skip = best_order.size() > opt.context ? best_order.size() - opt.context : 0;
    x += "  it ends with" + std::string(skip ? " (after " + std::to_string(skip) + " more)" : "") + ":\n";
    for (std::size_t k = skip; k < best_order.size(); ++k)
        x += "    " + when(best_order[k]) + " " + model.describe(ops[best_order[k]].op) + "\n";
    x += "  in state: " + model.describe(best_state) + "\n";
    std::vector<bool> in_best(n);
    for (auto i : best_order) in_best[i] = true;
    std::size_t due = none;  // the first operation that must take effect before it returned
    for (std::size_t i = 0; i < n; ++i)
        if (!in_best.at(i) && ops[i].ret != unbounded && (due == none || ops[i].ret < ops[due].ret)) due = i;
    if (due == none) return out;
    x += "  due next (returned first): " + when(due) + " " + model.describe(ops[due].op) + "\n";
    x += "  could come next:\n";
    std::vector<std::size_t> candidates;
    for (std::size_t i = 0; i < n; ++i)
        if (!in_best.at(i) && ops[i].call <= ops[due].ret &&
            (earlier_twin[i] == none || in_best.at(earlier_twin[i])))
            candidates.push_back(i);
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](std::size_t a, std::size_t b) { return ops[a].call < ops[b].call; });
    std::size_t unknown_left = 0;  // shown only while few, as the long-gone ones would drown the rest
    for (auto i : candidates) {
        if (optional(i) && ++unknown_left > opt.context) continue;
        x += "    " + when(i) + " " + model.describe(ops[i].op);
        if (!model.step(best_state, ops[i].op).empty()) x += "\n      possible, but no complete order follows\n";
        else if constexpr (model_with_reasons<M>) x += "\n      impossible here: " + model.why_not(best_state, ops[i].op) + "\n";
        else x += "\n      impossible here\n";
    }
    if (unknown_left > opt.context)
        x += "    and " + std::to_string(unknown_left - opt.context) + " more of unknown outcome\n";
    return out;
}

}  // namespace robustness

#endif
