// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_RETRY_HPP
#define BATON_CORE_RETRY_HPP

/** @file
    Layer: core. The RetryPolicy: which failures to retry, after how long, and how many.

    Requirements (`r` is an `R&`, `ec` an `error_code const&`, `n` an
    `unsigned` count of attempts made so far, `u` a `double` drawn uniformly
    from [0, 1) by the caller, so that simulations stay deterministic):

    | expression              | type             | meaning |
    |-------------------------|------------------|---------|
    | `r.on_failure(ec, n, u)`| `retry_decision` | after the n-th failed attempt: retry or not, and the delay first |
    | `r.on_success(n)`       |                  | the request succeeded on attempt n (refunds a shared budget) |

    A conditional write is never retried blindly, whatever the policy says:
    the recipes read back first and decide whether the write landed.
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <memory>

namespace baton {

/// What a RetryPolicy decided about a failed attempt.
struct retry_decision {
    /// Send the request again.
    bool retry = false;
    /// Wait this long before sending it.
    std::chrono::nanoseconds delay{0};
};

/// A RetryPolicy (see the requirements table in this header).
template <class R>
concept retry_policy = std::copy_constructible<R> &&
    requires(R& r, error_code const& ec, unsigned n, double u) {
        { r.on_failure(ec, n, u) } -> std::same_as<retry_decision>;
        r.on_success(n);
    };

/// Never retries.
struct no_retry {
    /// Always says no.
    retry_decision on_failure(error_code const&, unsigned, double) const noexcept { return {}; }
    /// Nothing to refund.
    void on_success(unsigned) const noexcept {}
};

/** Settings of `standard_retry`; the defaults follow the AWS SDKs'
    2026 standard mode ("retry behavior 2.1").
*/
struct retry_params {
    /// Attempts in all, the first included. Must be at least 1.
    unsigned max_attempts = 3;
    /// Backoff base for transient failures (5xx, timeouts, connection errors, S3 409).
    std::chrono::milliseconds transient_base{50};
    /// Backoff base after the service throttled the client.
    std::chrono::milliseconds throttling_base{1000};
    /// Upper bound of any single backoff, applied before jitter. At most 1 hour.
    std::chrono::milliseconds max_backoff{20000};
    /// Size of the retry budget shared by every copy of the policy.
    unsigned quota = 500;
    /// Budget taken by a retry after a transient failure.
    unsigned transient_cost = 14;
    /// Budget taken by a retry after throttling.
    unsigned throttling_cost = 5;
    /// Budget returned by a request that succeeded at its first attempt.
    unsigned success_refund = 1;

    /// Throws `config_error` naming the broken rule.
    void validate() const;
};

/** Full-jitter exponential backoff with a cap and a retry budget.

    The delay before retry i is `u * min(base * 2^(i-1), max_backoff)`, with
    the base chosen by the kind of failure. Every copy shares one budget, so
    a process that copies the policy into many leases cannot turn an outage
    into a retry storm: when the budget is spent, failures are reported
    instead of retried, until successes refill it.

    @par Thread safety
    Copies may be used concurrently.
*/
class standard_retry {
public:
    /// A policy with the default settings and a budget of its own.
    standard_retry() : standard_retry(retry_params{}) {}

    /// A policy with the given settings and a budget of its own; throws `config_error` on bad settings.
    explicit standard_retry(retry_params p);

    /// Decides whether to retry after the n-th failed attempt.
    retry_decision on_failure(error_code const& ec, unsigned attempts, double u) noexcept;

    /// Refunds the budget after a success.
    void on_success(unsigned attempts) noexcept;

    /// Budget left, for observability and tests.
    long budget() const noexcept { return budget_->load(std::memory_order_relaxed); }

    /// The settings.
    retry_params const& params() const noexcept { return params_; }

private:
    retry_params params_;
    std::shared_ptr<std::atomic<long>> budget_;
};

static_assert(retry_policy<no_retry>);
static_assert(retry_policy<standard_retry>);

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/core/impl/retry.ipp>
#endif

#endif
