// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_DETAIL_POST_COMPLETION_HPP
#define BATON_CORE_DETAIL_POST_COMPLETION_HPP

// Layer: core, internal. How every layer completes an operation: later, never inside the
// caller, through the executor it runs on, and without the allocations that posting through
// an any_io_executor costs.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <type_traits>
#include <utility>

namespace baton::detail {

/// Runs `h(args...)` later, never inside the caller: posted through `ex`, on the handler's associated executor.
template <class Executor, class Handler, class... Args>
void post_completion(Executor const& ex, Handler&& h, Args&&... args) {
    // Through the io_context's own executor when that is what an any_io_executor holds: a
    // type-erased handler's associated executor is then built around it in place, where around an
    // any_io_executor it takes two heap allocations per completion.
    if constexpr (std::is_same_v<Executor, boost::asio::any_io_executor>) {
        if (auto const* io = ex.template target<boost::asio::io_context::executor_type>())
            return boost::asio::post(*io, boost::asio::append(std::forward<Handler>(h), std::forward<Args>(args)...));
    }
    boost::asio::post(ex, boost::asio::append(std::forward<Handler>(h), std::forward<Args>(args)...));
}

/** Runs `h(args...)` through its associated executor, inline when that executor allows it. Only
    for an answer that is itself being delivered by a posted completion (a response that
    arrived), never from the function that started the operation: the handler is then still
    never run inside its initiating function, and one hop through the scheduler is saved. */
template <class Executor, class Handler, class... Args>
void dispatch_completion(Executor const& ex, Handler&& h, Args&&... args) {
    if constexpr (std::is_same_v<Executor, boost::asio::any_io_executor>) {
        if (auto const* io = ex.template target<boost::asio::io_context::executor_type>())
            return boost::asio::dispatch(*io, boost::asio::append(std::forward<Handler>(h), std::forward<Args>(args)...));
    }
    boost::asio::dispatch(ex, boost::asio::append(std::forward<Handler>(h), std::forward<Args>(args)...));
}

} // namespace baton::detail

#endif
