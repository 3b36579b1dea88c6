// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_SIM_FAULTY_BACKEND_HPP
#define BATON_SIM_FAULTY_BACKEND_HPP

/** @file
    Layer: simulation kit (on the store and core). A record store that misbehaves on purpose: it wraps
    any backend and, per request, drops it, applies it and drops the response, delays it, delivers it
    twice, answers a read with an older answer, or answers 409 / 412 / 500 / 503 / throttled (applied or
    not), as a seeded random source and a fault profile say. Every request also gets network latency,
    and the client side times out as an HTTP client would, so a write can land after its sender gave up
    on it.
*/

#include <baton/core/error.hpp>
#include <baton/sim/manual_clock.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <type_traits>

namespace baton::sim {

/// How often each fault happens (probabilities per request, checked in this order) and how slow the network is.
struct fault_profile {
    double drop_request = 0;   ///< never reaches the store; the client times out
    double drop_response = 0;  ///< applied, but the answer is lost; the client times out
    double conflict = 0;       ///< writes only: 409 ConditionalRequestConflict, not applied
    double precondition = 0;   ///< writes only: a spurious 412, not applied
    double server_error = 0;   ///< 500: applied or not (even odds), the client cannot tell
    double unavailable = 0;    ///< 503: not applied
    double throttle = 0;       ///< throttled: not applied
    double throttle_applied = 0; ///< writes only: applied, yet answered throttled
    double duplicate = 0;      ///< reaches the store twice: a copy follows up to `max_extra_delay` later (the client sees the first answer)
    double stale_read = 0;     ///< reads only: answered with what this client's previous read of the key returned (a lagging replica)
    double delay = 0;          ///< an extra delay of up to `max_extra_delay` on the way in or out
    std::chrono::nanoseconds min_latency = std::chrono::milliseconds(1);  ///< each way
    std::chrono::nanoseconds max_latency = std::chrono::milliseconds(15); ///< each way
    std::chrono::nanoseconds max_extra_delay = std::chrono::seconds(3);   ///< see `delay`
    std::chrono::nanoseconds request_timeout = std::chrono::seconds(2);   ///< the client's per-attempt timeout
    /// Whether a refused write carries the current record (`put_result::current`), as DynamoDB's
    /// and the memory store's do; false answers as S3 and dynalite do, with none.
    bool refusals_carry_record = true;

    /// No faults, only latency.
    static fault_profile none() { return {}; }

    /** Checks the rules: every probability finite and in [0, 1], the ones a request draws from
        (in the order above, writes and reads apart) summing to at most 1; latencies from 0 to
        1 hour with `min_latency <= max_latency`; `max_extra_delay` from 0 to 1 hour;
        `request_timeout` positive and at most 1 hour.
        @throws config_error naming the broken rule.
    */
    void validate() const {
        auto fail = [](std::string const& why) { throw config_error("fault_profile: " + why); };
        struct named { char const* name; double p; };
        named const all[] = {{"drop_request", drop_request}, {"drop_response", drop_response}, {"conflict", conflict},
                             {"precondition", precondition}, {"server_error", server_error},
                             {"unavailable", unavailable}, {"throttle", throttle},
                             {"throttle_applied", throttle_applied}, {"duplicate", duplicate},
                             {"stale_read", stale_read}, {"delay", delay}};
        for (auto const& n : all)
            if (!(n.p >= 0.0 && n.p <= 1.0)) fail(std::string(n.name) + " must be a probability from 0 to 1");
        double const common = drop_request + drop_response + server_error + unavailable + throttle + duplicate;
        if (common + conflict + precondition + throttle_applied > 1.0)
            fail("the probabilities a write draws from (all but stale_read and delay) must sum to at most 1");
        if (common + stale_read > 1.0)
            fail("the probabilities a read draws from (all but conflict, precondition, throttle_applied and delay) "
                 "must sum to at most 1");
        auto const hour = std::chrono::nanoseconds(std::chrono::hours(1));
        auto const zero = std::chrono::nanoseconds(0);
        if (min_latency < zero || max_latency > hour || min_latency > max_latency)
            fail("latencies must satisfy 0 <= min_latency <= max_latency <= 1 hour");
        if (max_extra_delay < zero || max_extra_delay > hour) fail("max_extra_delay must be from 0 to 1 hour");
        if (request_timeout <= zero || request_timeout > hour) fail("request_timeout must be positive and at most 1 hour");
    }
};

/// One fault, for scripting exactly what happens to the next request.
enum class fault_kind {
    drop_request,          ///< never reaches the store
    drop_response,         ///< applied; the answer is lost
    conflict,              ///< 409, not applied (reads: passes)
    precondition,          ///< 412, not applied (reads: passes)
    server_error_applied,  ///< 500 after applying
    server_error_lost,     ///< 500, not applied
    unavailable,           ///< 503, not applied
    throttle,              ///< throttled, not applied
    hold,                  ///< held in the network until `deliver_held`: only then reaches the store and answers
    throttle_applied,      ///< applied, yet answered throttled
    duplicate,             ///< reaches the store twice (the copy after up to `max_extra_delay`)
    stale_read,            ///< reads: the previous answer this client got for the key
    pass,                  ///< no fault (to script a fault for a later request; latency stays)
};

/// Counts of faults injected, by kind (random and scripted ones alike), and of the requests seen.
struct fault_counts {
    std::uint64_t requests = 0, dropped_requests = 0, dropped_responses = 0, conflicts = 0, preconditions = 0,
                  server_errors = 0, unavailable = 0, throttled = 0, delayed = 0, timeouts = 0, held = 0,
                  throttled_applied = 0, duplicated = 0, stale_reads = 0;
    /// @var requests
    /// Requests that went through the wrapper: gets, puts, erases and lists (probes are not counted).
    /// @var dropped_requests
    /// Requests that never reached the store.
    /// @var dropped_responses
    /// Requests applied whose answer was lost.
    /// @var conflicts
    /// Writes answered 409 and not applied.
    /// @var preconditions
    /// Writes answered with a spurious 412 and not applied.
    /// @var server_errors
    /// Requests answered 500, applied or not.
    /// @var unavailable
    /// Requests answered 503 and not applied.
    /// @var throttled
    /// Requests answered throttled and not applied.
    /// @var delayed
    /// Trips (a request on its way in, or its answer on its way out) given an extra delay.
    /// @var timeouts
    /// Requests whose client timeout (`fault_profile::request_timeout`) passed before an answer.
    /// @var held
    /// Requests held in the network by `fault_kind::hold`.
    /// @var throttled_applied
    /// Writes applied, yet answered throttled.
    /// @var duplicated
    /// Requests that reached the store twice.
    /// @var stale_reads
    /// Reads drawn to be answered with this client's previous answer for the key (a read with
    /// no previous answer is answered as usual).
};

/** Wraps a backend with injected faults. Copies share the fault state.

    @par Thread safety
    Single-threaded simulations only.
*/
template <record_store Backend>
class faulty_backend {
public:
    /// Completions run on the network executor unless the handler has its own.
    using executor_type = boost::asio::any_io_executor;

    /// Wraps `inner`; `network` runs delays; faults are drawn from `seed`. @throws config_error on a bad profile.
    faulty_backend(Backend inner, executor_type network, std::uint64_t seed, fault_profile profile = {})
        : st_(std::make_shared<state>(std::move(inner), std::move(network), seed, (profile.validate(), profile))) {}

    /// The network executor.
    executor_type get_executor() const noexcept { return st_->net; }
    /// Turns fault injection on or off (latency stays).
    void set_faults_enabled(bool on) noexcept { st_->enabled = on; }
    /// True when faults are being injected.
    bool faults_enabled() const noexcept { return st_->enabled; }
    /// The profile in force.
    fault_profile const& profile() const noexcept { return st_->profile; }
    /// Replaces the profile from the next request on. @throws config_error on a bad profile (the old one stays).
    void set_profile(fault_profile p) {
        p.validate();
        st_->profile = p;
    }
    /// Makes the next request suffer `k` (queued in order; applies even while random faults are off).
    void inject_next(fault_kind k) { st_->scripted.push_back(k); }

    /// Requests held by `fault_kind::hold` and not delivered yet.
    std::size_t held_count() const noexcept { return st_->held.size(); }

    /** Delivers the `i`-th request still held (in the order they were held): it reaches the
        store now, and its answer travels back with the usual latency, unless the client's
        timeout has passed by then (the answer is then lost, as a late response would be).
        Held requests can be delivered in any order, or never.
    */
    void deliver_held(std::size_t i = 0) {
        auto it = st_->held.begin() + static_cast<std::ptrdiff_t>(i);
        auto deliver = std::move(*it);
        st_->held.erase(it);
        deliver(st_);
    }

    /// Faults injected so far.
    fault_counts const& counts() const noexcept { return st_->counts; }
    /// The wrapped backend.
    Backend& inner() noexcept { return st_->inner; }

    /// @copydoc memory_backend::async_get
    template <class Token = boost::asio::deferred_t>
    auto async_get(std::string key, Token&& token = {}) {
        return run<get_result>(std::forward<Token>(token), false, [key](Backend& b, auto h) mutable {
            b.async_get(std::move(key), std::move(h));
        }, key);
    }

    /// @copydoc memory_backend::async_put
    template <class Token = boost::asio::deferred_t>
    auto async_put(std::string key, std::string body, precondition pc, Token&& token = {}) {
        return run<put_result>(std::forward<Token>(token), true, [key, body, pc](Backend& b, auto h) mutable {
            b.async_put(std::move(key), std::move(body), std::move(pc), std::move(h));
        });
    }

    /// The fenced-write hook of the wrapped backend (when it has one), with the faults of a put.
    template <class Token = boost::asio::deferred_t, class B = Backend>
        requires requires(B& b, std::string s, std::uint64_t t, std::optional<std::string> v,
                          detail::archetype_handler<void(error_code, put_result)> h) { b.async_put_fenced(s, s, t, v, std::move(h)); }
    auto async_put_fenced(std::string key, std::string body, std::uint64_t fence, std::optional<std::string> known_version,
                          Token&& token = {}) {
        return run<put_result>(std::forward<Token>(token), true, [key, body, fence, known_version](Backend& b, auto h) mutable {
            b.async_put_fenced(std::move(key), std::move(body), fence, std::move(known_version), std::move(h));
        });
    }

    /// @copydoc memory_backend::async_erase
    template <class Token = boost::asio::deferred_t>
    auto async_erase(std::string key, precondition pc, Token&& token = {}) {
        return run<erase_result>(std::forward<Token>(token), true, [key, pc](Backend& b, auto h) mutable {
            b.async_erase(std::move(key), std::move(pc), std::move(h));
        });
    }

    /// @copydoc memory_backend::async_list
    template <class Token = boost::asio::deferred_t>
    auto async_list(std::string prefix, std::string after, std::size_t limit, Token&& token = {}) {
        return run<list_page>(std::forward<Token>(token), false, [prefix, after, limit](Backend& b, auto h) mutable {
            b.async_list(std::move(prefix), std::move(after), limit, std::move(h));
        });
    }

    /// Probes pass through without faults.
    template <class Token = boost::asio::deferred_t>
    auto async_probe(Token&& token = {}) {
        return st_->inner.async_probe(std::forward<Token>(token));
    }

private:
    enum class fault { none, drop_request, drop_response, conflict, precondition, server_error_applied,
                       server_error_lost, unavailable, throttle, hold, throttle_applied, duplicate, stale_read };

    static fault from_kind(fault_kind k) {
        switch (k) {
        case fault_kind::drop_request: return fault::drop_request;
        case fault_kind::drop_response: return fault::drop_response;
        case fault_kind::conflict: return fault::conflict;
        case fault_kind::precondition: return fault::precondition;
        case fault_kind::server_error_applied: return fault::server_error_applied;
        case fault_kind::server_error_lost: return fault::server_error_lost;
        case fault_kind::unavailable: return fault::unavailable;
        case fault_kind::throttle: return fault::throttle;
        case fault_kind::hold: return fault::hold;
        case fault_kind::throttle_applied: return fault::throttle_applied;
        case fault_kind::duplicate: return fault::duplicate;
        case fault_kind::stale_read: return fault::stale_read;
        case fault_kind::pass: return fault::none;
        }
        return fault::none;
    }

    struct state {
        state(Backend b, executor_type n, std::uint64_t seed, fault_profile p)
            : inner(std::move(b)), net(std::move(n)), rng(seed), profile(p) {}
        Backend inner;
        executor_type net;
        std::mt19937_64 rng;
        fault_profile profile;
        bool enabled = true;
        fault_counts counts;
        std::deque<fault_kind> scripted;
        std::deque<std::function<void(std::shared_ptr<state> const&)>> held; // requests held in the network
        std::map<std::string, get_result, std::less<>> last_reads; // per key: the answer before the latest (stale reads)
        std::map<std::string, get_result, std::less<>> latest_reads;

        double uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng); }

        std::chrono::nanoseconds latency() {
            auto const span = (profile.max_latency - profile.min_latency).count();
            auto d = profile.min_latency + std::chrono::nanoseconds(static_cast<std::int64_t>(uniform() * static_cast<double>(span)));
            if (enabled && uniform() < profile.delay) {
                ++counts.delayed;
                d += std::chrono::nanoseconds(
                    static_cast<std::int64_t>(uniform() * static_cast<double>(profile.max_extra_delay.count())));
            }
            return d;
        }

        fault pick(bool is_write) {
            ++counts.requests;
            if (!scripted.empty()) {
                fault f = from_kind(scripted.front());
                scripted.pop_front();
                if (!is_write && (f == fault::conflict || f == fault::precondition || f == fault::throttle_applied))
                    return fault::none;
                if (is_write && f == fault::stale_read) return fault::none;
                count(f);
                return f;
            }
            if (!enabled) return fault::none;
            double const u = uniform();
            double edge = 0;
            auto hit = [&](double p) { edge += p; return u < edge; };
            if (hit(profile.drop_request)) return ++counts.dropped_requests, fault::drop_request;
            if (hit(profile.drop_response)) return ++counts.dropped_responses, fault::drop_response;
            if (is_write && hit(profile.conflict)) return ++counts.conflicts, fault::conflict;
            if (is_write && hit(profile.precondition)) return ++counts.preconditions, fault::precondition;
            if (hit(profile.server_error))
                return ++counts.server_errors, (uniform() < 0.5 ? fault::server_error_applied : fault::server_error_lost);
            if (hit(profile.unavailable)) return ++counts.unavailable, fault::unavailable;
            if (hit(profile.throttle)) return ++counts.throttled, fault::throttle;
            if (is_write && hit(profile.throttle_applied)) return ++counts.throttled_applied, fault::throttle_applied;
            if (hit(profile.duplicate)) return ++counts.duplicated, fault::duplicate;
            if (!is_write && hit(profile.stale_read)) return ++counts.stale_reads, fault::stale_read;
            return fault::none;
        }

        void count(fault f) {
            switch (f) {
            case fault::drop_request: ++counts.dropped_requests; break;
            case fault::drop_response: ++counts.dropped_responses; break;
            case fault::conflict: ++counts.conflicts; break;
            case fault::precondition: ++counts.preconditions; break;
            case fault::server_error_applied:
            case fault::server_error_lost: ++counts.server_errors; break;
            case fault::unavailable: ++counts.unavailable; break;
            case fault::throttle: ++counts.throttled; break;
            case fault::hold: ++counts.held; break;
            case fault::throttle_applied: ++counts.throttled_applied; break;
            case fault::duplicate: ++counts.duplicated; break;
            case fault::stale_read: ++counts.stale_reads; break;
            case fault::none: break;
            }
        }

        template <class F>
        void after(std::chrono::nanoseconds d, F&& f) {
            using timer_t = boost::asio::basic_waitable_timer<virtual_clock, boost::asio::wait_traits<virtual_clock>, executor_type>;
            auto t = std::make_shared<timer_t>(net);
            t->expires_at(manual_clock{}.timer_expiry(d));
            t->async_wait([t, fn = std::forward<F>(f)](error_code) mutable { fn(); });
        }
    };

    template <class Result>
    struct pending {
        boost::asio::any_completion_handler<void(error_code, Result)> handler;
        bool done = false;
    };

    template <class Result>
    static void complete(state& s, std::shared_ptr<pending<Result>> const& op, error_code ec, Result r) {
        if (op->done) return;
        op->done = true;
        if constexpr (std::is_same_v<Result, put_result>)
            if (!s.profile.refusals_carry_record) r.current.reset();
        boost::asio::post(s.net, boost::asio::append(std::move(op->handler), ec, std::move(r)));
    }

    static error_code error_of(fault f) {
        switch (f) {
        case fault::conflict: return errc::conflict;
        case fault::precondition: return errc::precondition_failed;
        case fault::server_error_applied:
        case fault::server_error_lost: return errc::service_unavailable;
        case fault::unavailable: return errc::service_unavailable;
        case fault::throttle:
        case fault::throttle_applied: return errc::throttled;
        default: return {};
        }
    }

    // Reads of `read_key` remember their answers, so that a stale read can repeat the one before.
    template <class Result, class Token, class Forward>
    auto run(Token&& token, bool is_write, Forward forward, std::string read_key = {}) {
        return boost::asio::async_initiate<Token, void(error_code, Result)>(
            [st = st_, is_write, read_key = std::move(read_key)](auto handler, Forward fwd) mutable {
                auto op = std::make_shared<pending<Result>>(pending<Result>{
                    boost::asio::any_completion_handler<void(error_code, Result)>(std::move(handler)), false});
                fault const f = st->pick(is_write);
                auto const out = st->latency();
                auto const back = st->latency();
                st->after(st->profile.request_timeout, [st, op] {
                    if (!op->done) ++st->counts.timeouts;
                    complete<Result>(*st, op, errc::timeout, Result{});
                });
                if (f == fault::drop_request) return;
                if constexpr (std::is_same_v<Result, get_result>) {
                    if (f == fault::stale_read) {
                        auto it = st->last_reads.find(read_key);
                        if (it != st->last_reads.end()) {
                            return st->after(out + back, [st, op, r = it->second]() mutable {
                                complete<Result>(*st, op, error_code{}, std::move(r));
                            });
                        }
                    }
                }
                if (f == fault::duplicate) {
                    // The copy: reaches the store later, its answer goes nowhere.
                    auto const extra = std::chrono::nanoseconds(static_cast<std::int64_t>(
                        st->uniform() * static_cast<double>(st->profile.max_extra_delay.count())));
                    st->after(out + extra, [st, fwd]() mutable { fwd(st->inner, [](error_code, Result) {}); });
                }
                // The request reaching the store. It takes the state as an argument: a held one
                // must not keep the state alive from inside it.
                auto arrive = [op, f, back, fwd = std::move(fwd), read_key = std::move(read_key)](
                                  std::shared_ptr<state> const& st) mutable {
                    if (f == fault::conflict || f == fault::precondition || f == fault::server_error_lost ||
                        f == fault::unavailable || f == fault::throttle) {
                        Result r;
                        r.diag.message = "injected fault";
                        return st->after(back, [st, op, f, r = std::move(r)]() mutable {
                            complete<Result>(*st, op, error_of(f), std::move(r));
                        });
                    }
                    fwd(st->inner, [st, op, f, back, read_key = std::move(read_key)](error_code ec, Result r) mutable {
                        if constexpr (std::is_same_v<Result, get_result>) {
                            if (!ec) { // what a lagging replica could answer next time
                                auto latest = st->latest_reads.find(read_key);
                                if (latest != st->latest_reads.end()) st->last_reads[read_key] = latest->second;
                                st->latest_reads[read_key] = r;
                            }
                        }
                        if (f == fault::drop_response) return;
                        if (f == fault::server_error_applied) {
                            ec = errc::service_unavailable;
                            r = Result{};
                        }
                        if (f == fault::throttle_applied) {
                            ec = errc::throttled;
                            r = Result{};
                            r.diag.message = "injected fault";
                        }
                        st->after(back, [st, op, ec, r = std::move(r)]() mutable {
                            complete<Result>(*st, op, ec, std::move(r));
                        });
                    });
                };
                if (f == fault::hold) return st->held.push_back(std::move(arrive));
                st->after(out, [st, arrive = std::move(arrive)]() mutable { arrive(st); });
            },
            token, std::move(forward));
    }

    std::shared_ptr<state> st_;
};

} // namespace baton::sim

#endif
