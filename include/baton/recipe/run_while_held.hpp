// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_RUN_WHILE_HELD_HPP
#define BATON_RECIPE_RUN_WHILE_HELD_HPP

/** @file
    Layer: recipes. `run_while_held`: acquire a lease, run protected work, cancel the work
    the moment the lease is lost (at the renew deadline, before it could
    expire), and release.
*/

#include <baton/core/error.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/recipe/lease_options.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <tuple>
#include <variant>

namespace baton {

namespace detail {
// Tells "the lease was destroyed" from a cancellation; a lease type without the hook is never closed.
template <class Lease>
auto closed_watch_of(Lease const& lease) {
    if constexpr (requires { lease_access::closed_watch(lease); }) return lease_access::closed_watch(lease);
    else return [] { return false; };
}
} // namespace detail

/** Runs `work(grant)` only while `lease` is held.

    Acquires (as `opts` says), then runs the work and waits for loss at the
    same time: on loss the work receives a terminal cancellation, which its
    next cancellable `co_await` sees as `operation_aborted`. Afterwards the
    lease is released, also after a loss (the marker lets others in at once
    if nobody took over).

    @param lease the lease to hold: a `basic_lease`, or any type with the same `async_acquire`,
    `async_wait_lost` and `async_release`
    @param work callable `(lease_grant) -> asio::awaitable<void>`; pass
    `grant.fencing_token` to fenced writes, and watch `lease.remaining()`
    for long steps.
    @param opts how to acquire (see `acquire_options`)
    @returns success when the work finished while held and the release
    succeeded; `errc::lease_lost` when the work was cancelled by loss; the
    acquisition's error when it was never held; `operation_aborted` when
    this operation was cancelled (terminal cancellation: the work is
    cancelled, then the lease released). Exceptions thrown by the work are
    rethrown after the release.

    @par Object lifetimes
    Destroying the lease while this runs abandons it (see `basic_lease`):
    the work is cancelled, no release is sent, and this completes with
    `operation_aborted` without touching the lease again.
*/
template <class Lease, class Work>
boost::asio::awaitable<error_code> run_while_held(Lease& lease, Work work, acquire_options opts = {}) {
    namespace asio = boost::asio;
    using namespace asio::experimental::awaitable_operators;
    // Cancelled, this completes with operation_aborted after the release instead of throwing at
    // the next co_await (which would leave the lease held and renewing with nobody to release it).
    co_await asio::this_coro::throw_if_cancelled(false);
    auto const closed = detail::closed_watch_of(lease);
    // Named variables, not a structured binding: the lambda below captures the grant, and
    // capturing a structured binding is C++20 that clang 14 (Debian 12's) does not implement.
    auto acquire_result = co_await lease.async_acquire(opts, asio::as_tuple(asio::use_awaitable));
    error_code const acquired = std::get<0>(acquire_result);
    if (acquired) co_return acquired;
    auto& grant = std::get<1>(acquire_result);

    std::exception_ptr failure;
    auto guarded = [&]() -> asio::awaitable<void> {
        try {
            co_await work(grant);
        } catch (...) {
            failure = std::current_exception();
        }
    };
    auto ended = co_await (guarded() || lease.async_wait_lost(asio::as_tuple(asio::use_awaitable)));

    error_code outcome;
    asio::cancellation_state const cancellation = co_await asio::this_coro::cancellation_state;
    if (cancellation.cancelled() != asio::cancellation_type::none) {
        outcome = asio::error::operation_aborted;
        failure = nullptr; // the work was cancelled with us: its unwinding is not a failure
    } else if (ended.index() == 1) {
        auto [lost] = std::get<1>(ended);
        outcome = lost ? lost : error_code(errc::lease_lost);
        failure = nullptr; // the work was cancelled by us: its unwinding is not a failure
    }
    if (closed()) { // destroyed while we waited: abandoned, and not ours to touch
        if (failure) std::rethrow_exception(failure);
        co_return outcome ? outcome : error_code(asio::error::operation_aborted);
    }
    auto [released] = co_await lease.async_release(asio::as_tuple(asio::use_awaitable));
    if (failure) std::rethrow_exception(failure);
    if (!outcome && released && released != errc::not_held) outcome = released;
    co_return outcome;
}

} // namespace baton

#endif
