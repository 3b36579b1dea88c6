// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_HTTP_IMPL_CRYPTO_IPP
#define BATON_HTTP_IMPL_CRYPTO_IPP
// Layer: wire (http), internal. The compiled part of http/detail/crypto.hpp.
#include <baton/http/detail/crypto.hpp>

#include <openssl/crypto.h>

#include <cstdint>
#include <cstring>

namespace baton::detail {

// One SHA-256 implementation fetched once per process (implicit fetches on every
// call cost more than hashing a DynamoDB request).
BATON_DECL EVP_MD const* sha256_md() noexcept {
    static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return md;
}

struct md_ctx_holder {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    md_ctx_holder() = default;
    md_ctx_holder(md_ctx_holder const&) = delete;
    md_ctx_holder& operator=(md_ctx_holder const&) = delete;
    ~md_ctx_holder() { EVP_MD_CTX_free(ctx); }
};

// A digest context per thread, reused across calls to avoid allocating one per hash.
BATON_DECL EVP_MD_CTX* thread_md_ctx() noexcept {
    thread_local md_ctx_holder holder;
    return holder.ctx;
}

BATON_DECL bool sha256(std::string_view a, std::string_view b, unsigned char* out) noexcept {
    EVP_MD const* md = sha256_md();
    EVP_MD_CTX* ctx = thread_md_ctx();
    if (md == nullptr || ctx == nullptr) return false;
    unsigned int len = 0;
    return EVP_DigestInit_ex2(ctx, md, nullptr) == 1 && EVP_DigestUpdate(ctx, a.data(), a.size()) == 1 &&
           (b.empty() || EVP_DigestUpdate(ctx, b.data(), b.size()) == 1) &&
           EVP_DigestFinal_ex(ctx, out, &len) == 1 && len == 32;
}

// On the reused digest context: cheaper than fetching an EVP_MAC per call.
BATON_DECL bool hmac_sha256(unsigned char const* key, std::size_t key_len, std::string_view msg,
                            unsigned char* out) noexcept {
    unsigned char k[64] = {};
    if (key_len > sizeof k) {
        if (!sha256({reinterpret_cast<char const*>(key), key_len}, {}, k)) return false;
    } else if (key_len != 0) {
        std::memcpy(k, key, key_len);
    }
    unsigned char pad[64];
    for (std::size_t i = 0; i < 64; ++i) pad[i] = static_cast<unsigned char>(k[i] ^ 0x36);
    unsigned char inner[32];
    bool ok = sha256({reinterpret_cast<char const*>(pad), 64}, msg, inner);
    for (std::size_t i = 0; i < 64; ++i) pad[i] = static_cast<unsigned char>(k[i] ^ 0x5c);
    ok = ok && sha256({reinterpret_cast<char const*>(pad), 64}, {reinterpret_cast<char const*>(inner), 32}, out);
    OPENSSL_cleanse(k, sizeof k);
    OPENSSL_cleanse(pad, sizeof pad);
    OPENSSL_cleanse(inner, sizeof inner);
    return ok;
}

BATON_DECL std::string base64_encode(std::string_view in) {
    static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    std::size_t i = 0;
    auto at = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(in[k])); };
    for (; i + 3 <= in.size(); i += 3) {
        std::uint32_t const v = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += alphabet[(v >> 6) & 63];
        out += alphabet[v & 63];
    }
    if (in.size() - i == 1) {
        std::uint32_t const v = at(i) << 16;
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += "==";
    } else if (in.size() - i == 2) {
        std::uint32_t const v = (at(i) << 16) | (at(i + 1) << 8);
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += alphabet[(v >> 6) & 63];
        out += '=';
    }
    return out;
}

BATON_DECL bool base64_decode(std::string_view in, std::string& out) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    out.clear();
    if (in.size() % 4 != 0) return false;
    out.reserve(in.size() / 4 * 3);
    for (std::size_t i = 0; i < in.size(); i += 4) {
        bool const last = i + 4 == in.size();
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; ++k) {
            char const c = in[i + static_cast<std::size_t>(k)];
            if (c == '=' && last && k >= 2) {
                v[k] = 0;
                ++pad;
                continue;
            }
            if (pad != 0) return false; // data after padding
            v[k] = value(c);
            if (v[k] < 0) return false;
        }
        std::uint32_t const w = (static_cast<std::uint32_t>(v[0]) << 18) | (static_cast<std::uint32_t>(v[1]) << 12) |
                                (static_cast<std::uint32_t>(v[2]) << 6) | static_cast<std::uint32_t>(v[3]);
        out += static_cast<char>((w >> 16) & 0xFF);
        if (pad < 2) out += static_cast<char>((w >> 8) & 0xFF);
        if (pad < 1) out += static_cast<char>(w & 0xFF);
    }
    return true;
}

} // namespace baton::detail

#endif
