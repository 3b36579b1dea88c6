// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_IMPL_AZURE_BLOB_PARAMS_IPP
#define BATON_BACKEND_IMPL_AZURE_BLOB_PARAMS_IPP

// Layer: backends, internal. The compiled part of backend/azure_blob_params.hpp: the settings' rules.
#include <baton/backend/azure_blob_params.hpp>

namespace baton {

BATON_DECL void azure_blob_backend_params::validate() const {
    auto fail = [](std::string const& why) { throw config_error("azure_blob_backend_params: " + why); };
    if (account.name.empty() || account.name.size() > 64) fail("account.name must be 1 to 64 characters");
    for (char c : account.name) {
        bool const ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!ok) fail("account.name may contain only lower-case letters and digits");
    }
    diagnostics diag;
    if (!azure::parse_blob_address(account.blob_endpoint, diag)) fail("account.blob_endpoint: " + diag.message);
    if (container.size() < 3 || container.size() > 63)
        fail("container must be 3 to 63 characters (it is " + std::to_string(container.size()) + ")");
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    for (char c : container)
        if (!alnum(c) && c != '-') fail("container may contain only lower-case letters, digits and '-'");
    if (!alnum(container.front()) || !alnum(container.back()))
        fail("container must start and end with a lower-case letter or a digit");
    if (container.find("--") != std::string::npos) fail("container must not contain \"--\"");
    if (probe_prefix.empty()) fail("probe_prefix must not be empty");
    if (key_prefix.size() + probe_prefix.size() > 960)
        fail("key_prefix and probe_prefix together must be at most 960 bytes, to leave room for keys");
    if (max_body_bytes == 0) fail("max_body_bytes must be positive");
    if (max_body_bytes > http.max_response_body_bytes)
        fail("max_body_bytes (" + std::to_string(max_body_bytes) +
             ") must not exceed http.max_response_body_bytes (" + std::to_string(http.max_response_body_bytes) +
             "), or records could be written but not read back");
    try {
        http.validate();
    } catch (config_error const& e) {
        fail(std::string("http: ") + e.what());
    }
}

} // namespace baton

#endif
