// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_DYNAMODB_HPP
#define BATON_DYNAMODB_HPP

/** @file
    Top of the house: every recipe on a DynamoDB table, with SigV4-signed requests.
    The backend and the recipes, with the aliases that name each recipe on
    this store. A recipe does not know its backend and a backend does not
    know the recipes, so the aliases live here, above both.
*/

#include <baton/aws/sigv4.hpp>
#include <baton/backend/dynamodb.hpp>
#include <baton/recipe/election.hpp>
#include <baton/recipe/fenced.hpp>
#include <baton/recipe/kv.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/recipe/lease_table.hpp>

namespace baton {

/// A lease on a DynamoDB table (SigV4-signed requests).
using dynamodb_lease = basic_lease<dynamodb_backend, steady_clock, standard_retry, aws::sigv4_signer>;
/// Leader election on a DynamoDB table.
using dynamodb_election = basic_election<dynamodb_backend, steady_clock, standard_retry, aws::sigv4_signer>;
/// Fenced writes on a DynamoDB table (one conditional request, with the fence kept in its own attribute).
using dynamodb_fenced = basic_fenced<dynamodb_backend>;
/// A versioned key-value store on a DynamoDB table.
using dynamodb_kv = basic_kv<dynamodb_backend>;

/// A lease table (shards owned by workers) in a DynamoDB table.
using dynamodb_lease_table = basic_lease_table<dynamodb_backend, steady_clock, standard_retry, aws::sigv4_signer>;

} // namespace baton

#endif
