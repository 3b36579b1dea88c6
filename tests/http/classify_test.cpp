// Classification of S3 and DynamoDB error responses (protocol-facts §0 trap 5, §1.6, §2.3, §3.1).
#include <baton/aws/errors.hpp>

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

using baton::errc;
using baton::error_code;
using baton::aws::classify_dynamodb;
using baton::aws::classify_s3;

namespace {

struct row {
    unsigned status;
    std::string_view code;
    errc expected;
};

void check_rows(std::vector<row> const& rows, error_code (*classify)(unsigned, std::string_view)) {
    for (auto const& r : rows) {
        INFO(r.status << " " << std::string(r.code));
        CHECK(classify(r.status, r.code) == r.expected);
    }
}

// The AWS SDK standard-mode throttling codes (protocol-facts §3.1).
std::vector<std::string_view> const throttling_codes = {
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "TransactionInProgressException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "RequestThrottled",
    "SlowDown",
    "PriorRequestNotComplete",
    "EC2ThrottledException",
};

} // namespace

TEST_SUITE("aws.errors") {

TEST_CASE("S3: every code of protocol-facts §1.6 and the conditional-write outcomes of §1.2/§1.3") {
    check_rows(
        {
            {412, "PreconditionFailed", errc::precondition_failed},
            {409, "ConditionalRequestConflict", errc::conflict},
            {409, "OperationAborted", errc::conflict},
            {404, "NoSuchKey", errc::not_found},
            {404, "NoSuchBucket", errc::not_found},
            {404, "NoSuchUpload", errc::not_found},
            {404, "NoSuchVersion", errc::not_found},
            {409, "BucketAlreadyExists", errc::precondition_failed},
            {409, "BucketAlreadyOwnedByYou", errc::precondition_failed},
            {409, "BucketNotEmpty", errc::precondition_failed},
            {503, "SlowDown", errc::throttled},
            {400, "RequestTimeout", errc::timeout},
            {400, "RequestTimeoutException", errc::timeout},
            {500, "InternalError", errc::service_unavailable},
            {503, "ServiceUnavailable", errc::service_unavailable},
            {307, "TemporaryRedirect", errc::service_unavailable},
            {403, "AccessDenied", errc::auth_failed},
            {403, "SignatureDoesNotMatch", errc::auth_failed},
            {403, "RequestTimeTooSkewed", errc::auth_failed},
            {403, "InvalidAccessKeyId", errc::auth_failed},
            {400, "ExpiredToken", errc::auth_failed},
            {400, "InvalidToken", errc::auth_failed},
            {400, "TokenRefreshRequired", errc::auth_failed},
            {400, "AuthorizationHeaderMalformed", errc::auth_failed},
            {403, "MissingSecurityHeader", errc::auth_failed},
            {403, "AccountProblem", errc::auth_failed},
            {403, "AllAccessDisabled", errc::auth_failed},
            {501, "NotImplemented", errc::capability_missing},
            {301, "PermanentRedirect", errc::invalid_argument},
            {400, "XAmzContentSHA256Mismatch", errc::invalid_argument},
            {400, "BadDigest", errc::invalid_argument},
            {400, "InvalidDigest", errc::invalid_argument},
            {400, "InvalidArgument", errc::invalid_argument},
            {400, "InvalidRequest", errc::invalid_argument},
            {400, "InvalidBucketName", errc::invalid_argument},
            {400, "InvalidURI", errc::invalid_argument},
            {416, "InvalidRange", errc::invalid_argument},
            {400, "MalformedXML", errc::invalid_argument},
            {400, "KeyTooLongError", errc::invalid_argument},
            {400, "EntityTooLarge", errc::invalid_argument},
            {400, "EntityTooSmall", errc::invalid_argument},
            {411, "MissingContentLength", errc::invalid_argument},
            {400, "MetadataTooLarge", errc::invalid_argument},
            {405, "MethodNotAllowed", errc::invalid_argument},
        },
        classify_s3);
}

TEST_CASE("S3: the AWS throttling codes are throttled whatever the status") {
    for (auto code : throttling_codes) {
        INFO(std::string(code));
        CHECK(classify_s3(503, code) == errc::throttled);
        CHECK(classify_s3(400, code) == errc::throttled);
    }
}

TEST_CASE("S3: the code wins over the status (trap 12: 200 with an <Error> body)") {
    CHECK(classify_s3(200, "InternalError") == errc::service_unavailable);
    CHECK(classify_s3(200, "SlowDown") == errc::throttled);
    CHECK(classify_s3(200, "SomethingNew") == errc::invalid_response);
    CHECK(classify_s3(503, "SlowDown") != errc::service_unavailable);
    CHECK(classify_s3(400, "RequestTimeout") == errc::timeout);
}

TEST_CASE("S3: success and status fallbacks (HEAD has no body, unknown codes)") {
    CHECK_FALSE(classify_s3(200, ""));
    CHECK_FALSE(classify_s3(204, ""));
    CHECK_FALSE(classify_s3(206, "  "));
    check_rows(
        {
            {304, "", errc::precondition_failed},
            {301, "", errc::invalid_argument},
            {308, "", errc::invalid_argument},
            {307, "", errc::service_unavailable},
            {302, "", errc::invalid_response},
            {400, "", errc::invalid_argument},
            {400, "BrandNewCode", errc::invalid_argument},
            {401, "", errc::auth_failed},
            {403, "", errc::auth_failed},
            {404, "", errc::not_found},
            {408, "", errc::timeout},
            {409, "", errc::conflict},
            {409, "BrandNewConflict", errc::conflict},
            {412, "", errc::precondition_failed},
            {413, "", errc::invalid_argument},
            {429, "", errc::throttled},
            {500, "", errc::service_unavailable},
            {501, "", errc::capability_missing},
            {502, "", errc::service_unavailable},
            {503, "", errc::service_unavailable},
            {504, "", errc::service_unavailable},
            {100, "", errc::invalid_response},
            {0, "", errc::invalid_response},
            {600, "", errc::invalid_response},
        },
        classify_s3);
    CHECK(classify_s3(404, " NoSuchKey\n") == errc::not_found);
}

TEST_CASE("DynamoDB: every name of protocol-facts §2.3, namespaced as the service sends them") {
    check_rows(
        {
            {400, "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", errc::precondition_failed},
            {400, "com.amazonaws.dynamodb.v20120810#TransactionCanceledException", errc::precondition_failed},
            {400, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException", errc::throttled},
            {400, "com.amazon.coral.availability#ThrottlingException", errc::throttled},
            {400, "com.amazonaws.dynamodb.v20120810#RequestLimitExceeded", errc::throttled},
            {400, "com.amazonaws.dynamodb.v20120810#LimitExceededException", errc::throttled},
            {400, "com.amazonaws.dynamodb.v20120810#TransactionInProgressException", errc::throttled},
            {400, "com.amazonaws.dynamodb.v20120810#TransactionConflictException", errc::conflict},
            {400, "com.amazonaws.dynamodb.v20120810#ReplicatedWriteConflictException", errc::conflict},
            {400, "com.amazonaws.dynamodb.v20120810#ItemCollectionSizeLimitExceededException", errc::invalid_argument},
            {400, "com.amazon.coral.validate#ValidationException", errc::invalid_argument},
            {400, "com.amazon.coral.service#SerializationException", errc::invalid_argument},
            {400, "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException", errc::not_found},
            {400, "com.amazonaws.dynamodb.v20120810#ResourceInUseException", errc::precondition_failed},
            {400, "com.amazon.coral.service#AccessDeniedException", errc::auth_failed},
            {400, "AccessDenied", errc::auth_failed},
            {400, "com.amazon.coral.service#UnrecognizedClientException", errc::auth_failed},
            {400, "com.amazon.coral.service#InvalidSignatureException", errc::auth_failed},
            {400, "com.amazon.coral.service#MissingAuthenticationTokenException", errc::auth_failed},
            {400, "com.amazon.coral.service#IncompleteSignatureException", errc::auth_failed},
            {400, "com.amazon.coral.service#ExpiredTokenException", errc::auth_failed},
            {403, "InvalidClientTokenId", errc::auth_failed},
            {500, "com.amazonaws.dynamodb.v20120810#InternalServerError", errc::service_unavailable},
            {500, "InternalFailure", errc::service_unavailable},
            {503, "com.amazonaws.dynamodb.v20120810#ServiceUnavailable", errc::service_unavailable},
            {503, "ServiceUnavailableException", errc::service_unavailable},
            {400, "RequestTimeoutException", errc::timeout},
        },
        classify_dynamodb);
}

TEST_CASE("DynamoDB: throttling is HTTP 400 and classified by name, never by status (trap 5)") {
    for (auto code : throttling_codes) {
        INFO(std::string(code));
        CHECK(classify_dynamodb(400, std::string("com.amazonaws.dynamodb.v20120810#") + std::string(code)) ==
              errc::throttled);
        CHECK(baton::is_retryable(classify_dynamodb(400, code)));
    }
    // The two 400s that must not be retried.
    CHECK_FALSE(baton::is_retryable(classify_dynamodb(400, "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException")));
    CHECK_FALSE(baton::is_retryable(classify_dynamodb(400, "com.amazon.coral.validate#ValidationException")));
}

TEST_CASE("DynamoDB: names from x-amzn-ErrorType, bare names, and status fallbacks") {
    CHECK(baton::aws::dynamodb_error_name("com.amazon.coral.validate#ValidationException") == "ValidationException");
    CHECK(baton::aws::dynamodb_error_name("ValidationException:http://internal.amazon.com/coral/com.amazon.coral.validate/") ==
          "ValidationException");
    CHECK(baton::aws::dynamodb_error_name(" ThrottlingException ") == "ThrottlingException");
    CHECK(baton::aws::dynamodb_error_name("") == "");
    CHECK(classify_dynamodb(400, "ConditionalCheckFailedException") == errc::precondition_failed);
    CHECK(classify_dynamodb(400, "ProvisionedThroughputExceededException:http://internal.amazon.com/x") == errc::throttled);
    CHECK_FALSE(classify_dynamodb(200, ""));
    CHECK(classify_dynamodb(200, "com.amazonaws.dynamodb.v20120810#NewThing") == errc::invalid_response);
    check_rows(
        {
            {400, "", errc::invalid_argument},
            {400, "com.amazonaws.dynamodb.v20120810#BrandNewException", errc::invalid_argument},
            {401, "", errc::auth_failed},
            {403, "", errc::auth_failed},
            {404, "", errc::not_found},
            {408, "", errc::timeout},
            {413, "", errc::invalid_argument},
            {429, "", errc::throttled},
            {500, "", errc::service_unavailable},
            {502, "", errc::service_unavailable},
            {503, "", errc::service_unavailable},
            {0, "", errc::invalid_response},
            {302, "", errc::invalid_response},
        },
        classify_dynamodb);
}

TEST_CASE("retry classification agrees with baton::is_retryable") {
    CHECK(baton::is_retryable(classify_s3(409, "ConditionalRequestConflict")));
    CHECK(baton::is_retryable(classify_s3(503, "SlowDown")));
    CHECK(baton::is_retryable(classify_s3(500, "InternalError")));
    CHECK(baton::is_retryable(classify_s3(400, "RequestTimeout")));
    CHECK_FALSE(baton::is_retryable(classify_s3(412, "PreconditionFailed")));
    CHECK_FALSE(baton::is_retryable(classify_s3(404, "NoSuchKey")));
    CHECK_FALSE(baton::is_retryable(classify_s3(403, "RequestTimeTooSkewed")));
    CHECK(classify_s3(403, "RequestTimeTooSkewed") == baton::condition::auth);
    CHECK(classify_dynamodb(400, "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException") ==
          baton::condition::contention);
}

}
