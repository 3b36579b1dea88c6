// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_LEASE_IPP
#define BATON_RECIPE_IMPL_LEASE_IPP

// Layer: recipes, internal. The compiled part of recipe/lease.hpp: the wall-clock token floor.
#include <baton/recipe/lease.hpp>

namespace baton::detail {

BATON_DECL std::uint64_t wall_clock_token_floor() {
    static std::atomic<std::uint64_t> last{0};
    auto const us = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::system_clock::now().time_since_epoch()).count();
    std::uint64_t want = static_cast<std::uint64_t>(std::max<std::int64_t>(1, us));
    std::uint64_t seen = last.load(std::memory_order_relaxed);
    do {
        want = std::max(want, seen + 1);
    } while (!last.compare_exchange_weak(seen, want, std::memory_order_relaxed));
    return want;
}

} // namespace baton::detail

#endif
