// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_SRC_HPP
#define BATON_SRC_HPP

/** @file
    Layer: top. Include in exactly one translation unit when `BATON_SEPARATE_COMPILATION`
    is defined, to compile once baton's non-template code and the S3 and DynamoDB stores'
    request code (whose instantiations the store headers then declare `extern`).
*/

#ifndef BATON_SEPARATE_COMPILATION
#error "Define BATON_SEPARATE_COMPILATION in every translation unit before including <baton/src.hpp>"
#endif

#undef BATON_DECL
#define BATON_DECL

#include <baton/core/impl/error.ipp>
#include <baton/http/impl/endpoint.ipp>
#include <baton/aws/impl/sigv4.ipp>
#include <baton/aws/impl/endpoint.ipp>
#include <baton/aws/impl/profile.ipp>
#include <baton/aws/impl/xml.ipp>
#include <baton/aws/impl/credential_source.ipp>
#include <baton/backend/impl/dynamodb_json.ipp>
#include <baton/backend/impl/file_store.ipp>
#include <baton/recipe/impl/lease_record.ipp>

// The S3 and DynamoDB stores' request code: their headers declare these instantiations extern.
#include <baton/backend/dynamodb.hpp>
#include <baton/backend/s3.hpp>

namespace baton {
template class basic_dynamodb_backend<void>;
} // namespace baton
namespace baton::detail {
template void s3_get<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, s3_get_handler);
template void s3_put<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, std::string, precondition,
                       s3_put_handler);
template void s3_copy<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, std::string, s3_put_handler);
template void s3_erase<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, precondition, s3_erase_handler);
template void s3_list<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, std::string, std::size_t,
                        s3_list_handler);
template void s3_probe<>(std::shared_ptr<s3_state>, aws::signed_channel, s3_probe_handler);
template void s3_create_bucket<>(std::shared_ptr<s3_state>, aws::signed_channel, s3_bucket_handler);
} // namespace baton::detail

#endif
