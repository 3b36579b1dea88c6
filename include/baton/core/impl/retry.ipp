// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_IMPL_RETRY_IPP
#define BATON_CORE_IMPL_RETRY_IPP

// Layer: core, internal. The compiled part of core/retry.hpp: the settings' rules and
// standard_retry's backoff and budget.
#include <baton/core/retry.hpp>

namespace baton {

BATON_DECL void retry_params::validate() const {
    if (max_attempts < 1) throw config_error("retry_params: max_attempts must be at least 1");
    if (transient_base.count() < 0 || throttling_base.count() < 0)
        throw config_error("retry_params: backoff bases must not be negative");
    if (max_backoff < transient_base || max_backoff < throttling_base)
        throw config_error("retry_params: max_backoff must be at least each backoff base");
    // Bounds the doubling and every deadline computed from a backoff (nanoseconds, 64 bits).
    if (max_backoff > std::chrono::hours(1)) throw config_error("retry_params: max_backoff must be at most 1 hour");
}

BATON_DECL standard_retry::standard_retry(retry_params p)
    : params_(p), budget_(std::make_shared<std::atomic<long>>(0)) {
    params_.validate();
    budget_->store(static_cast<long>(params_.quota));
}

BATON_DECL retry_decision standard_retry::on_failure(error_code const& ec, unsigned attempts, double u) noexcept {
    if (!is_retryable(ec) || attempts >= params_.max_attempts) return {};
    bool const throttled = ec == errc::throttled;
    long const cost = throttled ? params_.throttling_cost : params_.transient_cost;
    long have = budget_->load(std::memory_order_relaxed);
    do {
        if (have < cost) return {};
    } while (!budget_->compare_exchange_weak(have, have - cost, std::memory_order_relaxed));
    auto const base = std::chrono::duration_cast<std::chrono::nanoseconds>(
        throttled ? params_.throttling_base : params_.transient_base);
    auto const cap = std::chrono::duration_cast<std::chrono::nanoseconds>(params_.max_backoff);
    auto ceiling = base;
    for (unsigned i = 1; i < attempts && ceiling < cap; ++i) ceiling *= 2;
    ceiling = std::min(ceiling, cap);
    u = std::clamp(u, 0.0, 1.0);
    return {true, std::chrono::nanoseconds(static_cast<std::int64_t>(u * static_cast<double>(ceiling.count())))};
}

BATON_DECL void standard_retry::on_success(unsigned attempts) noexcept {
    long const refund = attempts <= 1 ? static_cast<long>(params_.success_refund) : static_cast<long>(params_.transient_cost);
    long have = budget_->load(std::memory_order_relaxed);
    long want;
    do {
        want = std::min<long>(have + refund, static_cast<long>(params_.quota));
    } while (!budget_->compare_exchange_weak(have, want, std::memory_order_relaxed));
}

} // namespace baton

#endif
