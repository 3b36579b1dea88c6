// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_IMPL_S3_PARAMS_IPP
#define BATON_BACKEND_IMPL_S3_PARAMS_IPP

// Layer: backends, internal. The compiled part of backend/s3_params.hpp: the settings' rules.
#include <baton/backend/s3_params.hpp>

namespace baton {

BATON_DECL void s3_backend_params::validate() const {
    auto fail = [](std::string const& why) { throw config_error("s3_backend_params: " + why); };
    if (bucket.size() < 3 || bucket.size() > 63)
        fail("bucket must be 3 to 63 characters (it is " + std::to_string(bucket.size()) + ")");
    for (char c : bucket) {
        bool const ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
        if (!ok) fail("bucket may contain only lower-case letters, digits, '.' and '-'");
    }
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (!alnum(bucket.front()) || !alnum(bucket.back()))
        fail("bucket must start and end with a lower-case letter or a digit");
    if (auto problem = aws::detail::service_settings_problem(region, endpoint, credentials,
                                                             credentials_provider.has_value(), http);
        !problem.empty())
        fail(problem);
    if (probe_prefix.empty()) fail("probe_prefix must not be empty");
    if (key_prefix.size() + probe_prefix.size() > 960)
        fail("key_prefix and probe_prefix together must be at most 960 bytes, to leave room for keys");
    if (max_body_bytes == 0) fail("max_body_bytes must be positive");
    if (max_body_bytes > http.max_response_body_bytes)
        fail("max_body_bytes (" + std::to_string(max_body_bytes) +
             ") must not exceed http.max_response_body_bytes (" + std::to_string(http.max_response_body_bytes) +
             "), or records could be written but not read back");
}

} // namespace baton

#endif
