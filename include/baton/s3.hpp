// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_S3_HPP
#define BATON_S3_HPP

/** @file
    Top of the house: every recipe on S3 or an S3-compatible store, with SigV4-signed requests.
    The backend and the recipes, with the aliases that name each recipe on
    this store. A recipe does not know its backend and a backend does not
    know the recipes, so the aliases live here, above both.
*/

#include <baton/aws/sigv4.hpp>
#include <baton/backend/s3.hpp>
#include <baton/recipe/election.hpp>
#include <baton/recipe/fenced.hpp>
#include <baton/recipe/kv.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/recipe/lease_table.hpp>

namespace baton {

/// A lease on S3 or an S3-compatible store, signed with SigV4 (the store is probed before the first write).
using s3_lease = basic_lease<s3_backend, steady_clock, standard_retry, aws::sigv4_signer>;
/// Leader election on S3 or an S3-compatible store.
using s3_election = basic_election<s3_backend, steady_clock, standard_retry, aws::sigv4_signer>;
/// Fenced writes on S3 or an S3-compatible store (read, then a conditional write; one request when the version is known).
using s3_fenced = basic_fenced<s3_backend>;
/// A versioned key-value store on S3 or an S3-compatible store that honours conditional writes.
using s3_kv = basic_kv<s3_backend>;

/// A lease table (shards owned by workers) in S3 or an S3-compatible store that honours preconditions.
using s3_lease_table = basic_lease_table<s3_backend, steady_clock, standard_retry, aws::sigv4_signer>;

} // namespace baton

#endif
