// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_SIGV4_HPP
#define BATON_AWS_SIGV4_HPP

/** @file
    Layer: wire (aws). AWS Signature Version 4, written by hand so that baton needs no AWS SDK.

    Every S3 and DynamoDB request baton sends (conditional writes included) must
    carry a SigV4 signature. This header signs Boost.Beast requests in the
    `Authorization` header (`sign_request`, `sigv4_signer`), builds presigned
    URLs (`presign_url`), and signs `aws-chunked` upload chunks (`chunk_signer`).

    The rules follow the AWS signing test suite and the S3 documentation:

    - Header names are lower-cased, values trimmed, runs of whitespace collapsed
      to one space (also inside quotes, and across folded lines), repeated headers
      joined with `,` in arrival order, then sorted by name. `host` is required
      and always signed; hop-by-hop and proxy-mutable headers (see
      `is_unsigned_header`) are never signed.
    - Query parameters are decoded, then encoded once (RFC 3986 unreserved kept,
      everything else upper-case `%XX`, `/` as `%2F`, space as `%20`), sorted by
      name then value; a parameter without `=` becomes `name=`.
    - S3 (`signing_params::s3_rules`): the path is decoded and encoded exactly
      once and never normalised (`//`, `.` and `..` stay). Other services remove
      dot segments, merge `//`, keep a trailing `/`, and encode the path as sent
      once more (so `%3A` becomes `%253A`).

    Secrets (the secret access key and derived signing keys) never appear in
    strings this header produces, nor in error messages.
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/core/signer.hpp>

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace baton::aws {

/** An AWS identity used to sign requests.

    Holds the secret access key, so it deliberately has no `operator<<` and no
    formatting support: log `redacted()` instead.
*/
struct credentials {
    /// Public key id (e.g. `AKIA...`); it names the identity in `Authorization` and may be logged.
    std::string access_key_id;
    /// The secret from which signing keys are derived. Never logged, never sent.
    std::string secret_access_key;
    /// Session token of temporary credentials (STS, instance roles); empty for long-term keys.
    std::string session_token;
    /// When temporary credentials stop working, so providers can refresh them ahead of time.
    std::optional<std::chrono::system_clock::time_point> expiration;

    /** A log-safe description that names the key id only.

        Exists so that diagnostics can say which identity was used without
        any risk of printing the secret or the session token.
    */
    BATON_DECL std::string redacted() const;
};

/// How the request body enters the signature, because S3 and streaming uploads need choices other than hashing.
enum class payload_mode {
    /// Hash the body (SHA-256); the default, and the only choice over plain HTTP.
    hash_body,
    /// Sign the literal `UNSIGNED-PAYLOAD` (S3 over HTTPS, presigned URLs) so large bodies need not be hashed.
    unsigned_payload,
    /// Use `signing_params::payload_hash` verbatim (a hash computed elsewhere, or `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`).
    precomputed,
};

/** What differs between signing for one service and another.

    Build it with `for_s3` or `for_service` rather than by hand: they set the
    path rules each service expects, and getting those wrong yields
    `SignatureDoesNotMatch` only for some keys.
*/
struct signing_params {
    /// Region in the credential scope, e.g. `us-east-1`. Required.
    std::string region;
    /// Signing name of the service in the credential scope, e.g. `s3` or `dynamodb`. Required.
    std::string service;
    /** S3's rules: path encoded once and never normalised, `x-amz-content-sha256` always sent and signed.

        When true, `normalize_path` and `double_encode` are ignored (treated as false).
    */
    bool s3_rules = false;
    /// Remove `.`/`..` segments and merge `//` before signing (every service but S3). Default true.
    bool normalize_path = true;
    /// Encode the path as sent once more for the canonical URI (every service but S3). Default true.
    bool double_encode = true;
    /// Send and sign `x-amz-content-sha256` also when not under `s3_rules` (some services want it). Default false.
    bool content_sha256_header = false;
    /// How the body is represented in the signature. Default `payload_mode::hash_body`.
    payload_mode payload = payload_mode::hash_body;
    /// The payload hash used verbatim when `payload == payload_mode::precomputed` (characters `A-Za-z0-9-`).
    std::string payload_hash;
    /** Sign the session token (true, default; required by S3 and DynamoDB).

        False adds `X-Amz-Security-Token` only after signing, outside
        `SignedHeaders` (or after the canonical query when presigning), a style
        a few older services expect.
    */
    bool sign_session_token = true;

    /// Parameters for S3 in `region`: S3 path rules and a hashed body.
    BATON_DECL static signing_params for_s3(std::string region);
    /// Parameters for any other service (e.g. `dynamodb`) in `region`: normalised, double-encoded path, hashed body.
    BATON_DECL static signing_params for_service(std::string service, std::string region);
};

/** The intermediate and final strings of one signature.

    Exposed so tests and troubleshooting can compare each step with what AWS
    reports in a `SignatureDoesNotMatch` error. Contains the session token
    (it is part of the canonical request) but never the secret.
*/
struct signing_result {
    /// The canonical request (step 1 of the SigV4 algorithm).
    std::string canonical_request;
    /// The string to sign (step 2).
    std::string string_to_sign;
    /// Lower-case hex HMAC-SHA256 of the string to sign (step 3).
    std::string signature;
    /// Header mode: the `Authorization` value that was set; presign: empty.
    std::string authorization;
    /// The `;`-separated lower-case header names that were signed.
    std::string signed_headers;
};

/// Longest lifetime AWS accepts for a presigned URL (`X-Amz-Expires`), seven days.
inline constexpr std::chrono::seconds max_presign_expiry{604800};

/** A SigV4 signing key, derived from the secret for one day, region and service.

    As sensitive as the secret for that scope: never print it.
*/
struct signing_key {
    /// The 32 key bytes.
    std::array<unsigned char, 32> bytes{};
};

/** Derives the signing key: HMAC chain `"AWS4"+secret` → date → region → service → `aws4_request`.

    Public for chunked uploads and tests; signing code normally lets
    `signing_key_cache` call it once per day. `date8` is `YYYYMMDD`.
*/
BATON_DECL signing_key derive_signing_key(std::string_view secret, std::string_view date8,
                                          std::string_view region, std::string_view service);

/** Remembers derived signing keys so repeated signatures on one day cost one HMAC, not five.

    Keyed by (date, region, service, access key id, fingerprint of the
    secret); the secret itself is not stored. Holds a handful of entries,
    replaced round-robin. Thread-safe: lookups take a short mutex.
*/
class signing_key_cache {
public:
    /// The key for `creds` on `date8` (`YYYYMMDD`) in `region`/`service`; derives and stores it on a miss.
    BATON_DECL signing_key get(std::string_view date8, std::string_view region, std::string_view service,
                               credentials const& creds);
    /// Forgets (and wipes) every key, e.g. after credentials were revoked.
    BATON_DECL void clear() noexcept;
    /// How many keys were derived so far; lets tests and metrics see that caching works.
    std::uint64_t derivations() const noexcept { return derivations_.load(std::memory_order_relaxed); }

    /// Wipes the stored keys.
    ~signing_key_cache() { clear(); }

private:
    struct entry {
        std::array<char, 8> date{};
        std::string region;
        std::string service;
        std::string access_key_id;
        std::size_t secret_fingerprint = 0;
        signing_key key;
        bool used = false;
    };
    static constexpr std::size_t capacity = 8;

    std::mutex mutex_;
    std::array<entry, capacity> entries_{};
    std::size_t next_ = 0;
    std::atomic<std::uint64_t> derivations_{0};
};

/** True for header names (lower-case) that are never signed.

    Proxies and HTTP stacks may add, drop or rewrite these (`user-agent`,
    `expect`, `connection`, `keep-alive`, `proxy-*`, `te`, `trailer`,
    `transfer-encoding`, `upgrade`, `x-amzn-trace-id`), and `authorization`
    carries the signature itself; signing them would break signatures in transit.
*/
BATON_DECL bool is_unsigned_header(std::string_view lower_case_name) noexcept;

/** The canonical URI (line 2 of the canonical request) for a request path as sent.

    Public so callers can check how a key will be signed; `path` excludes the query.
*/
BATON_DECL std::string canonical_uri(std::string_view path, signing_params const& params);

/// The canonical query string (line 3 of the canonical request) for a raw query (without `?`).
BATON_DECL std::string canonical_query_string(std::string_view query);

/// Lower-case hex SHA-256, the form in which SigV4 carries hashes (e.g. for `payload_mode::precomputed`).
BATON_DECL std::string sha256_hex(std::string_view data);

namespace detail {

template <class T>
concept byte_range = requires(T const& t) {
    std::data(t);
    std::size(t);
} && (std::is_same_v<std::remove_cvref_t<decltype(*std::data(std::declval<T const&>()))>, char> ||
      std::is_same_v<std::remove_cvref_t<decltype(*std::data(std::declval<T const&>()))>, unsigned char> ||
      std::is_same_v<std::remove_cvref_t<decltype(*std::data(std::declval<T const&>()))>, signed char> ||
      std::is_same_v<std::remove_cvref_t<decltype(*std::data(std::declval<T const&>()))>, char8_t> ||
      std::is_same_v<std::remove_cvref_t<decltype(*std::data(std::declval<T const&>()))>, std::byte>);

// The body as bytes, or nothing when the body type does not expose them.
template <class Body>
std::optional<std::string_view> body_bytes(typename Body::value_type const& v) {
    if constexpr (std::is_same_v<Body, boost::beast::http::empty_body>) {
        return std::string_view{};
    } else if constexpr (byte_range<typename Body::value_type>) {
        return std::string_view(reinterpret_cast<char const*>(std::data(v)), std::size(v));
    } else {
        return std::nullopt;
    }
}

BATON_DECL error_code sign_header_impl(boost::beast::http::request_header<>& req, std::string_view const* body,
                                       credentials const& creds, signing_params const& params,
                                       std::chrono::system_clock::time_point now, signing_key_cache* cache,
                                       signing_result* steps);

BATON_DECL error_code presign_impl(boost::beast::http::request_header<> const& req, std::string_view const* body,
                                   credentials const& creds, signing_params const& params,
                                   std::chrono::system_clock::time_point now, std::chrono::seconds expires,
                                   std::string& target, signing_key_cache* cache, signing_result* steps);

} // namespace detail

/** Signs `req` in place with the `Authorization` header.

    Sets `X-Amz-Date`, `x-amz-content-sha256` (S3, or when
    `params.content_sha256_header`), `X-Amz-Security-Token` (when the
    credentials carry one) and `Authorization`, replacing earlier values so a
    retried request can simply be signed again. `Host` must already be set,
    and the body and `Content-Length` must be final (call `prepare_payload()`
    first). The body must be readable as bytes (string, vector, span, empty)
    unless `params.payload` is not `hash_body`.

    Derives the signing key on every call; `sigv4_signer` caches it.

    @param req The request to sign; its headers are updated in place.
    @param creds The credentials to sign with.
    @param params The region, the service, and the rules for the path and the payload.
    @param now Signing time; AWS rejects a skew of more than 15 minutes.
    @param steps When not null, receives the intermediate strings.
    @return `errc::invalid_argument` for a missing host, region, service or
    key, characters that cannot appear in a header, an unreadable body, or a
    time outside years 0-9999; the request is then left unsigned.
*/
template <class Body>
error_code sign_request(boost::beast::http::request<Body, boost::beast::http::fields>& req,
                        credentials const& creds, signing_params const& params,
                        std::chrono::system_clock::time_point now, signing_result* steps = nullptr) {
    auto const body = detail::body_bytes<Body>(req.body());
    return detail::sign_header_impl(req.base(), body ? &*body : nullptr, creds, params, now, nullptr, steps);
}

/** Builds a presigned (query-signed) request target for `req`, valid for `expires`.

    Lets a request be sent later or by someone without credentials. `target`
    receives the path as sent plus a query carrying every `X-Amz-*`
    parameter and `X-Amz-Signature` last; prefix it with `https://host` for a
    URL. All headers present in `req` (at least `Host`) are signed and must be
    sent unchanged. For S3, use `payload_mode::unsigned_payload`.

    @return `errc::invalid_argument` if `expires` is not within 1 s to
    `max_presign_expiry` (7 days), or for the reasons `sign_request` gives.
*/
template <class Body>
error_code presign_url(boost::beast::http::request<Body, boost::beast::http::fields> const& req,
                       credentials const& creds, signing_params const& params,
                       std::chrono::system_clock::time_point now, std::chrono::seconds expires, std::string& target,
                       signing_result* steps = nullptr) {
    auto const body = detail::body_bytes<Body>(req.body());
    return detail::presign_impl(req.base(), body ? &*body : nullptr, creds, params, now, expires, target, nullptr,
                                steps);
}

/** Signs one chunk of an `aws-chunked` upload (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD`).

    Each chunk's signature chains on the previous one (the first on the seed
    request's signature), so a streamed body can be authenticated without
    hashing it up front.

    @param key The signing key of the seed request's day, region and service (`derive_signing_key`).
    @param amz_date The seed request's `X-Amz-Date` (`YYYYMMDDTHHMMSSZ`).
    @param scope The seed request's credential scope (`date/region/service/aws4_request`).
    @param previous_signature The previous chunk's signature, or the seed request's for the first chunk.
    @param chunk The chunk's bytes; the empty chunk ends the upload.
    @param string_to_sign When not null, receives the chunk's string to sign.
    @return The chunk signature, lower-case hex.
*/
BATON_DECL std::string sign_chunk(signing_key const& key, std::string_view amz_date, std::string_view scope,
                                  std::string_view previous_signature, std::string_view chunk,
                                  std::string* string_to_sign = nullptr);

/** Produces the chain of chunk signatures of one `aws-chunked` upload.

    Sign the seed request with `payload_mode::precomputed` and
    `payload_hash = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"`, then call `next`
    for every chunk in order, ending with an empty chunk.
*/
class chunk_signer {
public:
    /// Starts the chain after the seed request signed at `now` with signature `seed_signature`.
    BATON_DECL chunk_signer(credentials const& creds, signing_params const& params,
                            std::chrono::system_clock::time_point now, std::string_view seed_signature);
    /// The signature of the next chunk (the final chunk is empty).
    BATON_DECL std::string next(std::string_view chunk);

private:
    signing_key key_;
    std::string amz_date_;
    std::string scope_;
    std::string previous_;
};

/** The SigV4 Signer policy: signs like `sign_request`, reusing derived keys.

    Copies share one key cache, so a signer can be handed by value to several
    stores. Thread-safe.
*/
class sigv4_signer {
public:
    /// A signer with an empty key cache.
    sigv4_signer() : cache_(std::make_shared<signing_key_cache>()) {}

    /// Signs `req` in place; see `sign_request` for what is set and which errors occur.
    template <class Body = boost::beast::http::string_body>
    error_code sign(boost::beast::http::request<Body, boost::beast::http::fields>& req, credentials const& creds,
                    signing_params const& params, std::chrono::system_clock::time_point now,
                    signing_result* steps = nullptr) const {
        auto const body = detail::body_bytes<Body>(req.body());
        return detail::sign_header_impl(req.base(), body ? &*body : nullptr, creds, params, now, cache_.get(),
                                        steps);
    }

    /// Builds a presigned request target; see `presign_url`.
    template <class Body = boost::beast::http::string_body>
    error_code presign(boost::beast::http::request<Body, boost::beast::http::fields> const& req,
                       credentials const& creds, signing_params const& params,
                       std::chrono::system_clock::time_point now, std::chrono::seconds expires, std::string& target,
                       signing_result* steps = nullptr) const {
        auto const body = detail::body_bytes<Body>(req.body());
        return detail::presign_impl(req.base(), body ? &*body : nullptr, creds, params, now, expires, target,
                                    cache_.get(), steps);
    }

    /// The shared key cache, e.g. to `clear()` it after a credential revocation.
    signing_key_cache& cache() const noexcept { return *cache_; }

private:
    std::shared_ptr<signing_key_cache> cache_;
};

/** A Signer policy: what a store needs to authenticate its requests.

    Lets stores be written once and be given `sigv4_signer`,
    `baton::anonymous_signer`, or a test double.

    | Expression | Type | Semantics |
    |---|---|---|
    | `s.sign(req, creds, params, now)` | `baton::error_code` | Authenticates `req` (a `http::request<http::string_body>&`) in place for `creds` (`credentials const&`) and `params` (`signing_params const&`) at `now` (`system_clock::time_point`); may be called again on the same request for a retry; a failure leaves the request unsent-worthy and is reported, never thrown. Safe to call concurrently on one `s const&`. |
*/
template <class S>
concept request_signer = requires(S const& s, boost::beast::http::request<boost::beast::http::string_body>& req,
                                  credentials const& creds, signing_params const& params,
                                  std::chrono::system_clock::time_point now) {
    { s.sign(req, creds, params, now) } -> std::same_as<error_code>;
};

static_assert(request_signer<sigv4_signer>);
static_assert(request_signer<baton::anonymous_signer>);

} // namespace baton::aws

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/sigv4.ipp>
#endif

#endif
