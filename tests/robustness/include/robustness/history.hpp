// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef ROBUSTNESS_HISTORY_HPP
#define ROBUSTNESS_HISTORY_HPP

/** @file
    The robustness histories as typed operations: JSON lines (the format of
    tests/robustness/README.md) from one or more files, merged, with every
    `invoke` line paired with its return line by (process, incarnation, id).
    An invoke without its return becomes an operation of unknown outcome that
    never returned (`t1 == unbounded`).

    Every line is checked as it is read: a line that is not a JSON object,
    lacks a field its operation needs, or has one of the wrong type stops the
    reading with a `history_error` naming the file and the line. Nothing is
    skipped silently (blank lines aside): a checker that drops what it cannot
    read could call a broken history clean.

    Needs Boost.JSON: link it, or include `<boost/json/src.hpp>` in one unit.
*/

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace robustness {

/// The return time of an operation that never returned (or whose effect may land at any later time).
inline constexpr std::int64_t unbounded = std::numeric_limits<std::int64_t>::max();

/// A bad history: the message starts with `file:line:`.
class history_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Which part of the run wrote a line.
enum class workload { kv, lease, proc };

/// What an operation or event is.
enum class op_kind {
    get, put, erase, incr,                          // kv
    acquire, lost, release, fenced, fenced_read,    // lease
    sigstop, sigcont, sigkill, start                // process events
};

/// How an operation ended (process events are `ok`).
enum class outcome { ok, refused, failed, unknown };

inline constexpr std::string_view name(workload w) {
    switch (w) {
    case workload::kv: return "kv";
    case workload::lease: return "lease";
    case workload::proc: return "proc";
    }
    return "?";
}

inline constexpr std::string_view name(op_kind k) {
    constexpr std::string_view names[] = {"get",   "put",   "erase",   "incr",    "acquire", "lost", "release",
                                          "fenced", "fenced_read", "sigstop", "sigcont", "sigkill", "start"};
    return names[static_cast<int>(k)];
}

inline constexpr std::string_view name(outcome o) {
    constexpr std::string_view names[] = {"ok", "refused", "failed", "unknown"};
    return names[static_cast<int>(o)];
}

/// The workload an operation kind belongs to (kinds are distinct across workloads).
inline constexpr workload workload_of(op_kind k) {
    if (k <= op_kind::incr) return workload::kv;
    if (k <= op_kind::fenced_read) return workload::lease;
    return workload::proc;
}

/// Whether the kind is an instant (field `t`) rather than an operation with `t0` and `t1`.
inline constexpr bool is_event(op_kind k) { return k == op_kind::lost || workload_of(k) == workload::proc; }

inline std::optional<op_kind> parse_op_kind(std::string_view s) {
    for (int k = 0; k <= static_cast<int>(op_kind::start); ++k)
        if (name(static_cast<op_kind>(k)) == s) return static_cast<op_kind>(k);
    return std::nullopt;
}

/// Nanoseconds as seconds after `origin`, to the microsecond ("12.345678s"); `unbounded` as "never".
inline std::string format_time(std::int64_t t, std::int64_t origin = 0) {
    if (t == unbounded) return "never";
    std::int64_t const us = (t - origin) / 1000;
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%lld.%06llds", us < 0 ? "-" : "", static_cast<long long>(std::abs(us) / 1000000),
                  static_cast<long long>(std::abs(us) % 1000000));
    return buf;
}

/** One operation (or instant event) of the history.

    For an event (`lost`, process events) `t0 == t1 ==` its `t`. For an
    operation that never returned, `t1 == unbounded`, `res == unknown` and
    `returned == false`; its fields are those of its invoke line. The
    fields each kind needs have been checked present and well typed when
    the history was read; the accessors below then only select them.
*/
struct operation {
    std::string process;
    std::uint64_t incarnation = 0;
    bool incarnation_inferred = false;  ///< a process event without `i`: the incarnation running at `t`
    workload w = workload::kv;
    op_kind kind = op_kind::get;
    std::string key;                    ///< kv operations only
    outcome res = outcome::ok;
    std::int64_t t0 = 0;
    std::int64_t t1 = 0;
    bool returned = true;
    std::optional<std::int64_t> id;     ///< pairs an invoke with its return
    std::string where;                  ///< "file:line" of the line the operation comes from
    boost::json::object fields;         ///< the whole line

    /// A string field, if present.
    std::optional<std::string> text(std::string_view f) const {
        auto const* v = fields.if_contains(f);
        if (!v || !v->is_string()) return std::nullopt;
        return std::string(v->get_string());
    }
    /// A non-negative integer field (tokens, versions), if present.
    std::optional<std::uint64_t> number(std::string_view f) const {
        auto const* v = fields.if_contains(f);
        if (!v) return std::nullopt;
        if (v->is_uint64()) return v->get_uint64();
        if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
        return std::nullopt;
    }
    /// A boolean field, if present.
    std::optional<bool> flag(std::string_view f) const {
        auto const* v = fields.if_contains(f);
        if (!v || !v->is_bool()) return std::nullopt;
        return v->get_bool();
    }

    /// "kv-1#0 put k3 [ok] (file:7)": enough to find the line again.
    std::string label() const {
        std::string s = process + "#" + std::to_string(incarnation) + " " + std::string(name(kind));
        if (!key.empty()) s += " " + key;
        s += " [" + std::string(returned ? name(res) : "no return") + "] (" + where + ")";
        return s;
    }
};

/// A whole run: every operation of every file, ordered by `t0` (then by reading order).
struct history {
    std::vector<operation> ops;

    /// The earliest time recorded: an origin for printing times.
    std::int64_t origin() const {
        std::int64_t o = unbounded;
        for (auto const& op : ops) o = std::min(o, op.t0);
        return o == unbounded ? 0 : o;
    }
    bool has(workload w) const {
        return std::any_of(ops.begin(), ops.end(), [w](operation const& op) { return op.w == w; });
    }
};

/// Operations counted by kind: one column per outcome, and a last one for those that never returned
/// (counted `unknown` as well).
using tally = std::map<op_kind, std::array<std::size_t, 5>>;

inline void count(tally& t, operation const& op) {
    auto& row = t[op.kind];
    ++row[static_cast<std::size_t>(op.res)];
    if (!op.returned) ++row[4];
}

/// The operations of one workload, counted.
inline tally count(history const& h, workload w) {
    tally t;
    for (auto const& op : h.ops)
        if (op.w == w) count(t, op);
    return t;
}

/// A tally as a small table, one line per kind.
inline std::string format(tally const& t, std::string const& indent = "  ") {
    auto cell = [](std::string const& s, std::size_t width) {  // right-aligned
        return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
    };
    std::string out = indent + std::string(12, ' ') + cell("ok", 6) + cell("refused", 9) + cell("failed", 9) +
                      cell("unknown", 9) + cell("no return", 11) + "\n";
    for (auto const& [kind, row] : t) {
        std::string const kind_name(name(kind));
        out += indent + kind_name + std::string(kind_name.size() < 12 ? 12 - kind_name.size() : 1, ' ') +
               cell(std::to_string(row[0]), 6) + cell(std::to_string(row[1]), 9) + cell(std::to_string(row[2]), 9) +
               cell(std::to_string(row[3]), 9) + cell(std::to_string(row[4]), 11) + "\n";
    }
    return out;
}

namespace detail {

// Reads and checks one field of a line; every failure names the line.
class line_reader {
public:
    line_reader(boost::json::object const& o, std::string const& where) : o_(o), where_(where) {}

    [[noreturn]] void fail(std::string const& what) const { throw history_error(where_ + ": " + what); }

    bool has(std::string_view f) const { return o_.contains(f); }

    std::string text(std::string_view f) const {
        auto const* v = o_.if_contains(f);
        if (!v) fail("no field '" + std::string(f) + "'");
        if (!v->is_string()) fail("field '" + std::string(f) + "' is not a string");
        return std::string(v->get_string());
    }
    std::int64_t integer(std::string_view f) const {
        auto const* v = o_.if_contains(f);
        if (!v) fail("no field '" + std::string(f) + "'");
        if (v->is_int64()) return v->get_int64();
        if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(unbounded - 1))
            return static_cast<std::int64_t>(v->get_uint64());
        fail("field '" + std::string(f) + "' is not an integer");
    }
    std::uint64_t natural(std::string_view f) const {
        auto const* v = o_.if_contains(f);
        if (!v) fail("no field '" + std::string(f) + "'");
        if (v->is_uint64()) return v->get_uint64();
        if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
        fail("field '" + std::string(f) + "' is not a non-negative integer");
    }
    bool flag(std::string_view f) const {
        auto const* v = o_.if_contains(f);
        if (!v) fail("no field '" + std::string(f) + "'");
        if (!v->is_bool()) fail("field '" + std::string(f) + "' is not a boolean");
        return v->get_bool();
    }
    // Checks the type of a field that may be absent.
    void optional_text(std::string_view f) const { if (has(f)) text(f); }
    void optional_natural(std::string_view f) const { if (has(f)) natural(f); }
    void optional_flag(std::string_view f) const { if (has(f)) flag(f); }

private:
    boost::json::object const& o_;
    std::string const& where_;
};

// The fields an operation of this kind needs: its arguments always, its results once it returned.
inline void check_fields(operation const& op, line_reader const& r) {
    bool const ok = op.returned && op.res == outcome::ok;
    bool const refused = op.returned && op.res == outcome::refused;
    switch (op.kind) {
    case op_kind::get:
        if (ok && r.flag("found")) {
            r.text("value");
            r.optional_natural("version");
        }
        break;
    case op_kind::put:
    case op_kind::erase: {
        if (op.kind == op_kind::put) r.text("value");
        std::string const cond = r.text("cond");
        if (cond == "version") r.natural("cond_version");
        else if (cond != "none" && !(cond == "absent" && op.kind == op_kind::put))
            r.fail("bad cond '" + cond + "' for " + std::string(name(op.kind)));
        if (ok && op.kind == op_kind::erase) r.flag("written");
        if (ok) r.optional_natural("version");
        if (refused) r.optional_natural("current");
        break;
    }
    case op_kind::incr:
        if (ok) {
            r.text("value");
            r.optional_natural("version");
        }
        break;
    case op_kind::acquire:
        if (ok) r.natural("token");
        break;
    case op_kind::lost: r.optional_natural("token"); break;
    case op_kind::release: r.natural("token"); break;
    case op_kind::fenced:
        r.natural("token");
        r.text("value");
        if (refused) r.natural("winning");
        break;
    case op_kind::fenced_read:
        if (ok && r.flag("found")) {
            r.text("value");
            r.natural("token");
        }
        break;
    default: break;
    }
}

inline std::optional<outcome> parse_outcome(std::string_view s) {
    for (int o = 0; o <= static_cast<int>(outcome::unknown); ++o)
        if (name(static_cast<outcome>(o)) == s) return static_cast<outcome>(o);
    return std::nullopt;
}

}  // namespace detail

/** Reads history files, then pairs the invokes with their returns.

    Add every file (or text) first, then call `finish()`: a return line may
    come before its invoke when files are merged in any order.
*/
class history_reader {
public:
    /// Reads one file. @throws history_error when it cannot be opened or a line is bad.
    void add_file(std::string const& path) {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw history_error(path + ": cannot open");
        std::string line;
        std::size_t n = 0;
        while (std::getline(in, line)) add_line(line, path, ++n);
        if (in.bad()) throw history_error(path + ": read error after line " + std::to_string(n));
    }

    /// Reads JSON lines from a string (tests); `source` names it in errors.
    void add_text(std::string_view text, std::string const& source = "<text>") {
        std::size_t n = 0;
        while (!text.empty()) {
            auto const nl = text.find('\n');
            add_line(text.substr(0, nl), source, ++n);
            text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        }
    }

    /** The history: returns matched to invokes, invokes without a return as
        unknown operations that never returned, process events without `i`
        given the incarnation running at their time.
        @throws history_error on an invoke whose return names another kind.
    */
    history finish() && {
        history h;
        std::map<call_key, std::size_t> returned;  // indexes into ops_, which grows below
        for (std::size_t k = 0; k < ops_.size(); ++k)
            if (ops_[k].id) returned.emplace(call_key{ops_[k].process, ops_[k].incarnation, *ops_[k].id}, k);
        for (auto& inv : invokes_) {
            auto const it = returned.find(call_key{inv.process, inv.incarnation, *inv.id});
            if (it == returned.end()) {
                ops_.push_back(std::move(inv));
                continue;
            }
            operation const& ret = ops_[it->second];
            if (ret.kind != inv.kind)
                throw history_error(ret.where + ": the return of " + std::string(name(ret.kind)) + " id " +
                                    std::to_string(*inv.id) + " follows an invoke of " + std::string(name(inv.kind)) +
                                    " (" + inv.where + ")");
        }
        infer_incarnations();
        h.ops = std::move(ops_);
        std::stable_sort(h.ops.begin(), h.ops.end(), [](operation const& a, operation const& b) { return a.t0 < b.t0; });
        return h;
    }

private:
    using call_key = std::tuple<std::string, std::uint64_t, std::int64_t>;  // process, incarnation, id

    void add_line(std::string_view line, std::string const& file, std::size_t n) {
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.find_first_not_of(" \t") == std::string_view::npos) return;
        std::string const where = file + ":" + std::to_string(n);
        boost::system::error_code ec;
        boost::json::value v = boost::json::parse(line, ec);
        if (ec) throw history_error(where + ": not JSON (" + ec.message() + ")");
        if (!v.is_object()) throw history_error(where + ": not a JSON object");

        operation op;
        op.where = where;
        op.fields = std::move(v.get_object());
        detail::line_reader const r(op.fields, op.where);

        std::string const op_name = r.text("op");
        bool const invoke = op_name == "invoke";
        std::string const kind_name = invoke ? r.text("of") : op_name;
        auto const kind = parse_op_kind(kind_name);
        if (!kind) r.fail("unknown operation '" + kind_name + "'");
        op.kind = *kind;
        op.w = workload_of(op.kind);
        if (r.has("w")) {
            std::string const w = r.text("w");
            if (w != name(op.w)) r.fail("operation '" + kind_name + "' in workload '" + w + "'");
        }
        op.process = r.text("p");
        // Process events other than start may leave the incarnation to the checker.
        if (op.w != workload::proc || op.kind == op_kind::start || r.has("i")) op.incarnation = r.natural("i");
        else op.incarnation_inferred = true;
        if (r.has("id")) op.id = r.integer("id");
        if (op.w == workload::kv) op.key = r.text("key");

        if (invoke) {
            if (!op.id) r.fail("an invoke without 'id'");
            if (is_event(op.kind)) r.fail("an invoke of the event '" + kind_name + "'");
            op.t0 = r.integer("t0");
            op.t1 = unbounded;
            op.res = outcome::unknown;
            op.returned = false;
            detail::check_fields(op, r);
            if (!invoke_ids_.emplace(op.process, op.incarnation, *op.id).second)
                r.fail("a second invoke with id " + std::to_string(*op.id) + " in " + op.process + "#" +
                       std::to_string(op.incarnation));
            invokes_.push_back(std::move(op));
            return;
        }
        if (is_event(op.kind)) {
            op.t0 = op.t1 = r.integer("t");
            op.res = outcome::ok;
        } else {
            op.t0 = r.integer("t0");
            op.t1 = r.integer("t1");
            if (op.t1 < op.t0) r.fail("t1 before t0");
            auto const res = detail::parse_outcome(r.text("res"));
            if (!res) r.fail("bad res '" + r.text("res") + "'");
            op.res = *res;
        }
        detail::check_fields(op, r);
        if (op.id && !return_ids_.emplace(op.process, op.incarnation, *op.id).second)
            r.fail("a second return with id " + std::to_string(*op.id) + " in " + op.process + "#" +
                   std::to_string(op.incarnation));
        ops_.push_back(std::move(op));
    }

    // A process event without `i` belongs to the latest incarnation started at or before it:
    // by its `start` event, or else by the first operation the incarnation recorded.
    void infer_incarnations() {
        std::map<std::string, std::vector<std::pair<std::int64_t, std::uint64_t>>> began;  // process -> (time, i)
        std::map<std::pair<std::string, std::uint64_t>, std::int64_t> first;
        for (auto const& op : ops_) {
            if (op.incarnation_inferred) continue;
            if (op.kind == op_kind::start) began[op.process].emplace_back(op.t0, op.incarnation);
            auto [it, fresh] = first.try_emplace({op.process, op.incarnation}, op.t0);
            if (!fresh) it->second = std::min(it->second, op.t0);
        }
        for (auto const& [pi, t] : first) began[pi.first].emplace_back(t, pi.second);
        for (auto& op : ops_) {
            if (!op.incarnation_inferred) continue;
            std::uint64_t inc = 0;
            bool found = false;
            for (auto const& [t, i] : began[op.process])
                if (t <= op.t0 && (!found || i > inc)) inc = i, found = true;
            op.incarnation = inc;
        }
    }

    std::vector<operation> ops_;
    std::vector<operation> invokes_;
    std::set<call_key> invoke_ids_;
    std::set<call_key> return_ids_;
};

/// Reads and merges files into one history. @throws history_error.
inline history read_history(std::vector<std::string> const& paths) {
    history_reader r;
    for (auto const& p : paths) r.add_file(p);
    return std::move(r).finish();
}

/// Parses JSON lines from a string into a history (tests). @throws history_error.
inline history parse_history(std::string_view text, std::string const& source = "<text>") {
    history_reader r;
    r.add_text(text, source);
    return std::move(r).finish();
}

}  // namespace robustness

#endif
