// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_ENDPOINT_IPP
#define BATON_AWS_IMPL_ENDPOINT_IPP
// Layer: wire (aws), internal. The compiled part of aws/endpoint.hpp: AWS endpoints per service and region.
#include <baton/aws/endpoint.hpp>

namespace baton::aws {

BATON_DECL std::string endpoint_url_variable(std::string_view service_id) {
    std::string name = "AWS_ENDPOINT_URL_";
    for (char c : service_id) {
        if (c == ' ' || c == '-') c = '_';
        else if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
        name += c;
    }
    return name;
}

BATON_DECL boost::system::result<std::optional<configured_endpoint>>
resolve_endpoint_url(std::string_view service_id, diagnostics& diag, env_lookup const& env) {
    if (service_id.empty()) {
        diag.message = "resolve_endpoint_url: the service id must not be empty (e.g. S3, DynamoDB)";
        return error_code(errc::invalid_argument);
    }
    auto read = [&](std::string const& name) -> std::optional<std::string> {
        auto value = env(name);
        if (value && value->empty()) return std::nullopt;
        return value;
    };
    std::string const ignore_name = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS";
    if (auto ignore = read(ignore_name)) {
        std::string lower;
        for (char c : *ignore) lower += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        if (lower == "true") return std::optional<configured_endpoint>();
        // Stricter than the SDKs (which read anything else as false): "1" or "yes" meant "ignore",
        // and quietly doing the opposite would send requests where the user asked them not to go.
        if (lower != "false") {
            diag.message = ignore_name + " must be 'true' or 'false' (it is set to something else)";
            return error_code(errc::invalid_argument);
        }
    }
    for (std::string const& name : {endpoint_url_variable(service_id), std::string("AWS_ENDPOINT_URL")}) {
        auto url = read(name);
        if (!url) continue;
        diagnostics parse_diag;
        if (!http::parse_endpoint(*url, parse_diag)) {
            diag.message = name + ": " + parse_diag.message + " (fix or unset " + name + ")";
            return error_code(errc::invalid_argument);
        }
        return std::optional<configured_endpoint>(configured_endpoint{std::move(*url), name});
    }
    return std::optional<configured_endpoint>();
}

BATON_DECL boost::system::result<std::optional<configured_endpoint>>
resolve_endpoint_url(std::string_view service_id, shared_config const& files, std::string_view profile_name,
                     diagnostics& diag, env_lookup const& env) {
    auto const* p = files.find(profile_name);
    std::string const label = "profile '" + detail::printable(profile_name) + "'";
    bool const env_decides_ignore = !env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS").value_or(std::string()).empty();
    if (!env_decides_ignore && p != nullptr) {
        if (auto const* ignore = p->find("ignore_configured_endpoint_urls"); ignore != nullptr) {
            std::string lower;
            for (char c : ignore->value) lower += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
            if (lower == "true") return std::optional<configured_endpoint>();
            if (lower != "false") {
                diag.message = label + " (" + ignore->where() +
                               "): ignore_configured_endpoint_urls must be 'true' or 'false'";
                return error_code(errc::invalid_argument);
            }
        }
    }
    // The variables first; with AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true this is "none" and the files are ignored too.
    auto from_env = resolve_endpoint_url(service_id, diag, env);
    if (!from_env || *from_env || p == nullptr) return from_env;
    if (env_decides_ignore) {
        std::string lower;
        auto const value = env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS").value_or(std::string());
        for (char c : value) lower += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        if (lower == "true") return from_env;
    }
    auto checked = [&](profile_setting const& s, std::string source) -> boost::system::result<std::optional<configured_endpoint>> {
        diagnostics parse_diag;
        if (!http::parse_endpoint(s.value, parse_diag)) {
            diag.message = source + ": " + parse_diag.message;
            return error_code(errc::invalid_argument);
        }
        return std::optional<configured_endpoint>(configured_endpoint{s.value, std::move(source)});
    };
    if (auto const* services = p->find("services"); services != nullptr && !services->value.empty()) {
        auto const it = files.services.find(services->value);
        if (it == files.services.end()) {
            diag.message = label + " (" + services->where() + ") names services '" +
                           detail::printable(services->value) + "', but the config file has no [services " +
                           detail::printable(services->value) + "] section";
            return error_code(errc::invalid_argument);
        }
        std::string key;
        for (char c : service_id)
            key += (c == ' ' || c == '-') ? '_' : (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        key += ".endpoint_url";
        if (auto const* url = it->second.find(key); url != nullptr && !url->value.empty())
            return checked(*url, "[services " + detail::printable(services->value) + "] of " + label + " (" +
                                     url->where() + ")");
    }
    if (auto const* url = p->find("endpoint_url"); url != nullptr && !url->value.empty())
        return checked(*url, label + " (" + url->where() + ")");
    return std::optional<configured_endpoint>();
}

BATON_DECL std::string_view aws_dns_suffix(std::string_view region) noexcept {
    return region.starts_with("cn-") ? "amazonaws.com.cn" : "amazonaws.com";
}

BATON_DECL std::string default_endpoint_url(std::string_view endpoint_prefix, std::string_view region) {
    std::string url = "https://";
    url += endpoint_prefix;
    url += '.';
    url += region;
    url += '.';
    url += aws_dns_suffix(region);
    return url;
}

BATON_DECL boost::system::result<s3_address> resolve_s3_address(std::string_view endpoint_url, std::string_view region,
                                                            std::string_view bucket, std::optional<bool> path_style,
                                                            diagnostics& diag) {
    auto fail = [&](std::string why) -> boost::system::result<s3_address> {
        diag.message = std::move(why);
        return error_code(errc::invalid_argument);
    };
    if (bucket.empty()) return fail("the bucket name must not be empty");
    s3_address addr;
    addr.aws_default = endpoint_url.empty();
    std::string url;
    if (addr.aws_default) {
        if (auto problem = detail::region_problem(region); !problem.empty())
            return fail("the " + problem + ", to find the AWS S3 endpoint");
        url = default_endpoint_url("s3", region);
    } else {
        url = endpoint_url;
    }
    diagnostics parse_diag;
    auto parsed = http::parse_endpoint(url, parse_diag);
    if (!parsed) return fail(parse_diag.message);
    addr.endpoint = *parsed;
    // parse_endpoint accepted it, so Boost.URL parses it again; only the host's kind is needed here.
    bool const ip_literal = boost::urls::parse_uri(url)->host_type() != boost::urls::host_type::name;

    auto label_ok = [](std::string_view label) {
        if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
        for (char c : label)
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
        return true;
    };
    bool host_compatible = true; // every dot-separated part of the bucket is a DNS label
    for (std::string_view rest = bucket;;) {
        auto const dot = rest.find('.');
        if (!label_ok(rest.substr(0, dot))) host_compatible = false;
        if (dot == std::string_view::npos) break;
        rest.remove_prefix(dot + 1);
    }
    bool const dotted = bucket.find('.') != std::string_view::npos;

    if (path_style) {
        addr.path_style = *path_style;
    } else {
        addr.path_style = !addr.aws_default || dotted || !host_compatible;
    }
    if (addr.path_style) {
        addr.path_prefix = "/" + boost::urls::encode(bucket, boost::urls::unreserved_chars);
        return addr;
    }
    if (ip_literal)
        return fail("virtual-hosted addressing needs a host name, and the endpoint is an IP address; use "
                    "path-style addressing");
    if (!host_compatible)
        return fail("virtual-hosted addressing puts the bucket in the host name, and '" + std::string(bucket) +
                    "' is not a valid DNS name (a-z, 0-9, '-' between dots); use path-style addressing");
    // The bucket becomes the first labels of the host; built with Boost.URL and checked by the
    // same parser as any endpoint, so Host, TLS name and pool key come out exactly as for a configured URL.
    boost::urls::url vhost;
    vhost.set_scheme_id(addr.endpoint.is_tls() ? boost::urls::scheme::https : boost::urls::scheme::http);
    vhost.set_host_name(std::string(bucket) + "." + addr.endpoint.host);
    vhost.set_port_number(addr.endpoint.port);
    auto hosted = http::parse_endpoint(vhost.buffer(), parse_diag);
    if (!hosted) return fail("virtual-hosted addressing: " + parse_diag.message + "; use path-style addressing");
    addr.endpoint = *hosted;
    return addr;
}

} // namespace baton::aws

#endif
