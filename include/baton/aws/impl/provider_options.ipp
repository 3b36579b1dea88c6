// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_PROVIDER_OPTIONS_IPP
#define BATON_AWS_IMPL_PROVIDER_OPTIONS_IPP

// Layer: wire (aws), internal. The compiled part of aws/provider_options.hpp: the options' rules
// and the ISO 8601 times of credential endpoints.
#include <baton/aws/provider_options.hpp>

namespace baton::aws {

BATON_DECL void provider_options::validate() const {
    if (mandatory_refresh < std::chrono::seconds::zero())
        throw config_error("provider_options::mandatory_refresh must not be negative");
    if (advisory_refresh < mandatory_refresh)
        throw config_error("provider_options::advisory_refresh must be at least mandatory_refresh");
    // Upper bounds keep expiration arithmetic (system_clock, nanoseconds) far from overflow.
    if (advisory_refresh > std::chrono::hours(24 * 7))
        throw config_error("provider_options::advisory_refresh must be at most 7 days");
    if (min_refresh_interval < std::chrono::seconds::zero() || min_refresh_interval > std::chrono::hours(24))
        throw config_error("provider_options::min_refresh_interval must be from 0 to 1 day");
    if (metadata_timeout <= std::chrono::milliseconds::zero() || metadata_timeout > std::chrono::hours(1))
        throw config_error("provider_options::metadata_timeout must be positive and at most 1 hour");
    if (container_timeout <= std::chrono::milliseconds::zero() || container_timeout > std::chrono::hours(1))
        throw config_error("provider_options::container_timeout must be positive and at most 1 hour");
    if (imds_token_ttl_seconds < 1 || imds_token_ttl_seconds > 21600)
        throw config_error("provider_options::imds_token_ttl_seconds must be from 1 to 21600");
    if (web_identity_duration != std::chrono::seconds::zero() &&
        (web_identity_duration < std::chrono::seconds(900) || web_identity_duration > std::chrono::seconds(43200)))
        throw config_error("provider_options::web_identity_duration must be 0 or from 900 to 43200 seconds");
    if (max_response_bytes < 1024)
        throw config_error("provider_options::max_response_bytes must be at least 1024");
    if (max_token_file_bytes < 1)
        throw config_error("provider_options::max_token_file_bytes must be positive");
    if (process_timeout < std::chrono::milliseconds(1) || process_timeout > std::chrono::hours(1))
        throw config_error("provider_options::process_timeout must be from 1 ms to 1 hour");
    if (!region.empty() && !is_valid_region_name(region))
        throw config_error("provider_options::region is not a region name (lower-case letters, digits and '-')");
    sts_http.validate();
}

BATON_DECL std::optional<std::chrono::system_clock::time_point> parse_iso8601(std::string_view text) noexcept {
    namespace chr = std::chrono; // qualified: an includer's global `seconds` must not change them
    auto digits = [&](std::size_t pos, std::size_t n, int& out) {
        if (pos + n > text.size()) return false;
        out = 0;
        for (std::size_t i = pos; i < pos + n; ++i) {
            if (text[i] < '0' || text[i] > '9') return false;
            out = out * 10 + (text[i] - '0');
        }
        return true;
    };
    int y = 0, mo = 0, d = 0, hh = 0, mm = 0, ss = 0;
    if (text.size() < 20 || !digits(0, 4, y) || text[4] != '-' || !digits(5, 2, mo) || text[7] != '-' ||
        !digits(8, 2, d) || (text[10] != 'T' && text[10] != 't') || !digits(11, 2, hh) || text[13] != ':' ||
        !digits(14, 2, mm) || text[16] != ':' || !digits(17, 2, ss))
        return std::nullopt;
    if (y < 1970 || y > 2200 || hh > 23 || mm > 59 || ss > 60) return std::nullopt;
    chr::year_month_day const ymd{chr::year{y}, chr::month{static_cast<unsigned>(mo)}, chr::day{static_cast<unsigned>(d)}};
    if (!ymd.ok()) return std::nullopt;
    std::size_t pos = 19;
    chr::nanoseconds frac{0};
    if (pos < text.size() && text[pos] == '.') {
        ++pos;
        std::size_t const start = pos;
        long long scale = 100000000;
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
            frac += chr::nanoseconds((text[pos] - '0') * scale);
            scale /= 10;
            ++pos;
        }
        if (pos == start || pos - start > 12) return std::nullopt;
    }
    if (pos >= text.size()) return std::nullopt; // a zone is required: local time would be a guess
    chr::minutes offset{0};
    if (text[pos] == 'Z' || text[pos] == 'z') {
        ++pos;
    } else if (text[pos] == '+' || text[pos] == '-') {
        int const sign = text[pos] == '-' ? -1 : 1;
        int oh = 0, om = 0;
        if (!digits(pos + 1, 2, oh)) return std::nullopt;
        pos += 3;
        if (pos < text.size() && text[pos] == ':') ++pos;
        if (!digits(pos, 2, om)) return std::nullopt;
        pos += 2;
        if (oh > 23 || om > 59) return std::nullopt;
        offset = chr::minutes(sign * (oh * 60 + om));
    } else {
        return std::nullopt;
    }
    if (pos != text.size()) return std::nullopt;
    auto const t = chr::sys_days{ymd} + chr::hours{hh} + chr::minutes{mm} + chr::seconds{ss} + frac - offset;
    return chr::time_point_cast<chr::system_clock::duration>(t);
}

} // namespace baton::aws

#endif
