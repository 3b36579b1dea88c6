// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_ENDPOINT_SOURCES_IPP
#define BATON_AWS_IMPL_ENDPOINT_SOURCES_IPP

// Layer: wire (aws), internal. The compiled part of aws/detail/endpoint_sources.hpp: which hosts
// may serve container credentials.
#include <baton/aws/detail/endpoint_sources.hpp>

namespace baton::aws::detail {

BATON_DECL bool container_host_allowed(http::endpoint const& ep) {
    if (ep.is_tls()) return true;
    if (ep.host == "localhost") return true;
    error_code ec;
    auto const a = asio::ip::make_address(ep.host, ec);
    if (ec) return false;
    if (a.is_loopback()) return true;
    if (a.is_v4()) {
        auto const s = a.to_string();
        return s == "169.254.170.2" || s == "169.254.170.23";
    }
    return a == asio::ip::make_address("fd00:ec2::23");
}

} // namespace baton::aws::detail

#endif
