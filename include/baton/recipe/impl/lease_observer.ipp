// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_LEASE_OBSERVER_IPP
#define BATON_RECIPE_IMPL_LEASE_OBSERVER_IPP

// Layer: recipes, internal. The compiled part of recipe/lease_observer.hpp: how a store answer
// is classified.
#include <baton/recipe/lease_observer.hpp>

namespace baton {

BATON_DECL answer_kind classify_answer(error_code const& ec, bool write) noexcept {
    if (!ec) return answer_kind::ok;
    if (ec == errc::throttled) return answer_kind::throttled;
    if (ec == errc::precondition_failed || ec == errc::conflict) return answer_kind::conflict;
    if (write && outcome_unknown(ec)) return answer_kind::ambiguous;
    return answer_kind::failed;
}

} // namespace baton

#endif
