// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_IMPL_RANDOM_IPP
#define BATON_CORE_IMPL_RANDOM_IPP

// Layer: core, internal. The compiled part of core/detail/random.hpp: kernel randomness, seeds
// and the shared name generator.
#include <baton/core/detail/random.hpp>

namespace baton::detail {

BATON_DECL std::string kernel_random_hex(std::size_t bytes) {
    std::vector<unsigned char> buf(bytes);
    std::size_t got = 0;
#if __has_include(<sys/random.h>)
    while (got < bytes) {
        auto n = ::getrandom(buf.data() + got, bytes - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        got += static_cast<std::size_t>(n);
    }
#endif
    if (got < bytes) {
        std::random_device rd;
        for (; got < bytes; ++got) buf[got] = static_cast<unsigned char>(rd());
    }
    return to_hex(buf.data(), bytes);
}

BATON_DECL std::uint64_t distinct_seed(std::uint64_t seed) {
    static std::mutex mutex;
    static std::map<std::uint64_t, std::uint64_t> given; // generators seeded per seed
    std::uint64_t n;
    {
        std::lock_guard lock(mutex);
        n = given[seed]++;
    }
    if (n == 0) return seed;
    std::uint64_t z = seed + n * 0x9e3779b97f4a7c15ull; // splitmix64 of (seed, n)
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

BATON_DECL std::mt19937_64 seeded_generator(std::optional<std::uint64_t> seed) {
    if (seed) return std::mt19937_64(distinct_seed(*seed));
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
}

BATON_DECL random_names::random_names() {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    rng_.seed(seq);
}

BATON_DECL std::string random_names::hex128() {
    std::uint64_t a, b;
    {
        std::lock_guard lock(mutex_);
        a = rng_();
        b = rng_();
    }
    std::string out(32, '0'); // one allocation, not three
    for (int i = 15; i >= 0; --i, a >>= 4, b >>= 4) {
        out[static_cast<std::size_t>(i)] = hex_digit(static_cast<unsigned>(a & 15));
        out[static_cast<std::size_t>(i) + 16] = hex_digit(static_cast<unsigned>(b & 15));
    }
    return out;
}

} // namespace baton::detail

#endif
