// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_DETAIL_RANDOM_HPP
#define BATON_CORE_DETAIL_RANDOM_HPP

// Layer: core, internal. Where the backends' random names come from, written once:
// kernel randomness (fresh in every process, even after fork) and a locked
// generator seeded from it for names made at a high rate (versions, scratch keys).
// Recipes that must replay under a seed keep their own seeded generators.

#include <baton/core/detail/config.hpp>
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
BATON_DECL std::string kernel_random_hex(std::size_t bytes);

/// A draw in [0, 1) from the top 53 bits of a 64-bit generator: the jitter of retries and waits.
template <class Rng>
double uniform01(Rng& rng) {
    return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

/** The seed of a recipe's jitter and backoff: `seed` when given (reproducible simulations),
    else 64 bits from `std::random_device` (timing only: names and nonces draw from
    `seeded_generator`).
*/
inline std::uint64_t seed_or_random(std::optional<std::uint64_t> seed) {
    if (seed) return *seed;
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

/** The seed a new generator given the explicit seed `seed` starts from: `seed` itself for the
    first one of this process, a different one for each after it. Two handles drawing the same
    nonces could settle a write in doubt by the other's write, or write each other's names.
    Explicit seeds are for simulations: two processes given one seed still draw the same.
*/
BATON_DECL std::uint64_t distinct_seed(std::uint64_t seed);

/** A generator for nonces and names: seeded from `seed` when given (reproducible simulations;
    see `distinct_seed`), else with 256 bits of kernel randomness. One 32-bit
    `std::random_device` draw would give only 2^32 sequences: a fleet of a few tens of thousands
    of processes would likely have two that draw the same nonces.
*/
BATON_DECL std::mt19937_64 seeded_generator(std::optional<std::uint64_t> seed);

/// A generator seeded from the kernel, safe to share between threads: 128-bit hex names.
class random_names {
public:
    random_names();

    /// 32 random hex digits.
    std::string hex128();

private:
    std::mutex mutex_;
    std::mt19937_64 rng_;
};

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/core/impl/random.ipp>
#endif

#endif
