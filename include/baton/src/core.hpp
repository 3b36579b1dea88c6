// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_SRC_CORE_HPP
#define BATON_SRC_CORE_HPP

/** @file
    Top of the house. Part of `<baton/src.hpp>`: baton's non-template code (errors, text,
    randomness and retries, SigV4, the AWS configuration and credentials, Azure accounts and
    Shared Key, the JSON, XML and record parsers, the stores' non-template parts, the lease
    machine, the lease table's plan, lease_metrics), compiled once. Include it in exactly one
    translation unit of a program built with `BATON_SEPARATE_COMPILATION`, or include
    `<baton/src.hpp>` for every part at once.
*/

#ifndef BATON_SEPARATE_COMPILATION
#error "Define BATON_SEPARATE_COMPILATION in every translation unit before including <baton/src/core.hpp>"
#endif

#undef BATON_DECL
#define BATON_DECL

#include <baton/core/impl/error.ipp>
#include <baton/core/impl/text.ipp>
#include <baton/core/impl/random.ipp>
#include <baton/core/impl/retry.ipp>
#include <baton/core/impl/environment.ipp>
#include <baton/http/impl/endpoint.ipp>
#include <baton/http/impl/request_bytes.ipp>
#include <baton/http/impl/crypto.ipp>
#include <baton/http/impl/xml.ipp>
#include <baton/aws/impl/sigv4.ipp>
#include <baton/aws/impl/endpoint.ipp>
#include <baton/aws/impl/profile.ipp>
#include <baton/aws/impl/xml.ipp>
#include <baton/aws/impl/credential_source.ipp>
#include <baton/aws/impl/errors.ipp>
#include <baton/aws/impl/provider_options.ipp>
#include <baton/aws/impl/settings_rules.ipp>
#include <baton/aws/impl/endpoint_sources.ipp>
#include <baton/aws/impl/profile_source.ipp>
#include <baton/aws/impl/web_identity_sources.ipp>
#include <baton/aws/impl/process_source.ipp>
#include <baton/aws/impl/provider_state.ipp>
#include <baton/aws/impl/sso_source.ipp>
#include <baton/azure/impl/account.ipp>
#include <baton/azure/impl/shared_key.ipp>
#include <baton/azure/impl/errors.ipp>
#include <baton/azure/impl/list_blobs.ipp>
#include <baton/store/impl/settlement.ipp>
#include <baton/store/impl/record_store.ipp>
#include <baton/store/impl/recent_writers.ipp>
#include <baton/store/impl/commit_pointer.ipp>
#include <baton/store/impl/commit_protocol.ipp>
#include <baton/store/impl/commit_machines.ipp>
#include <baton/backend/impl/dynamodb_json.ipp>
#include <baton/backend/impl/dynamodb_replies.ipp>
#include <baton/backend/impl/file_store.ipp>
#include <baton/backend/impl/file.ipp>
#include <baton/backend/impl/memory.ipp>
#include <baton/backend/impl/s3_params.ipp>
#include <baton/backend/impl/dynamodb_params.ipp>
#include <baton/backend/impl/s3_requests.ipp>
#include <baton/backend/impl/azure_blob_params.ipp>
#include <baton/backend/impl/azure_blob_requests.ipp>
#include <baton/backend/impl/dynamodb_state.ipp>
#include <baton/recipe/impl/lease_record.ipp>
#include <baton/recipe/impl/lease_turns.ipp>
#include <baton/recipe/impl/lease_machine.ipp>
#include <baton/recipe/impl/leader_watch.ipp>
#include <baton/recipe/impl/lease_metrics.ipp>
#include <baton/recipe/impl/envelope.ipp>
#include <baton/recipe/impl/fenced_machine.ipp>
#include <baton/recipe/impl/kv_machine.ipp>
#include <baton/recipe/impl/shard_record.ipp>
#include <baton/recipe/impl/table_plan.ipp>
#include <baton/recipe/impl/lease_observer.ipp>
#include <baton/recipe/impl/write_observer.ipp>
#include <baton/recipe/impl/lease_options.ipp>
#include <baton/recipe/impl/lease.ipp>
#include <baton/recipe/impl/lease_table.ipp>

#endif
