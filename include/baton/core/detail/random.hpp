// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_DETAIL_RANDOM_HPP
#define BATON_CORE_DETAIL_RANDOM_HPP

// Layer: core, internal. Where the backends' random names come from, written once:
// kernel randomness (fresh in every process, even after fork) and a locked
// generator seeded from it for names made at a high rate (versions, scratch keys).
// Recipes that must replay under a seed keep their own seeded generators.

#include <baton/core/detail/text.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#if __has_include(<sys/random.h>)
#include <sys/random.h>
#endif

namespace baton::detail {

/// `bytes` random bytes from the kernel as 2 × `bytes` hex digits (`std::random_device` where getrandom is missing).
inline std::string kernel_random_hex(std::size_t bytes) {
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

/** The seed a new generator given the explicit seed `seed` starts from: `seed` itself for the
    first one of this process, a different one for each after it. Two handles drawing the same
    nonces could settle a write in doubt by the other's write, or write each other's names.
    Explicit seeds are for simulations: two processes given one seed still draw the same.
*/
inline std::uint64_t distinct_seed(std::uint64_t seed) {
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

/** A generator for nonces and names: seeded from `seed` when given (reproducible simulations;
    see `distinct_seed`), else with 256 bits of kernel randomness. One 32-bit
    `std::random_device` draw would give only 2^32 sequences: a fleet of a few tens of thousands
    of processes would likely have two that draw the same nonces.
*/
inline std::mt19937_64 seeded_generator(std::optional<std::uint64_t> seed) {
    if (seed) return std::mt19937_64(distinct_seed(*seed));
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
}

/// A generator seeded from the kernel, safe to share between threads: 128-bit hex names.
class random_names {
public:
    random_names() {
        std::random_device rd;
        std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
        rng_.seed(seq);
    }

    /// 32 random hex digits.
    std::string hex128() {
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

private:
    std::mutex mutex_;
    std::mt19937_64 rng_;
};

} // namespace baton::detail

#endif
