// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_WRITE_OBSERVER_HPP
#define BATON_RECIPE_WRITE_OBSERVER_HPP

/** @file
    Layer: recipes. What the settled-write recipes (`basic_fenced`, `basic_kv`)
    let an operator see: one event per write call, with how it ended (a
    fencing refusal, a failed condition, contention, an outcome left
    unknown), how many requests and retries it took, and how a write whose
    answer was ambiguous was settled. `no_write_observer`, the default, costs
    nothing.

    An observer is any copyable type with this member function (detected;
    without it nothing is timed or built):

        void on_write(write_event const&);

    It runs on the recipe's executor just before the call's handler is
    invoked: keep it short and never call the recipe from it. Events carry
    the key, tokens, counts and what the store said; never credentials or
    values. `lease_metrics` (`<baton/recipe/lease_metrics.hpp>`) has the
    hook too, so one object can count a process's leases and writes.
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/recipe/lease_observer.hpp>

#include <boost/asio/error.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace baton {

/// How a write call ended, as an operator counts it.
enum class write_outcome {
    ok,        ///< written (or nothing needed writing)
    fenced,    ///< refused: the key had accepted a higher fencing token (`errc::fenced`)
    condition, ///< the caller's condition did not hold, or contention outlasted the rounds (`errc::precondition_failed`)
    unknown,   ///< a write may have landed and reading back failed (`errc::unknown_outcome`)
    aborted,   ///< cancelled before anything landed
    failed,    ///< any other error (store, arguments, a foreign record)
};

/// The name of `o` in metrics and logs: `ok`, `fenced`, `condition`, `unknown`, `aborted`, `failed`.
constexpr char const* to_string(write_outcome o) noexcept {
    switch (o) {
    case write_outcome::ok: return "ok";
    case write_outcome::fenced: return "fenced";
    case write_outcome::condition: return "condition";
    case write_outcome::unknown: return "unknown";
    case write_outcome::aborted: return "aborted";
    case write_outcome::failed: return "failed";
    }
    return "failed";
}

/// Classifies how a write call ended.
BATON_DECL write_outcome classify_write(error_code const& ec) noexcept;

/// One finished write call of a settled-write recipe.
struct write_event {
    /// Which recipe: `fenced` or `kv`.
    std::string_view recipe;
    /// Which call: `write` (fenced), `put`, `erase` or `update` (kv).
    std::string_view operation;
    /// The key written.
    std::string_view key;
    /// How it ended, classified.
    write_outcome outcome = write_outcome::ok;
    /// The error, when it failed.
    error_code ec;
    /// The fencing token the write carried (0: none).
    std::uint64_t token = 0;
    /// On a fencing refusal: the token the key had accepted, above the write's.
    std::uint64_t winning_token = 0;
    /// Requests sent, reads included.
    unsigned requests = 0;
    /// Failures the retry policy chose to try again.
    unsigned retries = 0;
    /// Answers that left a write's outcome unknown (timeouts, 5xx, S3 409, throttles, cancellation after sending).
    unsigned ambiguous = 0;
    /// When `ambiguous` > 0: how reading back settled them (`landed`: the call's write took effect
    /// though its answer was lost; `not_landed`; `unresolved`: the call reported `unknown`).
    std::optional<settlement_outcome> settlement;
    /// From the call to its completion, on the recipe's clock.
    std::chrono::nanoseconds latency{0};
    /// What the store said, on failure.
    diagnostics const* diag = nullptr;
};

/// The default observer of fenced and kv writes: sees nothing, costs nothing.
struct no_write_observer {};

namespace detail {
template <class Observer>
concept observes_writes = requires(Observer& o, write_event const& e) { o.on_write(e); };
} // namespace detail

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/write_observer.ipp>
#endif

#endif
