// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_WRITE_OBSERVER_IPP
#define BATON_RECIPE_IMPL_WRITE_OBSERVER_IPP

// Layer: recipes, internal. The compiled part of recipe/write_observer.hpp: how a write call's
// end is classified.
#include <baton/recipe/write_observer.hpp>

namespace baton {

BATON_DECL write_outcome classify_write(error_code const& ec) noexcept {
    if (!ec) return write_outcome::ok;
    if (ec == errc::fenced) return write_outcome::fenced;
    if (ec == errc::precondition_failed) return write_outcome::condition;
    if (ec == errc::unknown_outcome) return write_outcome::unknown;
    if (ec == boost::asio::error::operation_aborted) return write_outcome::aborted;
    return write_outcome::failed;
}

} // namespace baton

#endif
