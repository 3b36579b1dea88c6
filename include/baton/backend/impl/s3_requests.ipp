// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_IMPL_S3_REQUESTS_IPP
#define BATON_BACKEND_IMPL_S3_REQUESTS_IPP

// Layer: backends, internal. The compiled part of backend/detail/s3_requests.hpp: key encoding
// and checks, error documents, and the shared state's requests and gates.
#include <baton/backend/detail/s3_requests.hpp>
#include <baton/core/detail/text.hpp>

namespace baton::detail {

BATON_DECL std::string s3_unquote(std::string_view etag) {
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
    return std::string(etag);
}

BATON_DECL error_code s3_response_error(http::response const& res, diagnostics& diag, std::string& code) {
    diag.http_status = res.result_int();
    if (auto it = res.find("x-amz-request-id"); it != res.end()) diag.request_id = std::string(it->value());
    auto const body = trim(res.body());
    if (!body.empty()) {
        s3_xml::s3_error e;
        diagnostics parse_diag;
        if (!s3_xml::parse_s3_error(body, e, parse_diag)) {
            code = e.code;
            diag.service_code = e.code;
            diag.message = e.message;
            if (!e.request_id.empty()) diag.request_id = e.request_id;
        } else {
            diag.message = "the error response is not an S3 error document (" + parse_diag.message + ")";
        }
    }
    return aws::classify_s3(diag.http_status, code);
}

BATON_DECL error_code s3_error_in_success(http::response const& res, diagnostics& diag) {
    auto const body = trim(res.body());
    if (body.empty()) return {};
    s3_xml::element root;
    diagnostics parse_diag;
    if (s3_xml::parse_xml(body, root, parse_diag)) {
        diag.http_status = res.result_int();
        diag.message = "a " + std::to_string(res.result_int()) +
                       " response to a write carried a body that is not XML (" + parse_diag.message +
                       "); the write may or may not have been applied";
        return errc::unknown_outcome;
    }
    if (root.local_name() != "Error") return {};
    std::string code;
    auto ec = s3_response_error(res, diag, code);
    return ec ? ec : error_code(errc::invalid_response);
}

BATON_DECL error_code s3_check_key(std::string const& key, std::string const& prefix, diagnostics& diag) {
    if (auto ec = store_limits::check_key(key, diag)) return ec;
    if (prefix.size() + key.size() > store_limits::max_key_bytes) {
        diag.message = "key_prefix and key together exceed S3's limit of " +
                       std::to_string(store_limits::max_key_bytes) + " bytes";
        return errc::invalid_argument;
    }
    return {};
}

BATON_DECL bool s3_expired_token(http::response const& res) {
    auto const status = res.result_int();
    if (status != 400 && status != 403) return false;
    diagnostics scratch;
    std::string code;
    s3_response_error(res, scratch, code);
    return code == "ExpiredToken" || code == "TokenRefreshRequired";
}

BATON_DECL error_code s3_write_transport_error(error_code ec, http::request_info const& info) {
    if (info.outcome_unknown() && ec != errc::timeout && ec != s3_asio::error::operation_aborted)
        return errc::unknown_outcome;
    return ec;
}

BATON_DECL aws::s3_address s3_state::resolve(s3_backend_params const& p) {
    diagnostics diag;
    auto addr = aws::resolve_s3_address(p.endpoint, p.region, p.bucket, p.path_style, diag);
    if (!addr) throw config_error("s3_backend_params: " + diag.message);
    return *addr;
}

BATON_DECL http::request s3_state::make_request(s3_bhttp::verb v, std::string target, std::string body) const {
    http::request req{v, target, 11};
    req.set(s3_bhttp::field::host, ep.host_header());
    req.set(s3_bhttp::field::user_agent, "baton");
    req.body() = std::move(body);
    req.prepare_payload();
    return req;
}

BATON_DECL error_code s3_state::gate(bool erase, precondition::kind k, diagnostics& diag) const {
    if (!caps) return {};
    if (erase && k == precondition::kind::matches && !caps->conditional_erase) {
        diag.message = "conditional erase refused: this store does not honour If-Match on DELETE (probe: " +
                       erase_check +
                       "); unconditional erases still work, and leases release with a marker instead";
        return errc::capability_missing;
    }
    if (!erase && k == precondition::kind::absent && !caps->conditional_create) {
        diag.message = "conditional create refused: this store does not honour If-None-Match: * on PUT (probe: " +
                       create_check + "); leases and other conditional writes cannot be made safe on it";
        return errc::capability_missing;
    }
    if (!erase && k == precondition::kind::matches && !caps->conditional_replace) {
        diag.message = "conditional replace refused: this store does not honour If-Match on PUT (probe: " +
                       replace_check + "); leases and other conditional writes cannot be made safe on it";
        return errc::capability_missing;
    }
    return {};
}

} // namespace baton::detail

#endif
