// The seed loop every simulation suite shares: which seeds to run (environment), a
// deterministic run per seed, its violations reported with the line that replays it.
#ifndef BATON_TEST_COMMON_SIM_SEEDS_HPP
#define BATON_TEST_COMMON_SIM_SEEDS_HPP

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace test_common {

/// A number from the environment, or `fallback` when unset or empty.
inline std::uint64_t env_u64(char const* name, std::uint64_t fallback) {
    char const* v = std::getenv(name);
    return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

/** The seeds to run: BATON_SIM_SEED=<n> replays one; otherwise BATON_SIM_SEEDS (default 2000)
    divided by `density` (a suite whose seeds are heavier runs fewer), from BATON_SIM_FIRST
    (default 1). BATON_SIM_MAX_FAILURES (default 5) flagged seeds end the run.
*/
struct seed_range {
    std::uint64_t first = 1, count = 1, max_failures = 5;

    static seed_range from_env(std::uint64_t density = 1) {
        seed_range r;
        std::uint64_t const one = env_u64("BATON_SIM_SEED", 0);
        r.count = one ? 1 : std::max<std::uint64_t>(env_u64("BATON_SIM_SEEDS", 2000) / density, 1);
        r.first = one ? one : env_u64("BATON_SIM_FIRST", 1);
        r.max_failures = env_u64("BATON_SIM_MAX_FAILURES", 5);
        return r;
    }
};

/** Runs `run(seed)` (returning an outcome with `violations` and `add`) for every seed of
    `range`, adds each outcome to `total`, and fails the test case with each flagged seed's
    first `shown` violations and its replay line. Returns how many seeds were flagged.
*/
template <class Outcome, class Run>
std::uint64_t run_seeds(seed_range const& range, Outcome& total, Run run, std::size_t shown = 1000) {
    std::uint64_t failed = 0;
    for (std::uint64_t s = range.first; s < range.first + range.count; ++s) {
        auto o = run(s);
        total.add(o);
        if (o.violations.empty()) continue;
        ++failed;
        std::string msg = "seed " + std::to_string(s) + " (replay: BATON_SIM_SEED=" + std::to_string(s) + "):";
        for (std::size_t i = 0; i < o.violations.size() && i < shown; ++i) msg += "\n  " + o.violations[i];
        FAIL_CHECK(msg);
        if (failed >= range.max_failures) break;
    }
    return failed;
}

/// How many runs of a deliberately broken variant the checker flagged, and one example.
struct flagged_runs {
    std::uint64_t caught = 0;
    std::string example;
};

/** Runs `run(seed)` for seeds 1..`runs` and counts those with a violation naming `property`
    (e.g. "(a)"): proof that the checker bites.
*/
template <class Run>
flagged_runs count_flagged(std::uint64_t runs, std::string const& property, Run run) {
    flagged_runs f;
    for (std::uint64_t s = 1; s <= runs; ++s) {
        auto o = run(s);
        for (auto& v : o.violations)
            if (v.find(property) != std::string::npos) {
                ++f.caught;
                if (f.example.empty()) f.example = "seed " + std::to_string(s) + ": " + v;
                break;
            }
    }
    return f;
}

} // namespace test_common

#endif
