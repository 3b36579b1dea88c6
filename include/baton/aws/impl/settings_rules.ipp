// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_SETTINGS_RULES_IPP
#define BATON_AWS_IMPL_SETTINGS_RULES_IPP

// Layer: wire (aws), internal. The compiled part of aws/detail/settings_rules.hpp: the rules every
// AWS backend's settings share.
#include <baton/aws/detail/settings_rules.hpp>

namespace baton::aws::detail {

BATON_DECL std::string region_problem(std::string_view region) {
    if (region.empty()) return "region must be set (e.g. us-east-1)";
    for (char c : region)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return "region may contain only a-z, 0-9 and '-' (e.g. us-east-1)";
    return {};
}

BATON_DECL std::string service_settings_problem(std::string_view region, std::string_view endpoint,
                                                credentials const& creds, bool has_provider,
                                                http::client_options const& http) {
    if (auto p = region_problem(region); !p.empty()) return p;
    if (!endpoint.empty()) {
        diagnostics d;
        if (!http::parse_endpoint(endpoint, d)) return "endpoint: " + d.message;
    }
    if (has_provider) {
        if (!creds.access_key_id.empty() || !creds.secret_access_key.empty())
            return "set either credentials or credentials_provider, not both";
    } else {
        if (creds.access_key_id.empty())
            return "credentials.access_key_id must be set (or set credentials_provider, e.g. aws::default_chain)";
        if (creds.secret_access_key.empty()) return "credentials.secret_access_key must be set";
    }
    try {
        http.validate();
    } catch (config_error const& e) {
        return std::string("http: ") + e.what();
    }
    return {};
}

} // namespace baton::aws::detail

#endif
