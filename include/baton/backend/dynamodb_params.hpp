// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_DYNAMODB_PARAMS_HPP
#define BATON_BACKEND_DYNAMODB_PARAMS_HPP

/** @file
    Layer: backends. The settings of `dynamodb_backend`
    (`dynamodb_backend_params`, validated when a backend is made) and the
    answers of its table and raw-call operations. The backend is in
    `<baton/backend/dynamodb.hpp>`.
*/

#include <baton/backend/detail/dynamodb_json.hpp>
#include <baton/aws/credentials.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/errors.hpp>
#include <baton/aws/signed_channel.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/backend/detail/dynamodb_json.hpp>
#include <baton/core/error.hpp>
#include <baton/http/client.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>

namespace baton {

/** Settings of a `dynamodb_backend`. Checked by `validate()` (and so by the constructor). */
struct dynamodb_backend_params {
    /** Where to send requests: `scheme://host[:port]`, such as `http://127.0.0.1:8000`.

        Empty (default): `https://dynamodb.<region>.amazonaws.com` (`.com.cn` for `cn-` regions).
    */
    std::string endpoint;
    /// The region in the SigV4 scope, e.g. `us-east-1`. Required.
    std::string region;
    /// The table (3 to 255 characters of `A-Z a-z 0-9 _ . -`). Required.
    std::string table;
    /// Name of the table's partition (HASH) key attribute, of type S. Default `pk`.
    std::string partition_key = "pk";
    /// The identity that signs requests: access key id and secret, unless `credentials_provider` is set.
    aws::credentials credentials;
    /** Where credentials come from instead, such as `aws::default_chain(ex)`: leave `credentials` empty.

        Requests sign with the provider's cached credentials without waiting; only when it
        has none usable (first use, or expiry within its mandatory window) does a request
        wait for a fetch, and a failed fetch fails the request with its diagnostics
        (`errc::no_credentials` listing every source tried). An `ExpiredTokenException`
        answer makes the provider fetch afresh for the next request.
    */
    std::optional<aws::credentials_provider> credentials_provider;
    /// Connections, timeouts and response limits of the HTTP client.
    http::client_options http;
    /// Puts with larger bodies fail with `errc::invalid_argument`. Default 128 KiB (at most 180 KiB).
    std::size_t max_body_bytes = 128 * 1024;
    /// How long `async_create_table` waits for the table to become ACTIVE. Default 60 s; at most 24 hours.
    std::chrono::milliseconds table_wait_timeout{60000};
    /// Most Scan pages (up to 1 MB each) one `async_list` reads before giving up. Default 1000.
    std::size_t max_scan_pages = 1000;

    /// Checks the rules in the field comments. @throws config_error naming the field and the rule.
    void validate() const;

    /// The endpoint URL in force: `endpoint`, or the AWS one for `region`.
    std::string effective_endpoint() const;
};

/// What `async_create_table` and `async_check_table` found.
struct dynamodb_table_info {
    /// `ACTIVE`, `CREATING`, ... (empty when the table could not be described).
    std::string status;
    /// The table's key schema, e.g. `pk (S, HASH)`.
    std::string key_schema;
    /// True when this call created the table (false: it existed already).
    bool created = false;
    /// What the service said, on failure.
    diagnostics diag;
};

/// The raw answer to `dynamodb_backend::async_call`.
struct dynamodb_response {
    /// HTTP status (0 when no response arrived).
    unsigned status = 0;
    /// The response body (JSON), as received.
    std::string body;
    /// What the service said, on failure.
    diagnostics diag;
};

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/backend/impl/dynamodb_params.ipp>
#endif

#endif
