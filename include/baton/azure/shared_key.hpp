// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AZURE_SHARED_KEY_HPP
#define BATON_AZURE_SHARED_KEY_HPP

/** @file
    Layer: wire (azure). Authenticating Blob service requests: Shared Key signatures
    (`sign`, `string_to_sign`), SAS tokens and anonymous requests, written by hand so that
    baton needs no Azure SDK.

    The string to sign (service version 2015-02-21 and later) is the verb, then the values of
    `Content-Encoding`, `Content-Language`, `Content-Length` (empty when `0`), `Content-MD5`,
    `Content-Type`, `Date` (empty when `x-ms-date` is set), `If-Modified-Since`, `If-Match`,
    `If-None-Match`, `If-Unmodified-Since` and `Range`, one per line (empty when absent);
    then the canonicalized headers; then the canonicalized resource. The rules below were
    checked against the Azure SDKs for JavaScript and C++ and against Azurite's verifier, and
    the unit tests compare them, byte for byte, with what the JavaScript SDK computes:

    - Canonicalized headers: every `x-ms-*` header, its name lower-cased, its value trimmed at
      both ends (what the service receives: HTTP drops white space around a value) but not
      folded inside (no SDK and not Azurite folds runs of white space, whatever the REST page
      says), one `name:value\n` each, sorted as the service (.NET, en-US culture) sorts:
      letters and digits compare as usual, `-` and `'` count only to break ties (so
      `x-ms-meta-ab` sorts before `x-ms-meta-a-c`), the order the SDKs reproduce. Azurite
      sorts by plain byte order instead; the two agree unless two header names differ only
      where one has a `-` and the other a letter or digit.
    - Canonicalized resource: `/` + account + the path exactly as sent (still percent-encoded),
      so a path-style emulator URL names the account twice
      (`/devstoreaccount1/devstoreaccount1/container/blob`); then for each query parameter,
      sorted by name, `\nname:value` with the name lower-cased and the value percent-decoded.

    Requests whose canonical form the service, the SDKs and Azurite compute differently are
    refused (`errc::invalid_argument`) rather than signed in one of the ways: a query
    parameter without `=`, with an empty name or value, with `%` or `+` in its name, with a
    raw `=` or `+` in its value (send `%3D`, `%2B`, and `%20` for a space), or named twice
    (the SDKs keep the last, or list both, the REST page joins them with `,`); a header
    named twice; control characters, white space, `#` or non-ASCII bytes in the target, or
    a path that does not start with `/`; a line break in a header value.

    Secrets (the account key, and a SAS's `sig`) never appear in strings this header
    produces, nor in error messages.
*/

#include <baton/azure/account.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/http/endpoint.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace baton::azure {

/** The `x-ms-version` that `sign` sets on requests that carry none: `2021-12-02`.

    Old enough that every Azurite from 3.22 (February 2023) on accepts it (Azurite refuses
    versions newer than it knows with 400 `InvalidHeaderValue`, unless started with
    `--skipApiVersionCheck`); new enough for everything baton relies on: quoted ETags in
    conditional headers (2011-08-18 on) and `Content-Length: 0` signed as an empty line
    (2015-02-21 on). Azure serves it.
*/
inline constexpr std::string_view api_version = "2021-12-02";

/** The Shared Key string to sign of `req` for `account_name` (exposed for tests and diagnostics).

    Compare it with the string that Azure puts in a 403 `AuthenticationFailed` answer's
    `AuthenticationErrorDetail`, or that Azurite logs with `--debug`, when a signature is
    refused. The request is read as it is: call it after `sign`, which sets `x-ms-date`.

    @returns the string to sign, or an empty string when `sign` would refuse the request
    (see the file comment).
*/
BATON_DECL std::string string_to_sign(http::request const& req, std::string_view account_name);

/** Authenticates `req` for `acct`, in place, as `acct` says (see `account`).

    Always sets `x-ms-date` to `now` (RFC 1123, replacing an earlier value, so that a retried
    request is simply signed again) and `x-ms-version` to `api_version` when the request has
    none, and removes `Date` (which `x-ms-date` replaces) and any earlier `Authorization`.
    Then, with a key, sets `Authorization: SharedKey name:signature`; with only a SAS, appends
    it to the target's query (after `?`, or `&` when the target has a query; not again when
    the target already ends with it); with neither, leaves the request anonymous.

    The body and `Content-Length` must be final (call `prepare_payload()` first). Safe to call
    concurrently on different requests.

    @param req The request to sign; its headers (and, with a SAS, its target) are updated in place.
    @param acct The account, whose key or SAS authenticates the request.
    @param now Signing time; the service refuses a time more than 15 minutes off its clock.
    @param diag Receives the reason of a failure; never the key or the SAS.
    @returns `errc::invalid_argument` when the key is not base64, the account name is not a
    valid name (with a key), the SAS is not a SAS token, `now` is outside years 1 to 9999,
    `Content-Length` does not match the body, or the request is one the file comment says is
    refused; `boost::system::errc::not_supported` when OpenSSL cannot compute the HMAC. The
    request then carries no `Authorization`.
*/
BATON_DECL error_code sign(http::request& req, account const& acct, std::chrono::system_clock::time_point now,
                           diagnostics& diag);

/** Authenticates `req` for `acct`, as the overload with `diagnostics` does, dropping the explanation.

    @returns the errors of the other overload.
*/
BATON_DECL error_code sign(http::request& req, account const& acct, std::chrono::system_clock::time_point now);

} // namespace baton::azure

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/azure/impl/shared_key.ipp>
#endif

#endif
