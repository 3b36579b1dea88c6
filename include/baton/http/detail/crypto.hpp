// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_HTTP_DETAIL_CRYPTO_HPP
#define BATON_HTTP_DETAIL_CRYPTO_HPP

// Layer: wire (http), internal. What every request signer needs, written once: SHA-256 and
// HMAC-SHA256 through OpenSSL, base64 (DynamoDB's binary values, Azure's account keys and
// signatures), hex digit values, and wiping secrets. SigV4 (aws/) and Shared Key (azure/) are
// both built on it.

#include <baton/core/detail/config.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace baton::detail {

/// A SHA-256 digest (also an HMAC-SHA256 result).
using sha256_digest = std::array<unsigned char, 32>;

/// The process's one SHA-256 implementation, fetched once (null when OpenSSL has none).
BATON_DECL EVP_MD const* sha256_md() noexcept;

/// A digest context of the calling thread, reused across calls (null when OpenSSL cannot make one).
BATON_DECL EVP_MD_CTX* thread_md_ctx() noexcept;

/// SHA-256 of the concatenation of `a` and `b` into `out` (32 bytes); false when OpenSSL fails.
BATON_DECL bool sha256(std::string_view a, std::string_view b, unsigned char* out) noexcept;

/// HMAC-SHA256 (RFC 2104) of `msg` under a key of any length into `out` (32 bytes); false when OpenSSL fails.
BATON_DECL bool hmac_sha256(unsigned char const* key, std::size_t key_len, std::string_view msg,
                            unsigned char* out) noexcept;

/// Clears `n` bytes of a secret at `p`: a plain memset the compiler may not drop, without
/// OPENSSL_cleanse's call and byte loop, as it runs on every signature.
inline void wipe(void* p, std::size_t n) noexcept {
    std::memset(p, 0, n);
#if defined(__GNUC__) || defined(__clang__)
    __asm__ __volatile__("" : : "r"(p) : "memory");
#else
    OPENSSL_cleanse(p, n);
#endif
}

/// Standard base64 with padding (RFC 4648 section 4).
BATON_DECL std::string base64_encode(std::string_view in);

/// Strict base64 decoding (length a multiple of 4, padding only at the end). False on anything else.
BATON_DECL bool base64_decode(std::string_view in, std::string& out);

/// The value of a hex digit (either case), or -1 for any other character.
constexpr int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/http/impl/crypto.ipp>
#endif

#endif
