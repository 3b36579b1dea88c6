// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_FILE_HPP
#define BATON_FILE_HPP

/** @file
    Top of the house: every recipe on a local directory shared by the processes of one host (the CLI's `file:///dir` store).
    The backend and the recipes, with the aliases that name each recipe on
    this store. A recipe does not know its backend and a backend does not
    know the recipes, so the aliases live here, above both.
*/

#include <baton/backend/file.hpp>
#include <baton/recipe/election.hpp>
#include <baton/recipe/fenced.hpp>
#include <baton/recipe/kv.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/recipe/lease_table.hpp>

namespace baton {

/// A lease on a local directory, shared by the processes of one host (the CLI's `file:///dir` store).
using file_lease = basic_lease<file_backend>;
/// Leader election among the processes of one host, on a local directory.
using file_election = basic_election<file_backend>;
/// Fenced writes among the processes of one host, on a local directory.
using file_fenced = basic_fenced<file_backend>;
/// A versioned key-value store shared by the processes of one host, on a local directory.
using file_kv = basic_kv<file_backend>;

/// A lease table (shards owned by workers) in a directory of this machine.
using file_lease_table = basic_lease_table<file_backend>;

} // namespace baton

#endif
