// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AZURE_IMPL_ERRORS_IPP
#define BATON_AZURE_IMPL_ERRORS_IPP
// Layer: wire (azure), internal. The compiled part of azure/errors.hpp: the error document and
// what an answer means.
#include <baton/azure/errors.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/http/detail/xml.hpp>

namespace baton::azure {
namespace detail {

struct blob_code_mapping {
    std::string_view code;
    errc value;
};

inline constexpr blob_code_mapping blob_codes[] = {
    // Refusals: the blob is not in the state the condition named.
    {"ConditionNotMet", errc::precondition_failed},
    {"BlobAlreadyExists", errc::precondition_failed},
    // Final answers about the container's state, not transient conflicts.
    {"ContainerAlreadyExists", errc::precondition_failed},
    // A native Azure lease held by someone else: the write was not refused for the blob's state,
    // and no retry or re-read can pass it.
    {"LeaseIdMissing", errc::foreign_record},
    {"LeaseIdMismatchWithBlobOperation", errc::foreign_record},
    {"LeaseNotPresentWithBlobOperation", errc::foreign_record},
    {"LeaseLost", errc::foreign_record},
    {"BlobNotFound", errc::not_found},
    {"ContainerNotFound", errc::not_found},
    {"ResourceNotFound", errc::not_found},
    {"AuthenticationFailed", errc::auth_failed},
    {"InvalidAuthenticationInfo", errc::auth_failed},
    {"NoAuthenticationInformation", errc::auth_failed},
    {"InsufficientAccountPermissions", errc::auth_failed},
    {"AccountIsDisabled", errc::auth_failed},
    // The service's throttling answers.
    {"ServerBusy", errc::throttled},
    {"OperationTimedOut", errc::throttled},
    {"InternalError", errc::service_unavailable},
};

// Masks the value of every `sig=` in `s`: a SAS signature the service may quote back.
BATON_DECL void mask_signatures(std::string& s) {
    for (std::size_t at = s.find("sig="); at != std::string::npos; at = s.find("sig=", at + 4)) {
        std::size_t const start = at + 4;
        std::size_t end = start;
        while (end < s.size() && s[end] != '&' && s[end] != '"' && s[end] != '\'' &&
               static_cast<unsigned char>(s[end]) > 0x20)
            ++end;
        if (end > start) s.replace(start, end - start, "***");
    }
}

} // namespace detail

BATON_DECL error_code parse_blob_error(std::string_view xml_body, blob_error& out, diagnostics& diag) {
    out = blob_error{};
    baton::detail::xml::xml_limits lim;
    lim.max_bytes = 1024u * 1024u;
    baton::detail::xml::element root;
    if (auto ec = baton::detail::xml::parse_xml(xml_body, root, diag, lim)) return ec;
    if (root.local_name() != "Error") {
        diag.message = "expected an Azure <Error> document, got <" + std::string(root.local_name()) + ">";
        return errc::invalid_response;
    }
    std::string_view const code = baton::detail::trim(root.child_text("Code"));
    if (code.empty()) {
        diag.message = "the Azure <Error> document has no <Code>";
        return errc::invalid_response;
    }
    out.code = code;
    // "<what went wrong>\nRequestId:<id>\nTime:<when>": keep the first, take the id.
    std::string_view message = root.child_text("Message");
    if (auto const at = message.find("\nRequestId:"); at != std::string_view::npos) {
        std::string_view id = message.substr(at + 11);
        id = id.substr(0, id.find('\n'));
        out.request_id = baton::detail::trim(id);
        message = message.substr(0, at);
    }
    out.message = baton::detail::trim(message);
    detail::mask_signatures(out.message);
    return {};
}

BATON_DECL baton::error_code classify_blob(unsigned status, std::string_view error_code) noexcept {
    std::string_view const code = baton::detail::trim(error_code);
    for (auto const& m : detail::blob_codes)
        if (m.code == code) return m.value;
    if (code.starts_with("Authorization")) return errc::auth_failed;
    if (status >= 200 && status < 300) return code.empty() ? baton::error_code{} : baton::error_code(errc::invalid_response);
    switch (status) {
    case 304:
    case 412: return errc::precondition_failed;
    case 401:
    case 403: return errc::auth_failed;
    case 404: return errc::not_found;
    case 408: return errc::timeout;
    case 409: return errc::conflict;
    case 429: return errc::throttled;
    case 501: return errc::capability_missing;
    default: break;
    }
    if (status >= 400 && status < 500) return errc::invalid_argument;
    if (status >= 500 && status < 600) return errc::service_unavailable;
    return errc::invalid_response;
}

} // namespace baton::azure

#endif
