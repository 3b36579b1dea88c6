// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_ERRORS_HPP
#define BATON_AWS_ERRORS_HPP

/** @file
    Layer: wire (aws). Maps S3 and DynamoDB error responses onto `baton::errc`.

    The backends need one answer to "what does this response mean for a
    conditional write, and may it be sent again?", and the two services
    answer differently: S3 speaks through the HTTP status and an XML
    `<Code>` (and sometimes a 200 with an `<Error>` body), while DynamoDB
    sends nearly every client error, throttling included, as HTTP 400 and
    only the JSON `__type` tells them apart. Classifying by status alone
    would retry `ConditionalCheckFailedException` and give up on
    `ProvisionedThroughputExceededException`; these functions look at the
    service's code first and fall back to the status.

    The returned codes are `baton::errc` values only: the service's words
    (code, message, request id) belong in `baton::diagnostics`, which the
    caller fills. Whether to retry is then `baton::is_retryable(ec)`:
    `throttled`, `timeout`, `service_unavailable` and `conflict` are
    retryable; `precondition_failed`, `not_found`, `auth_failed`,
    `invalid_argument`, `capability_missing` and `invalid_response` are not.

    Neither function retries, sleeps or looks at credentials; both are pure.
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/core/error.hpp>

#include <string_view>

namespace baton::aws {

namespace detail {

struct code_mapping {
    std::string_view code;
    errc value;
};

// Throttling codes shared by every AWS protocol (SDK standard retry mode's list).
inline constexpr code_mapping throttling_codes[] = {
    {"Throttling", errc::throttled},
    {"ThrottlingException", errc::throttled},
    {"ThrottledException", errc::throttled},
    {"RequestThrottledException", errc::throttled},
    {"TooManyRequestsException", errc::throttled},
    {"ProvisionedThroughputExceededException", errc::throttled},
    {"TransactionInProgressException", errc::throttled},
    {"RequestLimitExceeded", errc::throttled},
    {"BandwidthLimitExceeded", errc::throttled},
    {"LimitExceededException", errc::throttled},
    {"RequestThrottled", errc::throttled},
    {"SlowDown", errc::throttled},
    {"PriorRequestNotComplete", errc::throttled},
    {"EC2ThrottledException", errc::throttled},
};

inline constexpr code_mapping s3_codes[] = {
    // Conditional writes and reads.
    {"PreconditionFailed", errc::precondition_failed},
    {"ConditionalRequestConflict", errc::conflict},
    {"OperationAborted", errc::conflict},
    {"NoSuchKey", errc::not_found},
    {"NoSuchBucket", errc::not_found},
    {"NoSuchUpload", errc::not_found},
    {"NoSuchVersion", errc::not_found},
    // Final answers about bucket state, not transient conflicts.
    {"BucketAlreadyExists", errc::precondition_failed},
    {"BucketAlreadyOwnedByYou", errc::precondition_failed},
    {"BucketNotEmpty", errc::precondition_failed},
    // Transient.
    {"RequestTimeout", errc::timeout},
    {"RequestTimeoutException", errc::timeout},
    {"InternalError", errc::service_unavailable},
    {"ServiceUnavailable", errc::service_unavailable},
    {"TemporaryRedirect", errc::service_unavailable},
    // Credentials, signature, clock and region.
    {"AccessDenied", errc::auth_failed},
    {"SignatureDoesNotMatch", errc::auth_failed},
    {"RequestTimeTooSkewed", errc::auth_failed},
    {"InvalidAccessKeyId", errc::auth_failed},
    {"ExpiredToken", errc::auth_failed},
    {"InvalidToken", errc::auth_failed},
    {"TokenRefreshRequired", errc::auth_failed},
    {"AuthorizationHeaderMalformed", errc::auth_failed},
    {"MissingSecurityHeader", errc::auth_failed},
    {"AccountProblem", errc::auth_failed},
    {"AllAccessDisabled", errc::auth_failed},
    // The endpoint does not do what was asked.
    {"NotImplemented", errc::capability_missing},
    // The request itself is wrong; sending it again cannot help.
    {"PermanentRedirect", errc::invalid_argument},
    {"XAmzContentSHA256Mismatch", errc::invalid_argument},
    {"BadDigest", errc::invalid_argument},
    {"InvalidDigest", errc::invalid_argument},
    {"InvalidArgument", errc::invalid_argument},
    {"InvalidRequest", errc::invalid_argument},
    {"InvalidBucketName", errc::invalid_argument},
    {"InvalidURI", errc::invalid_argument},
    {"InvalidRange", errc::invalid_argument},
    {"MalformedXML", errc::invalid_argument},
    {"KeyTooLongError", errc::invalid_argument},
    {"EntityTooLarge", errc::invalid_argument},
    {"EntityTooSmall", errc::invalid_argument},
    {"MissingContentLength", errc::invalid_argument},
    {"MetadataTooLarge", errc::invalid_argument},
    {"MethodNotAllowed", errc::invalid_argument},
};

inline constexpr code_mapping dynamodb_codes[] = {
    // A real answer: the condition was false. Never retried.
    {"ConditionalCheckFailedException", errc::precondition_failed},
    // Refine from CancellationReasons; the usual cause is a failed condition.
    {"TransactionCanceledException", errc::precondition_failed},
    // Transient conflicts with concurrent writers.
    {"TransactionConflictException", errc::conflict},
    {"ReplicatedWriteConflictException", errc::conflict},
    // Only shrinking other items in the collection helps; resending the same write cannot.
    {"ItemCollectionSizeLimitExceededException", errc::invalid_argument},
    {"ValidationException", errc::invalid_argument},
    {"SerializationException", errc::invalid_argument},
    {"ResourceNotFoundException", errc::not_found},
    // The table (or index) is being created, updated or already exists: a state, not a transient failure.
    {"ResourceInUseException", errc::precondition_failed},
    // Credentials and signatures (after an expired token the backend makes its credentials provider fetch afresh).
    {"AccessDeniedException", errc::auth_failed},
    {"AccessDenied", errc::auth_failed},
    {"UnrecognizedClientException", errc::auth_failed},
    {"InvalidSignatureException", errc::auth_failed},
    {"MissingAuthenticationTokenException", errc::auth_failed},
    {"IncompleteSignatureException", errc::auth_failed},
    {"ExpiredTokenException", errc::auth_failed},
    {"InvalidClientTokenId", errc::auth_failed},
    // Service-side failures.
    {"InternalServerError", errc::service_unavailable},
    {"InternalFailure", errc::service_unavailable},
    {"ServiceUnavailable", errc::service_unavailable},
    {"ServiceUnavailableException", errc::service_unavailable},
    {"RequestTimeoutException", errc::timeout},
};

template <std::size_t N>
constexpr bool lookup(code_mapping const (&table)[N], std::string_view code, errc& out) noexcept {
    for (auto const& m : table) {
        if (m.code == code) {
            out = m.value;
            return true;
        }
    }
    return false;
}

} // namespace detail

/** The short error name in a DynamoDB `__type` (or `x-amzn-ErrorType`) value.

    DynamoDB qualifies names with a namespace that differs between error
    families (`com.amazonaws.dynamodb.v20120810#`, `com.amazon.coral.validate#`,
    `com.amazon.coral.service#`, ...), and the `x-amzn-ErrorType` header
    appends `:` and a URL; comparing whole strings would miss most of them.
    Returns the text after the last `#`, cut at the first `:`.
*/
constexpr std::string_view dynamodb_error_name(std::string_view type) noexcept {
    type = baton::detail::trim(type);
    if (auto colon = type.find(':'); colon != std::string_view::npos) type = type.substr(0, colon);
    if (auto hash = type.rfind('#'); hash != std::string_view::npos) type = type.substr(hash + 1);
    return type;
}

/** What an S3 response means, from its HTTP status and its XML `<Code>`.

    @param status the HTTP status (0 when there was no response: gives `invalid_response`)
    @param code the `<Code>` of an `<Error>` body; empty when the response had no body (HEAD) or no error

    @returns an empty code for a 2xx without an error code; otherwise a `baton::errc`.

    The code decides when it is known, so that a 200 carrying an `<Error>`
    document (CompleteMultipartUpload, CopyObject), a 400 `RequestTimeout`
    or a 503 `SlowDown` are read for what they are:

    | code(s) | errc |
    |---|---|
    | `PreconditionFailed` (412) | `precondition_failed` |
    | `ConditionalRequestConflict` (409), `OperationAborted` (409) | `conflict` (retryable: re-read, then resend) |
    | `NoSuchKey`, `NoSuchBucket`, `NoSuchUpload`, `NoSuchVersion` (404; also If-Match on a missing key) | `not_found` |
    | `BucketAlreadyExists`, `BucketAlreadyOwnedByYou`, `BucketNotEmpty` (409) | `precondition_failed` (final, unlike other 409s) |
    | `SlowDown` (503) and the AWS throttling codes (`Throttling`, `ThrottlingException`, `RequestLimitExceeded`, `BandwidthLimitExceeded`, `PriorRequestNotComplete`, ...) | `throttled` |
    | `RequestTimeout` (400), `RequestTimeoutException` | `timeout` |
    | `InternalError` (500), `ServiceUnavailable` (503), `TemporaryRedirect` (307) | `service_unavailable` |
    | `AccessDenied`, `SignatureDoesNotMatch`, `RequestTimeTooSkewed`, `InvalidAccessKeyId` (403); `ExpiredToken`, `InvalidToken`, `TokenRefreshRequired`, `AuthorizationHeaderMalformed` (wrong region) (400); `MissingSecurityHeader`, `AccountProblem`, `AllAccessDisabled` | `auth_failed` |
    | `NotImplemented` (501: e.g. an S3-compatible store refusing a conditional header) | `capability_missing` |
    | `PermanentRedirect` (301: wrong endpoint or region), `XAmzContentSHA256Mismatch`, `BadDigest`, `InvalidDigest`, `InvalidArgument`, `InvalidRequest`, `InvalidBucketName`, `InvalidURI`, `InvalidRange`, `MalformedXML`, `KeyTooLongError`, `EntityTooLarge`, `EntityTooSmall`, `MissingContentLength`, `MetadataTooLarge`, `MethodNotAllowed` | `invalid_argument` |

    Unknown (or absent) codes fall back to the status: 2xx with an unknown
    code → `invalid_response`; 304 → `precondition_failed` (a read
    condition was false); 301/308 → `invalid_argument`; 307 →
    `service_unavailable`; 400, 405, 411, 413, 414, 416 and other 4xx →
    `invalid_argument`; 401/403 → `auth_failed`; 404 → `not_found`; 408 →
    `timeout`; 409 → `conflict`; 412 → `precondition_failed`; 429 →
    `throttled`; 501 → `capability_missing`; other 5xx →
    `service_unavailable`; anything else → `invalid_response`.
*/
BATON_DECL error_code classify_s3(unsigned status, std::string_view code) noexcept;

/** What a DynamoDB response means, from its HTTP status and its `__type`.

    @param status the HTTP status (0 when there was no response: gives `invalid_response`)
    @param type the body's `__type` (namespaced or not) or the `x-amzn-ErrorType` header; empty when absent

    @returns an empty code for a 2xx without an error type; otherwise a `baton::errc`.

    DynamoDB answers almost every client error with HTTP 400, throttling
    included, so the name after `#` decides (see `dynamodb_error_name`):

    | `__type` name | errc |
    |---|---|
    | `ConditionalCheckFailedException` | `precondition_failed` (a real answer, never retried) |
    | `TransactionCanceledException` | `precondition_failed` (refine from `CancellationReasons`) |
    | `ProvisionedThroughputExceededException`, `ThrottlingException`, `RequestLimitExceeded`, `LimitExceededException`, `TransactionInProgressException` and the other AWS throttling codes | `throttled` |
    | `TransactionConflictException`, `ReplicatedWriteConflictException` | `conflict` (retryable after backoff) |
    | `ValidationException`, `SerializationException`, `ItemCollectionSizeLimitExceededException` | `invalid_argument` (the last one: only shrinking the item collection helps, not resending) |
    | `ResourceNotFoundException` | `not_found` |
    | `ResourceInUseException` | `precondition_failed` (the table is being created or already exists) |
    | `AccessDeniedException`, `AccessDenied`, `UnrecognizedClientException`, `InvalidSignatureException`, `MissingAuthenticationTokenException`, `IncompleteSignatureException`, `ExpiredTokenException`, `InvalidClientTokenId` | `auth_failed` |
    | `InternalServerError` (500), `InternalFailure`, `ServiceUnavailable` (503), `ServiceUnavailableException` | `service_unavailable` |
    | `RequestTimeoutException` | `timeout` |

    Unknown (or absent) types fall back to the status: 2xx with an unknown
    type → `invalid_response`; 401/403 → `auth_failed`; 404 → `not_found`;
    408 → `timeout`; 429 → `throttled`; other 4xx → `invalid_argument`;
    5xx → `service_unavailable`; anything else → `invalid_response`.
*/
BATON_DECL error_code classify_dynamodb(unsigned status, std::string_view type) noexcept;

} // namespace baton::aws

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/errors.ipp>
#endif

#endif
