// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_IMPL_DYNAMODB_PARAMS_IPP
#define BATON_BACKEND_IMPL_DYNAMODB_PARAMS_IPP

// Layer: backends, internal. The compiled part of backend/dynamodb_params.hpp: the settings'
// rules and endpoint.
#include <baton/backend/dynamodb_params.hpp>

namespace baton {

BATON_DECL void dynamodb_backend_params::validate() const {
    auto fail = [](std::string m) { throw config_error("dynamodb_backend_params: " + std::move(m)); };
    if (auto problem = aws::detail::service_settings_problem(region, endpoint, credentials,
                                                             credentials_provider.has_value(), http);
        !problem.empty())
        fail(problem);
    if (table.size() < 3 || table.size() > 255)
        fail("table must be 3 to 255 characters (it is " + std::to_string(table.size()) + ")");
    for (char c : table)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '.' || c == '-'))
            fail("table may only contain A-Z, a-z, 0-9, '_', '.' and '-'");
    if (partition_key.empty() || partition_key.size() > 255)
        fail("partition_key must be 1 to 255 bytes");
    if (!detail::is_utf8(partition_key)) fail("partition_key must be valid UTF-8");
    if (partition_key == detail::dynamodb::version_attribute || partition_key == detail::dynamodb::body_attribute)
        fail("partition_key must not be 'ver' or 'body' (the backend's own attributes)");
    if (max_body_bytes == 0 || max_body_bytes > 180 * 1024)
        fail("max_body_bytes must be 1 to 184320 (DynamoDB items hold at most 400 KB, and JSON bodies are "
             "stored twice)");
    if (table_wait_timeout <= std::chrono::milliseconds::zero() || table_wait_timeout > std::chrono::hours(24))
        fail("table_wait_timeout must be positive and at most 24 hours");
    if (max_scan_pages == 0) fail("max_scan_pages must be at least 1");
}

BATON_DECL std::string dynamodb_backend_params::effective_endpoint() const {
    if (!endpoint.empty()) return endpoint;
    return aws::default_endpoint_url("dynamodb", region);
}

} // namespace baton

#endif
