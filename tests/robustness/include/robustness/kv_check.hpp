// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef ROBUSTNESS_KV_CHECK_HPP
#define ROBUSTNESS_KV_CHECK_HPP

/** @file
    The kv check: every key's history is linearizable against the model of
    tests/robustness/README.md (per key: has it a value, the value, the
    version), each key searched on its own (P-compositionality: the model
    has no state across keys).

    What each outcome means to the search:
    - `ok`: took effect, inside its interval, with the results recorded;
    - `refused` with a condition: an observation that the condition did not
      hold (and of the version, when `current` is given), changing nothing;
      `refused` without one (contention) says nothing and is left out;
    - `failed`: never took effect, left out. A failed write that landed
      anyway shows up as a read of a value nobody else wrote, or a count too
      high, which no order explains;
    - `unknown`, or no return: may take effect once at any point after `t0`,
      if its condition holds there, or never.

    Put values being unique keeps the search small: a value no read returns
    is modelled as "a value nobody reads" (so such writes are interchangeable),
    and the reads of a value all come before the next write. Violations that
    need no search to see (a read of a value only a failed write wrote, a
    read of a value overwritten before the read was called) are reported as
    such, even when the search runs out of time.
*/

#include <robustness/history.hpp>
#include <robustness/linearizability.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace robustness {

/// The model's state of one key.
struct kv_state {
    bool has_value = false;
    std::string value;
    std::uint64_t version = 0;
    /// The value is one that no read returns (`value` is then empty): the writes of such values are
    /// interchangeable, and states that differ only in which of them was written behave alike.
    bool unread = false;
    /// Reads of the value still to come. A put value is unique, so they all come before the next write,
    /// which the model refuses until then: a put taken too early fails at the next write, not at the read.
    std::size_t reads_due = 0;
    bool operator==(kv_state const&) const = default;
};

}  // namespace robustness

template <>
struct std::hash<robustness::kv_state> {
    std::size_t operator()(robustness::kv_state const& s) const noexcept {
        return std::hash<std::string>{}(s.value) ^ (s.version * 0x9e3779b97f4a7c15ull) ^ (s.reads_due << 2) ^
               s.has_value ^ (s.unread << 1);
    }
};

namespace robustness {

/// A kv operation as the model sees it; `source` is the history's operation.
struct kv_op {
    enum class condition { none, absent, version };
    operation const* source = nullptr;
    op_kind kind = op_kind::get;
    outcome res = outcome::ok;
    condition cond = condition::none;
    std::uint64_t cond_version = 0;
    std::optional<std::string> value;      ///< put: written; get: read (when found); incr: the new value
    bool found = false;                    ///< get
    bool written = false;                  ///< erase
    std::optional<std::uint64_t> version;  ///< ok: as read, or as written
    std::optional<std::uint64_t> current;  ///< refused: the version the key had (0: no value)
    bool unread = false;                   ///< put: no read of the key returns its value, which is no number
    std::size_t reads = 0;                 ///< put: the reads of its value, when it alone wrote it (no number)

    /// The operation as recorded; nullopt when it says nothing about the key (left out of the search).
    static std::optional<kv_op> from(operation const& op) {
        kv_op k;
        k.source = &op;
        k.kind = op.kind;
        k.res = op.res;
        if (auto const c = op.text("cond")) {
            k.cond = *c == "absent" ? condition::absent : *c == "version" ? condition::version : condition::none;
            k.cond_version = op.number("cond_version").value_or(0);
        }
        bool const conditional = (k.kind == op_kind::put || k.kind == op_kind::erase) && k.cond != condition::none;
        switch (op.res) {
        case outcome::failed: return std::nullopt;
        case outcome::refused:
            if (!conditional) return std::nullopt;  // contention: no condition was checked
            k.current = op.number("current");
            if (k.kind == op_kind::put) k.value = op.text("value");
            return k;
        case outcome::unknown:
            if (k.kind == op_kind::get) return std::nullopt;  // a read that may not have happened shows nothing
            if (k.kind == op_kind::put) k.value = op.text("value");
            return k;
        case outcome::ok: break;
        }
        k.version = op.number("version");
        switch (k.kind) {
        case op_kind::get:
            k.found = op.flag("found").value_or(false);
            if (k.found) k.value = op.text("value");
            else k.version.reset();
            break;
        case op_kind::put:
        case op_kind::incr: k.value = op.text("value"); break;
        case op_kind::erase:
            k.written = op.flag("written").value_or(false);
            if (!k.written) k.version.reset();  // then it reports the current version, which says nothing new
            break;
        default: break;
        }
        return k;
    }
};

/** The sequential model of one kv key.

    Deterministic: a step yields one state or none. An unknown operation is
    stepped as if it took effect; that it may not have is the checker's
    business (it may leave it out). Tells the checker its observers and its
    interchangeable unknown operations, which keep the search small.
*/
struct kv_model {
    using state_type = kv_state;
    using op_type = kv_op;

    kv_state initial() const { return {}; }

    std::vector<kv_state> step(kv_state const& s, kv_op const& op) const {
        if (auto next = apply(s, op, nullptr)) return {std::move(*next)};
        return {};
    }

    /// Why `op` cannot take effect in state `s` (for reports).
    std::string why_not(kv_state const& s, kv_op const& op) const {
        std::string why;
        apply(s, op, &why);
        return why;
    }

    /// Reads, refusals and erases that found nothing to erase change nothing where they are allowed.
    bool observes_only(kv_op const& op) const {
        return op.kind == op_kind::get || op.res == outcome::refused ||
               (op.kind == op_kind::erase && op.res == outcome::ok && !op.written);
    }

    /// Unknown operations of one key that have the same effect in every state: increments; erases of the
    /// same condition; puts of the same condition whose values nobody reads.
    std::string twin(kv_op const& op) const {
        if (op.res != outcome::unknown) return {};
        std::string const cond = op.cond == kv_op::condition::none     ? ""
                                 : op.cond == kv_op::condition::absent ? " if absent"
                                                                       : " if " + std::to_string(op.cond_version);
        if (op.kind == op_kind::incr) return "incr";
        if (op.kind == op_kind::erase) return "erase" + cond;
        if (op.kind == op_kind::put && op.unread) return "put" + cond;
        return {};
    }

    std::string describe(kv_op const& op) const {
        operation const& o = *op.source;
        std::string s = o.process + "#" + std::to_string(o.incarnation) + " " + std::string(name(op.kind));
        if (op.kind == op_kind::put) s += " '" + o.text("value").value_or("") + "'";
        if (op.cond == kv_op::condition::absent) s += " if absent";
        if (op.cond == kv_op::condition::version) s += " if version " + std::to_string(op.cond_version);
        s += " -> " + std::string(o.returned ? name(op.res) : "no return");
        if (op.res == outcome::ok) {
            if (op.kind == op_kind::get) s += op.found ? " '" + *op.value + "'" : " not found";
            if (op.kind == op_kind::incr) s += " '" + *op.value + "'";
            if (op.kind == op_kind::erase) s += op.written ? " written" : " nothing to erase";
            if (op.version) s += " at version " + std::to_string(*op.version);
        }
        if (op.current) s += " (current " + std::to_string(*op.current) + ")";
        return s + " (" + o.where + ")";
    }

    std::string describe(kv_state const& s) const {
        if (!s.has_value) return "no value, version " + std::to_string(s.version);
        if (s.unread) return "a value no read returns, at version " + std::to_string(s.version);
        std::string d = "'" + s.value + "' at version " + std::to_string(s.version);
        if (s.reads_due) d += " (to be read " + std::to_string(s.reads_due) + " more time(s))";
        return d;
    }

private:
    // The state after `op` in `s`, or nothing, with the reason in `why` (when asked).
    std::optional<kv_state> apply(kv_state const& s, kv_op const& op, std::string* why) const {
        auto no = [why](auto&& reason) -> std::optional<kv_state> {
            if (why) *why = reason();
            return std::nullopt;
        };
        auto v = [](std::uint64_t n) { return std::to_string(n); };
        bool const holds = op.cond == kv_op::condition::none     ? true
                           : op.cond == kv_op::condition::absent ? !s.has_value
                                                                 : s.has_value && s.version == op.cond_version;
        if (op.res == outcome::refused) {
            if (holds) return no([] { return "its condition holds here"; });
            if (op.current && *op.current != (s.has_value ? s.version : 0))
                return no([&] { return "it saw version " + v(*op.current) + " where the key has a value at version " +
                                       v(s.has_value ? s.version : 0) + " (0: none)"; });
            return s;
        }
        bool const ok = op.res == outcome::ok;
        if (ok && op.version && op.kind != op_kind::get && *op.version != s.version + 1)
            return no([&] { return "it reports version " + v(*op.version) + ", but would write " + v(s.version + 1); });
        // Every write below changes the value: not before the reads of the current one.
        if (op.kind != op_kind::get && s.reads_due > 0)
            return no([&] { return "the value '" + s.value + "' is still to be read " + v(s.reads_due) +
                                   " time(s), which comes before any write"; });
        switch (op.kind) {
        case op_kind::get: {
            if (op.found != s.has_value)
                return no([&] { return op.found ? "it found a value where the key has none"
                                                : "it found no value where the key has one"; });
            if (op.found && (s.unread || *op.value != s.value))
                return no([&] { return "it read '" + *op.value + "' where the key has another value"; });
            if (op.found && op.version && *op.version != s.version)
                return no([&] { return "it read version " + v(*op.version) + " where the key is at " + v(s.version); });
            kv_state next = s;
            if (next.reads_due > 0) --next.reads_due;
            return next;
        }
        case op_kind::put:
            if (!holds) return no([] { return "its condition does not hold here"; });
            if (op.unread) return kv_state{true, {}, s.version + 1, true};
            return kv_state{true, *op.value, s.version + 1, false, op.reads};
        case op_kind::erase:
            if (!holds) return no([] { return "its condition does not hold here"; });
            if (!s.has_value) {
                // Nothing to erase: nothing changes. For an unknown erase that is the same as never applied.
                if (ok && !op.written) return s;
                return no([] { return "there is no value to erase"; });
            }
            if (ok && !op.written) return no([] { return "it found nothing to erase where the key has a value"; });
            return kv_state{false, {}, s.version + 1};
        case op_kind::incr: {
            auto const next = increment(s);
            if (!next) return no([] { return "the value is not a number"; });
            if (ok && op.value != next)
                return no([&] { return "it reports '" + *op.value + "', but would give '" + *next + "'"; });
            return kv_state{true, *next, s.version + 1};
        }
        default: return no([] { return "not a kv operation"; });
        }
    }

    // The counter after one more increment: "1" from no value; nothing if the value is not a decimal number.
    static std::optional<std::string> increment(kv_state const& s) {
        if (!s.has_value) return "1";
        if (s.unread) return std::nullopt;
        if (s.value.empty() || s.value.size() > 19 || s.value.find_first_not_of("0123456789") != std::string::npos)
            return std::nullopt;
        return std::to_string(std::stoull(s.value) + 1);
    }
};

/// One key's verdict, with its figures.
struct kv_key_result {
    std::string key;
    search_result search;
    tally counts;              ///< the key's operations by kind and outcome
    std::size_t left_out = 0;  ///< operations of the key that say nothing about it (failed, contention, lost reads)
    std::chrono::milliseconds elapsed{0};
};

/// The kv check of a whole history.
struct kv_report {
    std::vector<kv_key_result> keys;  ///< in key order
    std::size_t operations = 0;
    std::size_t searched = 0;  ///< operations that went into the searches
    std::size_t never_returned = 0;

    std::size_t count(verdict v) const {
        std::size_t n = 0;
        for (auto const& k : keys) n += k.search.result == v;
        return n;
    }
};

namespace detail {

// Violations plain to see without a search, each a proof on its own since put values are unique: a value
// read that no write which may have taken effect put there (a write reported failed or refused that landed,
// or one never made), or a read of a value that an accepted write overwrote before the read was called.
inline std::vector<std::string> plain_violations(std::vector<operation const*> const& key_ops, std::int64_t origin) {
    std::map<std::string, std::vector<operation const*>> writers;
    for (auto const* op : key_ops)
        if (op->kind == op_kind::put) writers[*op->text("value")].push_back(op);
    auto changes = [](operation const& w) {  // an ok write that changed the key
        return w.res == outcome::ok && (w.kind == op_kind::put || w.kind == op_kind::incr ||
                                        (w.kind == op_kind::erase && w.flag("written").value_or(false)));
    };
    auto never_applied = [](operation const* w) { return w->res == outcome::failed || w->res == outcome::refused; };
    std::vector<std::string> found;
    std::set<std::string> told;
    for (auto const* op : key_ops) {
        if (op->kind != op_kind::get || op->res != outcome::ok || !op->flag("found").value_or(false)) continue;
        std::string const v = *op->text("value");
        std::string const read = "'" + v + "', read by " + op->label() + " at " + format_time(op->t0, origin);
        auto const it = writers.find(v);
        if (it == writers.end()) {
            // A number may be a counter's, which increments write.
            if (v.find_first_not_of("0123456789") != std::string::npos && told.insert(v).second)
                found.push_back(read + ", was written by no put of this key");
            continue;
        }
        auto const& puts = it->second;
        if (std::all_of(puts.begin(), puts.end(), never_applied)) {
            if (told.insert(v).second)
                found.push_back(read + ", was written only by " + puts.front()->label() + ", reported " +
                                std::string(name(puts.front()->res)) + ": that write landed");
            continue;
        }
        if (puts.size() != 1 || puts.front()->res != outcome::ok) continue;
        operation const& writer = *puts.front();
        for (auto const* w : key_ops)
            if (w != &writer && changes(*w) && writer.t1 < w->t0 && w->t1 < op->t0) {
                found.push_back("stale read: " + read + ", was written by " + writer.label() + ", but " +
                                w->label() + " wrote after it and returned at " + format_time(w->t1, origin));
                break;
            }
    }
    return found;
}

}  // namespace detail

/** Checks every kv key of `h`: each key's search gets `per_key` of time.

    A key whose search runs out of time is `inconclusive`, a failure of the
    run, never a pass.
*/
inline kv_report check_kv(history const& h, std::chrono::milliseconds per_key = std::chrono::seconds(10)) {
    std::map<std::string, std::vector<operation const*>> by_key;
    kv_report report;
    for (auto const& op : h.ops) {
        if (op.w != workload::kv) continue;
        by_key[op.key].push_back(&op);
        ++report.operations;
        report.never_returned += !op.returned;
    }
    std::int64_t const origin = h.origin();
    kv_model const model;
    for (auto const& [key, key_ops] : by_key) {
        auto const started = std::chrono::steady_clock::now();
        kv_key_result r;
        r.key = key;
        for (auto const* op : key_ops) count(r.counts, *op);
        std::map<std::string, std::size_t> reads, puts;
        for (auto const* op : key_ops) {
            if (op->kind == op_kind::get && op->res == outcome::ok && op->flag("found").value_or(false))
                ++reads[*op->text("value")];
            if (op->kind == op_kind::put) ++puts[*op->text("value")];
        }
        std::vector<timed_op<kv_op>> ops;
        for (auto const* op : key_ops) {
            auto k = kv_op::from(*op);
            if (!k) {
                ++r.left_out;
                continue;
            }
            // A number may also be a counter's value, which increments write too; other values are the put's.
            if (k->kind == op_kind::put && k->value->find_first_not_of("0123456789") != std::string::npos) {
                // Without this, k unknown writes that nobody reads make 2^k sets for the search to try.
                k->unread = !reads.contains(*k->value);
                if (puts[*k->value] == 1) k->reads = reads[*k->value];
            }
            // An unknown outcome may land at any later time, even after its call reported the doubt.
            std::int64_t const ret = op->res == outcome::unknown ? unbounded : op->t1;
            ops.push_back({std::move(*k), op->t0, ret});
        }
        report.searched += ops.size();
        // A plain violation needs no search; one is still run, briefly, for its report.
        auto const plain = detail::plain_violations(key_ops, origin);
        search_options opt;
        auto const limit =
            plain.empty() ? per_key : std::min<std::chrono::milliseconds>(per_key, std::chrono::seconds(1));
        opt.deadline = std::chrono::steady_clock::now() + limit;
        opt.time_origin = origin;
        r.search = check_linearizable(model, ops, opt);
        if (!plain.empty()) {
            if (r.search.result != verdict::violation)
                r.search.explanation = "not linearizable, as plainly seen below (" +
                                       std::string(name(r.search.result)) + " search)\n";
            r.search.result = verdict::violation;
            r.search.explanation += "  plainly:\n";
            for (auto const& p : plain) r.search.explanation += "    " + p + "\n";
        }
        r.elapsed =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
        report.keys.push_back(std::move(r));
    }
    return report;
}

}  // namespace robustness

#endif
