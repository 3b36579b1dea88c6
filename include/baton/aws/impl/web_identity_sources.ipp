// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_WEB_IDENTITY_SOURCES_IPP
#define BATON_AWS_IMPL_WEB_IDENTITY_SOURCES_IPP

// Layer: wire (aws), internal. The compiled part of aws/detail/web_identity_sources.hpp: the STS
// endpoint, its error codes, and paths under the home directory.
#include <baton/aws/detail/web_identity_sources.hpp>

namespace baton::aws::detail {

BATON_DECL boost::system::result<url_target> sts_target(env_lookup const& env, std::optional<std::string> const& region,
                                                        std::string& problem) {
    diagnostics d;
    auto configured = resolve_endpoint_url("STS", d, env);
    if (!configured) {
        problem = d.message;
        return configured.error();
    }
    std::string url = "https://sts.amazonaws.com";
    if (*configured) {
        url = (*configured)->url;
    } else if (region) {
        if (!is_valid_region_name(*region)) {
            problem = "the region '" + printable(*region) + "' is not a region name";
            return error_code(errc::invalid_argument);
        }
        url = default_endpoint_url("sts", *region);
    }
    return split_url(url, problem);
}

BATON_DECL error_code sts_error_code(std::string_view code, unsigned status) {
    if (code == "Throttling" || code == "ThrottlingException" || code == "RequestLimitExceeded") return errc::throttled;
    if (code == "IDPCommunicationError" || code == "ServiceUnavailable" || code == "InternalFailure" || status >= 500)
        return errc::service_unavailable;
    if (code == "ValidationError" || code == "MalformedPolicyDocument" || code == "PackedPolicyTooLarge")
        return errc::invalid_argument;
    return errc::auth_failed; // InvalidIdentityToken, ExpiredTokenException, AccessDenied, IDPRejectedClaim, ...
}

BATON_DECL std::string expand_home(std::string path, env_lookup const& env) {
    if (path == "~" || path.rfind("~/", 0) == 0) {
        if (auto home = env_value(env, "HOME")) return *home + path.substr(1);
    }
    return path;
}

} // namespace baton::aws::detail

#endif
