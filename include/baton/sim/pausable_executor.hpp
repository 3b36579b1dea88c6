// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_SIM_PAUSABLE_EXECUTOR_HPP
#define BATON_SIM_PAUSABLE_EXECUTOR_HPP

/** @file
    Layer: simulation kit (on the store and core). An executor that can be frozen, to model a
    participant whose process stops running (a GC pause, SIGSTOP, a VM migration) while the rest of the
    world, its clock included, goes on.
*/

#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <deque>
#include <memory>
#include <type_traits>
#include <utility>

namespace baton::sim {

/** Runs work on an `io_context`, except while frozen: then work is held,
    in order, and runs after `thaw()`. Copies share the freeze.
*/
class pausable_executor {
public:
    /// An executor over `ctx`, not frozen.
    explicit pausable_executor(boost::asio::io_context::executor_type inner)
        : inner_(inner), gate_(std::make_shared<gate>()) {}

    /// Stops running work until `thaw()`.
    void freeze() const noexcept { gate_->frozen = true; }

    /// Runs the held work (in order) and lets new work through.
    void thaw() const {
        gate_->frozen = false;
        auto held = std::move(gate_->held);
        gate_->held.clear();
        for (auto& f : held) boost::asio::post(inner_, std::move(f));
    }

    /// True while frozen.
    bool frozen() const noexcept { return gate_->frozen; }

    /// Submits `f`; it runs later on the io_context unless frozen by then.
    template <class F>
    void execute(F&& f) const {
        boost::asio::post(inner_, [g = gate_, fn = task(std::forward<F>(f))]() mutable {
            if (g->frozen)
                g->held.push_back(std::move(fn));
            else
                fn();
        });
    }

    /// The io_context.
    boost::asio::execution_context& query(boost::asio::execution::context_t) const noexcept {
        return boost::asio::query(inner_, boost::asio::execution::context);
    }
    /// Work never runs inside `execute`.
    static constexpr boost::asio::execution::blocking_t query(boost::asio::execution::blocking_t) noexcept {
        return boost::asio::execution::blocking.never;
    }
    /// Already never-blocking.
    pausable_executor require(boost::asio::execution::blocking_t::never_t) const noexcept { return *this; }

    /// Same io_context and same freeze.
    friend bool operator==(pausable_executor const& a, pausable_executor const& b) noexcept {
        return a.inner_ == b.inner_ && a.gate_ == b.gate_;
    }
    /// Not the same.
    friend bool operator!=(pausable_executor const& a, pausable_executor const& b) noexcept { return !(a == b); }

private:
    // A move-only nullary function.
    class task {
    public:
        task() = default;
        template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, task>>>
        explicit task(F&& f) : p_(std::make_unique<model<std::decay_t<F>>>(std::forward<F>(f))) {}
        void operator()() { p_->call(); }

    private:
        struct concept_t {
            virtual ~concept_t() = default;
            virtual void call() = 0;
        };
        template <class F>
        struct model final : concept_t {
            explicit model(F&& f) : fn(std::move(f)) {}
            explicit model(F const& f) : fn(f) {}
            void call() override { fn(); }
            F fn;
        };
        std::unique_ptr<concept_t> p_;
    };

    struct gate {
        bool frozen = false;
        std::deque<task> held;
    };

    boost::asio::io_context::executor_type inner_;
    std::shared_ptr<gate> gate_;
};

static_assert(boost::asio::execution::is_executor<pausable_executor>::value);

} // namespace baton::sim

#endif
