// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_SIGV4_IPP
#define BATON_AWS_IMPL_SIGV4_IPP

// Layer: wire (aws), internal. The compiled part of the SigV4 signer (see aws/sigv4.hpp):
// the string to sign, signatures and presigned URLs, on the canonical request of
// aws/impl/sigv4_canonical.ipp and the primitives of aws/impl/sigv4_primitives.ipp.
#include <baton/aws/impl/sigv4_canonical.ipp>
#include <baton/aws/impl/sigv4_primitives.ipp>
#include <baton/aws/sigv4.hpp>

#include <boost/beast/http/field.hpp>
#include <boost/system/errc.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/grammar/string_token.hpp>
#include <boost/url/pct_string_view.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

namespace baton::aws {
namespace detail {

namespace bhttp = boost::beast::http;

// Writes the string to sign into s.sts and the hex signature into sig (64 chars).
BATON_DECL bool compute_signature(scratch& s, std::string_view amz_date, std::string_view date8,
                                  signing_params const& params, signing_key const& key, char* sig) {
    digest h;
    if (!sha256(s.creq, {}, h.data())) return false;
    s.sts.clear();
    s.sts.reserve(algorithm.size() + 16 + 8 + params.region.size() + params.service.size() + 16 + 64 + 8);
    s.sts.append(algorithm);
    s.sts += '\n';
    s.sts.append(amz_date);
    s.sts += '\n';
    append_scope(s.sts, date8, params.region, params.service);
    s.sts += '\n';
    std::size_t const old = s.sts.size();
    s.sts.resize(old + 64);
    to_hex(h.data(), h.size(), s.sts.data() + old);
    digest mac;
    static_assert(std::tuple_size_v<decltype(key.bytes)> == 32);
    if (!hmac_sha256_key32(key.bytes.data(), s.sts, mac.data())) return false;
    to_hex(mac.data(), mac.size(), sig);
    return true;
}

// The payload hash (64 hex chars, or a literal) into buf; empty view on failure.
BATON_DECL error_code payload_hash_for(signing_params const& params, std::string_view const* body, char* buf,
                                       std::string_view& out) {
    switch (params.payload) {
    case payload_mode::hash_body: {
        if (body == nullptr) return invalid();
        digest h;
        if (!sha256(*body, {}, h.data())) return crypto_failure();
        to_hex(h.data(), h.size(), buf);
        out = std::string_view(buf, 64);
        return {};
    }
    case payload_mode::unsigned_payload: out = unsigned_payload_literal; return {};
    case payload_mode::precomputed: out = params.payload_hash; return {};
    }
    return invalid();
}

BATON_DECL signing_key key_for(signing_key_cache* cache, std::string_view date8, signing_params const& params,
                               credentials const& creds) {
    if (cache != nullptr) return cache->get(date8, params.region, params.service, creds);
    return derive_signing_key(creds.secret_access_key, date8, params.region, params.service);
}

BATON_DECL error_code sign_header_in_place(bhttp::request_header<>& req, std::string_view const* body,
                                       credentials const& creds, signing_params const& params,
                                       std::chrono::system_clock::time_point now, signing_key_cache* cache,
                                       signing_result* steps) {
    if (auto ec = validate(creds, params)) return ec;
    char amz_date_buf[16];
    if (!format_amz_date(now, amz_date_buf)) return invalid();
    std::string_view const amz_date(amz_date_buf, 16);
    std::string_view const date8(amz_date_buf, 8);

    char hash_buf[64];
    std::string_view payload_hash;
    if (auto ec = payload_hash_for(params, body, hash_buf, payload_hash)) return ec;

    std::string_view path;
    std::string_view query;
    split_target(sv(req.target()), path, query);
    if (!path.empty() && path.front() != '/') return invalid();
    // The signer owns these headers: whatever an earlier attempt left is replaced, but only
    // once the signature is made, so a failure leaves the request as it was (less any stale
    // Authorization, which sign_header_impl erases). Canonicalisation signs the new values.
    bool const has_token = !creds.session_token.empty();
    bool const sets_content_sha256 = params.s3_rules || params.content_sha256_header;
    // Which of them the request carried decides below between replacing (a lookup) and inserting.
    owned_header owned[4] = {
        {"x-amz-date", amz_date, true},
        {"x-amz-security-token", creds.session_token, has_token && params.sign_session_token},
        {"authorization", {}, false},
        {"x-amz-content-sha256", payload_hash, true},
    };
    scratch& s = thread_scratch();
    if (!build_canonical_headers(s, req, owned, sets_content_sha256 ? 4 : 3)) return invalid();
    s.params_buf.clear();
    s.params.clear();
    parse_query(s, query);
    finish_query(s);
    assemble_canonical_request(s, sv(req.method_string()), path, params, payload_hash);

    signing_key key = key_for(cache, date8, params, creds);
    char sig[64];
    bool const ok = compute_signature(s, amz_date, date8, params, key, sig);
    wipe(key.bytes.data(), key.bytes.size());
    if (!ok) return crypto_failure();
    std::string_view const signature(sig, 64);

    std::string& auth = s.out;
    auth.clear();
    auth.reserve(algorithm.size() + 13 + creds.access_key_id.size() + 48 + params.region.size() +
                 params.service.size() + s.signed_headers.size() + 16 + 12 + 64);
    auth.append(algorithm);
    auth.append(" Credential=");
    auth.append(creds.access_key_id);
    auth += '/';
    append_scope(auth, date8, params.region, params.service);
    auth.append(", SignedHeaders=");
    auth.append(s.signed_headers);
    auth.append(", Signature=");
    auth.append(signature);
    auto put = [&req](owned_header const& h, auto name, std::string_view value) {
        if (h.was_present)
            req.set(name, value);
        else
            req.insert(name, value);
    };
    put(owned[0], date_header, amz_date);
    if (sets_content_sha256) put(owned[3], content_sha256_header, payload_hash);
    if (has_token)
        put(owned[1], security_token_header, creds.session_token); // signed or not, as params say
    else if (owned[1].was_present)
        req.erase(security_token_header);
    put(owned[2], bhttp::field::authorization, auth);

    if (steps != nullptr) {
        steps->canonical_request = s.creq;
        steps->string_to_sign = s.sts;
        steps->signature.assign(signature);
        steps->authorization = auth;
        steps->signed_headers = s.signed_headers;
    }
    return {};
}

// A request whose signing failed must not go out with an earlier attempt's signature.
BATON_DECL error_code sign_header_impl(bhttp::request_header<>& req, std::string_view const* body,
                                       credentials const& creds, signing_params const& params,
                                       std::chrono::system_clock::time_point now, signing_key_cache* cache,
                                       signing_result* steps) {
    error_code const ec = sign_header_in_place(req, body, creds, params, now, cache, steps);
    if (ec) req.erase(bhttp::field::authorization);
    return ec;
}

BATON_DECL error_code presign_impl(bhttp::request_header<> const& req, std::string_view const* body,
                                   credentials const& creds, signing_params const& params,
                                   std::chrono::system_clock::time_point now, std::chrono::seconds expires,
                                   std::string& target, signing_key_cache* cache, signing_result* steps) {
    if (expires.count() < 1 || expires > max_presign_expiry) return invalid();
    if (auto ec = validate(creds, params)) return ec;
    char amz_date_buf[16];
    if (!format_amz_date(now, amz_date_buf)) return invalid();
    std::string_view const amz_date(amz_date_buf, 16);
    std::string_view const date8(amz_date_buf, 8);

    char hash_buf[64];
    std::string_view payload_hash;
    if (auto ec = payload_hash_for(params, body, hash_buf, payload_hash)) return ec;

    std::string_view path;
    std::string_view query;
    split_target(sv(req.target()), path, query);
    if (!path.empty() && path.front() != '/') return invalid();

    scratch& s = thread_scratch();
    if (!build_canonical_headers(s, req)) return invalid();

    std::string credential = creds.access_key_id;
    credential += '/';
    append_scope(credential, date8, params.region, params.service);
    std::string const expires_str = std::to_string(expires.count());
    bool const has_token = !creds.session_token.empty();

    s.params_buf.clear();
    s.params.clear();
    parse_query(s, query);
    add_param(s, "X-Amz-Algorithm", algorithm, false);
    add_param(s, "X-Amz-Credential", credential, false);
    add_param(s, "X-Amz-Date", amz_date, false);
    add_param(s, "X-Amz-Expires", expires_str, false);
    if (has_token && params.sign_session_token) add_param(s, "X-Amz-Security-Token", creds.session_token, false);
    add_param(s, "X-Amz-SignedHeaders", s.signed_headers, false);
    finish_query(s);
    assemble_canonical_request(s, sv(req.method_string()), path, params, payload_hash);

    signing_key key = key_for(cache, date8, params, creds);
    char sig[64];
    bool const ok = compute_signature(s, amz_date, date8, params, key, sig);
    OPENSSL_cleanse(key.bytes.data(), key.bytes.size());
    if (!ok) return crypto_failure();
    std::string_view const signature(sig, 64);

    target.clear();
    target.reserve(path.size() + s.canonical_query.size() + creds.session_token.size() * 2 + 110);
    if (path.empty())
        target += '/';
    else
        target.append(path);
    target += '?';
    target.append(s.canonical_query);
    if (has_token && !params.sign_session_token) {
        target.append("&X-Amz-Security-Token=");
        append_encoded(target, creds.session_token);
    }
    target.append("&X-Amz-Signature=");
    target.append(signature);

    if (steps != nullptr) {
        steps->canonical_request = s.creq;
        steps->string_to_sign = s.sts;
        steps->signature.assign(signature);
        steps->authorization.clear();
        steps->signed_headers = s.signed_headers;
    }
    return {};
}

} // namespace detail

// ---------------------------------------------------------------- public non-template functions

BATON_DECL std::string credentials::redacted() const {
    std::string out = "access key id ";
    out += access_key_id.empty() ? std::string_view("(none)") : std::string_view(access_key_id);
    out += session_token.empty() ? ", long-term" : ", temporary";
    out += ", secret ";
    out += secret_access_key.empty() ? "absent" : "***";
    return out;
}

BATON_DECL signing_params signing_params::for_s3(std::string region) {
    signing_params p;
    p.region = std::move(region);
    p.service = "s3";
    p.s3_rules = true;
    p.normalize_path = false;
    p.double_encode = false;
    return p;
}

BATON_DECL signing_params signing_params::for_service(std::string service, std::string region) {
    signing_params p;
    p.region = std::move(region);
    p.service = std::move(service);
    return p;
}

BATON_DECL signing_key derive_signing_key(std::string_view secret, std::string_view date8, std::string_view region,
                                          std::string_view service) {
    std::string k;
    k.reserve(4 + secret.size());
    k.append("AWS4");
    k.append(secret);
    signing_key out;
    detail::digest a;
    detail::digest b;
    bool ok = detail::hmac_sha256(reinterpret_cast<unsigned char const*>(k.data()), k.size(), date8, a.data());
    ok = ok && detail::hmac_sha256(a.data(), a.size(), region, b.data());
    ok = ok && detail::hmac_sha256(b.data(), b.size(), service, a.data());
    ok = ok && detail::hmac_sha256(a.data(), a.size(), detail::scope_terminator, out.bytes.data());
    OPENSSL_cleanse(k.data(), k.size());
    OPENSSL_cleanse(a.data(), a.size());
    OPENSSL_cleanse(b.data(), b.size());
    if (!ok) out.bytes.fill(0); // unusable key: the service will refuse the signature
    return out;
}

BATON_DECL signing_key signing_key_cache::get(std::string_view date8, std::string_view region,
                                              std::string_view service, credentials const& creds) {
    std::size_t const fp = std::hash<std::string_view>{}(creds.secret_access_key);
    auto matches = [&](entry const& e) {
        return e.used && e.secret_fingerprint == fp && std::string_view(e.date.data(), e.date.size()) == date8 &&
               e.region == region && e.service == service && e.access_key_id == creds.access_key_id;
    };
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (entry const& e : entries_)
            if (matches(e)) return e.key;
    }
    signing_key key = derive_signing_key(creds.secret_access_key, date8, region, service);
    derivations_.fetch_add(1, std::memory_order_relaxed);
    if (date8.size() != 8) return key;
    std::lock_guard<std::mutex> lock(mutex_);
    for (entry const& e : entries_)
        if (matches(e)) return key; // another thread stored it meanwhile
    entry& e = entries_[next_];
    next_ = (next_ + 1) % capacity;
    std::copy(date8.begin(), date8.end(), e.date.begin());
    e.region.assign(region);
    e.service.assign(service);
    e.access_key_id = creds.access_key_id;
    e.secret_fingerprint = fp;
    e.key = key;
    e.used = true;
    return key;
}

BATON_DECL void signing_key_cache::clear() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    for (entry& e : entries_) {
        OPENSSL_cleanse(e.key.bytes.data(), e.key.bytes.size());
        e.used = false;
        e.secret_fingerprint = 0;
    }
}

BATON_DECL bool is_unsigned_header(std::string_view n) noexcept {
    switch (n.size()) {
    case 2: return n == "te";
    case 6: return n == "expect";
    case 7: return n == "upgrade" || n == "trailer";
    case 10: return n == "user-agent" || n == "connection" || n == "keep-alive";
    case 13: return n == "authorization";
    case 15: return n == "x-amzn-trace-id";
    case 16: return n == "proxy-connection";
    case 17: return n == "transfer-encoding";
    case 18: return n == "proxy-authenticate";
    case 19: return n == "proxy-authorization";
    default: return false;
    }
}

BATON_DECL std::string canonical_uri(std::string_view path, signing_params const& params) {
    std::string out;
    out.reserve(path.size() + 16);
    detail::append_canonical_uri(out, path, params, detail::thread_scratch());
    return out;
}

BATON_DECL std::string canonical_query_string(std::string_view query) {
    detail::scratch& s = detail::thread_scratch();
    s.params_buf.clear();
    s.params.clear();
    detail::parse_query(s, query);
    detail::finish_query(s);
    return s.canonical_query;
}

BATON_DECL std::string sha256_hex(std::string_view data) {
    detail::digest h;
    std::string out(64, '\0');
    if (!detail::sha256(data, {}, h.data())) return {};
    detail::to_hex(h.data(), h.size(), out.data());
    return out;
}

BATON_DECL std::string sign_chunk(signing_key const& key, std::string_view amz_date, std::string_view scope,
                                  std::string_view previous_signature, std::string_view chunk,
                                  std::string* string_to_sign) {
    static constexpr std::string_view empty_hash =
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    std::string sts;
    sts.reserve(25 + amz_date.size() + scope.size() + previous_signature.size() + 64 + 64 + 5);
    sts.append("AWS4-HMAC-SHA256-PAYLOAD\n");
    sts.append(amz_date);
    sts += '\n';
    sts.append(scope);
    sts += '\n';
    sts.append(previous_signature);
    sts += '\n';
    sts.append(empty_hash);
    sts += '\n';
    detail::digest h;
    if (!detail::sha256(chunk, {}, h.data())) return {};
    std::size_t const old = sts.size();
    sts.resize(old + 64);
    detail::to_hex(h.data(), h.size(), sts.data() + old);
    detail::digest mac;
    if (!detail::hmac_sha256(key.bytes.data(), key.bytes.size(), sts, mac.data())) return {};
    std::string sig(64, '\0');
    detail::to_hex(mac.data(), mac.size(), sig.data());
    if (string_to_sign != nullptr) *string_to_sign = std::move(sts);
    return sig;
}

BATON_DECL chunk_signer::chunk_signer(credentials const& creds, signing_params const& params,
                                      std::chrono::system_clock::time_point now, std::string_view seed_signature)
    : previous_(seed_signature) {
    char buf[16] = {};
    if (!detail::format_amz_date(now, buf)) std::fill(std::begin(buf), std::end(buf), '0');
    amz_date_.assign(buf, 16);
    std::string_view const date8(buf, 8);
    detail::append_scope(scope_, date8, params.region, params.service);
    key_ = derive_signing_key(creds.secret_access_key, date8, params.region, params.service);
}

BATON_DECL std::string chunk_signer::next(std::string_view chunk) {
    std::string sig = sign_chunk(key_, amz_date_, scope_, previous_, chunk);
    previous_ = sig;
    return sig;
}

} // namespace baton::aws

#endif
