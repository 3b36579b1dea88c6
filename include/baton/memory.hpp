// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_MEMORY_HPP
#define BATON_MEMORY_HPP

/** @file
    Top of the house: every recipe on the in-process memory store (demos, tests, benchmarks).
    The backend and the recipes, with the aliases that name each recipe on
    this store. A recipe does not know its backend and a backend does not
    know the recipes, so the aliases live here, above both.
*/

#include <baton/backend/memory.hpp>
#include <baton/recipe/election.hpp>
#include <baton/recipe/fenced.hpp>
#include <baton/recipe/kv.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/recipe/lease_table.hpp>

namespace baton {

/// A lease on the in-process memory store (demos, tests, benchmarks).
using memory_lease = basic_lease<memory_backend>;
/// Leader election on the in-process memory store.
using memory_election = basic_election<memory_backend>;
/// Fenced writes on the in-process memory store.
using memory_fenced = basic_fenced<memory_backend>;
/// A versioned key-value store on the in-process memory store.
using memory_kv = basic_kv<memory_backend>;

/// A lease table (shards owned by workers) on the in-process memory store.
using memory_lease_table = basic_lease_table<memory_backend>;

} // namespace baton

#endif
