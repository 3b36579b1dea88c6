// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_LEASE_METRICS_IPP
#define BATON_RECIPE_IMPL_LEASE_METRICS_IPP

// Layer: recipes, internal. The compiled part of recipe/lease_metrics.hpp: the observer hooks'
// counting and the Prometheus text.
#include <baton/recipe/lease_metrics.hpp>

namespace baton {

BATON_DECL void lease_metrics::on_acquired(lease_acquired_event const& e) {
    std::lock_guard lock(st_->mutex);
    auto& k = st_->keys[std::string(e.key)];
    ++k.acquisitions[e.took_over ? 2 : e.created_record ? 1 : 0];
    k.held = true;
    k.token = e.fencing_token;
}

BATON_DECL void lease_metrics::on_renewed(lease_renewed_event const& e) {
    std::lock_guard lock(st_->mutex);
    auto& k = st_->keys[std::string(e.key)];
    ++k.renewals;
    k.renewal_latency.add(seconds(e.latency));
    k.margin_seconds = seconds(e.margin);
}

BATON_DECL void lease_metrics::on_lost(lease_lost_event const& e) {
    std::lock_guard lock(st_->mutex);
    auto& k = st_->keys[std::string(e.key)];
    ++k.losses[std::string(e.reason)];
    k.held = false;
}

BATON_DECL void lease_metrics::on_released(lease_released_event const& e) {
    std::lock_guard lock(st_->mutex);
    auto& k = st_->keys[std::string(e.key)];
    ++k.releases[!e.ec ? "ok" : e.ec == errc::lease_lost ? "lease_lost" : "failed"];
    k.held = false;
}

BATON_DECL void lease_metrics::on_request(lease_request_event const& e) {
    std::lock_guard lock(st_->mutex);
    auto& k = st_->keys[std::string(e.key)];
    ++k.requests[{to_string(e.lane), e.write ? "write" : "read", to_string(e.kind)}];
    k.request_latency.add(seconds(e.latency));
    if (e.kind == answer_kind::conflict) ++k.conflicts[conflict_cause(e)];
}

BATON_DECL void lease_metrics::on_settled(lease_settled_event const& e) {
    std::lock_guard lock(st_->mutex);
    ++st_->keys[std::string(e.key)].settlements[{to_string(e.lane), to_string(e.outcome)}];
}

BATON_DECL void lease_metrics::on_retry(lease_retry_event const& e) {
    std::lock_guard lock(st_->mutex);
    ++st_->keys[std::string(e.key)].retries[to_string(e.lane)];
}

BATON_DECL void lease_metrics::on_write(write_event const& e) {
    std::lock_guard lock(st_->mutex);
    auto& w = st_->writes[{std::string(e.recipe), std::string(e.operation)}];
    ++w.calls[to_string(e.outcome)];
    w.requests += e.requests;
    w.retries += e.retries;
    if (e.settlement) ++w.settlements[to_string(*e.settlement)];
    w.latency.add(seconds(e.latency));
}

BATON_DECL std::string lease_metrics::prometheus_text() const {
    std::lock_guard lock(st_->mutex);
    std::string out;
    auto head = [&](char const* name, char const* type, char const* help) {
        out += "# HELP ";
        out += name;
        out += ' ';
        out += help;
        out += "\n# TYPE ";
        out += name;
        out += ' ';
        out += type;
        out += '\n';
    };
    auto line = [&](char const* name, std::string const& labels, double v) {
        out += name;
        out += '{';
        out += labels;
        out += "} ";
        out += number(v);
        out += '\n';
    };
    head("baton_lease_acquisitions_total", "counter", "Acquisitions, by how: free (or released), created, takeover.");
    for (auto const& [key, k] : st_->keys) {
        static constexpr char const* how[] = {"free", "created", "takeover"};
        for (int i = 0; i < 3; ++i) line("baton_lease_acquisitions_total", label("key", key) + "," + label("how", how[i]),
                                         double(k.acquisitions[i]));
    }
    head("baton_lease_renewals_total", "counter", "Renewals written.");
    for (auto const& [key, k] : st_->keys) line("baton_lease_renewals_total", label("key", key), double(k.renewals));
    head("baton_lease_renewal_latency_seconds", "histogram", "From sending a renewal to its answer.");
    for (auto const& [key, k] : st_->keys) k.renewal_latency.write(out, "baton_lease_renewal_latency_seconds", label("key", key));
    head("baton_lease_renewal_margin_seconds", "gauge",
         "Time that was left before the renew deadline when the last renewal's answer came.");
    for (auto const& [key, k] : st_->keys) line("baton_lease_renewal_margin_seconds", label("key", key), k.margin_seconds);
    head("baton_lease_losses_total", "counter", "Terms that ended without a release, by reason.");
    for (auto const& [key, k] : st_->keys)
        for (auto const& [reason, n] : k.losses)
            line("baton_lease_losses_total", label("key", key) + "," + label("reason", reason), double(n));
    head("baton_lease_releases_total", "counter", "Releases, by result.");
    for (auto const& [key, k] : st_->keys)
        for (auto const& [result, n] : k.releases)
            line("baton_lease_releases_total", label("key", key) + "," + label("result", result), double(n));
    head("baton_lease_requests_total", "counter",
         "Store answers, by lane (acquire, renew, release), request (read, write) and outcome "
         "(ok, conflict, throttled, ambiguous, failed).");
    for (auto const& [key, k] : st_->keys)
        for (auto const& [what, n] : k.requests)
            line("baton_lease_requests_total",
                 label("key", key) + "," + label("lane", std::get<0>(what)) + "," + label("request", std::get<1>(what)) +
                     "," + label("outcome", std::get<2>(what)),
                 double(n));
    head("baton_lease_request_latency_seconds", "histogram", "From sending a request to the store's answer.");
    for (auto const& [key, k] : st_->keys) k.request_latency.write(out, "baton_lease_request_latency_seconds", label("key", key));
    head("baton_lease_conflicts_total", "counter",
         "Conditional writes refused because someone else wrote, by the store's cause (e.g. PreconditionFailed, "
         "ConditionalCheckFailedException).");
    for (auto const& [key, k] : st_->keys)
        for (auto const& [cause, n] : k.conflicts)
            line("baton_lease_conflicts_total", label("key", key) + "," + label("cause", cause), double(n));
    head("baton_lease_settlements_total", "counter",
         "Writes whose answer was ambiguous, by lane and by how reading back settled them "
         "(landed, not_landed, unresolved).");
    for (auto const& [key, k] : st_->keys)
        for (auto const& [what, n] : k.settlements)
            line("baton_lease_settlements_total",
                 label("key", key) + "," + label("lane", what.first) + "," + label("outcome", what.second), double(n));
    head("baton_lease_retries_total", "counter", "Failed requests the retry policy chose to try again, by lane.");
    for (auto const& [key, k] : st_->keys)
        for (auto const& [lane, n] : k.retries)
            line("baton_lease_retries_total", label("key", key) + "," + label("lane", lane), double(n));
    head("baton_lease_held", "gauge", "1 while this process holds the lease.");
    for (auto const& [key, k] : st_->keys) line("baton_lease_held", label("key", key), k.held ? 1 : 0);
    head("baton_lease_fencing_token", "gauge", "The fencing token of the latest term this process held.");
    for (auto const& [key, k] : st_->keys) line("baton_lease_fencing_token", label("key", key), double(k.token));
    auto const op_labels = [&](std::pair<std::string, std::string> const& which) {
        return label("recipe", which.first) + "," + label("operation", which.second);
    };
    head("baton_writes_total", "counter",
         "Fenced and kv write calls, by outcome (ok, fenced, condition, unknown, aborted, failed).");
    for (auto const& [which, w] : st_->writes)
        for (auto const& [outcome, n] : w.calls)
            line("baton_writes_total", op_labels(which) + "," + label("outcome", outcome), double(n));
    head("baton_write_requests_total", "counter", "Requests the write calls sent, reads included.");
    for (auto const& [which, w] : st_->writes) line("baton_write_requests_total", op_labels(which), double(w.requests));
    head("baton_write_retries_total", "counter", "Failures of write calls that the retry policy chose to try again.");
    for (auto const& [which, w] : st_->writes) line("baton_write_retries_total", op_labels(which), double(w.retries));
    head("baton_write_settlements_total", "counter",
         "Write calls with an ambiguous answer, by how reading back settled them (landed, not_landed, unresolved).");
    for (auto const& [which, w] : st_->writes)
        for (auto const& [outcome, n] : w.settlements)
            line("baton_write_settlements_total", op_labels(which) + "," + label("outcome", outcome), double(n));
    head("baton_write_latency_seconds", "histogram", "From a write call to its completion.");
    for (auto const& [which, w] : st_->writes) w.latency.write(out, "baton_write_latency_seconds", op_labels(which));
    return out;
}

BATON_DECL void lease_metrics::histogram::add(double v) {
    for (std::size_t i = 0; i < latency_buckets.size(); ++i)
        if (v <= latency_buckets[i]) ++counts[i];
    ++count;
    sum += v;
}

BATON_DECL void lease_metrics::histogram::write(std::string& out, char const* name, std::string const& labels) const {
    for (std::size_t i = 0; i < latency_buckets.size(); ++i)
        out += std::string(name) + "_bucket{" + labels + ",le=\"" + number(latency_buckets[i]) + "\"} " +
               std::to_string(counts[i]) + "\n";
    out += std::string(name) + "_bucket{" + labels + ",le=\"+Inf\"} " + std::to_string(count) + "\n";
    out += std::string(name) + "_sum{" + labels + "} " + number(sum) + "\n";
    out += std::string(name) + "_count{" + labels + "} " + std::to_string(count) + "\n";
}

BATON_DECL std::string lease_metrics::number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

BATON_DECL std::string lease_metrics::label(std::string_view name, std::string_view value) {
    std::string out(name);
    out += "=\"";
    for (char c : value) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    out += '"';
    return out;
}

BATON_DECL std::string lease_metrics::conflict_cause(lease_request_event const& e) {
    if (e.diag && !e.diag->service_code.empty()) return e.diag->service_code;
    if (e.diag && e.diag->http_status != 0) return "HTTP " + std::to_string(e.diag->http_status);
    return e.ec == errc::conflict ? "conflict" : "precondition_failed";
}

} // namespace baton

#endif
