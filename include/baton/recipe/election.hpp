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
#include <baton/recipe/detail/leader_watch.hpp>
#include <baton/recipe/detail/pending_op.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/store/detail/machine_op.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/compose.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

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
          watch_(std::make_shared<watch_state>(ex, lease_.backend(), lease_.clock(), lease_.options())) {}

    /** A candidate without validated options. Only for proving that the
        simulation checker catches unsafe settings; never use it otherwise.
    */
    basic_election(detail::unchecked_t, executor_type ex, Backend backend, lease_options opts, RetryPolicy retry = {},
                   Signer signer = {}, Clock clock = {}, Observer observer = {})
        : lease_(detail::unchecked, ex, std::move(backend), std::move(opts), std::move(retry), std::move(signer),
                 std::move(clock), std::move(observer)),
          watch_(std::make_shared<watch_state>(ex, lease_.backend(), lease_.clock(), lease_.options())) {}

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

        @par Per-Operation Cancellation
        Terminal: the read is abandoned; completes with `operation_aborted`.
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_leader(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, std::optional<lease_info>)>(
            [](auto handler, std::shared_ptr<watch_state> w) { start_leader_read(leader_handler(std::move(handler)), std::move(w)); },
            token, watch_);
    }

    /** Waits until the leader differs from `known` (another holder, another
        term, resigned, or expired: see `async_leader`), polling every `poll_interval`. Completion:
        `void(error_code, std::optional<lease_info>)` with the new leader. One at a time:
        a second while one is outstanding completes with `errc::operation_in_progress`.

        @par Per-Operation Cancellation
        All types: completes with `operation_aborted`.
    */
    template <class Token = detail::default_token_t<executor_type>>
    auto async_wait_for_change(std::optional<lease_info> known, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, std::optional<lease_info>)>(
            [](auto handler, std::shared_ptr<watch_state> w, std::optional<lease_info> k) {
                start_watch(leader_handler(std::move(handler)), std::move(w), std::move(k));
            },
            token, watch_, std::move(known));
    }

    /// True while this candidate leads (by its own clock, before the renew deadline).
    bool is_leader() const noexcept { return lease_.is_held(); }
    /// The current (or last) term's fencing token.
    std::uint64_t fencing_token() const noexcept { return lease_.fencing_token(); }
    /// The lease underneath.
    lease_type& lease() noexcept { return lease_; }

private:
    // What election's reads run on (machine_op's host): a copy of the lease's store and clock,
    // what every read of this object has seen, and the watch outstanding.
    struct watch_state {
        using timer = boost::asio::basic_waitable_timer<typename Clock::timer_clock,
                                                        boost::asio::wait_traits<typename Clock::timer_clock>,
                                                        boost::asio::any_io_executor>;
        watch_state(boost::asio::any_io_executor e, Backend b, Clock c, lease_options const& o)
            : ex(std::move(e)), backend(std::move(b)), clock(std::move(c)), key(o.key), skew(o.max_clock_rate_skew),
              poll(o.poll_interval) {}

        boost::asio::any_io_executor ex;
        Backend backend;
        Clock clock;
        std::string key;
        double skew;
        std::chrono::nanoseconds poll;
        detail::leader_sighting seen;
        // The watch outstanding: the caller's handler, and what stops its machine (the caller's
        // cancellation, or the election's end), one signal per watch.
        detail::pending_op<void(error_code, std::optional<lease_info>)> op;
        std::shared_ptr<boost::asio::cancellation_signal> stop;

        void finish(error_code ec, std::optional<lease_info> info) {
            if (!op.busy()) return;
            if (auto s = std::exchange(stop, nullptr)) s->emit(boost::asio::cancellation_type::terminal);
            op.complete(ex, ec, std::move(info));
        }
        void close() { finish(boost::asio::error::operation_aborted, std::nullopt); }
    };

    template <class Machine>
    struct read_spec {
        using machine = Machine;
        using result_type = std::optional<lease_info>;
        static constexpr bool passes_store_aborts = true; // a read: the store's answer as it is
        std::optional<lease_info> known;
        std::unique_ptr<machine> make(watch_state& w, std::string const&) {
            if constexpr (std::is_same_v<Machine, detail::leader_watch>)
                return std::make_unique<machine>(w.seen, w.skew, std::move(known), w.poll);
            else
                return std::make_unique<machine>(w.seen, w.skew);
        }
        static result_type finish(watch_state&, std::string const&, machine& m, error_code) { return std::move(m.leader()); }
    };

    using leader_handler = boost::asio::any_completion_handler<void(error_code, std::optional<lease_info>)>;

    template <class Machine, class Handler>
    static void run(std::shared_ptr<watch_state> w, read_spec<Machine> spec, Handler&& h) {
        auto ex = w->ex;
        std::string key = w->key;
        boost::asio::async_compose<Handler, void(error_code, std::optional<lease_info>)>(
            detail::machine_op<watch_state, read_spec<Machine>>(std::move(w), std::move(key), std::move(spec)), h, ex);
    }

    // Not templates: the caller's handler arrives type-erased, so each read compiles once per election type.
    // The machine runs on the election's executor (it updates what this election has seen), with the
    // caller's cancellation slot; the caller's handler then runs on its own.
    static void start_leader_read(leader_handler handler, std::shared_ptr<watch_state> w) {
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        auto ex = w->ex;
        run(std::move(w), read_spec<detail::leader_read>{},
            boost::asio::bind_cancellation_slot(
                slot, boost::asio::bind_executor(ex, [h = std::move(handler), ex](error_code ec, std::optional<lease_info> leader) mutable {
                    detail::post_completion(ex, std::move(h), ec, std::move(leader));
                })));
    }

    static void start_watch(leader_handler handler, std::shared_ptr<watch_state> w, std::optional<lease_info> known) {
        if (w->op.busy())
            return detail::post_completion(w->ex, std::move(handler), error_code(errc::operation_in_progress),
                                           std::optional<lease_info>{});
        auto const gen = w->op.start(std::move(handler), w->ex, std::weak_ptr<watch_state>(w),
                                     [](watch_state& s) { s.finish(boost::asio::error::operation_aborted, std::nullopt); });
        auto stop = std::make_shared<boost::asio::cancellation_signal>();
        w->stop = stop;
        auto slot = stop->slot();
        run(w, read_spec<detail::leader_watch>{std::move(known)},
            boost::asio::bind_cancellation_slot(slot, [w, gen, stop](error_code ec, std::optional<lease_info> leader) {
                if (w->op.current(gen)) w->finish(ec, std::move(leader));
            }));
    }

    lease_type lease_;
    std::shared_ptr<watch_state> watch_;
};

} // namespace baton

#endif
