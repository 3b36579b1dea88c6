// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AZURE_ERRORS_HPP
#define BATON_AZURE_ERRORS_HPP

/** @file
    Layer: wire (azure). What an Azure Blob service answer means: its `<Error>` document
    (`parse_blob_error`) and its mapping onto `baton::errc` (`classify_blob`).

    The Blob service names every error twice, in the `x-ms-error-code` header and in the
    body's `<Error><Code>`; the header is there also for `HEAD`, which has no body, so it
    wins. The status alone is not enough: a 409 is a refused create (`BlobAlreadyExists`) or
    a transient conflict, a 412 is a false condition (`ConditionNotMet`) or a blob someone
    holds a native lease on (`LeaseIdMissing`), which no retry and no re-read can pass.

    The returned codes are `baton::errc` values only: the service's words (code, message,
    `x-ms-request-id`) belong in `baton::diagnostics`, which the caller fills. Whether to retry
    is then `baton::is_retryable(ec)`. Both functions are pure.
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>

#include <string>
#include <string_view>

namespace baton::azure {

/// The parts of a Blob service error answer that baton reports.
struct blob_error {
    /// The error code (`x-ms-error-code`, or `<Code>`), e.g. `ConditionNotMet`.
    std::string code;
    /// `<Message>`: the service's explanation (its first line; the request id and time that follow are cut).
    std::string message;
    /// `x-ms-request-id`, or the `RequestId:` line of `<Message>`.
    std::string request_id;
};

/** Parses a Blob service error document (`<Error><Code>…</Code><Message>…</Message></Error>`).

    Strict, on baton's bounded XML parser: at most 1 MiB, well-formed, root `Error`, a
    non-empty `<Code>`. Other elements (`AuthenticationErrorDetail`, `QueryParameterValue`,
    ...) are left out, since they may repeat what the request carried; a `sig=` in the
    message is masked for the same reason.

    @param xml_body The response body.
    @param out Receives the code, the message and the request id of the message, if any.
    @param diag Receives the reason of a failure.
    @returns `errc::invalid_response` with `diag.message` naming the byte offset or the rule
    when the body is not such a document; `out` is then empty.
*/
BATON_DECL error_code parse_blob_error(std::string_view xml_body, blob_error& out, diagnostics& diag);

/** What a Blob service answer means, from its HTTP status and its error code.

    @param status the HTTP status (0 when there was no response: gives `invalid_response`)
    @param error_code the `x-ms-error-code` header, or when it is absent the body's
        `<Code>`; empty when the answer carried none

    @returns an empty code for a 2xx without an error code; otherwise a `baton::errc`:

    | code (status) | errc |
    |---|---|
    | `ConditionNotMet` (412; 304 on reads) | `precondition_failed` (a refusal: the blob is not in the state the condition named) |
    | `BlobAlreadyExists` (409, a create with `If-None-Match: *` over an existing blob) | `precondition_failed` (a refusal) |
    | `ContainerAlreadyExists` (409) | `precondition_failed` (final, unlike other 409s) |
    | `LeaseIdMissing`, `LeaseIdMismatchWithBlobOperation`, `LeaseNotPresentWithBlobOperation`, `LeaseLost` (412) | `foreign_record` (final, not a refusal: someone holds a native Azure lease on the blob, which baton does not take; the backend names the blob) |
    | `BlobNotFound` (404) | `not_found` (the blob is absent: the backend decides what that means) |
    | `ContainerNotFound`, `ResourceNotFound` (404) | `not_found` (the container or the account is missing) |
    | `AuthenticationFailed`, `InvalidAuthenticationInfo`, `NoAuthenticationInformation`, `InsufficientAccountPermissions`, `AccountIsDisabled` (401, 403), and every code starting `Authorization` (`AuthorizationFailure`, `AuthorizationPermissionMismatch`, ...) | `auth_failed` |
    | `ServerBusy` (503), `OperationTimedOut` (500) | `throttled` (the service's throttling answers) |
    | `InternalError` (500) | `service_unavailable` |

    Unknown (or absent) codes fall back to the status: 2xx with a code →
    `invalid_response`; 304 and 412 → `precondition_failed`; 401/403 → `auth_failed`; 404 →
    `not_found`; 408 → `timeout`; 409 → `conflict` (retryable: a concurrent operation, such
    as `ContainerBeingDeleted`); 429 → `throttled`; other 4xx (400 `InvalidHeaderValue`,
    `MultipleConditionHeadersNotSupported`, ...) → `invalid_argument`; 501 →
    `capability_missing`; other 5xx → `service_unavailable`; anything else →
    `invalid_response`.
*/
BATON_DECL baton::error_code classify_blob(unsigned status, std::string_view error_code) noexcept;

} // namespace baton::azure

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/azure/impl/errors.ipp>
#endif

#endif
