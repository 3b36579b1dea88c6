// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_PROVIDER_OPTIONS_HPP
#define BATON_AWS_PROVIDER_OPTIONS_HPP

/** @file
    Layer: wire (aws). The settings of credentials providers
    (`provider_options`), what a fetch delivers (`fetched_credentials`), and
    the time format credential endpoints use (`parse_iso8601`). The
    providers themselves are in `<baton/aws/credentials.hpp>`.
*/

#include <baton/aws/endpoint.hpp>
#include <baton/aws/profile.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/aws/detail/xml.hpp>
#include <baton/core/error.hpp>
#include <baton/http/client.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace baton::aws {

/** How providers fetch and refresh. Defaults follow botocore and the AWS SDKs.

    Validated when a provider is made (`validate()`); every field has a
    documented default, so `{}` is always fine.
*/
struct provider_options {
    /// Refresh in the background when fewer than this remain before expiration. Default 15 min; at most 7 days.
    std::chrono::seconds advisory_refresh{15 * 60};
    /// Make callers wait for a refresh when fewer than this remain. Default 10 min; at most `advisory_refresh`.
    std::chrono::seconds mandatory_refresh{10 * 60};
    /** Least time between two refreshes started because of the windows (not by `invalidate()`). Default 10 s; at most 1 day.

        Bounds the load on a failing source, and on one that hands out
        credentials already inside the windows (IMDS may do so for a few
        minutes before it rotates them).
    */
    std::chrono::seconds min_refresh_interval{10};
    /// The wall clock used for expiration windows; empty (default) is `system_clock::now`. Tests move time with it.
    std::function<std::chrono::system_clock::time_point()> now;
    /// Timeout of each EC2 instance metadata request, connect included. Default 1 s (it is probed last); at most 1 hour.
    std::chrono::milliseconds metadata_timeout{1000};
    /// Timeout of the container credentials request, connect included. Default 2 s; at most 1 hour.
    std::chrono::milliseconds container_timeout{2000};
    /// Lifetime requested for IMDSv2 session tokens, 1 to 21600 seconds. Default 21600 (6 h).
    unsigned imds_token_ttl_seconds = 21600;
    /// `DurationSeconds` for `AssumeRoleWithWebIdentity` (900 to 43200), or 0 (default) for the role's default.
    std::chrono::seconds web_identity_duration{0};
    /** HTTP options for STS requests (timeouts, `ca_file`, ...).

        `max_response_body_bytes` is further capped at `max_response_bytes`.
    */
    http::client_options sts_http;
    /// Largest credentials response accepted from any endpoint. Default 64 KiB (real ones are under 4 KiB).
    std::size_t max_response_bytes = 64u * 1024u;
    /// Largest web identity or container authorization token file accepted. Default 64 KiB.
    std::size_t max_token_file_bytes = 64u * 1024u;
    /** The longest a `credential_process` command may run before it is killed (and the fetch fails
        with `errc::timeout`). Default 1 min; from 1 ms to 1 hour.

        It covers the whole run, so a command that asks for an MFA code or a browser login must
        be answered within it. The command's stdout and stderr are each limited to
        `max_response_bytes`.
    */
    std::chrono::milliseconds process_timeout{60'000};
    /** The region whose STS endpoint assumes a profile's roles, as the AWS CLI's `--region` sets it.

        Empty (default): `AWS_REGION`, then `AWS_DEFAULT_REGION`, then the
        selected profile's `region`; with none, the global endpoint signed
        for `us-east-1`. Region `aws-global` also names the global endpoint.
    */
    std::string region;

    /// The time per `now`, or the system clock.
    std::chrono::system_clock::time_point current_time() const {
        return now ? now() : std::chrono::system_clock::now();
    }

    /// Checks the rules above. @throws config_error naming the field that breaks one.
    void validate() const;
};

/// What `credentials_provider::async_get` delivers.
struct fetched_credentials {
    /// The credentials, or null on error. Shared and immutable: cheap to keep per request.
    std::shared_ptr<credentials const> value;
    /** On error, what was tried and why it failed (the message names the source and the fix).

        On success usually empty; after a failed refresh that kept the
        current credentials in use, the message says so and why.
    */
    diagnostics diag;
    /// The source that produced `value`, e.g. `environment` or <tt>profile 'dev'</tt>; empty on error.
    std::string source;
};

/** Parses an ISO 8601 / RFC 3339 time as the credential endpoints send it.

    Accepts `YYYY-MM-DDTHH:MM:SS`, optional fraction, and `Z` or an offset
    (`+HH:MM`, `+HHMM`); years 1970 to 2200.
    @returns the instant, or nothing when `text` is not of that form.
*/
BATON_DECL std::optional<std::chrono::system_clock::time_point> parse_iso8601(std::string_view text) noexcept;

} // namespace baton::aws

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/provider_options.ipp>
#endif

#endif
