// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_S3_HPP
#define BATON_BACKEND_S3_HPP

/** @file
    `s3_backend`: the record store over Amazon S3 and S3-compatible stores.

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
    subset (`<baton/detail/s3_xml.hpp>`) and mapped by `aws::classify_s3`;
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

#include <baton/aws/credentials.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/errors.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/detail/config.hpp>
#include <baton/detail/s3_xml.hpp>
#include <baton/error.hpp>
#include <baton/http/client.hpp>
#include <baton/store.hpp>

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
    /** Where the store is, e.g. `http://127.0.0.1:7480`. Empty: AWS, `https://s3.<region>.amazonaws.com`.

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
    /** Where credentials come from instead, e.g. `aws::default_chain(ex)`: leave `credentials` empty.

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
    void validate() const {
        auto fail = [](std::string const& why) { throw config_error("s3_backend_params: " + why); };
        if (bucket.size() < 3 || bucket.size() > 63)
            fail("bucket must be 3 to 63 characters (it is " + std::to_string(bucket.size()) + ")");
        for (char c : bucket) {
            bool const ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
            if (!ok) fail("bucket may contain only lower-case letters, digits, '.' and '-'");
        }
        auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
        if (!alnum(bucket.front()) || !alnum(bucket.back()))
            fail("bucket must start and end with a lower-case letter or a digit");
        if (region.empty()) fail("region must not be empty (e.g. us-east-1)");
        for (char c : region) {
            bool const ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
            if (!ok) fail("region may contain only lower-case letters, digits and '-'");
        }
        if (!endpoint.empty()) {
            diagnostics d;
            if (!http::parse_endpoint(endpoint, d)) fail("endpoint: " + d.message);
        }
        if (credentials_provider) {
            if (!credentials.access_key_id.empty() || !credentials.secret_access_key.empty())
                fail("set either credentials or credentials_provider, not both");
        } else {
            if (credentials.access_key_id.empty())
                fail("credentials.access_key_id must not be empty (or set credentials_provider, e.g. "
                     "aws::default_chain)");
            if (credentials.secret_access_key.empty()) fail("credentials.secret_access_key must not be empty");
        }
        if (probe_prefix.empty()) fail("probe_prefix must not be empty");
        if (key_prefix.size() + probe_prefix.size() > 960)
            fail("key_prefix and probe_prefix together must be at most 960 bytes, to leave room for keys");
        if (max_body_bytes == 0) fail("max_body_bytes must be positive");
        if (max_body_bytes > http.max_response_body_bytes)
            fail("max_body_bytes (" + std::to_string(max_body_bytes) +
                 ") must not exceed http.max_response_body_bytes (" + std::to_string(http.max_response_body_bytes) +
                 "), or records could be written but not read back");
        try {
            http.validate();
        } catch (config_error const& e) {
            fail(std::string("http: ") + e.what());
        }
    }
};

#ifndef BATON_DOXYGEN
namespace detail {

namespace s3_asio = boost::asio;
namespace s3_bhttp = boost::beast::http;

using s3_get_handler = s3_asio::any_completion_handler<void(error_code, get_result)>;
using s3_put_handler = s3_asio::any_completion_handler<void(error_code, put_result)>;
using s3_erase_handler = s3_asio::any_completion_handler<void(error_code, erase_result)>;
using s3_list_handler = s3_asio::any_completion_handler<void(error_code, list_page)>;
using s3_probe_handler = s3_asio::any_completion_handler<void(error_code, capabilities)>;
using s3_bucket_handler = s3_asio::any_completion_handler<void(error_code, diagnostics)>;

// Percent-encodes everything outside RFC 3986's unreserved set (upper-case hex); keeps '/' when asked.
inline std::string s3_uri_encode(std::string_view s, bool keep_slash) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size() + s.size() / 2);
    for (char c : s) {
        bool const unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                                c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/');
        if (unreserved) {
            out += c;
        } else {
            auto const u = static_cast<unsigned char>(c);
            out += '%';
            out += hex[u >> 4];
            out += hex[u & 15];
        }
    }
    return out;
}

inline std::string_view s3_trim(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
        s.remove_suffix(1);
    return s;
}

inline std::string s3_unquote(std::string_view etag) {
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
    return std::string(etag);
}

// The classified error of a response that is not a success, with `diag` filled in.
inline error_code s3_response_error(http::response const& res, diagnostics& diag, std::string& code) {
    diag.http_status = res.result_int();
    if (auto it = res.find("x-amz-request-id"); it != res.end()) diag.request_id = std::string(it->value());
    auto const body = s3_trim(res.body());
    if (!body.empty()) {
        s3_xml::s3_error e;
        diagnostics parse_diag;
        if (!s3_xml::parse_s3_error(body, e, parse_diag)) {
            code = e.code;
            diag.service_code = e.code;
            diag.message = e.message;
            if (!e.request_id.empty()) diag.request_id = e.request_id;
        } else {
            diag.message = "the error response is not an S3 error document (" + parse_diag.message + ")";
        }
    }
    return aws::classify_s3(diag.http_status, code);
}

// Whether a 2xx response to a write is really an <Error> (S3 may stream one after a 200).
// Returns the error, `unknown_outcome` for a body that cannot be read, or nothing for a plain success.
inline error_code s3_error_in_success(http::response const& res, diagnostics& diag) {
    auto const body = s3_trim(res.body());
    if (body.empty()) return {};
    s3_xml::element root;
    diagnostics parse_diag;
    if (s3_xml::parse_xml(body, root, parse_diag)) {
        diag.http_status = res.result_int();
        diag.message = "a " + std::to_string(res.result_int()) +
                       " response to a write carried a body that is not XML (" + parse_diag.message +
                       "); the write may or may not have been applied";
        return errc::unknown_outcome;
    }
    if (root.local_name() != "Error") return {};
    std::string code;
    auto ec = s3_response_error(res, diag, code);
    return ec ? ec : error_code(errc::invalid_response);
}

inline error_code s3_check_key(std::string const& key, std::string const& prefix, diagnostics& diag) {
    if (key.empty() || key.size() > store_limits::max_key_bytes) {
        diag.message = "key must be 1 to " + std::to_string(store_limits::max_key_bytes) + " bytes (it is " +
                       std::to_string(key.size()) + ")";
        return errc::invalid_argument;
    }
    if (prefix.size() + key.size() > store_limits::max_key_bytes) {
        diag.message = "key_prefix and key together exceed S3's limit of " +
                       std::to_string(store_limits::max_key_bytes) + " bytes";
        return errc::invalid_argument;
    }
    return {};
}

// A write's transport failure: a request that was sent and got no (complete) answer may have been
// applied. Timeouts keep their name (the lease reads back on timeout); other failures after sending
// become unknown_outcome so that nobody mistakes them for "not applied".
inline error_code s3_write_transport_error(error_code ec, http::request_info const& info) {
    if (info.outcome_unknown() && ec != errc::timeout && ec != s3_asio::error::operation_aborted)
        return errc::unknown_outcome;
    return ec;
}

struct s3_reply {
    error_code ec; // transport failure (the response is then empty)
    http::response res;
    http::request_info info;
};

// State shared by every copy of one s3_backend.
struct s3_state {
    s3_state(s3_asio::any_io_executor e, s3_backend_params p)
        : ex(std::move(e)), params(std::move(p)), client(ex, params.http),
          signing(aws::signing_params::for_s3(params.region)), rng(std::random_device{}()) {
        diagnostics diag;
        auto addr = aws::resolve_s3_address(params.endpoint, params.region, params.bucket, params.path_style, diag);
        if (!addr) throw config_error("s3_backend_params: " + diag.message);
        ep = addr->endpoint;
        path_style = addr->path_style;
        base = addr->path_prefix;
    }

    s3_asio::any_io_executor ex;
    s3_backend_params params;
    http::client client;
    http::endpoint ep;
    aws::signing_params signing;
    bool path_style = true;
    std::string base; // "/bucket" (path-style) or "" (virtual-hosted)

    // What the last successful probe found, and the probe in progress.
    std::optional<capabilities> caps;
    bool unquoted_etags = false;
    std::string create_check, replace_check, erase_check; // the finding that failed each capability
    bool probing = false;
    std::list<s3_probe_handler> probe_waiters; // a list: never move-assigns handlers
    std::mt19937_64 rng;

    std::string object_target(std::string const& key) const {
        return base + "/" + s3_uri_encode(params.key_prefix + key, true);
    }
    std::string bucket_target() const { return base.empty() ? std::string("/") : base; }

    std::string if_match_value(std::string const& version) const {
        return unquoted_etags ? s3_unquote(version) : version;
    }

    http::request make_request(s3_bhttp::verb v, std::string target, std::string body = {}) const {
        http::request req{v, target, 11};
        req.set(s3_bhttp::field::host, ep.host_header());
        req.set(s3_bhttp::field::user_agent, "baton");
        req.body() = std::move(body);
        req.prepare_payload();
        return req;
    }

    // Signs and sends one request; `f(s3_reply&&)` runs later, never inline.
    template <class F>
    static void send(std::shared_ptr<s3_state> const& st, aws::sigv4_signer const& signer, http::request req,
                     s3_asio::cancellation_slot slot, F&& f) {
        if (!st->params.credentials_provider)
            return sign_and_send(st, signer, st->params.credentials, std::move(req), slot, std::forward<F>(f));
        auto& provider = *st->params.credentials_provider;
        if (auto creds = provider.usable_now())
            return sign_and_send(st, signer, *creds, std::move(req), slot, std::forward<F>(f));
        // The continuation runs on the backend's executor (its strand), not the provider's.
        provider.async_get(s3_asio::bind_executor(st->ex, s3_asio::bind_cancellation_slot(
            slot, [st, signer, req = std::move(req), slot,
                   f = std::forward<F>(f)](error_code ec, aws::fetched_credentials fc) mutable {
                if (ec) {
                    s3_reply r;
                    r.ec = ec;
                    r.info.diag = std::move(fc.diag);
                    return f(std::move(r));
                }
                sign_and_send(st, signer, *fc.value, std::move(req), slot, std::move(f));
            })));
    }

    template <class F>
    static void sign_and_send(std::shared_ptr<s3_state> const& st, aws::sigv4_signer const& signer,
                              aws::credentials const& creds, http::request req, s3_asio::cancellation_slot slot,
                              F&& f) {
        auto const now = std::chrono::system_clock::now() + st->client.skew_estimate();
        if (auto ec = signer.sign(req, creds, st->signing, now)) {
            s3_reply r;
            r.ec = errc::invalid_argument;
            r.info.diag.message = "the request could not be signed (" + ec.message() +
                                  "): check the region, the credentials and the key";
            s3_asio::post(st->ex, [f = std::forward<F>(f), r = std::move(r)]() mutable { f(std::move(r)); });
            return;
        }
        auto reply = std::make_unique<s3_reply>();
        http::request_info& info = reply->info;
        st->client.async_request(
            st->ep, std::move(req), info,
            s3_asio::bind_cancellation_slot(
                slot, [st, f = std::forward<F>(f), reply = std::move(reply)](error_code ec, http::response res) mutable {
                    reply->ec = ec;
                    reply->res = std::move(res);
                    st->note_expired_credentials(reply->res);
                    f(std::move(*reply));
                }));
    }

    // Temporary credentials can expire early (revoked session, clock skew): fetch afresh next time.
    void note_expired_credentials(http::response const& res) {
        auto const status = res.result_int();
        if (!credentials_provider_in_use() || (status != 400 && status != 403)) return;
        diagnostics scratch;
        std::string code;
        s3_response_error(res, scratch, code);
        if (code == "ExpiredToken" || code == "TokenRefreshRequired") params.credentials_provider->invalidate();
    }
    bool credentials_provider_in_use() const noexcept { return params.credentials_provider.has_value(); }

    template <class Handler, class Result>
    void complete(Handler&& h, error_code ec, Result&& r) const {
        // Never inline: the handler runs later, on its associated executor.
        s3_asio::post(ex, s3_asio::append(std::forward<Handler>(h), ec, std::forward<Result>(r)));
    }

    std::string random_hex() {
        static constexpr char digits[] = "0123456789abcdef";
        std::string s;
        for (int i = 0; i < 2; ++i) {
            auto v = rng();
            for (int k = 0; k < 16; ++k, v >>= 4) s += digits[v & 15];
        }
        return s;
    }

    // Whether a conditional operation may go ahead, by the last probe; `capability_missing` names the failed check.
    error_code gate(bool erase, precondition::kind k, diagnostics& diag) const {
        if (!caps) return {};
        if (erase && k == precondition::kind::matches && !caps->conditional_erase) {
            diag.message = "conditional erase refused: this store does not honour If-Match on DELETE (probe: " +
                           erase_check +
                           "); unconditional erases still work, and leases release with a marker instead";
            return errc::capability_missing;
        }
        if (!erase && k == precondition::kind::absent && !caps->conditional_create) {
            diag.message = "conditional create refused: this store does not honour If-None-Match: * on PUT (probe: " +
                           create_check + "); leases and other conditional writes cannot be made safe on it";
            return errc::capability_missing;
        }
        if (!erase && k == precondition::kind::matches && !caps->conditional_replace) {
            diag.message = "conditional replace refused: this store does not honour If-Match on PUT (probe: " +
                           replace_check + "); leases and other conditional writes cannot be made safe on it";
            return errc::capability_missing;
        }
        return {};
    }
};

inline void s3_start_probe(std::shared_ptr<s3_state> const& st, aws::sigv4_signer const& signer);

// Runs `f(error_code, capabilities)` once the probe in progress (or a new one) is done.
template <class F>
void s3_after_probe(std::shared_ptr<s3_state> const& st, aws::sigv4_signer const& signer, F&& f) {
    st->probe_waiters.emplace_back(std::forward<F>(f));
    if (!st->probing) s3_start_probe(st, signer);
}

// ---- get -------------------------------------------------------------------------------------------
inline void s3_get(std::shared_ptr<s3_state> st, aws::sigv4_signer signer, std::string key, s3_get_handler h) {
    get_result r;
    if (auto ec = s3_check_key(key, st->params.key_prefix, r.diag)) return st->complete(std::move(h), ec, std::move(r));
    auto req = st->make_request(s3_bhttp::verb::get, st->object_target(key));
    auto slot = s3_asio::get_associated_cancellation_slot(h);
    s3_state::send(st, signer, std::move(req), slot,
                   [st, key = std::move(key), h = std::move(h)](s3_reply rep) mutable {
                       get_result r;
                       if (rep.ec) {
                           r.diag = std::move(rep.info.diag);
                           return st->complete(std::move(h), rep.ec, std::move(r));
                       }
                       auto const status = rep.res.result_int();
                       if (status >= 200 && status < 300) {
                           auto const it = rep.res.find(s3_bhttp::field::etag);
                           if (it == rep.res.end() || it->value().empty()) {
                               r.diag.http_status = status;
                               r.diag.message = "the GET response carried no ETag, so the record has no version";
                               return st->complete(std::move(h), error_code(errc::invalid_response), std::move(r));
                           }
                           r.found = record{key, std::move(rep.res.body()), std::string(it->value())};
                           return st->complete(std::move(h), error_code{}, std::move(r));
                       }
                       std::string code;
                       auto ec = s3_response_error(rep.res, r.diag, code);
                       if (status == 404 && code == "NoSuchKey") {
                           r.diag.clear();
                           return st->complete(std::move(h), error_code{}, std::move(r));
                       }
                       st->complete(std::move(h), ec, std::move(r));
                   });
}

// ---- put -------------------------------------------------------------------------------------------
inline void s3_send_put(std::shared_ptr<s3_state> st, aws::sigv4_signer const& signer, std::string key,
                        std::string body, precondition pc, s3_put_handler h) {
    auto req = st->make_request(s3_bhttp::verb::put, st->object_target(key), std::move(body));
    req.set(s3_bhttp::field::content_type, "application/octet-stream");
    if (pc.which() == precondition::kind::absent) req.set(s3_bhttp::field::if_none_match, "*");
    if (pc.which() == precondition::kind::matches) req.set(s3_bhttp::field::if_match, st->if_match_value(pc.version()));
    auto slot = s3_asio::get_associated_cancellation_slot(h);
    s3_state::send(st, signer, std::move(req), slot, [st, pc = std::move(pc), h = std::move(h)](s3_reply rep) mutable {
        put_result r;
        if (rep.ec) {
            r.diag = std::move(rep.info.diag);
            return st->complete(std::move(h), s3_write_transport_error(rep.ec, rep.info), std::move(r));
        }
        auto const status = rep.res.result_int();
        if (status >= 200 && status < 300) {
            if (auto ec = s3_error_in_success(rep.res, r.diag)) return st->complete(std::move(h), ec, std::move(r));
            auto const it = rep.res.find(s3_bhttp::field::etag);
            if (it == rep.res.end() || it->value().empty()) {
                r.diag.http_status = status;
                r.diag.message = "the PUT succeeded but its response carried no ETag; read the record back for its version";
                return st->complete(std::move(h), error_code(errc::unknown_outcome), std::move(r));
            }
            r.version = std::string(it->value());
            return st->complete(std::move(h), error_code{}, std::move(r));
        }
        std::string code;
        auto ec = s3_response_error(rep.res, r.diag, code);
        // `matches` on a missing key: AWS 404 NoSuchKey, RGW 412. Both: the version named is not current.
        if (pc.which() == precondition::kind::matches && status == 404 && code != "NoSuchBucket")
            ec = errc::precondition_failed;
        st->complete(std::move(h), ec, std::move(r));
    });
}

inline void s3_put(std::shared_ptr<s3_state> st, aws::sigv4_signer signer, std::string key, std::string body,
                   precondition pc, s3_put_handler h) {
    put_result r;
    if (auto ec = s3_check_key(key, st->params.key_prefix, r.diag)) return st->complete(std::move(h), ec, std::move(r));
    if (body.size() > st->params.max_body_bytes) {
        r.diag.message = "body of " + std::to_string(body.size()) + " bytes exceeds s3_backend_params::max_body_bytes (" +
                         std::to_string(st->params.max_body_bytes) + ")";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    if (pc.which() == precondition::kind::matches && pc.version().empty()) {
        r.diag.message = "a 'matches' precondition needs a version (an ETag)";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    bool const conditional = pc.which() != precondition::kind::none;
    if (!conditional || st->caps || st->params.preconditions == s3_precondition_check::trust) {
        if (auto ec = st->gate(false, pc.which(), r.diag)) return st->complete(std::move(h), ec, std::move(r));
        return s3_send_put(std::move(st), signer, std::move(key), std::move(body), std::move(pc), std::move(h));
    }
    s3_after_probe(st, signer,
                   [st, signer, key = std::move(key), body = std::move(body), pc = std::move(pc),
                    h = std::move(h)](error_code ec, capabilities caps) mutable {
                       put_result r;
                       if (ec) {
                           r.diag = std::move(caps.diag);
                           r.diag.message = "probing the store before a conditional write failed: " + r.diag.message;
                           return st->complete(std::move(h), ec, std::move(r));
                       }
                       if (auto gec = st->gate(false, pc.which(), r.diag))
                           return st->complete(std::move(h), gec, std::move(r));
                       s3_send_put(std::move(st), signer, std::move(key), std::move(body), std::move(pc), std::move(h));
                   });
}

// ---- erase -----------------------------------------------------------------------------------------
inline void s3_send_erase(std::shared_ptr<s3_state> st, aws::sigv4_signer const& signer, std::string key,
                          precondition pc, s3_erase_handler h) {
    auto req = st->make_request(s3_bhttp::verb::delete_, st->object_target(key));
    if (pc.which() == precondition::kind::matches) req.set(s3_bhttp::field::if_match, st->if_match_value(pc.version()));
    auto slot = s3_asio::get_associated_cancellation_slot(h);
    s3_state::send(st, signer, std::move(req), slot, [st, pc = std::move(pc), h = std::move(h)](s3_reply rep) mutable {
        erase_result r;
        if (rep.ec) {
            r.diag = std::move(rep.info.diag);
            return st->complete(std::move(h), s3_write_transport_error(rep.ec, rep.info), std::move(r));
        }
        auto const status = rep.res.result_int();
        if (status >= 200 && status < 300) {
            auto ec = s3_error_in_success(rep.res, r.diag);
            return st->complete(std::move(h), ec, std::move(r));
        }
        std::string code;
        auto ec = s3_response_error(rep.res, r.diag, code);
        if (pc.which() == precondition::kind::matches && status == 404 && code != "NoSuchBucket")
            ec = errc::precondition_failed;
        st->complete(std::move(h), ec, std::move(r));
    });
}

inline void s3_erase(std::shared_ptr<s3_state> st, aws::sigv4_signer signer, std::string key, precondition pc,
                     s3_erase_handler h) {
    erase_result r;
    if (auto ec = s3_check_key(key, st->params.key_prefix, r.diag)) return st->complete(std::move(h), ec, std::move(r));
    if (pc.which() == precondition::kind::absent) {
        r.diag.message = "S3 has no conditional delete for 'absent' (If-None-Match is not accepted on DELETE)";
        return st->complete(std::move(h), error_code(errc::capability_missing), std::move(r));
    }
    if (pc.which() == precondition::kind::matches && pc.version().empty()) {
        r.diag.message = "a 'matches' precondition needs a version (an ETag)";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    bool const conditional = pc.which() != precondition::kind::none;
    if (!conditional || st->caps || st->params.preconditions == s3_precondition_check::trust) {
        if (auto ec = st->gate(true, pc.which(), r.diag)) return st->complete(std::move(h), ec, std::move(r));
        return s3_send_erase(std::move(st), signer, std::move(key), std::move(pc), std::move(h));
    }
    s3_after_probe(st, signer,
                   [st, signer, key = std::move(key), pc = std::move(pc), h = std::move(h)](error_code ec,
                                                                                         capabilities caps) mutable {
                       erase_result r;
                       if (ec) {
                           r.diag = std::move(caps.diag);
                           r.diag.message = "probing the store before a conditional erase failed: " + r.diag.message;
                           return st->complete(std::move(h), ec, std::move(r));
                       }
                       if (auto gec = st->gate(true, pc.which(), r.diag))
                           return st->complete(std::move(h), gec, std::move(r));
                       s3_send_erase(std::move(st), signer, std::move(key), std::move(pc), std::move(h));
                   });
}

// ---- list ------------------------------------------------------------------------------------------
struct s3_list_op : std::enable_shared_from_this<s3_list_op> {
    static constexpr std::size_t max_requests = 32; // pages followed per call before handing back what there is

    std::shared_ptr<s3_state> st;
    aws::sigv4_signer signer;
    std::string full_prefix, start_after, last_key;
    std::size_t limit = 0;
    std::size_t requests = 0;
    std::string token;
    list_page page;
    s3_list_handler h;

    s3_list_op(std::shared_ptr<s3_state> s, aws::sigv4_signer sg, s3_list_handler handler)
        : st(std::move(s)), signer(std::move(sg)), h(std::move(handler)) {}

    void finish(error_code ec) {
        if (ec) page.entries.clear();
        st->complete(std::move(h), ec, std::move(page));
    }
    error_code invalid(std::string why) {
        page.diag.message = "invalid ListObjectsV2 response: " + std::move(why);
        return errc::invalid_response;
    }

    void next() {
        std::string q = "list-type=2&prefix=" + s3_uri_encode(full_prefix, false);
        if (!token.empty()) q += "&continuation-token=" + s3_uri_encode(token, false);
        else if (!start_after.empty()) q += "&start-after=" + s3_uri_encode(start_after, false);
        auto const want = std::min<std::size_t>(limit - page.entries.size(), 1000);
        q += "&max-keys=" + std::to_string(want) + "&encoding-type=url";
        ++requests;
        auto req = st->make_request(s3_bhttp::verb::get, st->bucket_target() + "?" + q);
        auto slot = s3_asio::get_associated_cancellation_slot(h);
        s3_state::send(st, signer, std::move(req), slot,
                       [self = this->shared_from_this()](s3_reply rep) { self->on_reply(std::move(rep)); });
    }

    void on_reply(s3_reply rep) {
        if (rep.ec) {
            page.diag = std::move(rep.info.diag);
            return finish(rep.ec);
        }
        auto const status = rep.res.result_int();
        if (status < 200 || status >= 300) {
            std::string code;
            auto ec = s3_response_error(rep.res, page.diag, code);
            return finish(ec);
        }
        s3_xml::s3_listing l;
        diagnostics pd;
        if (s3_xml::parse_list_objects_v2(rep.res.body(), l, pd)) {
            // A 200 may carry an <Error> document instead.
            std::string code;
            s3_xml::s3_error e;
            diagnostics ed;
            if (!s3_xml::parse_s3_error(rep.res.body(), e, ed)) {
                auto ec = s3_response_error(rep.res, page.diag, code);
                return finish(ec ? ec : error_code(errc::invalid_response));
            }
            page.diag = std::move(pd);
            page.diag.http_status = status;
            return finish(errc::invalid_response);
        }
        // Stores that ignore encoding-type=url (s3rver) say so by omitting <EncodingType>; their keys
        // are then literal text, which the parser has already decoded from XML.
        auto const& kp = st->params.key_prefix;
        std::size_t taken = 0;
        for (auto& o : l.contents) {
            if (o.key.compare(0, full_prefix.size(), full_prefix) != 0 || o.key.size() <= kp.size())
                return finish(invalid("a key outside the requested prefix was returned"));
            if ((!last_key.empty() && o.key <= last_key) || (!start_after.empty() && o.key <= start_after))
                return finish(invalid("keys are not in ascending order after the start"));
            last_key = o.key;
            if (page.entries.size() == limit) {
                page.truncated = true; // the store sent more than max-keys
                return finish({});
            }
            page.entries.push_back({o.key.substr(kp.size()), std::move(o.etag)});
            ++taken;
        }
        if (!l.is_truncated) {
            page.truncated = false;
            return finish({});
        }
        if (page.entries.size() >= limit) {
            page.truncated = true;
            return finish({});
        }
        if (requests >= max_requests) {
            if (page.entries.empty()) {
                page.diag.http_status = status;
                return finish(invalid("the store kept answering truncated pages without keys"));
            }
            page.truncated = true;
            return finish({});
        }
        if (l.next_continuation_token == token && taken == 0)
            return finish(invalid("the continuation token did not advance"));
        token = std::move(l.next_continuation_token);
        next();
    }
};

inline void s3_list(std::shared_ptr<s3_state> st, aws::sigv4_signer signer, std::string prefix, std::string after,
                    std::size_t limit, s3_list_handler h) {
    list_page r;
    if (limit == 0) {
        r.diag.message = "list limit must be at least 1";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    if (st->params.key_prefix.size() + std::max(prefix.size(), after.size()) > store_limits::max_key_bytes) {
        r.diag.message = "key_prefix with the list prefix or start key exceeds S3's limit of " +
                         std::to_string(store_limits::max_key_bytes) + " bytes";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    auto op = std::make_shared<s3_list_op>(st, std::move(signer), std::move(h));
    op->full_prefix = st->params.key_prefix + prefix;
    if (!after.empty()) op->start_after = st->params.key_prefix + after;
    op->limit = limit;
    op->next();
}

// ---- probe -----------------------------------------------------------------------------------------
// One pass over a scratch key; see "Capability gating" in the file comment.
struct s3_probe_op : std::enable_shared_from_this<s3_probe_op> {
    std::shared_ptr<s3_state> st;
    aws::sigv4_signer signer;
    std::string key;   // without key_prefix
    std::string first; // the ETag of the first write: stale from the third write on
    std::string current;
    bool unquoted = false;
    bool create_new_ok = false;
    bool exists = false;
    unsigned writes = 0;
    std::string create_check, replace_check, erase_check;
    capabilities caps;

    s3_probe_op(std::shared_ptr<s3_state> s, aws::sigv4_signer sg) : st(std::move(s)), signer(std::move(sg)) {
        key = st->params.probe_prefix + st->random_hex();
    }

    std::string form(std::string const& etag) const { return unquoted ? s3_unquote(etag) : etag; }

    // What a refused check looked like, for findings.
    static std::string answer(s3_reply const& rep, std::string const& code) {
        std::string s = "HTTP " + std::to_string(rep.res.result_int());
        if (!code.empty()) s += " " + code;
        return s;
    }

    // A refusal that means "this precondition is not supported" rather than a broken setup.
    static bool unsupported(error_code ec) {
        return ec == errc::precondition_failed || ec == errc::capability_missing || ec == errc::invalid_argument ||
               ec == errc::not_found;
    }

    template <class F>
    void put(std::optional<std::string> if_none_match, std::optional<std::string> if_match, F&& f) {
        auto req = st->make_request(s3_bhttp::verb::put, st->object_target(key),
                                    "baton probe write " + std::to_string(++writes) + " " + st->random_hex());
        req.set(s3_bhttp::field::content_type, "application/octet-stream");
        if (if_none_match) req.set(s3_bhttp::field::if_none_match, *if_none_match);
        if (if_match) req.set(s3_bhttp::field::if_match, *if_match);
        s3_state::send(st, signer, std::move(req), {}, std::forward<F>(f));
    }

    template <class F>
    void erase(std::optional<std::string> if_match, F&& f) {
        auto req = st->make_request(s3_bhttp::verb::delete_, st->object_target(key));
        if (if_match) req.set(s3_bhttp::field::if_match, *if_match);
        s3_state::send(st, signer, std::move(req), {}, std::forward<F>(f));
    }

    // Classifies a reply: empty ec and the ETag for a 2xx; the error otherwise (`transport` for no response).
    struct outcome {
        error_code ec;
        bool transport = false;
        std::string code;
        std::string etag;
        diagnostics diag;
    };
    static outcome classify(s3_reply& rep) {
        outcome o;
        if (rep.ec) {
            o.ec = rep.ec;
            o.transport = true;
            o.diag = std::move(rep.info.diag);
            return o;
        }
        auto const status = rep.res.result_int();
        if (status >= 200 && status < 300) {
            if (auto ec = s3_error_in_success(rep.res, o.diag)) {
                o.ec = ec;
                o.code = o.diag.service_code;
                return o;
            }
            if (auto it = rep.res.find(s3_bhttp::field::etag); it != rep.res.end()) o.etag = std::string(it->value());
            return o;
        }
        o.ec = s3_response_error(rep.res, o.diag, o.code);
        return o;
    }

    void note(std::string line) { caps.findings.push_back(std::move(line)); }

    // Ends the probe with an error the probe itself ran into (network, auth, bucket, ...).
    void fail(outcome const& o, std::string const& during) {
        caps.diag = o.diag;
        caps.diag.message = during + ": " + (o.diag.message.empty() ? o.ec.message() : o.diag.message);
        note(during + ": failed (" + caps.diag.to_string() + ")");
        auto self = this->shared_from_this();
        error_code const ec = o.ec;
        erase(std::nullopt, [self, ec](s3_reply) { self->finish(ec); }); // best-effort cleanup
    }

    bool need_etag(outcome const& o, std::string const& during) {
        if (!o.etag.empty()) return true;
        outcome bad = o;
        bad.ec = errc::invalid_response;
        bad.diag.message = "the PUT response carried no ETag";
        fail(bad, during);
        return false;
    }

    void start() { create_new(); }

    // 1. If-None-Match: * on a new key must be accepted.
    void create_new() {
        char const* what = "put if absent on a new key";
        put(std::string("*"), std::nullopt, [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (!o.ec) {
                if (!self->need_etag(o, what)) return;
                self->create_new_ok = true;
                self->exists = true;
                self->first = self->current = o.etag;
                self->note(std::string(what) + ": accepted");
                return self->create_existing();
            }
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->create_check = std::string(what) + ": refused with " + answer(rep, o.code) + " (not supported)";
            self->note(self->create_check);
            self->plain_put();
        });
    }

    // 1b. The store refused conditional creation: make the scratch object unconditionally.
    void plain_put() {
        char const* what = "unconditional put of the scratch key";
        put(std::nullopt, std::nullopt, [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (o.ec) return self->fail(o, what);
            if (!self->need_etag(o, what)) return;
            self->exists = true;
            self->first = self->current = o.etag;
            self->replace_quoted();
        });
    }

    // 2. If-None-Match: * on an existing key must be refused with 412.
    void create_existing() {
        char const* what = "put if absent on an existing key";
        put(std::string("*"), std::nullopt, [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (o.ec == errc::precondition_failed) {
                self->caps.conditional_create = self->create_new_ok;
                self->note(std::string(what) + ": refused with " + answer(rep, o.code) + " (honoured)");
                return self->replace_quoted();
            }
            if (!o.ec) {
                if (!self->need_etag(o, what)) return;
                self->current = o.etag;
                self->create_check = std::string(what) + ": accepted with " + answer(rep, {}) +
                                     " (ignored: the existing object was overwritten)";
                self->note(self->create_check);
                return self->replace_quoted();
            }
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->create_check = std::string(what) + ": refused with " + answer(rep, o.code) + " (not supported)";
            self->note(self->create_check);
            self->replace_quoted();
        });
    }

    // 3. If-Match with the current ETag as returned (quoted) must be accepted...
    void replace_quoted() {
        char const* what = "put if matching the current ETag";
        put(std::nullopt, current, [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (!o.ec) {
                if (!self->need_etag(o, what)) return;
                self->current = o.etag;
                self->note(std::string(what) + " (quoted, as returned): accepted");
                return self->replace_stale();
            }
            if (o.ec == errc::precondition_failed) return self->replace_unquoted(answer(rep, o.code));
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->replace_check = std::string(what) + ": refused with " + answer(rep, o.code) + " (not supported)";
            self->note(self->replace_check);
            self->erase_stale();
        });
    }

    // 3b. ...or, on stores that compare the bare ETag (RGW), unquoted.
    void replace_unquoted(std::string quoted_answer) {
        char const* what = "put if matching the current ETag";
        put(std::nullopt, s3_unquote(current),
            [self = this->shared_from_this(), what, quoted_answer](s3_reply rep) {
                auto o = classify(rep);
                if (!o.ec) {
                    if (!self->need_etag(o, what)) return;
                    self->current = o.etag;
                    self->unquoted = true;
                    self->note(std::string(what) + ": refused when quoted as returned (" + quoted_answer +
                               "), accepted unquoted (this store compares bare ETags: If-Match is sent unquoted)");
                    return self->replace_stale();
                }
                if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
                self->replace_check = std::string(what) + ": refused both quoted (" + quoted_answer +
                                      ") and unquoted (" + answer(rep, o.code) + "), so no replace can succeed";
                self->note(self->replace_check);
                self->erase_stale();
            });
    }

    // 4. If-Match with a stale ETag must be refused with 412.
    void replace_stale() {
        char const* what = "put if matching a stale ETag";
        if (first == current) {
            replace_check = std::string(what) + ": not checked, the store gave two different bodies the same ETag";
            note(replace_check);
            return erase_stale();
        }
        put(std::nullopt, form(first), [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (o.ec == errc::precondition_failed) {
                self->caps.conditional_replace = true;
                self->note(std::string(what) + ": refused with " + answer(rep, o.code) + " (honoured)");
                return self->erase_stale();
            }
            if (!o.ec) {
                if (!self->need_etag(o, what)) return;
                self->current = o.etag;
                self->replace_check = std::string(what) + ": accepted with " + answer(rep, {}) + " (ignored)";
                self->note(self->replace_check);
                return self->erase_stale();
            }
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->replace_check = std::string(what) + ": answered " + answer(rep, o.code) + " (unexpected)";
            self->note(self->replace_check);
            self->erase_stale();
        });
    }

    // 5. DELETE with If-Match on a stale ETag must be refused with 412.
    void erase_stale() {
        char const* what = "erase if matching a stale ETag";
        if (first == current) {
            erase_check = std::string(what) + ": not checked, the store gave two different bodies the same ETag";
            note(erase_check);
            return missing();
        }
        erase(form(first), [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (o.ec == errc::precondition_failed) {
                self->note(std::string(what) + ": refused with " + answer(rep, o.code) + " (honoured)");
                return self->erase_fresh();
            }
            if (!o.ec) {
                self->exists = false;
                self->erase_check = std::string(what) + ": accepted with " + answer(rep, {}) +
                                    " (ignored: the object was deleted)";
                self->note(self->erase_check);
                return self->missing();
            }
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->erase_check = std::string(what) + ": refused with " + answer(rep, o.code) + " (not supported)";
            self->note(self->erase_check);
            self->missing();
        });
    }

    // 5b. ...and DELETE with If-Match on the current ETag must be accepted.
    void erase_fresh() {
        char const* what = "erase if matching the current ETag";
        erase(form(current), [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (!o.ec) {
                self->exists = false;
                self->caps.conditional_erase = true;
                self->note(std::string(what) + ": accepted");
                return self->missing();
            }
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->erase_check = std::string(what) + ": refused with " + answer(rep, o.code) +
                                ", so no conditional erase can succeed";
            self->note(self->erase_check);
            self->missing();
        });
    }

    // 6. If-Match on a missing key must be refused (AWS 404, RGW 412) and must not create the key.
    void missing() {
        if (exists || !caps.conditional_replace) return cleanup();
        char const* what = "put if matching on a missing key";
        put(std::nullopt, form(first), [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (o.ec == errc::precondition_failed || o.ec == errc::not_found) {
                self->note(std::string(what) + ": refused with " + answer(rep, o.code) +
                           " (honoured; reported as precondition_failed)");
                return self->cleanup();
            }
            if (!o.ec) {
                self->exists = true;
                self->caps.conditional_replace = false;
                self->replace_check = std::string(what) + ": accepted with " + answer(rep, {}) +
                                      " (ignored: the object was created)";
                self->note(self->replace_check);
                return self->cleanup();
            }
            if (o.transport) return self->fail(o, what);
            self->note(std::string(what) + ": refused with " + answer(rep, o.code));
            self->cleanup();
        });
    }

    // 7. Remove the scratch key (unconditionally; its result does not matter).
    void cleanup() {
        if (!exists) return finish({});
        erase(std::nullopt, [self = this->shared_from_this()](s3_reply) { self->finish({}); });
    }

    void finish(error_code ec) {
        if (!ec) {
            if (!caps.supports_leases()) {
                std::string failed;
                for (auto const* c : {&create_check, &replace_check})
                    if (!c->empty()) failed += (failed.empty() ? "" : "; ") + *c;
                caps.diag.message = "leases need conditional create and replace; failed: " + failed;
            }
            st->caps = caps;
            st->unquoted_etags = unquoted;
            st->create_check = create_check;
            st->replace_check = replace_check;
            st->erase_check = erase_check;
        }
        st->probing = false;
        auto waiters = std::move(st->probe_waiters);
        st->probe_waiters.clear();
        for (auto& w : waiters) std::move(w)(ec, caps);
    }
};

inline void s3_start_probe(std::shared_ptr<s3_state> const& st, aws::sigv4_signer const& signer) {
    st->probing = true;
    std::make_shared<s3_probe_op>(st, signer)->start();
}

inline void s3_probe(std::shared_ptr<s3_state> st, aws::sigv4_signer signer, s3_probe_handler h) {
    s3_after_probe(st, signer, [st, h = std::move(h)](error_code ec, capabilities caps) mutable {
        st->complete(std::move(h), ec, std::move(caps));
    });
}

// ---- bucket ----------------------------------------------------------------------------------------
inline void s3_create_bucket(std::shared_ptr<s3_state> st, aws::sigv4_signer signer, s3_bucket_handler h) {
    std::string body;
    if (st->params.region != "us-east-1")
        body = "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>" +
               st->params.region + "</LocationConstraint></CreateBucketConfiguration>";
    auto req = st->make_request(s3_bhttp::verb::put, st->bucket_target(), std::move(body));
    auto slot = s3_asio::get_associated_cancellation_slot(h);
    s3_state::send(st, signer, std::move(req), slot, [st, h = std::move(h)](s3_reply rep) mutable {
        diagnostics d;
        if (rep.ec) {
            d = std::move(rep.info.diag);
            return st->complete(std::move(h), rep.ec, std::move(d));
        }
        auto const status = rep.res.result_int();
        error_code ec;
        if (status >= 200 && status < 300) {
            ec = s3_error_in_success(rep.res, d);
        } else {
            std::string code;
            ec = s3_response_error(rep.res, d, code);
        }
        st->complete(std::move(h), ec, std::move(d));
    });
}

} // namespace detail
#endif

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
class s3_backend {
public:
    /// Completions run here unless the handler has an executor of its own.
    using executor_type = boost::asio::any_io_executor;

    /** A backend for `p.bucket` at `p.endpoint`; nothing is sent until the first operation.

        @throws config_error when `p` breaks a rule of `s3_backend_params` (the message names it).
    */
    s3_backend(executor_type ex, s3_backend_params p)
        : state_(std::make_shared<detail::s3_state>(std::move(ex), validated(std::move(p)))) {}

    /// The default completion executor.
    executor_type get_executor() const noexcept { return state_->ex; }

    /** Signs this handle's requests with `s` (sharing its key cache). Called by `basic_lease` with its Signer.

        Every handle starts with a signer of its own, so calling this is optional.
    */
    void use_signer(aws::sigv4_signer s) { signer_ = std::move(s); }

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

    /** Reads `key`. `found` is empty when the store answers 404 `NoSuchKey`.

        @par Handler signature
        `void(error_code, get_result)`. Errors: `invalid_argument` (key empty or too long),
        `not_found` (the bucket is missing), `auth_failed`, `throttled`,
        `service_unavailable`, `timeout`, `invalid_response` (e.g. no `ETag`), connection errors.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_get(std::string key, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, get_result)>(
            [](auto handler, std::shared_ptr<detail::s3_state> st, aws::sigv4_signer s, std::string k) {
                detail::s3_get(std::move(st), std::move(s), std::move(k), detail::s3_get_handler(std::move(handler)));
            },
            token, state_, signer_, std::move(key));
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
    auto async_put(std::string key, std::string body, precondition pc, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, put_result)>(
            [](auto handler, std::shared_ptr<detail::s3_state> st, aws::sigv4_signer s, std::string k, std::string b,
               precondition p) {
                detail::s3_put(std::move(st), std::move(s), std::move(k), std::move(b), std::move(p),
                               detail::s3_put_handler(std::move(handler)));
            },
            token, state_, signer_, std::move(key), std::move(body), std::move(pc));
    }

    /** Deletes `key` if `pc` holds. Unconditional deletes of missing keys succeed (S3 answers 204).

        @par Handler signature
        `void(error_code, erase_result)`. Errors as `async_put`; `capability_missing`
        also for `absent` (S3 has no such delete) and, after a probe, for
        `matches` on stores that ignore `If-Match` on DELETE (RGW), instead of
        deleting unconditionally.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_erase(std::string key, precondition pc, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, erase_result)>(
            [](auto handler, std::shared_ptr<detail::s3_state> st, aws::sigv4_signer s, std::string k, precondition p) {
                detail::s3_erase(std::move(st), std::move(s), std::move(k), std::move(p),
                                 detail::s3_erase_handler(std::move(handler)));
            },
            token, state_, signer_, std::move(key), std::move(pc));
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
    auto async_list(std::string prefix, std::string after, std::size_t limit, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, list_page)>(
            [](auto handler, std::shared_ptr<detail::s3_state> st, aws::sigv4_signer s, std::string p, std::string a,
               std::size_t n) {
                detail::s3_list(std::move(st), std::move(s), std::move(p), std::move(a), n,
                                detail::s3_list_handler(std::move(handler)));
            },
            token, state_, signer_, std::move(prefix), std::move(after), limit);
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
    auto async_probe(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, capabilities)>(
            [](auto handler, std::shared_ptr<detail::s3_state> st, aws::sigv4_signer s) {
                detail::s3_probe(std::move(st), std::move(s), detail::s3_probe_handler(std::move(handler)));
            },
            token, state_, signer_);
    }

    /** Creates the bucket (`PUT /bucket`, with a `LocationConstraint` outside us-east-1). For tools and tests.

        @par Handler signature
        `void(error_code, diagnostics)`. `precondition_failed` when it exists
        already (`BucketAlreadyOwnedByYou`, `BucketAlreadyExists`).
    */
    template <class Token = boost::asio::deferred_t>
    auto async_create_bucket(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, diagnostics)>(
            [](auto handler, std::shared_ptr<detail::s3_state> st, aws::sigv4_signer s) {
                detail::s3_create_bucket(std::move(st), std::move(s), detail::s3_bucket_handler(std::move(handler)));
            },
            token, state_, signer_);
    }

private:
    static s3_backend_params validated(s3_backend_params p) {
        p.validate();
        return p;
    }

    std::shared_ptr<detail::s3_state> state_;
    aws::sigv4_signer signer_;
};

static_assert(record_store<s3_backend>);

} // namespace baton

#endif
