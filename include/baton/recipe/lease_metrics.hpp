// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_LEASE_METRICS_HPP
#define BATON_RECIPE_LEASE_METRICS_HPP

/** @file
    Layer: recipes. `lease_metrics`: a ready observer of leases (and of
    fenced and kv writes) that keeps counters and histograms and writes them
    in the Prometheus text format (for node_exporter's textfile collector,
    or any scraper).

        baton::lease_metrics metrics;
        baton::basic_lease<baton::s3_backend, baton::steady_clock, baton::standard_retry,
                           baton::aws::sigv4_signer, boost::asio::any_io_executor,
                           baton::lease_metrics> lease(ex, backend, opts, {}, {}, {}, metrics);
        ...
        std::string text = metrics.prometheus_text();

    Copies share one set of figures (a lease keeps its own copy of the
    observer), guarded by a mutex, so leases on several threads may share it.
*/

#include <baton/core/detail/config.hpp>
#include <baton/recipe/lease_observer.hpp>
#include <baton/recipe/write_observer.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

namespace baton {

/// Counters and histograms of every lease that shares it; see the file comment.
class lease_metrics {
public:
    /// Upper bounds of the latency buckets, in seconds (Prometheus `le`), before `+Inf`.
    static constexpr std::array<double, 11> latency_buckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

    lease_metrics() : st_(std::make_shared<state>()) {}

    /// Observer hook: counts an acquisition (free, created or taken over) and sets the held gauge.
    void on_acquired(lease_acquired_event const& e);
    /// Observer hook: counts a renewal, its latency and the margin left before the renew deadline.
    void on_renewed(lease_renewed_event const& e);
    /// Observer hook: counts a loss by its reason and clears the held gauge.
    void on_lost(lease_lost_event const& e);
    /// Observer hook: counts a release by its result (`ok`, `lease_lost`, `failed`) and clears the held gauge.
    void on_released(lease_released_event const& e);
    /// Observer hook: counts a store answer by lane, request and kind, and conflicts by the service's cause.
    void on_request(lease_request_event const& e);

    /// Observer hook: counts how a write in doubt was settled, by lane and outcome.
    void on_settled(lease_settled_event const& e);
    /// Observer hook: counts a retry chosen by the retry policy, by lane.
    void on_retry(lease_retry_event const& e);

    /** Observer hook of `basic_fenced` and `basic_kv` (`<baton/recipe/write_observer.hpp>`): counts
        the call by recipe, operation and outcome (fencing refusals are `outcome="fenced"`), with its
        requests, retries, latency and how a write in doubt was settled. Labelled by recipe and
        operation, not by key: a kv store may have more keys than a scraper wants series. */
    void on_write(write_event const& e);

    /** The figures in the Prometheus text exposition format (version 0.0.4):
        `baton_lease_acquisitions_total{key,how}`, `baton_lease_renewals_total`,
        `baton_lease_renewal_latency_seconds` (histogram),
        `baton_lease_renewal_margin_seconds` (gauge, the last renewal's),
        `baton_lease_losses_total{reason}`, `baton_lease_releases_total{result}`,
        `baton_lease_requests_total{lane,request,outcome}`,
        `baton_lease_request_latency_seconds` (histogram),
        `baton_lease_conflicts_total{cause}`,
        `baton_lease_settlements_total{lane,outcome}` (writes in doubt, by how they turned out:
        landed, not_landed, unresolved), `baton_lease_retries_total{lane}`, `baton_lease_held`,
        `baton_lease_fencing_token`; every series labelled with the lease's `key`. Then the
        writes of fenced and kv recipes, labelled `recipe` and `operation`:
        `baton_writes_total{outcome}`, `baton_write_requests_total`, `baton_write_retries_total`,
        `baton_write_settlements_total{outcome}`, `baton_write_latency_seconds` (histogram).
    */
    std::string prometheus_text() const;

private:
    struct histogram {
        std::array<std::uint64_t, latency_buckets.size()> counts{};
        std::uint64_t count = 0;
        double sum = 0;
        void add(double v);
        void write(std::string& out, char const* name, std::string const& labels) const;
    };
    struct per_key {
        std::array<std::uint64_t, 3> acquisitions{}; // free, created, takeover
        std::uint64_t renewals = 0;
        histogram renewal_latency;
        double margin_seconds = 0;
        std::map<std::string, std::uint64_t> losses, releases, conflicts, retries;
        std::map<std::pair<std::string, std::string>, std::uint64_t> settlements;
        std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> requests;
        histogram request_latency;
        bool held = false;
        std::uint64_t token = 0;
    };
    struct per_operation {
        std::map<std::string, std::uint64_t> calls, settlements;
        std::uint64_t requests = 0, retries = 0;
        histogram latency;
    };
    struct state {
        mutable std::mutex mutex;
        std::map<std::string, per_key> keys;
        std::map<std::pair<std::string, std::string>, per_operation> writes; // by (recipe, operation)
    };

    static double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

    static std::string number(double v);

    // A label pair with the value escaped as the text format requires (backslash, quote, newline).
    static std::string label(std::string_view name, std::string_view value);

    static std::string conflict_cause(lease_request_event const& e);

    std::shared_ptr<state> st_;
};

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/lease_metrics.ipp>
#endif

#endif
