// Part of the baton command-line tool (examples/cli/main.cpp). `baton watch`: follow a lease's holders.
#ifndef BATON_CLI_WATCH_HPP
#define BATON_CLI_WATCH_HPP

#include "event_log.hpp"
#include "stores.hpp"

namespace baton_cli {

// ---- watch -----------------------------------------------------------------

// The least token taken for a wall-clock one: a record created with --wall-clock-tokens starts at
// the wall-clock microsecond (10^15 us after 1970 is September 2001), while a sequential counter
// changing hands every millisecond would need 30,000 years to get there.
constexpr std::uint64_t wall_clock_token_min = 1'000'000'000'000'000ull;

// Terms the watcher never saw between two observations. Known only for sequential tokens on one
// record: each change of holder writes token + 1. A wall-clock token, or a token that went back
// (the record was deleted and created again), gives no count: `known` is false then.
struct token_gap {
    bool known = false;
    std::uint64_t first = 0, last = 0; // when known: the tokens never seen
    std::string why;                   // when not known: why not, for the text line
};

// What the watcher has seen, and whether the next observation skipped terms.
class term_follower {
public:
    // Returns the gap before a record with `token`, if any. `absent`: no record at all. The first
    // record seen has no gap, unless the watch began with no record: a record created then starts
    // at 1 (a lease that saw none; `baton run` always), or one above the largest token its creator
    // saw, which some record held.
    std::optional<token_gap> observe(bool absent, std::uint64_t token) {
        std::optional<token_gap> gap;
        if (absent) {
            if (!last_) last_ = 0;
            after_absent_ = true;
            return gap;
        }
        if (last_ && token != *last_ && token != *last_ + 1 && !(after_absent_ && token == 1)) {
            token_gap g;
            if (token >= wall_clock_token_min) {
                g.why = "wall-clock tokens: the token went from " + std::to_string(*last_) + " to " + std::to_string(token) +
                        ", and terms in between cannot be told from a record created again";
            } else if (token < *last_) {
                g.why = "the token went back from " + std::to_string(*last_) + " to " + std::to_string(token) +
                        ": the record was deleted and created again";
            } else {
                g.known = true;
                g.first = *last_ + 1;
                g.last = token - 1;
            }
            gap = std::move(g);
        }
        last_ = token;
        after_absent_ = false;
        return gap;
    }

private:
    std::optional<std::uint64_t> last_; // the last token seen; 0 after seeing no record first
    bool after_absent_ = false;         // the last observation was "no record"
};

// What one observation shows: a change is a new holder, token or state.
struct sighting {
    std::string state; // free, held, released (as `baton status` names them)
    std::string holder;
    std::uint64_t token = 0;
    std::string value;
    bool operator==(sighting const& o) const {
        return state == o.state && holder == o.holder && token == o.token;
    }
};

// Writes one line for an observation (and its gap), flushed at once: a script reads it as it comes.
// False when standard output is gone (a reader that ignores SIGPIPE has the watch end too).
bool print_sighting(options const& o, sighting const& s, std::optional<token_gap> const& gap, std::string const& at) {
    if (o.json) {
        boost::json::object obj;
        obj["key"] = o.key;
        bool const absent = s.state == "free";
        obj["holder"] = absent ? boost::json::value(nullptr) : boost::json::value(s.holder);
        obj["token"] = absent ? boost::json::value(nullptr) : boost::json::value(s.token);
        obj["state"] = s.state;
        obj["value"] = absent ? boost::json::value(nullptr) : boost::json::value(s.value);
        obj["at"] = at;
        if (gap) {
            if (gap->known) obj["skipped"] = boost::json::array{gap->first, gap->last};
            else obj["skipped"] = "unknown";
        }
        print_json(obj);
    } else {
        if (gap && gap->known) {
            std::uint64_t const n = gap->last - gap->first + 1;
            std::string const tokens = n == 1 ? "token " + std::to_string(gap->first)
                                              : "tokens " + std::to_string(gap->first) + "-" + std::to_string(gap->last);
            std::printf("%s skipped  %s never seen (%llu term%s shorter than the interval, or the watcher was "
                        "paused)\n",
                        at.c_str(), tokens.c_str(), static_cast<unsigned long long>(n), n == 1 ? "" : "s");
        } else if (gap) {
            std::printf("%s skipped  unknown (%s)\n", at.c_str(), gap->why.c_str());
        }
        if (s.state == "free")
            std::printf("%s free     (no record)\n", at.c_str());
        else
            std::printf("%s %-8s token %llu  holder %s%s%s\n", at.c_str(), s.state.c_str(),
                        static_cast<unsigned long long>(s.token), s.holder.c_str(), s.value.empty() ? "" : "  value ",
                        s.value.c_str());
    }
    return std::fflush(stdout) == 0 && !std::ferror(stdout);
}

// Reads the record once per interval (never writes) and prints each change until SIGINT or
// SIGTERM (exit 0). A transient store error is retried at the next interval, and said on stderr
// when it persists (events read_failing and read_recovered with --log-format json); any other
// ends the watch as `baton status` would (1, or 64 for a store that cannot work as configured).
template <class Lease>
int run_watch(asio::io_context& ioc, Lease& lease, options const& o, store_context const& store) {
    using clock = std::chrono::steady_clock;
    int code = 0;
    bool stopping = false;
    asio::signal_set signals(ioc, SIGINT, SIGTERM);
    asio::steady_timer timer(ioc);
    std::optional<sighting> last;
    term_follower follower;
    // A run of transient failures: since when, how many, and when it was last said.
    std::optional<clock::time_point> failing_since;
    int failures = 0;
    std::optional<clock::time_point> said_at;
    std::string const doing = "cannot read lease '" + o.key + "'";
    auto millis = [](clock::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };

    auto stop = [&] {
        stopping = true;
        signals.cancel();
        timer.cancel();
        ioc.stop(); // a read in flight is abandoned: it only reads
    };
    signals.async_wait([&](baton::error_code ec, int) {
        if (!ec) stop();
    });

    std::function<void()> poll = [&] {
        auto const sent = clock::now();
        lease.async_inspect([&, sent](baton::error_code ec, std::optional<baton::lease_info> info) {
            if (stopping) return;
            auto const now = clock::now();
            if (ec && !baton::is_retryable(ec)) {
                code = report_store_error(store, doing, ec, lease.last_diagnostics(), exit_failure);
                return stop();
            }
            if (ec) {
                if (!failing_since) failing_since = now;
                ++failures;
                // One failed read is routine for a network store; five seconds of them is worth a line
                // (then one every 30 s), and never for a single read of a slow interval.
                if (failures >= 2 && now - *failing_since >= 5s && (!said_at || now - *said_at >= 30s)) {
                    auto const& d = lease.last_diagnostics();
                    std::string const said = ec.message() + (d.empty() ? std::string() : ": " + d.to_string());
                    log_event("read_failing",
                              {{"key", o.key}, {"error", said}, {"failing_ms", millis(now - *failing_since)},
                               {"reads", failures}},
                              doing + " for " + seconds_text(now - *failing_since) + " (" + std::to_string(failures) +
                                  " reads): " + said + "; still trying every " + seconds_text(o.interval));
                    said_at = now;
                }
            } else {
                if (said_at)
                    log_event("read_recovered", {{"key", o.key}, {"failed_ms", millis(now - *failing_since)}},
                              "read lease '" + o.key + "' again after " + seconds_text(now - *failing_since) +
                                  " of failures");
                failing_since.reset();
                said_at.reset();
                failures = 0;
                sighting s;
                if (!info) s.state = "free";
                else {
                    s.state = info->released ? "released" : "held";
                    s.holder = info->owner;
                    s.token = info->fencing_token;
                    s.value = info->value;
                }
                auto gap = follower.observe(!info, s.token);
                if (!last || !(*last == s) || gap) {
                    if (!print_sighting(o, s, gap, utc_now_iso())) {
                        print_error(std::string("cannot write to standard output: ") + std::strerror(errno));
                        code = exit_failure;
                        return stop();
                    }
                    last = std::move(s);
                }
            }
            // One read per interval, counted from each read's start; a read slower than the interval
            // is followed by the next at once.
            timer.expires_at(sent + o.interval);
            timer.async_wait([&](baton::error_code e) {
                if (!e && !stopping) poll();
            });
        });
    };
    poll();
    ioc.run();
    return code;
}

} // namespace baton_cli

#endif
