// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_IMPL_AZURE_BLOB_REQUESTS_IPP
#define BATON_BACKEND_IMPL_AZURE_BLOB_REQUESTS_IPP

// Layer: backends, internal. The compiled part of backend/detail/azure_blob_requests.hpp: error
// answers, key checks, and the shared state's requests, gates and markers.
#include <baton/backend/detail/azure_blob_requests.hpp>

namespace baton::detail {

BATON_DECL error_code azure_response_error(http::response const& res, diagnostics& diag, std::string& code) {
    diag.http_status = res.result_int();
    if (auto it = res.find("x-ms-request-id"); it != res.end()) diag.request_id = std::string(it->value());
    if (auto it = res.find("x-ms-error-code"); it != res.end()) code = std::string(it->value());
    auto const body = trim(res.body());
    if (!body.empty()) {
        azure::blob_error e;
        diagnostics parse_diag;
        if (!azure::parse_blob_error(body, e, parse_diag)) {
            if (code.empty()) code = e.code;
            diag.message = e.message;
        } else if (code.empty()) {
            diag.message = "the error answer is not an Azure error document (" + parse_diag.message + ")";
        }
    }
    diag.service_code = code;
    // A native Azure lease that someone else took on a record: the write was not refused for the
    // record's state, and no retry can pass it. Final, like a record baton cannot read.
    if (code == "LeaseIdMissing" || code == "LeaseIdMismatchWithBlobOperation" || code == "LeaseLost")
        return errc::foreign_record;
    return azure::classify_blob(diag.http_status, code);
}

BATON_DECL error_code azure_check_key(std::string const& key, std::string const& prefix, diagnostics& diag) {
    if (auto ec = store_limits::check_key(key, diag)) return ec;
    if (prefix.size() + key.size() > store_limits::max_key_bytes) {
        diag.message = "key_prefix and key together exceed the limit of " +
                       std::to_string(store_limits::max_key_bytes) + " bytes";
        return errc::invalid_argument;
    }
    // Names the service would store under another name, or list never again: a '\\' is a '/'
    // on the wire, '.' and '..' segments and empty ones are normalised by URL handling on the
    // way, names ending in '.' or '/' are refused by Azure's naming rules, and a control
    // character (or U+FFFE, U+FFFF) breaks every listing of the container.
    std::string const name = prefix + key;
    auto refuse = [&](std::string why) {
        diag.message = "blob name '" + name + "' " + why + " (Azure Blob naming rules)";
        return error_code(errc::invalid_argument);
    };
    if (name.find('\\') != std::string::npos) return refuse("holds '\\', which the service reads as '/'");
    for (unsigned char c : name)
        if (c < 0x20 || c == 0x7f) { // not echoed: it would garble the message
            diag.message = "a blob name holds a control character (Azure Blob naming rules)";
            return errc::invalid_argument;
        }
    if (name.find("\xEF\xBF\xBE") != std::string::npos || name.find("\xEF\xBF\xBF") != std::string::npos)
        return refuse("holds U+FFFE or U+FFFF");
    if (name.back() == '.' || name.back() == '/') return refuse("ends in '.' or '/'");
    std::size_t slashes = 0;
    for (std::size_t start = 0;; ++slashes) {
        auto const end = name.find('/', start);
        auto const segment = std::string_view(name).substr(start, end == std::string::npos ? end : end - start);
        if (segment.empty() || segment == "." || segment == "..") return refuse("has an empty, '.' or '..' segment");
        if (end == std::string::npos) break;
        start = end + 1;
    }
    if (slashes >= 254) return refuse("has more than 254 segments");
    return {};
}

BATON_DECL error_code azure_write_transport_error(error_code ec, http::request_info const& info) {
    if (info.outcome_unknown() && ec != errc::timeout && ec != az_asio::error::operation_aborted)
        return errc::unknown_outcome;
    return ec;
}

BATON_DECL azure::blob_address azure_blob_state::resolve(azure_blob_backend_params const& p) {
    diagnostics diag;
    auto addr = azure::parse_blob_address(p.account.blob_endpoint, diag);
    if (!addr) throw config_error("azure_blob_backend_params: account.blob_endpoint: " + diag.message);
    return *addr;
}

BATON_DECL void azure_blob_state::remember_marker(std::string const& after, std::string marker) {
    if (markers.size() >= max_markers && !markers.count(after)) markers.erase(markers.begin());
    markers[after] = std::move(marker);
}

BATON_DECL http::request azure_blob_state::make_request(az_bhttp::verb v, std::string target, std::string body) const {
    http::request req{v, target, 11};
    req.set(az_bhttp::field::host, address.origin.host_header());
    req.set(az_bhttp::field::user_agent, "baton");
    req.body() = std::move(body);
    req.prepare_payload();
    return req;
}

BATON_DECL error_code azure_blob_state::gate(bool erase, precondition::kind k, diagnostics& diag) const {
    if (!caps) return {};
    if (erase && k == precondition::kind::matches && !caps->conditional_erase) {
        diag.message = "conditional erase refused: this store does not honour If-Match on Delete Blob (probe: " +
                       erase_check + "); unconditional erases still work, and leases release with a marker instead";
        return errc::capability_missing;
    }
    if (!erase && k == precondition::kind::absent && !caps->conditional_create) {
        diag.message = "conditional create refused: this store does not honour If-None-Match: * on Put Blob (probe: " +
                       create_check + "); leases and other conditional writes cannot be made safe on it";
        return errc::capability_missing;
    }
    if (!erase && k == precondition::kind::matches && !caps->conditional_replace) {
        diag.message = "conditional replace refused: this store does not honour If-Match on Put Blob (probe: " +
                       replace_check + "); leases and other conditional writes cannot be made safe on it";
        return errc::capability_missing;
    }
    return {};
}

} // namespace baton::detail

#endif
