// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_ENDPOINT_HPP
#define BATON_AWS_ENDPOINT_HPP

/** @file
    Layer: wire (aws). Where requests to an AWS service go: endpoint URLs configured in the
    environment, the default AWS endpoints, and S3 bucket addressing.

    @par Configured endpoints
    The AWS SDKs and CLI read `AWS_ENDPOINT_URL_<SERVICE_ID>` (the service
    id upper-cased, spaces turned into `_`: `AWS_ENDPOINT_URL_S3`,
    `AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL_STS`), then
    `AWS_ENDPOINT_URL` for every service; `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true`
    disables both. `resolve_endpoint_url` follows the same order, so one
    environment points baton and the AWS CLI at the same store. It also
    checks the URL (see `http::parse_endpoint`), so a bad variable is
    reported by name when it is read, not as a connection failure later.
    Given the shared files and a profile, it also reads what the CLI reads
    there: the profile's `services` section (`sts =` then an indented
    `endpoint_url = ...`), then the profile's own `endpoint_url`.

    @par S3 addressing
    S3 serves a bucket two ways: virtual-hosted (`https://BUCKET.s3.REGION.amazonaws.com/KEY`)
    and path-style (`https://s3.REGION.amazonaws.com/BUCKET/KEY`).
    `resolve_s3_address` picks path-style for custom endpoints (S3-compatible
    stores such as Ceph RGW and MinIO serve it out of the box, and need a
    configured DNS domain for the other) and for bucket names with a dot
    (the wildcard TLS certificate `*.s3.REGION.amazonaws.com` does not
    cover `a.b.s3...`), and virtual-hosted for AWS otherwise, which AWS
    prefers and some of its features require. Either choice can be forced.
*/

#include <baton/core/detail/config.hpp>
#include <baton/aws/detail/settings_rules.hpp>
#include <baton/aws/profile.hpp>
#include <baton/core/error.hpp>
#include <baton/http/client.hpp>

#include <boost/system/result.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <boost/url/url.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace baton::aws {

/// An endpoint URL found in the environment, and where it was found (for messages).
struct configured_endpoint {
    /// The URL as configured, e.g. `http://127.0.0.1:7480`; checked by `http::parse_endpoint`.
    std::string url;
    /// The variable it came from, e.g. `AWS_ENDPOINT_URL_S3`.
    std::string source;
};

/** The service-specific variable for `service_id`: `AWS_ENDPOINT_URL_` plus the id upper-cased, spaces as `_`.

    `"S3"` gives `AWS_ENDPOINT_URL_S3`, `"DynamoDB"` gives `AWS_ENDPOINT_URL_DYNAMODB`,
    `"Elastic Beanstalk"` gives `AWS_ENDPOINT_URL_ELASTIC_BEANSTALK`.
*/
BATON_DECL std::string endpoint_url_variable(std::string_view service_id);

/** The endpoint URL configured for `service_id` in the environment `env`, if any.

    Order: `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true` (any case) ignores
    everything below; otherwise `AWS_ENDPOINT_URL_<SERVICE_ID>`, then
    `AWS_ENDPOINT_URL`. A variable set to the empty string counts as unset.
    The first one set decides: if it is not a valid endpoint URL, that is an
    error, not a reason to look further.

    @param service_id the AWS service id, e.g. `S3`, `DynamoDB`, `STS`
    @param diag on error, one line naming the variable and what to fix (never the URL itself, which
           could carry a secret)
    @param env where to read variables (see `env_lookup` in `<baton/aws/profile.hpp>`)
    @returns the configured endpoint; nothing when none is configured (use the AWS default,
             `default_endpoint_url`); `errc::invalid_argument` for a URL that `http::parse_endpoint`
             refuses, an empty `service_id`, or an ignore flag that is neither `true` nor `false`.
*/
BATON_DECL boost::system::result<std::optional<configured_endpoint>>
resolve_endpoint_url(std::string_view service_id, diagnostics& diag, env_lookup const& env = process_environment());

/** As above, and then the shared config of `profile_name`, as the AWS CLI reads it.

    Order: `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`, else the profile's
    `ignore_configured_endpoint_urls`, when `true`, ignores everything
    below; `AWS_ENDPOINT_URL_<SERVICE_ID>`; `AWS_ENDPOINT_URL`; the
    `endpoint_url` under the service's key (the id lower-cased, spaces and
    `-` as `_`: `sts`, `sso_oidc`, `dynamodb`) in the `[services NAME]`
    section the profile names with `services`; the profile's
    `endpoint_url`. `source` then names the profile, the section and the
    line.

    @returns as above; also `errc::invalid_argument` when the profile names
             a `services` section that does not exist, or a URL there is invalid.
*/
BATON_DECL boost::system::result<std::optional<configured_endpoint>>
resolve_endpoint_url(std::string_view service_id, shared_config const& files, std::string_view profile_name,
                     diagnostics& diag, env_lookup const& env = process_environment());

/** The DNS suffix of the AWS partition that `region` belongs to.

    `amazonaws.com.cn` for China (`cn-` regions), `amazonaws.com` otherwise
    (commercial and GovCloud). Other partitions need an explicit endpoint.
*/
BATON_DECL std::string_view aws_dns_suffix(std::string_view region) noexcept;

/** The default AWS endpoint of a service in `region`.

    It is `https://<endpoint_prefix>.<region>.<suffix>`, the suffix from `aws_dns_suffix`:
    `default_endpoint_url("s3", "eu-west-1")` is `https://s3.eu-west-1.amazonaws.com`;
    `default_endpoint_url("dynamodb", "cn-north-1")` is `https://dynamodb.cn-north-1.amazonaws.com.cn`.
    `region` is used as given: callers validate it (both backends do).
*/
BATON_DECL std::string default_endpoint_url(std::string_view endpoint_prefix, std::string_view region);

/// How S3 requests name the bucket, as decided by `resolve_s3_address`.
struct s3_address {
    /// Where to connect. Virtual-hosted: its host starts with `bucket.`, and so do `Host` and the TLS name.
    http::endpoint endpoint;
    /// Put before `/key` in request targets: `/bucket` (percent-encoded) for path-style, empty for virtual-hosted.
    std::string path_prefix;
    /// True for path-style (`host/bucket/key`), false for virtual-hosted (`bucket.host/key`).
    bool path_style = true;
    /// True when no endpoint was configured and the default AWS endpoint of the region is used.
    bool aws_default = false;
};

/** Decides how to reach `bucket`: the connection endpoint and the request path prefix.

    - `endpoint_url` empty: AWS, `https://s3.<region>.<suffix>` (`aws_dns_suffix`);
      otherwise a custom endpoint (`http[s]://host[:port]`).
    - `path_style` set: that choice, if it can work. Virtual-hosted needs a
      host *name* (not an IP literal) and a bucket whose dot-separated parts
      are DNS labels (a-z, 0-9, '-', not at either end).
    - `path_style` empty: path-style for a custom endpoint, for a bucket with a
      dot (wildcard TLS certificates cover one label) and for a bucket that
      is not a DNS label; virtual-hosted for AWS otherwise.

    @param endpoint_url the configured endpoint, or empty for AWS
    @param region the region, for the AWS host name
    @param bucket the bucket's name
    @param path_style the addressing style to force, or empty to let the rules above choose
    @param diag on error, one line saying what is wrong and what to change
    @returns the address, or `errc::invalid_argument` (bad URL, empty bucket, region unusable in an
             AWS host name, or a forced virtual-hosted style that cannot work).
*/
BATON_DECL boost::system::result<s3_address> resolve_s3_address(std::string_view endpoint_url, std::string_view region,
                                                            std::string_view bucket, std::optional<bool> path_style,
                                                            diagnostics& diag);

} // namespace baton::aws

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/endpoint.ipp>
#endif

#endif
