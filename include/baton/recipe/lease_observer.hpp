// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_LEASE_OBSERVER_HPP
#define BATON_RECIPE_LEASE_OBSERVER_HPP

/** @file
    Layer: recipes. What a lease lets an operator see: the events a
    `basic_lease` (and so `basic_election`) reports to an observer, and
    `no_lease_observer`, the default, which costs nothing.

    An observer is any copyable type with some of these member functions
    (each is detected on its own; a missing one is never called):

        void on_acquired(lease_acquired_event const&);
        void on_renewed(lease_renewed_event const&);
        void on_lost(lease_lost_event const&);
        void on_released(lease_released_event const&);
        void on_request(lease_request_event const&);
        void on_settled(lease_settled_event const&);
        void on_retry(lease_retry_event const&);

    They run on the lease's executor, inside its completion path: keep them
    short and never call the lease from them. Events carry the key, tokens,
    durations and what the store said (HTTP status, service error code,
    request id); never credentials. `<baton/recipe/lease_metrics.hpp>` has a
    ready observer: counters and histograms in Prometheus text format.
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/store/settlement.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace baton {

/// Which of a lease's activities a store request served.
enum class lease_lane {
    acquire, ///< acquiring: reads while someone holds it, the claim
    renew,   ///< renewing while held (and reading back a renewal in doubt)
    release, ///< writing the released marker (and reading it back)
};

/// How the store answered one request, as an operator counts it.
enum class answer_kind {
    ok,        ///< succeeded
    conflict,  ///< a precondition failed: someone else wrote (S3 412 / 409, DynamoDB ConditionalCheckFailed)
    throttled, ///< the store asked to slow down (S3 SlowDown, DynamoDB throttling)
    ambiguous, ///< a write whose outcome is unknown (timeout, lost answer); settled by reading the record back
    failed,    ///< any other failure (retried while transient)
};

/// The name of `k` in metrics and logs: `ok`, `conflict`, `throttled`, `ambiguous`, `failed`.
constexpr char const* to_string(answer_kind k) noexcept {
    switch (k) {
    case answer_kind::ok: return "ok";
    case answer_kind::conflict: return "conflict";
    case answer_kind::throttled: return "throttled";
    case answer_kind::ambiguous: return "ambiguous";
    case answer_kind::failed: return "failed";
    }
    return "failed";
}

/// How a write whose answer was ambiguous turned out (see `outcome_unknown`).
enum class settlement_outcome {
    landed,     ///< reading the record back found the write's nonce: it took effect, and the lease acted on it
    not_landed, ///< the record moved past the version the write was conditional on: it never can land
    unresolved, ///< forgotten undecided: its term ended, reading back kept failing, or the record had moved on
                ///< (it may have landed and been replaced since). Harmless by construction: it was conditional on a
                ///< version of our own record, so if it lands the record still reads as ours (a later claim takes
                ///< it with token + 1, and takeovers wait ttl x skew as for any holder)
};

/// The name of `o` in metrics and logs: `landed`, `not_landed`, `unresolved`.
constexpr char const* to_string(settlement_outcome o) noexcept {
    switch (o) {
    case settlement_outcome::landed: return "landed";
    case settlement_outcome::not_landed: return "not_landed";
    case settlement_outcome::unresolved: return "unresolved";
    }
    return "unresolved";
}

/// The name of `l` in metrics and logs: `acquire`, `renew`, `release`.
constexpr char const* to_string(lease_lane l) noexcept {
    switch (l) {
    case lease_lane::acquire: return "acquire";
    case lease_lane::renew: return "renew";
    case lease_lane::release: return "release";
    }
    return "acquire";
}

/// Classifies a store answer; `write` tells whether the request could have changed the record.
BATON_DECL answer_kind classify_answer(error_code const& ec, bool write) noexcept;

/// One answer of the store to one of the lease's requests.
struct lease_request_event {
    /// The lease's key.
    std::string_view key;
    /// What the request served.
    lease_lane lane = lease_lane::acquire;
    /// True for a write (claim, renewal, release marker), false for a read.
    bool write = false;
    /// The answer, classified.
    answer_kind kind = answer_kind::ok;
    /// From sending the request to its answer, on the lease's clock.
    std::chrono::nanoseconds latency{0};
    /// The error, when it failed.
    error_code ec;
    /// What the store said (HTTP status, service code such as `PreconditionFailed`, request id).
    diagnostics const* diag = nullptr;
};

/// The lease was acquired.
struct lease_acquired_event {
    /// The lease's key.
    std::string_view key;
    /// The term's fencing token.
    std::uint64_t fencing_token = 0;
    /// Taken over from a holder that stopped renewing.
    bool took_over = false;
    /// The record did not exist and this acquisition created it.
    bool created_record = false;
    /// Time left before the renew deadline.
    std::chrono::nanoseconds remaining{0};
};

/// A renewal succeeded.
struct lease_renewed_event {
    /// The lease's key.
    std::string_view key;
    /// The term's fencing token.
    std::uint64_t fencing_token = 0;
    /// From sending the renewal to its answer.
    std::chrono::nanoseconds latency{0};
    /// How much time was left before the renew deadline when the answer came: how close the term came to ending.
    std::chrono::nanoseconds margin{0};
};

/// The lease was lost (not released): its `async_wait_lost` waiters are told now.
struct lease_lost_event {
    /// The lease's key.
    std::string_view key;
    /// The token of the term that ended.
    std::uint64_t fencing_token = 0;
    /// `errc::lease_lost`.
    error_code cause;
    /// `renew deadline passed` (renewals kept failing), or `taken over (the record changed or vanished)`
    /// (few and stable: `lease_metrics` counts losses by it); `the lease machine asked for a step its
    /// driver cannot take` only where an assertion would have stopped a debug build.
    std::string_view reason;
    /// For a takeover, which: `the record changed`, `the record was deleted (...)` or `the record is
    /// no longer a lease record`; empty otherwise.
    std::string_view detail;
};

/// A release finished.
struct lease_released_event {
    /// The lease's key.
    std::string_view key;
    /// The token of the term released.
    std::uint64_t fencing_token = 0;
    /// Empty when the marker was written; `errc::lease_lost` when someone had taken over; else the failure.
    error_code ec;
};

/// A write of the lease whose answer was ambiguous has been settled (one event per such write).
struct lease_settled_event {
    /// The lease's key.
    std::string_view key;
    /// Which lane wrote it: a claim (acquire), a renewal, a released marker.
    lease_lane lane = lease_lane::acquire;
    /// How it turned out.
    settlement_outcome outcome = settlement_outcome::unresolved;
    /// The fencing token the write carried.
    std::uint64_t fencing_token = 0;
};

/// The retry policy chose to try again after a failure (a poll while someone else holds the lease is not a retry).
struct lease_retry_event {
    /// The lease's key.
    std::string_view key;
    /// What is retried.
    lease_lane lane = lease_lane::acquire;
    /// Failures in a row so far, this one included.
    unsigned attempt = 0;
    /// The pause before the next attempt.
    std::chrono::nanoseconds delay{0};
    /// The failure.
    error_code ec;
};

/// The default observer: sees nothing, costs nothing.
struct no_lease_observer {};

namespace detail {
// Each hook is called only when the observer has it.
template <class Observer, class Event>
void observe(Observer& o, Event const& e) {
    if constexpr (requires { o.on_acquired(e); }) o.on_acquired(e);
    else if constexpr (requires { o.on_renewed(e); }) o.on_renewed(e);
    else if constexpr (requires { o.on_lost(e); }) o.on_lost(e);
    else if constexpr (requires { o.on_released(e); }) o.on_released(e);
    else if constexpr (requires { o.on_request(e); }) o.on_request(e);
    else if constexpr (requires { o.on_settled(e); }) o.on_settled(e);
    else if constexpr (requires { o.on_retry(e); }) o.on_retry(e);
}

// Whether settlement or retry events are wanted (the machine's hooks stay null otherwise).
template <class Observer>
concept observes_settlements = requires(Observer& o, lease_settled_event const& e) { o.on_settled(e); };
template <class Observer>
concept observes_retries = requires(Observer& o, lease_retry_event const& e) { o.on_retry(e); };

// Whether request events are wanted (timing each request is skipped otherwise).
template <class Observer>
concept observes_requests = requires(Observer& o, lease_request_event const& e) { o.on_request(e); };
} // namespace detail

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/lease_observer.ipp>
#endif

#endif
