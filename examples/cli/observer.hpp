// Part of the baton command-line tool (examples/cli/main.cpp). The lease's observer in `baton run`: --metrics-file and --verbose.
#ifndef BATON_CLI_OBSERVER_HPP
#define BATON_CLI_OBSERVER_HPP

#include "args.hpp"
#include "event_log.hpp"

namespace baton_cli {

std::string millis_text(std::chrono::nanoseconds d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f ms", std::chrono::duration<double, std::milli>(d).count());
    return buf;
}

// A renewal with less than this left before its renew deadline is reported late (--log-format
// json): renewals normally leave a third of the TTL, so half of that means trouble.
inline std::chrono::nanoseconds late_renewal_margin(std::chrono::milliseconds ttl) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(ttl) / 6;
}

// The `renewed_late` event (JSON only: a text line would repeat at every slow renewal).
inline void log_renewed_late(baton::lease_renewed_event const& e) {
    log_event("renewed_late", {{"key", e.key}, {"token", e.fencing_token},
                               {"latency_ms", std::chrono::duration_cast<std::chrono::milliseconds>(e.latency).count()},
                               {"margin_ms", std::chrono::duration_cast<std::chrono::milliseconds>(e.margin).count()}},
              {});
}

// The worker lease's observer in `baton table work`: its late renewals, as `run` reports its lease's.
struct worker_lease_observer {
    std::chrono::nanoseconds late_margin{0};
    void on_renewed(baton::lease_renewed_event const& e) const {
        if (json_log && e.margin < late_margin) log_renewed_late(e);
    }
};

// The lease's observer in `baton run`: figures for --metrics-file, lines for --verbose.
struct cli_observer {
    baton::lease_metrics metrics;
    std::shared_ptr<std::string const> metrics_file = std::make_shared<std::string const>();
    bool verbose = false;
    std::chrono::nanoseconds late_margin{0}; // late_renewal_margin

    // Written to a temporary name and renamed, so a collector never reads half a file.
    bool write_metrics() const {
        if (metrics_file->empty()) return true;
        std::string const tmp = *metrics_file + ".tmp." + std::to_string(::getpid());
        std::string const text = metrics.prometheus_text();
        std::FILE* f = std::fopen(tmp.c_str(), "w");
        if (!f) return false;
        bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
        ok = (std::fclose(f) == 0) && ok;
        if (ok && std::rename(tmp.c_str(), metrics_file->c_str()) == 0) return true;
        std::remove(tmp.c_str());
        return false;
    }
    void after_event() const {
        if (!write_metrics()) {
            std::fprintf(stderr, "baton: cannot write --metrics-file %s: %s\n", metrics_file->c_str(), std::strerror(errno));
        }
    }
    void say(std::string const& line) const {
        if (verbose) std::fprintf(stderr, "baton: event: %s\n", line.c_str());
    }

    void on_acquired(baton::lease_acquired_event const& e) {
        metrics.on_acquired(e);
        if (json_log)
            log_event("acquired", {{"key", e.key}, {"token", e.fencing_token}, {"took_over", e.took_over},
                                   {"created_record", e.created_record},
                                   {"remaining_ms", std::chrono::duration_cast<std::chrono::milliseconds>(e.remaining).count()}},
                      {});
        say("acquired '" + std::string(e.key) + "' with token " + std::to_string(e.fencing_token) +
            (e.took_over ? " (taken over)" : e.created_record ? " (record created)" : "") + "; " +
            seconds_text(e.remaining) + " to the renew deadline");
        after_event();
    }
    void on_renewed(baton::lease_renewed_event const& e) {
        metrics.on_renewed(e);
        if (json_log && e.margin < late_margin) log_renewed_late(e);
        say("renewed '" + std::string(e.key) + "' (token " + std::to_string(e.fencing_token) + ") in " +
            millis_text(e.latency) + ", " + seconds_text(e.margin) + " before the renew deadline");
        after_event();
    }
    void on_lost(baton::lease_lost_event const& e) {
        metrics.on_lost(e);
        if (json_log)
            log_event("lost", {{"key", e.key}, {"token", e.fencing_token}, {"reason", e.reason}, {"detail", e.detail}}, {});
        say("lost '" + std::string(e.key) + "' (token " + std::to_string(e.fencing_token) + "): " + std::string(e.reason) +
            (e.detail.empty() ? "" : ": " + std::string(e.detail)));
        after_event();
    }
    void on_released(baton::lease_released_event const& e) {
        metrics.on_released(e);
        if (json_log)
            log_event("released", {{"key", e.key}, {"token", e.fencing_token},
                                   {"error", e.ec ? boost::json::value(e.ec.message()) : boost::json::value(nullptr)}},
                      {});
        say("released '" + std::string(e.key) + "' (token " + std::to_string(e.fencing_token) +
            "): " + (e.ec ? e.ec.message() : "ok"));
        after_event();
    }
    void on_request(baton::lease_request_event const& e) {
        metrics.on_request(e);
        std::string line = std::string(baton::to_string(e.lane)) + (e.write ? " write: " : " read: ") +
                           baton::to_string(e.kind) + " in " + millis_text(e.latency);
        if (e.kind != baton::answer_kind::ok && e.diag && !e.diag->empty()) line += " (" + e.diag->to_string() + ")";
        else if (e.ec) line += " (" + e.ec.message() + ")";
        say(line);
        after_event();
    }
    void on_settled(baton::lease_settled_event const& e) {
        metrics.on_settled(e);
        say(std::string(baton::to_string(e.lane)) + " write in doubt (token " + std::to_string(e.fencing_token) +
            ") settled: " + baton::to_string(e.outcome));
        after_event();
    }
    void on_retry(baton::lease_retry_event const& e) {
        metrics.on_retry(e);
        say(std::string(baton::to_string(e.lane)) + " retry " + std::to_string(e.attempt) + " in " +
            millis_text(e.delay) + " after: " + e.ec.message());
        after_event();
    }
};

} // namespace baton_cli

#endif
