// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_COMMIT_PROTOCOL_HPP
#define BATON_COMMIT_PROTOCOL_HPP

/** @file
    Top of the house: every recipe on an S3-compatible store that ignores preconditions,
    coordinated through a lock store that honours them (`basic_commit_protocol`,
    <baton/store/commit_protocol.hpp>, has the protocol and its safety argument).
    The aliases name the compositions and each recipe on them.
*/

#include <baton/aws/sigv4.hpp>
#include <baton/backend/dynamodb.hpp>
#include <baton/backend/file.hpp>
#include <baton/backend/s3.hpp>
#include <baton/recipe/election.hpp>
#include <baton/recipe/fenced.hpp>
#include <baton/recipe/kv.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/recipe/lease_table.hpp>
#include <baton/store/commit_protocol.hpp>

namespace baton {

/// Objects in S3 or an S3-compatible store (preconditions not needed), commits in DynamoDB.
using s3_dynamodb_commit = basic_commit_protocol<s3_backend, dynamodb_backend>;
/// Objects in S3 or an S3-compatible store, commits in a directory of this machine (one host).
using s3_file_commit = basic_commit_protocol<s3_backend, file_backend>;

/// A lease whose record lives in S3 through a DynamoDB commit table.
using s3_dynamodb_lease = basic_lease<s3_dynamodb_commit, steady_clock, standard_retry, aws::sigv4_signer>;
/// Leader election on S3 through a DynamoDB commit table.
using s3_dynamodb_election = basic_election<s3_dynamodb_commit, steady_clock, standard_retry, aws::sigv4_signer>;
/// Fenced writes on S3 through a DynamoDB commit table.
using s3_dynamodb_fenced = basic_fenced<s3_dynamodb_commit>;
/// A versioned key-value store on S3 through a DynamoDB commit table.
using s3_dynamodb_kv = basic_kv<s3_dynamodb_commit>;

/// A lease table whose records live in S3 through a DynamoDB commit table.
using s3_dynamodb_lease_table = basic_lease_table<s3_dynamodb_commit, steady_clock, standard_retry, aws::sigv4_signer>;

} // namespace baton

#endif
