// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_S3_PARAMS_HPP
#define BATON_BACKEND_S3_PARAMS_HPP

/** @file
    Layer: backends. The settings of `s3_backend` (`s3_backend_params`,
    validated when a backend is made) and when it checks what the endpoint
    honours (`s3_precondition_check`). The backend is in
    `<baton/backend/s3.hpp>`.
*/

#include <baton/aws/credentials.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/errors.hpp>
#include <baton/aws/detail/xml.hpp>
#include <baton/aws/signed_channel.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/core/signer.hpp>
#include <baton/http/client.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace baton {

/// When `s3_backend` checks what the endpoint honours (see "Capability gating" in `<baton/backend/s3.hpp>`).
enum class s3_precondition_check {
    /// Probe once before the first conditional put or erase; refuse conditional operations the store ignores. Default.
    probe_first,
    /// Never probe implicitly: send preconditions as AWS S3 expects (quoted ETags) unless `async_probe` was run.
    trust,
};

/** Settings of an `s3_backend`. Checked by `validate()` when the backend is constructed.

    Rules:
    - `bucket`: 3 to 63 characters `a-z 0-9 . -`, starting and ending with a letter or digit;
    - `region`: not empty, characters `a-z 0-9 -`;
    - `endpoint`: empty (AWS: `https://s3.<region>.amazonaws.com`) or `http[s]://host[:port]` without a path;
    - `credentials`: access key id and secret both present;
    - `key_prefix` and `probe_prefix` leave room for keys (together at most 960 bytes; `probe_prefix` not empty);
    - 0 < `max_body_bytes` ≤ `http.max_response_body_bytes` (a record that could be written but never read back is refused);
    - `http` obeys `http::client_options::validate`.
*/
struct s3_backend_params {
    /** Where the store is, such as `http://127.0.0.1:7480`. Empty: AWS, `https://s3.<region>.amazonaws.com`.

        Only scheme, host and port: the bucket goes in `bucket`, never in the URL.
    */
    std::string endpoint;
    /// The region in the SigV4 credential scope. Default `us-east-1` (also what most S3-compatible stores expect).
    std::string region = "us-east-1";
    /// The bucket. Required; the backend does not create it (see `s3_backend::async_create_bucket`).
    std::string bucket;
    /// Prepended to every key (e.g. `locks/`); listings strip it again.
    std::string key_prefix;
    /** Path-style (`host/bucket/key`) or virtual-hosted (`bucket.host/key`) addressing.

        Empty: path-style for a custom `endpoint` (what S3-compatible stores serve by
        default), virtual-hosted for AWS unless the bucket name contains a dot
        (which would break TLS with the wildcard certificate).
    */
    std::optional<bool> path_style;
    /// Static credentials that sign every request. Never logged; `credentials.redacted()` names the key id only.
    aws::credentials credentials;
    /** Where credentials come from instead, such as `aws::default_chain(ex)`: leave `credentials` empty.

        Requests sign with the provider's cached credentials without waiting; only when it
        has none usable (first use, or expiry within its mandatory window) does a request
        wait for a fetch, and a failed fetch fails the request with its diagnostics
        (`errc::no_credentials` listing every source tried). An `ExpiredToken` answer
        makes the provider fetch afresh for the next request.
    */
    std::optional<aws::credentials_provider> credentials_provider;
    /// Connection, timeout and size settings of the HTTP client.
    http::client_options http;
    /// Largest body a put accepts; larger ones fail with `errc::invalid_argument`. Default 5 MiB.
    std::size_t max_body_bytes = 5u * 1024u * 1024u;
    /// When the endpoint's handling of preconditions is checked. Default `probe_first`.
    s3_precondition_check preconditions = s3_precondition_check::probe_first;
    /** Where (under `key_prefix`) the probe writes its scratch keys; each probe uses a fresh random
        name and deletes it afterwards. Listings of a prefix covering it may briefly show one.
    */
    std::string probe_prefix = ".baton-probe/";

    /// Checks the rules above. @throws config_error naming the field that breaks one (never echoing secrets).
    void validate() const;
};

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/backend/impl/s3_params.ipp>
#endif

#endif
