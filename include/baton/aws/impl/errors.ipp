// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_ERRORS_IPP
#define BATON_AWS_IMPL_ERRORS_IPP

// Layer: wire (aws), internal. The compiled part of aws/errors.hpp: what an S3 or DynamoDB answer
// means.
#include <baton/aws/errors.hpp>

namespace baton::aws {

BATON_DECL error_code classify_s3(unsigned status, std::string_view code) noexcept {
    code = baton::detail::trim(code);
    errc e{};
    if (!code.empty() && (detail::lookup(detail::s3_codes, code, e) || detail::lookup(detail::throttling_codes, code, e)))
        return e;
    if (status >= 200 && status < 300) return code.empty() ? error_code{} : error_code(errc::invalid_response);
    switch (status) {
    case 304: return errc::precondition_failed;
    case 301:
    case 308: return errc::invalid_argument;
    case 307: return errc::service_unavailable;
    case 401:
    case 403: return errc::auth_failed;
    case 404: return errc::not_found;
    case 408: return errc::timeout;
    case 409: return errc::conflict;
    case 412: return errc::precondition_failed;
    case 429: return errc::throttled;
    case 501: return errc::capability_missing;
    default: break;
    }
    if (status >= 400 && status < 500) return errc::invalid_argument;
    if (status >= 500 && status < 600) return errc::service_unavailable;
    return errc::invalid_response;
}

BATON_DECL error_code classify_dynamodb(unsigned status, std::string_view type) noexcept {
    auto const name = dynamodb_error_name(type);
    errc e{};
    if (!name.empty() &&
        (detail::lookup(detail::dynamodb_codes, name, e) || detail::lookup(detail::throttling_codes, name, e)))
        return e;
    if (status >= 200 && status < 300) return name.empty() ? error_code{} : error_code(errc::invalid_response);
    switch (status) {
    case 401:
    case 403: return errc::auth_failed;
    case 404: return errc::not_found;
    case 408: return errc::timeout;
    case 429: return errc::throttled;
    default: break;
    }
    if (status >= 400 && status < 500) return errc::invalid_argument;
    if (status >= 500 && status < 600) return errc::service_unavailable;
    return errc::invalid_response;
}

} // namespace baton::aws

#endif
