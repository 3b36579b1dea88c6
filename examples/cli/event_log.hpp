// Part of the baton command-line tool (examples/cli/main.cpp). What `run`, `table work` and `watch` say about
// events on stderr: a line of text, or with --log-format json one JSON object per event, for log pipelines.
#ifndef BATON_CLI_EVENT_LOG_HPP
#define BATON_CLI_EVENT_LOG_HPP

#include "common.hpp"

#include <ctime>

namespace baton_cli {

// The wall-clock time as ISO 8601 UTC with milliseconds: when a log pipeline should say it happened.
inline std::string utc_now_iso() {
    auto const now = std::chrono::system_clock::now();
    auto const secs = std::chrono::system_clock::to_time_t(now);
    auto const ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char buf[64]; // room for any int the fields could hold: GCC checks the worst case
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
    return buf;
}

// One event: `fields` with "event" and "at" added as one JSON line, or `text` as a `baton: ` line
// (nothing when `text` is empty: events that only log pipelines want).
inline void log_event(char const* event, boost::json::object fields, std::string const& text) {
    if (json_log) {
        fields["event"] = event;
        fields["at"] = utc_now_iso();
        std::string line = boost::json::serialize(fields);
        line += '\n';
        std::fwrite(line.data(), 1, line.size(), stderr); // one write: lines stay whole
        return;
    }
    if (!text.empty()) std::fprintf(stderr, "baton: %s\n", text.c_str());
}

} // namespace baton_cli

#endif
