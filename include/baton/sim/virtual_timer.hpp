// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_SIM_VIRTUAL_TIMER_HPP
#define BATON_SIM_VIRTUAL_TIMER_HPP

/** @file
    Layer: simulation kit (on the store and core). Timers on virtual time
    that never touch the operating system.

    `boost::asio::basic_waitable_timer<virtual_clock, ...>` is specialised
    here: its waits sit in one process-wide queue ordered by expiry (ties in
    the order they were armed), and `scheduler` hands the due ones to their
    executors before it runs the handlers of an instant. An Asio timer would
    put the io_context's reactor in the loop, and every poll of it is a
    `select` system call: more than half of a simulation's time went there.

    The interface is the part of Asio's timer the recipes and the kit use:
    construct from an executor, `expires_at`, `expires_after`, `expiry`,
    `async_wait` (any completion token; per-operation cancellation of any
    type is terminal and completes with `operation_aborted`), `cancel`, and
    destruction (which cancels). A completion always runs later through the
    handler's associated executor (by default the timer's), never inline.

    Only `scheduler` fires these timers: an io_context run without one does
    not see them expire.
*/

#include <baton/sim/manual_clock.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <type_traits>
#include <utility>
#include <vector>

namespace baton::detail {

/// The process-wide queue of waits on virtual time (one simulation at a time, on one thread).
class virtual_timer_queue {
public:
    using handler = boost::asio::any_completion_handler<void(boost::system::error_code)>;

    static virtual_timer_queue& instance() {
        static virtual_timer_queue q;
        return q;
    }

    /// A fresh timer identity.
    std::uint64_t new_timer() noexcept { return ++last_timer_; }

    /// Queues a wait of timer `timer` until `expiry`; returns its identity.
    std::uint64_t add(std::uint64_t timer, std::int64_t expiry, boost::asio::any_io_executor ex, handler h) {
        auto const id = ++last_wait_;
        waits_.emplace(key{expiry, id}, wait{timer, std::move(ex), std::move(h)});
        by_id_.emplace(id, expiry);
        by_timer_.emplace(timer, id);
        return id;
    }

    /// Completes one wait with `operation_aborted`, from its cancellation slot's handler; false when it is gone.
    bool abort(std::uint64_t id) {
        auto const it = by_id_.find(id);
        if (it == by_id_.end()) return false;
        auto const w = waits_.find(key{it->second, id});
        by_id_.erase(it);
        by_timer_.erase({w->second.timer, id});
        auto entry = std::move(w->second);
        waits_.erase(w);
        complete(std::move(entry), boost::asio::error::operation_aborted);
        return true;
    }

    /// Completes every wait of `timer` with `operation_aborted`; returns how many.
    std::size_t cancel(std::uint64_t timer) {
        // Through the timer's index, not a scan of every wait (a scan was 60% of a 1,000-shard
        // table simulation). A timer's waits share its expiry, so arming order is queue order.
        std::vector<wait> gone;
        auto it = by_timer_.lower_bound({timer, 0});
        while (it != by_timer_.end() && it->first == timer) {
            auto const id = it->second;
            auto const at = by_id_.find(id);
            auto const w = waits_.find(key{at->second, id});
            gone.push_back(std::move(w->second));
            waits_.erase(w);
            by_id_.erase(at);
            it = by_timer_.erase(it);
        }
        for (auto& w : gone) complete(std::move(w), boost::asio::error::operation_aborted);
        return gone.size();
    }

    /// Hands every wait due at virtual time `now` to its executor, earliest first; returns how many.
    std::size_t fire_due(std::int64_t now) {
        std::size_t n = 0;
        while (!waits_.empty() && waits_.begin()->first.expiry <= now) {
            auto node = waits_.extract(waits_.begin());
            by_id_.erase(node.key().id);
            by_timer_.erase({node.mapped().timer, node.key().id});
            complete(std::move(node.mapped()), {});
            ++n;
        }
        return n;
    }

    /// The earliest expiry waited for, if any.
    bool next_expiry(std::int64_t& out) const noexcept {
        if (waits_.empty()) return false;
        out = waits_.begin()->first.expiry;
        return true;
    }

    /// Destroys every wait's handler without running it: the simulation ends (or a new one starts).
    void shutdown() {
        // Moved out first: a handler's destructor may destroy a timer, which cancels into this queue.
        auto waits = std::move(waits_);
        waits_.clear();
        by_id_.clear();
        by_timer_.clear();
        waits.clear();
    }

private:
    struct key {
        std::int64_t expiry;
        std::uint64_t id; // arming order breaks ties
        friend bool operator<(key const& a, key const& b) noexcept {
            return a.expiry != b.expiry ? a.expiry < b.expiry : a.id < b.id;
        }
    };
    struct wait {
        std::uint64_t timer;
        boost::asio::any_io_executor ex;
        handler h;
    };

    // Later, never inline, through the handler's associated executor (by default the timer's).
    // The cancellation slot keeps its handler, as with Asio's own timers: the signal may already be
    // gone with its owner, and the handler left behind only names a wait that no longer exists.
    static void complete(wait w, boost::system::error_code ec) {
        boost::asio::post(w.ex, boost::asio::append(std::move(w.h), ec));
    }

    std::map<key, wait> waits_;
    std::map<std::uint64_t, std::int64_t> by_id_;                // wait -> its expiry
    std::set<std::pair<std::uint64_t, std::uint64_t>> by_timer_; // (timer, wait)
    std::uint64_t last_timer_ = 0;
    std::uint64_t last_wait_ = 0;
};

} // namespace baton::detail

/// A timer on virtual time: see `<baton/sim/virtual_timer.hpp>`.
template <class Executor>
class boost::asio::basic_waitable_timer<baton::sim::virtual_clock, boost::asio::wait_traits<baton::sim::virtual_clock>,
                                        Executor> {
public:
    /// The executor completions run on by default.
    using executor_type = Executor;
    /// The clock.
    using clock_type = baton::sim::virtual_clock;
    /// An interval of virtual time.
    using duration = clock_type::duration;
    /// An instant of virtual time.
    using time_point = clock_type::time_point;
    /// The wait traits.
    using traits_type = boost::asio::wait_traits<clock_type>;

    /// The same timer on another executor type.
    template <class Executor1>
    struct rebind_executor {
        /// The rebound timer type.
        using other = basic_waitable_timer<clock_type, traits_type, Executor1>;
    };

    /// A timer with no expiry set (it is already expired).
    explicit basic_waitable_timer(executor_type const& ex) : ex_(ex) {}

    /// A timer on `ctx`'s executor.
    template <class ExecutionContext>
        requires std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>
    explicit basic_waitable_timer(ExecutionContext& ctx) : ex_(ctx.get_executor()) {}

    basic_waitable_timer(basic_waitable_timer const&) = delete;
    basic_waitable_timer& operator=(basic_waitable_timer const&) = delete;

    /// Cancels every wait (they complete with `operation_aborted`).
    ~basic_waitable_timer() { cancel(); }

    /// The executor.
    executor_type get_executor() noexcept { return ex_; }

    /// When the timer expires.
    time_point expiry() const noexcept { return expiry_; }

    /// Sets the expiry, cancelling the waits in progress; returns how many were cancelled.
    std::size_t expires_at(time_point t) {
        auto const n = cancel();
        expiry_ = t;
        return n;
    }

    /// Sets the expiry `d` from now (virtual time), cancelling the waits in progress.
    std::size_t expires_after(duration d) { return expires_at(clock_type::now() + d); }

    /// Cancels every wait in progress; returns how many.
    std::size_t cancel() { return queue().cancel(id_); }

    /// Waits until the expiry. Completion: `void(error_code)`.
    template <class Token = boost::asio::deferred_t>
    auto async_wait(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            [this](auto handler) {
                auto slot = boost::asio::get_associated_cancellation_slot(handler);
                auto const wait = queue().add(id_, expiry_.time_since_epoch().count(), ex_,
                                              baton::detail::virtual_timer_queue::handler(std::move(handler)));
                if (slot.is_connected())
                    slot.assign([wait](boost::asio::cancellation_type_t type) {
                        if (type != boost::asio::cancellation_type::none)
                            baton::detail::virtual_timer_queue::instance().abort(wait);
                    });
            },
            token);
    }

private:
    static baton::detail::virtual_timer_queue& queue() {
        return baton::detail::virtual_timer_queue::instance();
    }

    executor_type ex_;
    time_point expiry_{};
    std::uint64_t id_ = queue().new_timer();
};

#endif
