// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AZURE_IMPL_ACCOUNT_IPP
#define BATON_AZURE_IMPL_ACCOUNT_IPP
// Layer: wire (azure), internal. The compiled part of azure/account.hpp: endpoint URLs,
// connection strings and the environment.
#include <baton/azure/account.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/http/detail/crypto.hpp>

#include <algorithm>
#include <array>
#include <cstddef>

namespace baton::azure {
namespace detail {

// ASCII case-insensitive equality: connection string keys and protocols.
inline bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i];
        char y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + 32);
        if (y >= 'A' && y <= 'Z') y = static_cast<char>(y + 32);
        if (x != y) return false;
    }
    return true;
}

inline error_code refuse(diagnostics& diag, std::string message) {
    diag.message = std::move(message);
    return errc::invalid_argument;
}

// Azure's rule is 3 to 24 lower-case letters and digits; emulators accept other lengths.
BATON_DECL error_code check_account_name(std::string_view what, std::string_view name, diagnostics& diag) {
    if (name.empty() || name.size() > 64) return refuse(diag, std::string(what) + " must be 1 to 64 characters");
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            return refuse(diag, std::string(what) + " may contain only lower-case letters and digits");
    return {};
}

// The key is only checked for being base64: its length is the service's business (emulators
// accept keys of any length).
BATON_DECL error_code check_account_key(std::string_view what, std::string_view key, diagnostics& diag) {
    std::string bytes;
    bool const ok = !key.empty() && baton::detail::base64_decode(key, bytes);
    baton::detail::wipe(bytes.data(), bytes.size());
    if (!ok) return refuse(diag, std::string(what) + " is not a base64 account key");
    return {};
}

// A SAS token is a query string: visible ASCII without '#', with a signature. A leading '?' (as
// the portal and the CLI print it) is dropped.
BATON_DECL error_code take_sas(std::string_view what, std::string_view sas, std::string& out, diagnostics& diag) {
    if (!sas.empty() && sas.front() == '?') sas.remove_prefix(1);
    if (sas.empty()) return refuse(diag, std::string(what) + " is empty");
    for (char c : sas) {
        auto const u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f || c == '#')
            return refuse(diag, std::string(what) +
                                    " holds a character a query cannot carry (white space, a control, '#' or non-ASCII)");
    }
    bool has_sig = false;
    for (std::size_t i = 0; i < sas.size();) {
        std::size_t amp = sas.find('&', i);
        if (amp == std::string_view::npos) amp = sas.size();
        if (sas.substr(i, amp - i).starts_with("sig=") && amp - i > 4) has_sig = true;
        i = amp + 1;
    }
    if (!has_sig) return refuse(diag, std::string(what) + " has no 'sig=' parameter: it is not a SAS token");
    out.assign(sas);
    return {};
}

// The endpoint as written, less trailing '/', once it parses.
BATON_DECL error_code take_endpoint(std::string_view what, std::string_view url, std::string& out,
                                    diagnostics& diag) {
    diagnostics d;
    if (!parse_blob_address(url, d)) return refuse(diag, std::string(what) + ": " + d.message);
    while (!url.empty() && url.back() == '/') url.remove_suffix(1);
    out.assign(url);
    return {};
}

// The account an endpoint names: `acct` of `https://acct.blob.<suffix>` or of a path-style
// `http://host:port/acct`; empty when it names none.
BATON_DECL std::string account_of_endpoint(std::string_view url) {
    diagnostics ignored;
    auto const address = parse_blob_address(url, ignored);
    if (!address) return {};
    std::string_view const path = address->path_prefix;
    if (path.size() > 1 && path.find('/', 1) == std::string_view::npos) return std::string(path.substr(1));
    std::string_view const host = address->origin.host;
    auto const dot = host.find(".blob.");
    if (path.empty() && dot != std::string_view::npos && dot > 0) return std::string(host.substr(0, dot));
    return {};
}

} // namespace detail

BATON_DECL std::string account::describe() const {
    std::string out = "account ";
    out += name.empty() ? std::string_view("(unnamed)") : std::string_view(name);
    out += " at ";
    out += blob_endpoint.empty() ? std::string_view("(no endpoint)") : std::string_view(blob_endpoint);
    if (!key.empty())
        out += " (Shared Key)";
    else if (!sas.empty())
        out += " (SAS)";
    else
        out += " (anonymous)";
    return out;
}

BATON_DECL std::optional<blob_address> parse_blob_address(std::string_view url, diagnostics& diag) {
    auto const scheme_end = url.find("://");
    if (scheme_end == std::string_view::npos) {
        diag.message = "the Blob endpoint must be an http:// or https:// URL";
        return std::nullopt;
    }
    auto const path_start = url.find('/', scheme_end + 3);
    std::string_view const origin = url.substr(0, path_start);
    std::string_view path = path_start == std::string_view::npos ? std::string_view{} : url.substr(path_start);
    if (path.find_first_of("?#") != std::string_view::npos) {
        diag.message = "the Blob endpoint must not carry a query or fragment (a SAS token goes in account.sas)";
        return std::nullopt;
    }
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    auto ep = http::parse_endpoint(origin, diag);
    if (!ep) return std::nullopt;
    for (char c : path) {
        auto const u = static_cast<unsigned char>(c);
        if (u <= ' ' || u == 0x7f || c == '%' || c == '\\') {
            diag.message = "the Blob endpoint's path may hold only plain characters";
            return std::nullopt;
        }
    }
    return blob_address{*ep, std::string(path)};
}

BATON_DECL error_code parse_connection_string(std::string_view cs, account& out, diagnostics& diag) {
    using detail::iequals;
    using detail::refuse;
    out = account{};
    // The settings baton reads, in the order of `known`; the others are accepted and ignored.
    enum setting : std::size_t { protocol, name, key, sas, blob, suffix, development, proxy };
    static constexpr std::array<std::string_view, 15> known = {
        "DefaultEndpointsProtocol", "AccountName",           "AccountKey",           "SharedAccessSignature",
        "BlobEndpoint",             "EndpointSuffix",        "UseDevelopmentStorage", "DevelopmentStorageProxyUri",
        "QueueEndpoint",            "TableEndpoint",         "FileEndpoint",          "BlobSecondaryEndpoint",
        "QueueSecondaryEndpoint",   "TableSecondaryEndpoint", "FileSecondaryEndpoint"};
    std::array<std::optional<std::string_view>, known.size()> values{};
    std::size_t segment = 0;
    for (std::size_t i = 0; i <= cs.size();) {
        std::size_t semi = cs.find(';', i);
        if (semi == std::string_view::npos) semi = cs.size();
        std::string_view const part = baton::detail::trim(cs.substr(i, semi - i));
        i = semi + 1;
        if (part.empty()) continue;
        ++segment;
        auto const eq = part.find('=');
        if (eq == std::string_view::npos)
            return refuse(diag, "connection string: segment " + std::to_string(segment) + " has no '='");
        std::string_view const k = baton::detail::trim(part.substr(0, eq));
        std::string_view const v = baton::detail::trim(part.substr(eq + 1));
        if (k.empty())
            return refuse(diag, "connection string: segment " + std::to_string(segment) + " has no setting name");
        std::size_t which = known.size();
        for (std::size_t n = 0; n < known.size(); ++n)
            if (iequals(k, known[n])) which = n;
        if (which == known.size()) {
            // Name the setting only when it looks like one: a mangled segment may be part of a key.
            bool const printable = k.size() <= 40 && std::all_of(k.begin(), k.end(), [](char c) {
                                       return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
                                   });
            return refuse(diag, "connection string: " +
                                    (printable ? "unknown setting '" + std::string(k) + "'"
                                               : "segment " + std::to_string(segment) + " is not a known setting"));
        }
        if (values[which])
            return refuse(diag, "connection string: " + std::string(known[which]) + " is set twice");
        values[which] = v;
    }
    auto const& v = values;

    if (v[development]) {
        if (!iequals(*v[development], "true"))
            return refuse(diag, "connection string: UseDevelopmentStorage must be 'true'");
        for (std::size_t n = 0; n < known.size(); ++n)
            if (v[n] && n != development && n != proxy)
                return refuse(diag, "connection string: UseDevelopmentStorage=true takes no " + std::string(known[n]) +
                                        " (only DevelopmentStorageProxyUri)");
        out.name = development_account_name;
        out.key = development_account_key;
        out.blob_endpoint = development_blob_endpoint;
        if (v[proxy]) {
            diagnostics d;
            auto const address = parse_blob_address(*v[proxy], d);
            if (!address) return refuse(diag, "connection string: DevelopmentStorageProxyUri: " + d.message);
            http::endpoint ep = address->origin;
            ep.port = 10000; // the emulator's Blob port, whatever port the proxy URI names
            out.blob_endpoint = ep.origin() + "/" + std::string(development_account_name);
        }
        return {};
    }
    if (v[proxy]) return refuse(diag, "connection string: DevelopmentStorageProxyUri needs UseDevelopmentStorage=true");

    bool https = true;
    if (v[protocol]) {
        if (iequals(*v[protocol], "http"))
            https = false;
        else if (!iequals(*v[protocol], "https"))
            return refuse(diag, "connection string: DefaultEndpointsProtocol must be 'http' or 'https'");
    }
    if (v[name]) {
        if (auto ec = detail::check_account_name("connection string: AccountName", *v[name], diag)) return ec;
        out.name = *v[name];
    }
    if (v[key]) {
        if (auto ec = detail::check_account_key("connection string: AccountKey", *v[key], diag)) return ec;
        out.key = *v[key];
    }
    if (v[sas]) {
        if (auto ec = detail::take_sas("connection string: SharedAccessSignature", *v[sas], out.sas, diag)) return ec;
    }
    if (v[blob]) {
        if (auto ec = detail::take_endpoint("connection string: BlobEndpoint", *v[blob], out.blob_endpoint, diag))
            return ec;
    } else {
        if (!v[name]) return refuse(diag, "connection string: neither AccountName nor BlobEndpoint is set");
        std::string_view suffix_value = v[suffix] ? *v[suffix] : std::string_view("core.windows.net");
        bool const suffix_ok = !suffix_value.empty() && suffix_value.front() != '.' && suffix_value.back() != '.' &&
                               std::all_of(suffix_value.begin(), suffix_value.end(), [](char c) {
                                   return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                          (c >= '0' && c <= '9') || c == '.' || c == '-';
                               });
        if (!suffix_ok) return refuse(diag, "connection string: EndpointSuffix must be a domain such as core.windows.net");
        std::string url = https ? "https://" : "http://";
        url += out.name;
        url += ".blob.";
        url += suffix_value;
        if (auto ec = detail::take_endpoint("connection string: the endpoint built from AccountName and EndpointSuffix",
                                            url, out.blob_endpoint, diag))
            return ec;
    }
    if (out.key.empty() && out.sas.empty())
        return refuse(diag, "connection string: it has neither AccountKey nor SharedAccessSignature");
    if (!out.key.empty() && out.name.empty())
        return refuse(diag, "connection string: AccountKey needs AccountName");
    if (out.name.empty()) out.name = detail::account_of_endpoint(out.blob_endpoint);
    return {};
}

BATON_DECL error_code account_from_environment(account& out, diagnostics& diag, env_lookup const& env) {
    using detail::refuse;
    out = account{};
    auto get = [&env](char const* variable) -> std::optional<std::string> {
        auto v = env(variable);
        if (!v || v->empty()) return std::nullopt;
        return v;
    };
    if (auto cs = get("AZURE_STORAGE_CONNECTION_STRING")) {
        if (auto ec = parse_connection_string(*cs, out, diag)) {
            diag.message = "AZURE_STORAGE_CONNECTION_STRING: " + diag.message;
            return ec;
        }
        return {};
    }
    auto const name = get("AZURE_STORAGE_ACCOUNT");
    auto const key = get("AZURE_STORAGE_KEY");
    auto const sas = get("AZURE_STORAGE_SAS_TOKEN");
    auto const endpoint = get("AZURE_STORAGE_SERVICE_ENDPOINT");
    if (!name && !key && !sas)
        return refuse(diag, "no Azure Storage account is configured: set AZURE_STORAGE_CONNECTION_STRING, or "
                            "AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN (and "
                            "AZURE_STORAGE_SERVICE_ENDPOINT for an endpoint other than "
                            "https://<account>.blob.core.windows.net)");
    if (!key && !sas)
        return refuse(diag, "AZURE_STORAGE_ACCOUNT is set, but neither AZURE_STORAGE_KEY nor AZURE_STORAGE_SAS_TOKEN");
    if (key && !name) return refuse(diag, "AZURE_STORAGE_KEY is set, but AZURE_STORAGE_ACCOUNT is not");
    if (!name && !endpoint)
        return refuse(diag, "AZURE_STORAGE_SAS_TOKEN is set, but neither AZURE_STORAGE_ACCOUNT nor "
                            "AZURE_STORAGE_SERVICE_ENDPOINT");
    if (name) {
        if (auto ec = detail::check_account_name("AZURE_STORAGE_ACCOUNT", *name, diag)) return ec;
        out.name = *name;
    }
    if (key) {
        if (auto ec = detail::check_account_key("AZURE_STORAGE_KEY", *key, diag)) return ec;
        out.key = *key;
    }
    if (sas) {
        if (auto ec = detail::take_sas("AZURE_STORAGE_SAS_TOKEN", *sas, out.sas, diag)) return ec;
    }
    if (endpoint) {
        if (auto ec = detail::take_endpoint("AZURE_STORAGE_SERVICE_ENDPOINT", *endpoint, out.blob_endpoint, diag))
            return ec;
    } else {
        out.blob_endpoint = "https://" + out.name + ".blob.core.windows.net";
    }
    if (out.name.empty()) out.name = detail::account_of_endpoint(out.blob_endpoint);
    return {};
}

} // namespace baton::azure

#endif
