// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_AZURE_BLOB_HPP
#define BATON_BACKEND_AZURE_BLOB_HPP

/** @file
    Layer: backends. `azure_blob_backend`: the record store over Azure Blob Storage (and Azurite).

    | record store       | Blob service request |
    |--------------------|----------------------|
    | `get`              | Get Blob: the `ETag` header is the version; 404 `BlobNotFound` is "absent" |
    | `put` none         | Put Blob (a block blob) |
    | `put` absent       | Put Blob with `If-None-Match: *` |
    | `put` matches(v)   | Put Blob with `If-Match: v` |
    | `erase` none       | Delete Blob (a missing blob is no error) |
    | `erase` matches(v) | Delete Blob with `If-Match: v` |
    | `list`             | List Blobs with `prefix`, `maxresults` and `marker`, following `NextMarker` |
    | `probe`            | a scratch blob written, overwritten and deleted under stale and fresh preconditions |

    Every request is signed with Shared Key (`<baton/azure/shared_key.hpp>`) or carries the SAS
    token of `azure::account`. Error answers are read from `x-ms-error-code` and the `<Error>`
    document and mapped by `azure::classify_blob`; `diagnostics` carry the status, the code, its
    message and `x-ms-request-id`. Malformed or oversized answers are `errc::invalid_response`.

    @par Versions
    The version of a record is its ETag exactly as the service sends it in the `ETag` header
    (`"0x8DC…"`, quotes included); listings, whose XML carries it without quotes, hand it back
    in the same quoted form, so versions from `get`, `put` and `list` compare equal.

    @par Capability gating
    As for S3 (see `<baton/backend/s3.hpp>`): by default the backend probes the endpoint once
    before its first conditional write and refuses, with `errc::capability_missing` naming the
    failed check, conditional operations that the store would ignore. Azure and Azurite honour
    all three; the probe guards against a proxy or emulator that does not.

    @par Outcomes
    - `matches` on a blob that does not exist fails with `errc::precondition_failed`;
      `absent` on one that exists too (Azure answers 409 `BlobAlreadyExists`, or 412).
    - A blob that holds a native Azure lease (412 `LeaseIdMissing`) is not a refusal of the
      write: it is `errc::foreign_record`, final, with a message naming the blob. baton never
      takes native leases; someone else did.
    - A missing container is `errc::not_found` with a message naming it.
    - Writes whose fate is unknown are reported, never retried here: a timeout after the
      request was sent is `errc::timeout`, 500 and 503 are `errc::service_unavailable` or,
      for `ServerBusy` and `OperationTimedOut`, `errc::throttled`; a connection lost after the
      request was sent is `errc::unknown_outcome`, and so is a success without an `ETag`. The
      recipes settle these by reading back.
    - 403 is `errc::auth_failed`.

    @par Thread safety
    Like `http::client`: distinct backends are independent; copies of one backend and their
    operations must run on one thread or one strand.
*/

#include <baton/backend/azure_blob_params.hpp>
#include <baton/backend/detail/azure_blob_requests.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/http/client.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace baton {

/** The record store over Azure Blob Storage (see the file comment for the mapping, versions, capability gating and outcomes).

    A cheap handle: copies share one HTTP client (one keep-alive pool), one probe result and one
    configuration.

    @par Per-Operation Cancellation
    Every operation forwards cancellation (all types, handled as terminal) to its HTTP request in
    flight, which then completes with `operation_aborted`; a write already sent may or may not
    have been applied. A conditional write waiting for the implicit probe is cancelled only once
    the probe is done.
*/
template <class = void>
class basic_azure_blob_backend {
public:
    /// Completions run here unless the handler has an executor of its own.
    using executor_type = boost::asio::any_io_executor;

    /** A backend for `p.container` in `p.account`; nothing is sent until the first operation.

        @throws config_error when `p` breaks a rule of `azure_blob_backend_params` (the message names it).
    */
    basic_azure_blob_backend(executor_type ex, azure_blob_backend_params p)
        : state_(std::make_shared<detail::azure_blob_state>(std::move(ex), validated(std::move(p)))) {}

    /// The default completion executor.
    executor_type get_executor() const noexcept { return state_->ex; }

    /// The configuration in force (as validated).
    azure_blob_backend_params const& params() const noexcept { return state_->params; }

    /// What the last successful probe found; empty before one completed.
    std::optional<capabilities> const& probed() const noexcept { return state_->caps; }

    /// The HTTP client (shared by all copies), e.g. for `close_idle()` or its skew estimate.
    http::client& client() noexcept { return state_->client; }

private:
    // Each operation's initiation is named, not a lambda, so that the functions below declare
    // their return type: checking a concept of them (record_store) then compiles no request code.
    using state_ptr = std::shared_ptr<detail::azure_blob_state>;
    struct initiate_get {
        template <class Handler>
        void operator()(Handler h, state_ptr st, std::string k) const {
            detail::azure_get(std::move(st), std::move(k), detail::azure_get_handler(std::move(h)));
        }
    };
    struct initiate_put {
        template <class Handler>
        void operator()(Handler h, state_ptr st, std::string k, std::string b, precondition p) const {
            detail::azure_put(std::move(st), std::move(k), std::move(b), std::move(p),
                              detail::azure_put_handler(std::move(h)));
        }
    };
    struct initiate_erase {
        template <class Handler>
        void operator()(Handler h, state_ptr st, std::string k, precondition p) const {
            detail::azure_erase(std::move(st), std::move(k), std::move(p), detail::azure_erase_handler(std::move(h)));
        }
    };
    struct initiate_list {
        template <class Handler>
        void operator()(Handler h, state_ptr st, std::string p, std::string a, std::size_t n) const {
            detail::azure_list(std::move(st), std::move(p), std::move(a), n, detail::azure_list_handler(std::move(h)));
        }
    };
    struct initiate_probe {
        template <class Handler>
        void operator()(Handler h, state_ptr st) const {
            detail::azure_probe(std::move(st), detail::azure_probe_handler(std::move(h)));
        }
    };
    struct initiate_create_container {
        template <class Handler>
        void operator()(Handler h, state_ptr st) const {
            detail::azure_create_container(std::move(st), detail::azure_container_handler(std::move(h)));
        }
    };

public:
    /** Reads `key`. `found` is empty when the service answers 404 `BlobNotFound`.

        @par Handler signature
        `void(error_code, get_result)`. Errors: `invalid_argument` (key empty or too long),
        `not_found` (the container is missing), `auth_failed`, `throttled`,
        `service_unavailable`, `timeout`, `invalid_response` (e.g. no `ETag`), connection errors.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_get(std::string key, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, get_result)>(initiate_get{}, token, std::declval<state_ptr&>(), std::move(key))) {
        return boost::asio::async_initiate<Token, void(error_code, get_result)>(initiate_get{}, token, state_, std::move(key));
    }

    /** Writes `key` (a block blob) if `pc` holds; the new version is the ETag of the write.

        @par Handler signature
        `void(error_code, put_result)`. Errors: `precondition_failed` (412 `ConditionNotMet`,
        409 `BlobAlreadyExists`, or `matches` on a missing blob), `capability_missing` (the
        store does not honour `pc`), `foreign_record` (a native Azure lease on the blob),
        `conflict` (another 409), `service_unavailable` and `throttled` (5xx), `timeout`, `unknown_outcome` (sent,
        answer lost), `auth_failed`, `not_found` (container), `invalid_argument` (key, body
        size, empty version). `current` is never filled.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_put(std::string key, std::string body, precondition pc, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, put_result)>(initiate_put{}, token, std::declval<state_ptr&>(), std::move(key), std::move(body), std::move(pc))) {
        return boost::asio::async_initiate<Token, void(error_code, put_result)>(initiate_put{}, token, state_, std::move(key), std::move(body), std::move(pc));
    }

    /** Deletes `key` if `pc` holds. Unconditional deletes of missing blobs succeed.

        @par Handler signature
        `void(error_code, erase_result)`. Errors as `async_put`; `capability_missing` for
        `absent` (there is no such delete).
    */
    template <class Token = boost::asio::deferred_t>
    auto async_erase(std::string key, precondition pc, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, erase_result)>(initiate_erase{}, token, std::declval<state_ptr&>(), std::move(key), std::move(pc))) {
        return boost::asio::async_initiate<Token, void(error_code, erase_result)>(initiate_erase{}, token, state_, std::move(key), std::move(pc));
    }

    /** Lists keys starting with `prefix`, strictly after `after`, at most `limit`, ascending
        in the service's order (by UTF-16 code units: byte order, except that characters from
        U+E000 to U+FFFF sort after those above U+FFFF).

        Follows `NextMarker` until `limit` keys are found or the listing ends (at most 32
        requests per call once keys were found; `truncated` then says more follow). List Blobs
        cannot start after a given name: a call whose `after` is the last key of an earlier
        truncated call continues from that call's marker (remembered per backend); any other
        `after` lists from `prefix` on and skips the names up to it.

        @par Handler signature
        `void(error_code, list_page)`. Errors: `invalid_argument` (`limit` 0),
        `invalid_response` (malformed XML, names out of order or outside the prefix, a marker
        that does not advance), and the errors of `async_get`.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_list(std::string prefix, std::string after, std::size_t limit, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, list_page)>(initiate_list{}, token, std::declval<state_ptr&>(), std::move(prefix), std::move(after), limit)) {
        return boost::asio::async_initiate<Token, void(error_code, list_page)>(initiate_list{}, token, state_, std::move(prefix), std::move(after), limit);
    }

    /** Checks what the endpoint honours, on a scratch blob under `key_prefix + probe_prefix`.

        Five to seven requests: put if absent on a new blob and on the existing one; put if
        matching the current ETag and a stale one; erase if matching a stale ETag, then the
        current one; put if matching on the (now) missing blob; an unconditional delete to clean
        up if needed. `findings` has one line per check. The result is remembered by every copy
        and gates later conditional operations.

        @par Handler signature
        `void(error_code, capabilities)`. An error means the probe could not finish (auth,
        missing container, network, ...); nothing is remembered then.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_probe(Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, capabilities)>(initiate_probe{}, token, std::declval<state_ptr&>())) {
        return boost::asio::async_initiate<Token, void(error_code, capabilities)>(initiate_probe{}, token, state_);
    }

    /** Creates the container (Create Container). For tools and tests.

        @par Handler signature
        `void(error_code, diagnostics)`. `precondition_failed` when it exists already.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_create_container(Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, diagnostics)>(initiate_create_container{}, token, std::declval<state_ptr&>())) {
        return boost::asio::async_initiate<Token, void(error_code, diagnostics)>(initiate_create_container{}, token, state_);
    }

private:
    static azure_blob_backend_params validated(azure_blob_backend_params p) {
        p.validate();
        return p;
    }

    state_ptr state_;
};
/// The Azure Blob record store (`basic_azure_blob_backend<void>`; a class template only so that
/// its request code compiles in the units that use it).
using azure_blob_backend = basic_azure_blob_backend<>;

} // namespace baton

#include <baton/backend/impl/azure_blob.hpp>

#ifdef BATON_SEPARATE_COMPILATION
// The request code of the Azure Blob store is compiled once, in <baton/src/azure_blob.hpp>.
namespace baton::detail {
extern template void azure_get<>(std::shared_ptr<azure_blob_state>, std::string, azure_get_handler);
extern template void azure_put<>(std::shared_ptr<azure_blob_state>, std::string, std::string, precondition,
                                 azure_put_handler);
extern template void azure_erase<>(std::shared_ptr<azure_blob_state>, std::string, precondition, azure_erase_handler);
extern template void azure_list<>(std::shared_ptr<azure_blob_state>, std::string, std::string, std::size_t,
                                  azure_list_handler);
extern template void azure_probe<>(std::shared_ptr<azure_blob_state>, azure_probe_handler);
extern template void azure_create_container<>(std::shared_ptr<azure_blob_state>, azure_container_handler);
} // namespace baton::detail
#endif

#endif
