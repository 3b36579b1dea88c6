// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_S3_HPP
#define BATON_BACKEND_S3_HPP

/** @file
    Layer: backends. `s3_backend`: the record store over Amazon S3 and S3-compatible stores.

    | record store      | S3 request |
    |-------------------|------------|
    | `get`             | `GET /key`: the `ETag` header is the version; 404 `NoSuchKey` is "absent" |
    | `put` none        | `PUT /key` |
    | `put` absent      | `PUT /key` with `If-None-Match: *` |
    | `put` matches(v)  | `PUT /key` with `If-Match: v` (in the form the store accepts, see below) |
    | `erase` none      | `DELETE /key` |
    | `erase` matches(v)| `DELETE /key` with `If-Match: v` |
    | `list`            | `GET /?list-type=2&prefix=…&start-after=…&max-keys=…&encoding-type=url`, following continuation tokens |
    | `probe`           | a scratch key written, overwritten and deleted under stale and fresh preconditions |

    Every request is signed with SigV4 (S3 rules; `x-amz-content-sha256` is the
    SHA-256 of the body). Error responses, including a 200 that carries an
    `<Error>` document, are parsed by a strict hand-written parser for S3's XML
    subset (`<baton/aws/detail/xml.hpp>`) and mapped by `aws::classify_s3`;
    `diagnostics` carry the status, the S3 code, its message and the request
    id. Malformed or oversized responses are `errc::invalid_response`.

    @par Versions and ETags
    The version of a record is its ETag exactly as the store sent it
    (`"9b2c…"`, quotes included), from `GET`, `PUT` and listings alike
    (`&quot;` decoded). Some stores compare `If-Match` only against the
    unquoted ETag (Ceph RGW 16: the quoted form is always refused with 412);
    the probe detects this, and from then on `If-Match` is sent unquoted to
    that store. Versions handed to callers do not change form.

    @par Capability gating (why and how)
    A lease on a store that ignores preconditions would let two holders in,
    and some S3-compatible stores ignore them silently (s3rver ignores
    `If-None-Match`/`If-Match`; RGW ignores `If-Match` on `DELETE`). So by
    default (`s3_precondition_check::probe_first`) the backend probes the
    endpoint once, before its first conditional put or erase (all copies of
    a backend share the result; concurrent first writes wait for one probe),
    adapts the ETag form, and from then on refuses, with
    `errc::capability_missing` and a message naming the failed probe check:
    - a put with `absent` when conditional create is not honoured;
    - a put with `matches` when conditional replace is not honoured;
    - an erase with `matches` when conditional delete is not honoured.
    Unconditional operations, reads and listings never wait for or depend
    on the probe (stores without preconditions remain usable for them).
    A lease therefore fails `async_acquire` with `capability_missing` on
    such a store, and `last_diagnostics()` says which check failed. A probe
    that fails (network, auth, missing bucket) is not remembered: the
    conditional operations that waited for it fail with its error, and the
    next one probes again. `async_probe` may also be called explicitly (for
    a report, or to pay the probe's five to nine requests up front); its
    result replaces the remembered one. With
    `s3_precondition_check::trust` nothing is probed implicitly and
    preconditions are sent as AWS S3 expects (quoted ETags) until an
    explicit `async_probe` says otherwise.

    @par Outcomes
    - `matches` on a key that does not exist fails with
      `errc::precondition_failed` (and `current` empty) for puts and erases,
      whatever the store answered: AWS says 404 `NoSuchKey`, RGW says 412.
      Either way the version named is not the current one. A missing
      *bucket* stays `errc::not_found`.
    - Writes whose fate is unknown are reported, never retried here: a
      timeout after the request was sent is `errc::timeout`; 500/503 are
      `errc::service_unavailable` (RGW answers racing conditional writers
      with 500), 409 is `errc::conflict`; a connection lost or a response
      cut off after the request was sent is `errc::unknown_outcome`; so is a
      2xx without an `ETag`. The recipes settle these by reading back.
    - 503 `SlowDown` is `errc::throttled`, 403 is `errc::auth_failed`,
      501 `NotImplemented` is `errc::capability_missing`.

    @par Releases
    Leases release by writing a marker with `matches`, never by `DELETE`,
    so a store that ignores conditional deletes (RGW) still supports them.

    @par Thread safety
    Like `http::client`: distinct backends are independent; copies of one
    backend and their operations must run on one thread or one strand.
*/

#include <baton/backend/detail/s3_probe.hpp>
#include <baton/backend/detail/s3_requests.hpp>
#include <baton/backend/s3_params.hpp>
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

#include <memory>
#include <utility>

namespace baton {

/** The record store over S3 (see the file comment for the mapping, ETags, capability gating and outcomes).

    A cheap handle: copies share one HTTP client (one keep-alive pool), one
    probe result and one configuration; each copy has its own signer (see
    `use_signer`).

    @par Per-Operation Cancellation
    Every operation forwards cancellation (all types, handled as terminal)
    to its HTTP request in flight, which then completes with
    `operation_aborted`; a write already sent may or may not have been
    applied. A conditional write that is waiting for the implicit probe is
    cancelled only once the probe is done (the probe itself is never
    cancelled by one of its waiters).
*/
template <class = void>
class basic_s3_backend {
public:
    /// Completions run here unless the handler has an executor of its own.
    using executor_type = boost::asio::any_io_executor;

    /** A backend for `p.bucket` at `p.endpoint`; nothing is sent until the first operation.

        @throws config_error when `p` breaks a rule of `s3_backend_params` (the message names it).
    */
    basic_s3_backend(executor_type ex, s3_backend_params p)
        : state_(std::make_shared<detail::s3_state>(std::move(ex), validated(std::move(p)))),
          channel_(state_->channel) {}

    /// The default completion executor.
    executor_type get_executor() const noexcept { return state_->ex; }

    /** Signs this handle's requests with `s` (a SigV4 signer shares its key cache). Called by the recipes with their Signer.

        Every handle starts with a SigV4 signer of its own, so calling this is optional.
    */
    template <aws::request_signer S>
        requires signer_policy<S>
    void use_signer(S s) {
        channel_.use_signer(std::move(s));
    }

    /// The configuration in force (as validated).
    s3_backend_params const& params() const noexcept { return state_->params; }

    /// True when requests use path-style addressing (`host/bucket/key`).
    bool path_style() const noexcept { return state_->path_style; }

    /// What the last successful probe found; empty before one completed.
    std::optional<capabilities> const& probed() const noexcept { return state_->caps; }

    /// True when the probe found that this store compares only bare ETags, so `If-Match` is sent unquoted.
    bool sends_unquoted_etags() const noexcept { return state_->unquoted_etags; }

    /// The HTTP client (shared by all copies), e.g. for `close_idle()` or its skew estimate.
    http::client& client() noexcept { return state_->client; }

private:
    // Each operation's initiation is named, not a lambda, so that the functions below declare
    // their return type: checking a concept of them (record_store) then compiles no request code.
    struct initiate_get {
        template <class Handler>
        void operator()(Handler h, std::shared_ptr<detail::s3_state> st, aws::signed_channel s, std::string k) const {
            detail::s3_get(std::move(st), std::move(s), std::move(k), detail::s3_get_handler(std::move(h)));
        }
    };
    struct initiate_put {
        template <class Handler>
        void operator()(Handler h, std::shared_ptr<detail::s3_state> st, aws::signed_channel s, std::string k, std::string b, precondition p) const {
            detail::s3_put(std::move(st), std::move(s), std::move(k), std::move(b), std::move(p),
                           detail::s3_put_handler(std::move(h)));
        }
    };
    struct initiate_copy_object {
        template <class Handler>
        void operator()(Handler h, std::shared_ptr<detail::s3_state> st, aws::signed_channel s, std::string f, std::string t) const {
            detail::s3_copy(std::move(st), std::move(s), std::move(f), std::move(t), detail::s3_put_handler(std::move(h)));
        }
    };
    struct initiate_erase {
        template <class Handler>
        void operator()(Handler h, std::shared_ptr<detail::s3_state> st, aws::signed_channel s, std::string k, precondition p) const {
            detail::s3_erase(std::move(st), std::move(s), std::move(k), std::move(p),
                             detail::s3_erase_handler(std::move(h)));
        }
    };
    struct initiate_list {
        template <class Handler>
        void operator()(Handler h, std::shared_ptr<detail::s3_state> st, aws::signed_channel s, std::string p, std::string a, std::size_t n) const {
            detail::s3_list(std::move(st), std::move(s), std::move(p), std::move(a), n,
                            detail::s3_list_handler(std::move(h)));
        }
    };
    struct initiate_probe {
        template <class Handler>
        void operator()(Handler h, std::shared_ptr<detail::s3_state> st, aws::signed_channel s) const {
            detail::s3_probe(std::move(st), std::move(s), detail::s3_probe_handler(std::move(h)));
        }
    };
    struct initiate_create_bucket {
        template <class Handler>
        void operator()(Handler h, std::shared_ptr<detail::s3_state> st, aws::signed_channel s) const {
            detail::s3_create_bucket(std::move(st), std::move(s), detail::s3_bucket_handler(std::move(h)));
        }
    };

public:
    /** Reads `key`. `found` is empty when the store answers 404 `NoSuchKey`.

        @par Handler signature
        `void(error_code, get_result)`. Errors: `invalid_argument` (key empty or too long),
        `not_found` (the bucket is missing), `auth_failed`, `throttled`,
        `service_unavailable`, `timeout`, `invalid_response` (e.g. no `ETag`), connection errors.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_get(std::string key, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, get_result)>(initiate_get{}, token, std::declval<std::shared_ptr<detail::s3_state>&>(), std::declval<aws::signed_channel&>(), std::move(key))) {
        return boost::asio::async_initiate<Token, void(error_code, get_result)>(initiate_get{}, token, state_, channel_, std::move(key));
    }

    /** Writes `key` if `pc` holds; the new version is the ETag of the write.

        @par Handler signature
        `void(error_code, put_result)`. Errors: `precondition_failed` (412, or
        `matches` on a missing key), `capability_missing` (the store does not
        honour `pc`: see capability gating), `conflict` (409), `service_unavailable`
        (5xx), `timeout`, `unknown_outcome` (sent, answer lost), `throttled`,
        `auth_failed`, `not_found` (bucket), `invalid_argument` (key, body size,
        empty version). `current` is never filled (S3 does not return the object).
    */
    template <class Token = boost::asio::deferred_t>
    auto async_put(std::string key, std::string body, precondition pc, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, put_result)>(initiate_put{}, token, std::declval<std::shared_ptr<detail::s3_state>&>(), std::declval<aws::signed_channel&>(), std::move(key), std::move(body), std::move(pc))) {
        return boost::asio::async_initiate<Token, void(error_code, put_result)>(initiate_put{}, token, state_, channel_, std::move(key), std::move(body), std::move(pc));
    }

    /** Copies the object `from` to `to` inside the store (S3 CopyObject: the bytes do not pass
        through this process), unconditionally. `version` is the new ETag when the service
        returns it.

        @par Handler signature
        `void(error_code, put_result)`. Errors: `not_found` (no `from`, or no bucket), and those
        of an unconditional `async_put`; an error document inside a 200 answer is reported.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_copy_object(std::string from, std::string to, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, put_result)>(initiate_copy_object{}, token, std::declval<std::shared_ptr<detail::s3_state>&>(), std::declval<aws::signed_channel&>(), std::move(from), std::move(to))) {
        return boost::asio::async_initiate<Token, void(error_code, put_result)>(initiate_copy_object{}, token, state_, channel_, std::move(from), std::move(to));
    }

    /** Deletes `key` if `pc` holds. Unconditional deletes of missing keys succeed (S3 answers 204).

        @par Handler signature
        `void(error_code, erase_result)`. Errors as `async_put`; `capability_missing`
        also for `absent` (S3 has no such delete) and, after a probe, for
        `matches` on stores that ignore `If-Match` on DELETE (RGW), instead of
        deleting unconditionally.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_erase(std::string key, precondition pc, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, erase_result)>(initiate_erase{}, token, std::declval<std::shared_ptr<detail::s3_state>&>(), std::declval<aws::signed_channel&>(), std::move(key), std::move(pc))) {
        return boost::asio::async_initiate<Token, void(error_code, erase_result)>(initiate_erase{}, token, state_, channel_, std::move(key), std::move(pc));
    }

    /** Lists keys starting with `prefix`, strictly after `after`, at most `limit`, ascending.

        Follows continuation tokens until `limit` keys are found or the listing
        ends (at most 32 requests per call; `truncated` then says more follow).
        Keys are URL-decoded and have `key_prefix` removed; versions are ETags
        with entities decoded.

        @par Handler signature
        `void(error_code, list_page)`. Errors: `invalid_argument` (`limit` 0),
        `invalid_response` (malformed XML, keys out of order or outside the prefix),
        and the errors of `async_get`. Keys are URL-decoded only when the response
        says `<EncodingType>url</EncodingType>` (stores that ignore the parameter send them literally).
    */
    template <class Token = boost::asio::deferred_t>
    auto async_list(std::string prefix, std::string after, std::size_t limit, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, list_page)>(initiate_list{}, token, std::declval<std::shared_ptr<detail::s3_state>&>(), std::declval<aws::signed_channel&>(), std::move(prefix), std::move(after), limit)) {
        return boost::asio::async_initiate<Token, void(error_code, list_page)>(initiate_list{}, token, state_, channel_, std::move(prefix), std::move(after), limit);
    }

    /** Checks what the endpoint honours, on a scratch key under `key_prefix + probe_prefix`.

        Five to nine requests: put if absent on a new key and on the existing
        key; put if matching the current ETag (quoted as returned, then
        unquoted if refused); put if matching a stale ETag; erase if matching a
        stale ETag, then the current one; put if matching on the (now) missing
        key; an unconditional delete to clean up. `findings` has one line per
        check; when leases are not supported, `diag.message` names the failed
        checks. The result is remembered by every copy and gates later
        conditional operations (see the file comment); a probe already running
        is joined rather than repeated.

        @par Handler signature
        `void(error_code, capabilities)`. An error means the probe could not
        finish (auth, missing bucket, network, ...): `capabilities::diag` and
        the last finding say where; nothing is remembered then.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_probe(Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, capabilities)>(initiate_probe{}, token, std::declval<std::shared_ptr<detail::s3_state>&>(), std::declval<aws::signed_channel&>())) {
        return boost::asio::async_initiate<Token, void(error_code, capabilities)>(initiate_probe{}, token, state_, channel_);
    }

    /** Creates the bucket (`PUT /bucket`, with a `LocationConstraint` outside us-east-1). For tools and tests.

        @par Handler signature
        `void(error_code, diagnostics)`. `precondition_failed` when it exists
        already (`BucketAlreadyOwnedByYou`, `BucketAlreadyExists`).
    */
    template <class Token = boost::asio::deferred_t>
    auto async_create_bucket(Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, diagnostics)>(initiate_create_bucket{}, token, std::declval<std::shared_ptr<detail::s3_state>&>(), std::declval<aws::signed_channel&>())) {
        return boost::asio::async_initiate<Token, void(error_code, diagnostics)>(initiate_create_bucket{}, token, state_, channel_);
    }

private:
    static s3_backend_params validated(s3_backend_params p) {
        p.validate();
        return p;
    }

    std::shared_ptr<detail::s3_state> state_;
    aws::signed_channel channel_;
};
/// The S3 record store (`basic_s3_backend<void>`; a class template only so that its request code
/// compiles in the units that use it).
using s3_backend = basic_s3_backend<>;


} // namespace baton

#include <baton/backend/impl/s3.hpp>

#ifdef BATON_SEPARATE_COMPILATION
// The request code of the S3 store is compiled once, in <baton/src.hpp>.
namespace baton::detail {
extern template void s3_get<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, s3_get_handler);
extern template void s3_put<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, std::string, precondition,
                              s3_put_handler);
extern template void s3_copy<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, std::string, s3_put_handler);
extern template void s3_erase<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, precondition,
                                s3_erase_handler);
extern template void s3_list<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, std::string, std::size_t,
                               s3_list_handler);
extern template void s3_probe<>(std::shared_ptr<s3_state>, aws::signed_channel, s3_probe_handler);
extern template void s3_create_bucket<>(std::shared_ptr<s3_state>, aws::signed_channel, s3_bucket_handler);
} // namespace baton::detail
#endif

#endif
