// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_IMPL_DYNAMODB_STATE_IPP
#define BATON_BACKEND_IMPL_DYNAMODB_STATE_IPP

// Layer: backends, internal. The compiled part of backend/detail/dynamodb_state.hpp: how a
// DynamoDB answer becomes a result, and the table-level explanations.
#include <baton/backend/detail/dynamodb_state.hpp>

namespace baton::detail {

BATON_DECL bool dynamodb_expired_token(http::response const& res) {
    if (res.result_int() != 400) return false;
    std::string_view type;
    if (auto it = res.find("x-amzn-ErrorType"); it != res.end())
        type = std::string_view(it->value().data(), it->value().size());
    diagnostics scratch;
    dynamodb::parse_error(res.result_int(), res.body(), type, scratch);
    return scratch.service_code == "ExpiredTokenException" || scratch.service_code == "ExpiredToken";
}

BATON_DECL std::string dynamodb_state::create_hint() const {
    return "create it with dynamodb_backend::async_create_table, or: aws dynamodb create-table --table-name " +
           params.table + " --attribute-definitions AttributeName=" + params.partition_key +
           ",AttributeType=S --key-schema AttributeName=" + params.partition_key +
           ",KeyType=HASH --billing-mode PAY_PER_REQUEST";
}

BATON_DECL std::string dynamodb_state::expected_schema() const {
    return "exactly one HASH key named '" + params.partition_key +
           "' of type S (dynamodb_backend_params::partition_key)";
}

BATON_DECL void dynamodb_state::explain(diagnostics& d) const {
    std::string const said = d.message.empty() ? std::string() : " (service said: " + d.message + ")";
    if (d.service_code == "ResourceNotFoundException") {
        d.message = "table '" + params.table + "' does not exist at " + ep.origin() + " in region " +
                    params.region + ": " + create_hint() + said;
    } else if (d.service_code == "ValidationException" && dynamodb::is_key_schema_message(d.message)) {
        d.message = "table '" + params.table + "' does not have the key schema dynamodb_backend expects: " +
                    expected_schema() + "; dynamodb_backend::async_check_table shows the table's schema" + said;
    }
}

BATON_DECL dynamodb_call_result dynamodb_state::finish_call(std::string_view op, error_code ec, http::response res,
                                                            http::request_info const& info) const {
    dynamodb_call_result r;
    if (ec) {
        r.ec = ec;
        r.diag = info.diag;
        if (r.diag.message.empty()) r.diag.message = std::string(op) + " to " + ep.origin() + ": " + ec.message();
        return r;
    }
    r.status = res.result_int();
    r.diag.http_status = r.status;
    if (auto it = res.find("x-amzn-RequestId"); it != res.end()) r.diag.request_id = std::string(it->value());
    if (auto it = res.find("x-amz-crc32"); it != res.end()) {
        if (!dynamodb::crc32_matches(std::string_view(it->value().data(), it->value().size()), res.body())) {
            r.ec = errc::service_unavailable;
            r.diag.message = std::string(op) +
                             ": the response body does not match its x-amz-crc32 checksum (corrupted in "
                             "transit); the request may have been applied";
            return r;
        }
    }
    r.body = std::move(res.body());
    if (r.status >= 200 && r.status < 300) return r;
    std::string_view type;
    if (auto it = res.find("x-amzn-ErrorType"); it != res.end())
        type = std::string_view(it->value().data(), it->value().size());
    r.ec = dynamodb::parse_error(r.status, r.body, type, r.diag);
    explain(r.diag);
    return r;
}

} // namespace baton::detail

#endif
