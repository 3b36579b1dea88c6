// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AZURE_ACCOUNT_HPP
#define BATON_AZURE_ACCOUNT_HPP

/** @file
    Layer: wire (azure). An Azure Storage account's Blob service and how to authenticate to it
    (`account`), read from a connection string (`parse_connection_string`) or from the
    environment variables the Azure CLI reads (`account_from_environment`).

    Secrets (the account key, and the `sig` of a SAS) never appear in strings this header
    produces, nor in error messages: a bad part is named by its setting or its position, never
    repeated.
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/environment.hpp>
#include <baton/core/error.hpp>
#include <baton/http/endpoint.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace baton::azure {

/** One storage account's Blob service, and how to authenticate to it.

    Holds the account key, so it deliberately has no `operator<<`: log `describe()` instead.

    @par Authentication
    - `key` set: Shared Key (`Authorization: SharedKey name:signature`); `sas` is then
      ignored, because the key can do everything a SAS can, as in the Azure SDKs, where a
      connection string with an `AccountKey` is an account-key connection string.
    - only `sas` set: the SAS token is appended to every request's query.
    - neither: anonymous requests (public containers; writes are refused by the service).
*/
struct account {
    /// The account name, e.g. `devstoreaccount1`; names the key in `Authorization` and may be logged.
    std::string name;
    /** The Blob service's absolute URL without a trailing `/`.

        Production style: `https://acct.blob.core.windows.net` (the account is in the host).
        Path style, as the emulator (Azurite) serves it: `http://127.0.0.1:10000/devstoreaccount1`
        (the account is the first path segment of every request).
    */
    std::string blob_endpoint;
    /// The account key, base64 as Azure shows it; empty: no Shared Key. Never logged, never sent.
    std::string key;
    /// A SAS token without the leading `?` (`sv=...&sig=...`); empty: none. Its `sig` is never logged.
    std::string sas;

    /** A log-safe description: the name, the endpoint and how requests authenticate.

        For instance `account devstoreaccount1 at http://127.0.0.1:10000/devstoreaccount1
        (Shared Key)`; never the key, never the SAS.
    */
    BATON_DECL std::string describe() const;
};

/// The emulator's account name, as `UseDevelopmentStorage=true` names it.
inline constexpr std::string_view development_account_name = "devstoreaccount1";

/// The emulator's well-known account key (public: it is printed in the emulator's documentation).
inline constexpr std::string_view development_account_key =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// The emulator's Blob endpoint, path style, as `UseDevelopmentStorage=true` names it.
inline constexpr std::string_view development_blob_endpoint = "http://127.0.0.1:10000/devstoreaccount1";

/// Where a Blob endpoint URL sends requests: the connection's endpoint and the path every target starts with.
struct blob_address {
    /// Scheme, host and port: what a connection is opened to.
    http::endpoint origin;
    /// `""` for production-style endpoints, `/devstoreaccount1` for path-style ones; never a trailing `/`.
    std::string path_prefix;
};

/** Splits a Blob endpoint URL (`scheme://host[:port][/path]`) into where to connect and the path prefix.

    Accepts `http` and `https` only (see `http::parse_endpoint` for the host and port rules);
    refuses user info, a query or a fragment (a SAS token belongs in `account::sas`), and
    path characters that would need encoding (white space, controls, `%`, `\`). Trailing `/`s
    are dropped.

    @returns the address, or nothing with `diag.message` saying what is wrong; messages never
    repeat the URL, which might carry a secret.
*/
BATON_DECL std::optional<blob_address> parse_blob_address(std::string_view url, diagnostics& diag);

/** Reads an Azure Storage connection string into `out`.

    `;`-separated `Key=Value` settings, keys case-insensitive, white space around keys and
    values ignored, empty segments (a trailing `;`) skipped:

    | setting | meaning |
    |---|---|
    | `DefaultEndpointsProtocol` | `http` or `https` (default `https`), for the endpoint built from `AccountName` |
    | `AccountName` | the account |
    | `AccountKey` | the account key (base64): Shared Key |
    | `SharedAccessSignature` | a SAS token (a leading `?` is dropped) |
    | `BlobEndpoint` | the Blob endpoint; else `{protocol}://{AccountName}.blob.{EndpointSuffix}` |
    | `EndpointSuffix` | default `core.windows.net` (other clouds: `core.chinacloudapi.cn`, ...) |
    | `UseDevelopmentStorage=true` | the emulator: `devstoreaccount1`, its well-known key, `http://127.0.0.1:10000/devstoreaccount1`; nothing else but `DevelopmentStorageProxyUri` may be set |
    | `DevelopmentStorageProxyUri` | with `UseDevelopmentStorage=true`: the emulator's host (scheme and host of this URL, port 10000) |
    | `QueueEndpoint`, `TableEndpoint`, `FileEndpoint` and their `...SecondaryEndpoint`s, `BlobSecondaryEndpoint` | accepted and ignored (other services, secondary reads) |

    A connection string must give a key or a SAS (as the SDKs require). Without
    `AccountName`, a SAS connection string's account is read from its `BlobEndpoint`
    (`https://acct.blob...` or a path-style `.../acct`), when it names one.

    @returns `errc::invalid_argument` with `diag.message` naming the bad part (by setting
    name, or by position for a segment without `=`): an unknown or repeated setting, a bad
    protocol, key (not base64), SAS or endpoint, a missing account name, neither key nor SAS.
    Messages never repeat the key or the SAS. `out` is unspecified on error.
*/
BATON_DECL error_code parse_connection_string(std::string_view cs, account& out, diagnostics& diag);

/** Reads the account from the environment variables the Azure CLI (`az storage`) reads.

    1. `AZURE_STORAGE_CONNECTION_STRING`: a connection string (`parse_connection_string`),
       complete on its own; the variables below are then not read.
    2. Otherwise `AZURE_STORAGE_ACCOUNT` with `AZURE_STORAGE_KEY` and/or
       `AZURE_STORAGE_SAS_TOKEN` (a leading `?` is dropped; with both, the key is used, see
       `account`), and the endpoint from `AZURE_STORAGE_SERVICE_ENDPOINT` (the variable the
       CLI documents for `--blob-endpoint`), else `https://{account}.blob.core.windows.net`.

    Empty variables count as unset. The Azure SDKs themselves read no storage variables; the
    CLI's names are the ones users already set. Microsoft Entra ID (`AZURE_STORAGE_AUTH_MODE=login`)
    is not supported, so that variable is not read.

    @param out Receives the account.
    @param diag Receives the explanation of a failure.
    @param env Where variables are read; default the process environment.
    @returns `errc::invalid_argument` with `diag.message` listing the variables when none is
    set, naming what is missing when the account is set without a key or SAS token (or a key
    without an account), or explaining what is wrong with a set value; never repeating a
    secret.
*/
BATON_DECL error_code account_from_environment(account& out, diagnostics& diag,
                                               env_lookup const& env = process_environment());

} // namespace baton::azure

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/azure/impl/account.ipp>
#endif

#endif
