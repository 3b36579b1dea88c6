// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AZURE_HPP
#define BATON_AZURE_HPP

/** @file
    Top of the house: every recipe on Azure Blob Storage (or Azurite), with Shared Key or SAS
    authentication. The backend and the recipes, with the aliases that name each recipe on this
    store. A recipe does not know its backend and a backend does not know the recipes, so the
    aliases live here, above both.
*/

#include <baton/backend/azure_blob.hpp>
#include <baton/recipe/election.hpp>
#include <baton/recipe/fenced.hpp>
#include <baton/recipe/kv.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/recipe/lease_table.hpp>

namespace baton {

/// A lease on Azure Blob Storage (the store is probed before the first write).
using azure_lease = basic_lease<azure_blob_backend>;
/// Leader election on Azure Blob Storage.
using azure_election = basic_election<azure_blob_backend>;
/// Fenced writes on Azure Blob Storage (read, then a conditional write; one request when the version is known).
using azure_fenced = basic_fenced<azure_blob_backend>;
/// A versioned key-value store on Azure Blob Storage.
using azure_kv = basic_kv<azure_blob_backend>;
/// A lease table (shards owned by workers) in Azure Blob Storage.
using azure_lease_table = basic_lease_table<azure_blob_backend>;

} // namespace baton

#endif
