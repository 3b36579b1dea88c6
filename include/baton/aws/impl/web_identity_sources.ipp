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

BATON_DECL http::request sts_form_request(url_target const& target, std::string body) {
    http::request req{bhttp::verb::post, target.target, 11};
    req.set(bhttp::field::host, target.ep.host_header());
    req.set(bhttp::field::content_type, "application/x-www-form-urlencoded; charset=utf-8");
    req.set(bhttp::field::accept, "text/xml");
    req.body() = std::move(body);
    req.prepare_payload();
    return req;
}

BATON_DECL error_code read_sts_credentials(http::response const& res, std::string_view action, std::string const& where,
                                           std::vector<std::string> const& secrets, credentials& out,
                                           std::string& reason, diagnostics& d) {
    d.http_status = res.result_int();
    if (auto rid = res.find("x-amzn-RequestId"); rid != res.end())
        d.request_id = redacted_excerpt(rid->value(), secrets, 80);
    baton::detail::s3_xml::element root;
    diagnostics xml_diag;
    auto const xml_ec = baton::detail::s3_xml::parse_xml(res.body(), root, xml_diag);
    if (res.result_int() != 200 || (!xml_ec && root.local_name() == "ErrorResponse")) {
        std::string code, message;
        if (!xml_ec) {
            if (auto const* e = root.child("Error")) {
                code = redacted_excerpt(e->child_text("Code"), secrets, 80);
                message = redacted_excerpt(e->child_text("Message"), secrets, 300);
            }
            if (d.request_id.empty()) d.request_id = redacted_excerpt(root.child_text("RequestId"), secrets, 80);
        }
        d.service_code = code;
        reason = where + " refused: HTTP " + std::to_string(d.http_status) + (code.empty() ? std::string() : " " + code) +
                 (message.empty() ? std::string() : ": " + message);
        return sts_error_code(code, d.http_status);
    }
    auto invalid = [&](std::string why) {
        reason = where + why;
        return error_code(errc::invalid_response);
    };
    if (xml_ec) return invalid(": " + xml_diag.message);
    std::string const response = std::string(action) + "Response", result = std::string(action) + "Result";
    if (root.local_name() != response)
        return invalid(": unexpected root element '" + redacted_excerpt(root.local_name(), secrets, 64) + "'");
    auto const* r = root.child(result);
    auto const* creds = r != nullptr ? r->child("Credentials") : nullptr;
    if (creds == nullptr) return invalid(": the response has no " + result + "/Credentials");
    for (char const* name : {"AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration"})
        if (creds->child(name) == nullptr || creds->child_text(name).empty())
            return invalid(std::string(": the response has no Credentials/") + name);
    credentials c;
    c.access_key_id = trim_token(creds->child_text("AccessKeyId"));
    c.secret_access_key = trim_token(creds->child_text("SecretAccessKey"));
    c.session_token = trim_token(creds->child_text("SessionToken"));
    auto const exp = trim_token(creds->child_text("Expiration"));
    c.expiration = parse_iso8601(exp);
    if (!c.expiration)
        return invalid(": Credentials/Expiration ('" + redacted_excerpt(exp, secrets, 40) + "') is not an ISO 8601 time");
    if (auto p = credentials_problem(c)) return invalid(": unusable credentials: " + *p);
    out = std::move(c);
    return {};
}

BATON_DECL std::string expand_home(std::string path, env_lookup const& env) {
    if (path == "~" || path.rfind("~/", 0) == 0) {
        if (auto home = env_value(env, "HOME")) return *home + path.substr(1);
    }
    return path;
}

} // namespace baton::aws::detail

#endif
