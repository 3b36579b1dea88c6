// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_DETAIL_SETTINGS_RULES_HPP
#define BATON_AWS_DETAIL_SETTINGS_RULES_HPP

// Layer: wire (aws), internal. The rules every AWS backend's settings share
// (region, endpoint URL, credentials or a provider, the HTTP client), written
// once so that S3 and DynamoDB say the same thing about the same mistake.

#include <baton/aws/sigv4.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/http/client.hpp>

#include <string>
#include <string_view>

namespace baton::aws::detail {

/// What is wrong with `region` as an AWS region name (it becomes part of host names), or empty.
BATON_DECL std::string region_problem(std::string_view region);

/** The first shared rule that the settings break, or empty.

    `endpoint` may be empty (the AWS endpoint of the region). Exactly one of
    static credentials (both halves) and a provider must be given. The
    message never echoes a secret.
*/
BATON_DECL std::string service_settings_problem(std::string_view region, std::string_view endpoint,
                                                credentials const& creds, bool has_provider,
                                                http::client_options const& http);

} // namespace baton::aws::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/settings_rules.ipp>
#endif

#endif
