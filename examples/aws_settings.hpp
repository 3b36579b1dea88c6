// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_EXAMPLES_AWS_SETTINGS_HPP
#define BATON_EXAMPLES_AWS_SETTINGS_HPP

// Shared by the C++ examples: where an AWS store is and who signs its requests,
// found the way the AWS SDKs and CLI find them, so that the examples run
// unchanged on AWS and against local servers:
// - endpoint: AWS_ENDPOINT_URL_<SERVICE> (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_DYNAMODB),
//   else AWS_ENDPOINT_URL, else AWS's own endpoint for the region;
// - region: AWS_REGION, AWS_DEFAULT_REGION, else the profile's `region`;
// - credentials: the default chain (environment, web identity, profile files,
//   container, instance metadata), refreshed before they expire.

#include <baton/aws/credentials.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/profile.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace examples {

struct aws_settings {
    std::string endpoint; // empty: AWS's endpoint for `region`
    std::string region;
};

// Throws std::runtime_error with one line saying what to fix (never a secret).
inline aws_settings load_aws_settings(std::string_view service_id) {
    baton::diagnostics d;
    aws_settings s;
    auto endpoint = baton::aws::resolve_endpoint_url(service_id, d);
    if (!endpoint) throw std::runtime_error(d.message);
    if (*endpoint) s.endpoint = (*endpoint)->url;
    auto region = baton::aws::resolve_region(d);
    if (!region) throw std::runtime_error(d.message);
    s.region = region->name;
    return s;
}

// Fills an S3 or DynamoDB backend's parameters: endpoint, region, and the default credential chain.
template <class Params>
Params aws_params(boost::asio::any_io_executor ex, std::string_view service_id, Params p) {
    auto s = load_aws_settings(service_id);
    p.endpoint = std::move(s.endpoint);
    p.region = std::move(s.region);
    p.credentials_provider = baton::aws::default_chain(std::move(ex));
    return p;
}

} // namespace examples

#endif
