// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_DETAIL_ERASED_COMPOSE_HPP
#define BATON_CORE_DETAIL_ERASED_COMPOSE_HPP

// Layer: core, internal. `async_compose` with the caller's handler type-erased first, so that an
// operation and everything it calls below (machines, store operations, settlement reads) are
// compiled once per operation type instead of once per handler type: a program that calls
// `async_write` from thirty places, each with its own lambda, compiles the write once. The
// cost is one allocation per operation (through the handler's associated allocator), next to
// a store round trip. The erased handler keeps the caller's executor, allocator and
// cancellation slot.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/compose.hpp>

#include <utility>

namespace baton::detail {

template <class Signature, class Token, class Op, class Executor>
auto async_compose_erased(Op&& op, Token&& token, Executor const& ex) {
    using erased_handler = boost::asio::any_completion_handler<Signature>;
    return boost::asio::async_initiate<Token, Signature>(
        [](auto handler, std::decay_t<Op> op, Executor ex) {
            erased_handler erased(std::move(handler));
            boost::asio::async_compose<erased_handler, Signature>(std::move(op), erased, ex);
        },
        token, std::forward<Op>(op), ex);
}

} // namespace baton::detail

#endif
