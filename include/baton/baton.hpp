// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BATON_HPP
#define BATON_BATON_HPP

/** @file
    The single include: everything baton offers, with the aliases that
    docs and examples use.
*/

#include <baton/aws/errors.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/backend/dynamodb.hpp>
#include <baton/backend/file.hpp>
#include <baton/backend/memory.hpp>
#include <baton/backend/s3.hpp>
#include <baton/clock.hpp>
#include <baton/election.hpp>
#include <baton/error.hpp>
#include <baton/fenced.hpp>
#include <baton/http/client.hpp>
#include <baton/kv.hpp>
#include <baton/lease.hpp>
#include <baton/lease_options.hpp>
#include <baton/retry.hpp>
#include <baton/run_while_held.hpp>
#include <baton/signer.hpp>
#include <baton/settlement.hpp>
#include <baton/store.hpp>

namespace baton {

/// A lease on the in-process memory store (demos, tests, benchmarks).
using memory_lease = basic_lease<memory_backend>;
/// Leader election on the in-process memory store.
using memory_election = basic_election<memory_backend>;
/// A lease on a DynamoDB table (SigV4-signed requests).
using dynamodb_lease = basic_lease<dynamodb_backend, steady_clock, standard_retry, aws::sigv4_signer>;
/// Leader election on a DynamoDB table.
using dynamodb_election = basic_election<dynamodb_backend, steady_clock, standard_retry, aws::sigv4_signer>;
/// A lease on a local directory, shared by the processes of one host (the CLI's `file:///dir` store).
using file_lease = basic_lease<file_backend>;
/// Leader election among the processes of one host, on a local directory.
using file_election = basic_election<file_backend>;
/// A lease on S3 or an S3-compatible store, signed with SigV4 (the store is probed before the first write).
using s3_lease = basic_lease<s3_backend, steady_clock, standard_retry, aws::sigv4_signer>;
/// Leader election on S3 or an S3-compatible store.
using s3_election = basic_election<s3_backend, steady_clock, standard_retry, aws::sigv4_signer>;
/// Fenced writes on the in-process memory store.
using memory_fenced = basic_fenced<memory_backend>;
/// Fenced writes among the processes of one host, on a local directory.
using file_fenced = basic_fenced<file_backend>;
/// Fenced writes on S3 or an S3-compatible store (read, then a conditional write; one request when the version is known).
using s3_fenced = basic_fenced<s3_backend>;
/// Fenced writes on a DynamoDB table (read, then a conditional write; one request when the version is known).
using dynamodb_fenced = basic_fenced<dynamodb_backend>;
/// A versioned key-value store on the in-process memory store.
using memory_kv = basic_kv<memory_backend>;
/// A versioned key-value store shared by the processes of one host, on a local directory.
using file_kv = basic_kv<file_backend>;
/// A versioned key-value store on S3 or an S3-compatible store that honours conditional writes.
using s3_kv = basic_kv<s3_backend>;
/// A versioned key-value store on a DynamoDB table.
using dynamodb_kv = basic_kv<dynamodb_backend>;

} // namespace baton

#endif
