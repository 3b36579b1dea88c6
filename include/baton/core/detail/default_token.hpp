// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_DETAIL_DEFAULT_TOKEN_HPP
#define BATON_CORE_DETAIL_DEFAULT_TOKEN_HPP

// Layer: core, internal. The completion token an operation of a recipe object uses when the
// caller passes none: the one its executor names (so that `as_default_on_t<memory_lease>` with
// `use_awaitable` makes `co_await l.async_acquire()` work), else `deferred`.

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <type_traits>

namespace baton::detail {

template <class Executor>
using default_token_t = std::conditional_t<std::is_void_v<boost::asio::default_completion_token_t<Executor>>,
                                           boost::asio::deferred_t, boost::asio::default_completion_token_t<Executor>>;

} // namespace baton::detail

#endif
