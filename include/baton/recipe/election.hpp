// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_ELECTION_HPP
#define BATON_RECIPE_ELECTION_HPP

/** @file
    Layer: recipes. `basic_election`: leader election on a lease. A candidate campaigns
    with a value (say, its address); whoever holds the lease leads, with a
    fencing token per term. Anyone can observe the current leader and wait
    for it to change.
*/

#include <baton/core/detail/default_token.hpp>
#include <baton/recipe/detail/pending_op.hpp>
#include <baton/recipe/lease.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace baton {

/** Leader election among candidates sharing a key.

    Same policies (the Observer sees the candidate's lease), time model and
    thread-safety rules as `basic_lease`, which it is built on (`lease()` gives access).
*/
template <record_store Backend, clock_policy Clock = steady_clock, retry_policy RetryPolicy = standard_retry,
          signer_policy Signer = backend_signer, class Executor = boost::asio::any_io_executor,
          class Observer = no_lease_observer>
class basic_election {
public:
    /// The lease underneath.
    using lease_type = basic_lease<Backend, Clock, RetryPolicy, Signer, Executor, Observer>;
    /// The executor.
    using executor_type = Executor;
    /// The same election with completions defaulting to `Executor1`'s token (`as_default_on_t`).
    template <class Executor1>
    struct rebind_executor {
        /// The election type when rebound to `Executor1`.
        using other = basic_election<Backend, Clock, RetryPolicy, Signer, Executor1, Observer>;
    };

    /** A candidate for the election at `opts.key`, whose leadership record
        will carry `opts.value`. @throws config_error on bad options.
    */
    basic_election(executor_type ex, Backend backend, lease_options opts, RetryPolicy retry = {}, Signer signer = {},
                   Clock clock = {}, Observer observer = {})
        : lease_(ex, std::move(backend), std::move(opts), std::move(retry), std::move(signer), std::move(clock),
                 std::move(observer)),
          watch_(std::make_shared<watch_state>(ex)) {}

    /** A candidate without validated options. Only for proving that the
        simulation checker catches unsafe settings; never use it otherwise.
    */
    basic_election(detail::unchecked_t, executor_type ex, Backend backend, lease_options opts, RetryPolicy retry = {},
                   Signer signer = {}, Clock clock = {}, Observer observer = {})
        : lease_(detail::unchecked, ex, std::move(backend), std::move(opts), std::move(retry), std::move(signer),
                 std::move(clock), std::move(observer)),
          watch_(std::make_shared<watch_state>(ex)) {}

    /// Stops watching and abandons leadership (see `basic_lease`).
    ~basic_election() {
        if (watch_) watch_->close();
    }
    basic_election(basic_election const&) = delete;
    basic_election& operator=(basic_election const&) = delete;

    /** Campaigns until elected. Completes with the term's grant; leadership
        then renews in the background until resigned or lost.
        Signature and cancellation as `basic_lease::async_acquire`.
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_campaign(Token&& token = {}) {
        return lease_.async_acquire(std::forward<Token>(token));
    }

    /// Steps down at once, keeping the term's token; the next candidate takes over without waiting.
    template <class Token = detail::default_token_t<executor_type>>
    auto async_resign(Token&& token = {}) {
        return lease_.async_release(std::forward<Token>(token));
    }

    /// Completes when this candidate's leadership ends (`errc::lease_lost` or `errc::released`).
    template <class Token = detail::default_token_t<executor_type>>
    auto async_wait_lost(Token&& token = {}) {
        return lease_.async_wait_lost(std::forward<Token>(token));
    }

    /** Reads who leads now (one read). Completion: `void(error_code, std::optional<lease_info>)`,
        empty when nobody has led yet or the last leader resigned.

        A crashed leader's record stays until someone takes over, so the
        answer also says how long this candidate knows the record unchanged
        (`unchanged_for`, across this object's reads: from the answer of the
        first read that showed this version to the sending of the latest) and
        whether that is at least `ttl × max_clock_rate_skew`, in which case
        the leader is gone (`expired`): a leader stops acting at its renew
        deadline unless a renewal was confirmed, and a confirmed renewal
        changes the version.

        Runs alongside `async_wait_for_change` and the lease's own operations,
        and any number at once. The handler runs on its associated executor.
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_leader(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, std::optional<lease_info>)>(
            [](auto handler, lease_type* l, std::shared_ptr<watch_state> w) {
                start_leader_read(leader_handler(std::move(handler)), l, std::move(w));
            },
            token, &lease_, watch_);
    }

    /** Waits until the leader differs from `known` (another holder, another
        term, resigned, or expired: see `async_leader`), polling every `poll_interval`. Completion:
        `void(error_code, std::optional<lease_info>)` with the new leader.

        @par Per-Operation Cancellation
        All types: completes with `operation_aborted`.
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_wait_for_change(std::optional<lease_info> known, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, std::optional<lease_info>)>(
            [this](auto handler, std::optional<lease_info> k) { start_watch(std::move(handler), std::move(k)); }, token,
            std::move(known));
    }

    /// True while this candidate leads (by its own clock, before the renew deadline).
    bool is_leader() const noexcept { return lease_.is_held(); }
    /// The current (or last) term's fencing token.
    std::uint64_t fencing_token() const noexcept { return lease_.fencing_token(); }
    /// The lease underneath.
    lease_type& lease() noexcept { return lease_; }

private:
    using timer = boost::asio::basic_waitable_timer<typename Clock::timer_clock,
                                                    boost::asio::wait_traits<typename Clock::timer_clock>,
                                                    boost::asio::any_io_executor>;

    struct watch_state {
        explicit watch_state(boost::asio::any_io_executor ex) : t(std::move(ex)) {}
        timer t;
        detail::pending_op<void(error_code, std::optional<lease_info>)> op;
        bool closed = false;
        // The leader's record as this candidate's reads have seen it: which version, since when.
        std::string seen_version;
        std::chrono::nanoseconds seen_since{0};

        // Ages `i` by how long its version is known unchanged: from the answer of the first read that
        // showed it to the sending of this one (a late answer proves nothing about the time after the
        // read reached the store, when a renewal may have landed).
        void observe(lease_info& i, std::chrono::nanoseconds answered, std::chrono::nanoseconds sent, double skew) {
            if (i.version != seen_version) {
                seen_version = i.version;
                seen_since = answered;
            }
            i.unchanged_for = std::max(std::chrono::nanoseconds(0), sent - seen_since);
            i.expired = i.unchanged_for >= detail::lease_machine::takeover_window(i.ttl, skew);
        }

        void finish(error_code ec, std::optional<lease_info> info) {
            if (!op.busy()) return;
            t.cancel();
            op.complete(t.get_executor(), ec, std::move(info));
        }
        void close() {
            closed = true;
            finish(boost::asio::error::operation_aborted, std::nullopt);
        }
    };

    static bool same_leader(std::optional<lease_info> const& a, std::optional<lease_info> const& b) {
        if (a.has_value() != b.has_value()) return false;
        if (!a) return true;
        return a->owner == b->owner && a->fencing_token == b->fencing_token && a->released == b->released &&
               a->expired == b->expired;
    }

    using leader_handler = boost::asio::any_completion_handler<void(error_code, std::optional<lease_info>)>;

    // Not a template: the caller's handler arrives type-erased, so the read is compiled once per election type.
    static void start_leader_read(leader_handler handler, lease_type* l, std::shared_ptr<watch_state> w) {
                auto ex = l->get_executor();
        auto const sent = l->clock().now().time_since_epoch();
        l->backend().async_get(
            l->options().key,
            boost::asio::bind_executor(ex, [h = std::move(handler), ex, w = std::move(w), clock = l->clock(), sent,
                                            skew = l->options().max_clock_rate_skew](error_code ec,
                                                                                     get_result r) mutable {
                std::optional<lease_info> info;
                if (!ec && r.found) {
                    lease_info i;
                    diagnostics d;
                    ec = detail::lease_machine::describe(*r.found, i, d);
                    if (!ec && !i.released) {
                        w->observe(i, clock.now().time_since_epoch(), sent, skew);
                        info = std::move(i);
                    }
                }
                // post: the handler runs on its associated executor (a strand-bound one on its strand).
                detail::post_completion(ex, std::move(h), ec, std::move(info));
            }));
    }

    void start_watch(leader_handler handler, std::optional<lease_info> known) {
        auto w = watch_;
        if (w->op.busy())
            return detail::post_completion(w->t.get_executor(), std::move(handler), error_code(errc::operation_in_progress),
                                           std::optional<lease_info>{});
        auto const gen = w->op.start(std::move(handler), w->t.get_executor(), std::weak_ptr<watch_state>(w),
                                     [](watch_state& s) { s.finish(boost::asio::error::operation_aborted, std::nullopt); });
        poll(std::move(known), gen);
    }

    void poll(std::optional<lease_info> known, std::uint64_t gen) {
        auto w = watch_;
        async_leader([this, w, known = std::move(known), gen](error_code ec, std::optional<lease_info> now) mutable {
            if (w->closed || !w->op.current(gen)) return;
            if (ec && !is_retryable(ec)) return w->finish(ec, std::nullopt);
            if (!ec && !same_leader(known, now)) return w->finish({}, std::move(now));
            w->t.expires_at(lease_.clock().timer_expiry(lease_.options().poll_interval));
            w->t.async_wait([this, w, known = std::move(known), gen](error_code e) mutable {
                if (e || w->closed || !w->op.current(gen)) return;
                poll(std::move(known), gen);
            });
        });
    }

    lease_type lease_;
    std::shared_ptr<watch_state> watch_;
};

} // namespace baton

#endif
