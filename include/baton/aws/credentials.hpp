// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_CREDENTIALS_HPP
#define BATON_AWS_CREDENTIALS_HPP

/** @file
    Where AWS credentials come from, and how they are kept fresh.

    A `credentials_provider` is a handle to one source (or to the default
    chain of sources) and a cache in front of it:

    - Sources: static keys, the environment (`AWS_ACCESS_KEY_ID`, ...),
      the shared profile files (static keys, or `role_arn` with
      `web_identity_token_file`), web identity (`AWS_WEB_IDENTITY_TOKEN_FILE`
      and `AWS_ROLE_ARN` through STS `AssumeRoleWithWebIdentity`), the
      container endpoint (ECS, EKS Pod Identity) and EC2 instance metadata
      (IMDSv2, falling back to IMDSv1 where allowed).
    - `default_chain` tries them in the SDKs' order: environment, web
      identity, profile, container, instance metadata. Keys in the
      environment win even when `AWS_PROFILE` names a profile, as in
      botocore (only a profile chosen in code skips them), so credentials
      exported by `aws configure export-credentials` work under any profile.
      A source that is not configured passes to the next; a source that
      is configured but fails stops the chain with its error (a silent
      fall-through to another identity would be worse); instance metadata
      is probed last and any failure there counts as "not available". The
      chain remembers the source that worked and asks only it afterwards
      (it searches again only if that source stops being configured).
    - Refresh, as botocore does it: temporary credentials are refreshed in
      the background once fewer than `provider_options::advisory_refresh`
      (15 min) remain, one refresh at a time, while everyone keeps using
      the current ones; callers wait only when there are none or fewer
      than `mandatory_refresh` (10 min) remain. A refresh that fails while
      the current credentials have not yet expired keeps them in use
      (with a note in the diagnostics) and is tried again after
      `min_refresh_interval`, so a lease renewal never fails just because
      a metadata endpoint hiccuped. Refresh is triggered by use: no timer
      keeps the `io_context` alive.

    Secrets (secret keys, session tokens, web identity tokens, container
    authorization tokens, IMDS tokens) never appear in any message.
*/

#include <baton/aws/endpoint.hpp>
#include <baton/aws/profile.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/detail/config.hpp>
#include <baton/detail/s3_xml.hpp>
#include <baton/error.hpp>
#include <baton/http/client.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace baton::aws {

/** How providers fetch and refresh. Defaults follow botocore and the AWS SDKs.

    Validated when a provider is made (`validate()`); every field has a
    documented default, so `{}` is always fine.
*/
struct provider_options {
    /// Refresh in the background when fewer than this remain before expiration. Default 15 min; at most 7 days.
    std::chrono::seconds advisory_refresh{15 * 60};
    /// Make callers wait for a refresh when fewer than this remain. Default 10 min; at most `advisory_refresh`.
    std::chrono::seconds mandatory_refresh{10 * 60};
    /** Least time between two refreshes started because of the windows (not by `invalidate()`). Default 10 s; at most 1 day.

        Bounds the load on a failing source, and on one that hands out
        credentials already inside the windows (IMDS may do so for a few
        minutes before it rotates them).
    */
    std::chrono::seconds min_refresh_interval{10};
    /// The wall clock used for expiration windows; empty (default) is `system_clock::now`. Tests move time with it.
    std::function<std::chrono::system_clock::time_point()> now;
    /// Timeout of each EC2 instance metadata request, connect included. Default 1 s (it is probed last); at most 1 hour.
    std::chrono::milliseconds metadata_timeout{1000};
    /// Timeout of the container credentials request, connect included. Default 2 s; at most 1 hour.
    std::chrono::milliseconds container_timeout{2000};
    /// Lifetime requested for IMDSv2 session tokens, 1 to 21600 seconds. Default 21600 (6 h).
    unsigned imds_token_ttl_seconds = 21600;
    /// `DurationSeconds` for `AssumeRoleWithWebIdentity` (900 to 43200), or 0 (default) for the role's default.
    std::chrono::seconds web_identity_duration{0};
    /** HTTP options for STS requests (timeouts, `ca_file`, ...).

        `max_response_body_bytes` is further capped at `max_response_bytes`.
    */
    http::client_options sts_http;
    /// Largest credentials response accepted from any endpoint. Default 64 KiB (real ones are under 4 KiB).
    std::size_t max_response_bytes = 64u * 1024u;
    /// Largest web identity or container authorization token file accepted. Default 64 KiB.
    std::size_t max_token_file_bytes = 64u * 1024u;

    /// The time per `now`, or the system clock.
    std::chrono::system_clock::time_point current_time() const {
        return now ? now() : std::chrono::system_clock::now();
    }

    /// Checks the rules above. @throws config_error naming the field that breaks one.
    void validate() const {
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
        sts_http.validate();
    }
};

/// What `credentials_provider::async_get` delivers.
struct fetched_credentials {
    /// The credentials, or null on error. Shared and immutable: cheap to keep per request.
    std::shared_ptr<credentials const> value;
    /** On error, what was tried and why it failed (the message names the source and the fix).

        On success usually empty; after a failed refresh that kept the
        current credentials in use, the message says so and why.
    */
    diagnostics diag;
    /// The source that produced `value`, e.g. `environment` or `profile 'dev'`; empty on error.
    std::string source;
};

/** Parses an ISO 8601 / RFC 3339 time as the credential endpoints send it.

    Accepts `YYYY-MM-DDTHH:MM:SS`, optional fraction, and `Z` or an offset
    (`+HH:MM`, `+HHMM`); years 1970 to 2200.
    @returns the instant, or nothing when `text` is not of that form.
*/
inline std::optional<std::chrono::system_clock::time_point> parse_iso8601(std::string_view text) noexcept {
    using namespace std::chrono;
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
    year_month_day const ymd{year{y}, month{static_cast<unsigned>(mo)}, day{static_cast<unsigned>(d)}};
    if (!ymd.ok()) return std::nullopt;
    std::size_t pos = 19;
    nanoseconds frac{0};
    if (pos < text.size() && text[pos] == '.') {
        ++pos;
        std::size_t const start = pos;
        long long scale = 100000000;
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
            frac += nanoseconds((text[pos] - '0') * scale);
            scale /= 10;
            ++pos;
        }
        if (pos == start || pos - start > 12) return std::nullopt;
    }
    if (pos >= text.size()) return std::nullopt; // a zone is required: local time would be a guess
    minutes offset{0};
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
        offset = minutes(sign * (oh * 60 + om));
    } else {
        return std::nullopt;
    }
    if (pos != text.size()) return std::nullopt;
    auto const t = sys_days{ymd} + hours{hh} + minutes{mm} + seconds{ss} + frac - offset;
    return time_point_cast<system_clock::duration>(t);
}

#ifndef BATON_DOXYGEN
namespace detail {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

// What a source produced. Absent: not configured here, the chain goes on. Failed: configured but broken, it stops.
struct source_outcome {
    enum class kind { found, absent, failed };
    kind what = kind::failed;
    error_code ec;                             // failed
    std::shared_ptr<credentials const> creds;  // found
    std::string label;                         // which source, e.g. `environment`, `profile 'dev'`
    std::string reason;                        // absent / failed: why, without the label
    diagnostics diag;                          // failed: HTTP status, service code, request id

    std::string tried_entry() const { return label.empty() ? reason : label + " (" + reason + ")"; }
};

inline source_outcome found_outcome(std::string label, credentials c) {
    source_outcome o;
    o.what = source_outcome::kind::found;
    o.creds = std::make_shared<credentials const>(std::move(c));
    o.label = std::move(label);
    return o;
}
inline source_outcome absent_outcome(std::string label, std::string reason) {
    source_outcome o;
    o.what = source_outcome::kind::absent;
    o.label = std::move(label);
    o.reason = std::move(reason);
    return o;
}
inline source_outcome failed_outcome(std::string label, error_code ec, std::string reason, diagnostics d = {}) {
    source_outcome o;
    o.what = source_outcome::kind::failed;
    o.ec = ec;
    o.label = std::move(label);
    o.reason = std::move(reason);
    o.diag = std::move(d);
    return o;
}

using source_callback = asio::any_completion_handler<void(source_outcome)>;

// One place credentials come from. fetch() runs on the provider's strand and calls `done` exactly once,
// possibly before it returns; the provider never runs two fetches of one source at once.
class credentials_source {
public:
    explicit credentials_source(std::string name) : name_(std::move(name)) {}
    virtual ~credentials_source() = default;
    credentials_source(credentials_source const&) = delete;
    credentials_source& operator=(credentials_source const&) = delete;

    std::string const& name() const noexcept { return name_; }
    virtual void fetch(source_callback done) = 0;

private:
    std::string name_;
};

// Why a credential value cannot be used, or nothing. Values are never echoed: they may be secret.
inline std::optional<std::string> credentials_problem(credentials const& c) {
    auto bad_chars = [](std::string const& s) {
        return std::any_of(s.begin(), s.end(), [](char ch) {
            auto const u = static_cast<unsigned char>(ch);
            return u <= 0x20 || u == 0x7f;
        });
    };
    if (c.access_key_id.empty()) return "the access key id is empty";
    if (c.secret_access_key.empty()) return "the secret access key is empty";
    if (bad_chars(c.access_key_id)) return "the access key id contains white space or control characters";
    if (bad_chars(c.secret_access_key))
        return "the secret access key contains white space or control characters (is a line indented by mistake?)";
    if (bad_chars(c.session_token))
        return "the session token contains white space or control characters (is a line indented by mistake?)";
    return std::nullopt;
}

inline bool env_true(env_lookup const& env, char const* name) {
    auto v = env(name);
    if (!v) return false;
    std::string s = *v;
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return s == "true";
}

inline std::optional<std::string> env_value(env_lookup const& env, char const* name) {
    auto v = env(name);
    if (!v || v->empty()) return std::nullopt;
    return v;
}

// Removes every occurrence of `secret` from text that may echo it (service messages).
inline std::string scrub(std::string text, std::string_view secret) {
    if (secret.size() < 4) return text;
    for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 3))
        text.replace(at, secret.size(), "***");
    return text;
}

// A header value must be one line of visible characters; a token that is not would split the request.
inline bool header_safe(std::string_view v) {
    return !v.empty() && std::none_of(v.begin(), v.end(), [](char ch) {
        auto const u = static_cast<unsigned char>(ch);
        return (u < 0x20 && ch != '\t') || u == 0x7f;
    });
}

inline std::string_view trim_token(std::string_view s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
        s.remove_prefix(1);
    return s;
}

// A URL split into what the HTTP client pools on and the request target (path and query).
struct url_target {
    http::endpoint ep;
    std::string target; // starts with '/'
};

// Parses `scheme://host[:port][/path][?query]`. Messages never repeat the URL, which might carry a secret.
inline boost::system::result<url_target> split_url(std::string_view url, std::string& problem) {
    auto parsed = boost::urls::parse_uri(url);
    if (!parsed) {
        problem = "not a valid URL (" + parsed.error().message() + ")";
        return error_code(errc::invalid_argument);
    }
    auto const& u = *parsed;
    if (!u.has_authority()) {
        problem = "it has no host";
        return error_code(errc::invalid_argument);
    }
    std::string origin(u.scheme());
    origin += "://";
    origin += u.encoded_authority();
    diagnostics d;
    auto ep = http::parse_endpoint(origin, d);
    if (!ep) {
        problem = d.message;
        return ep.error();
    }
    if (u.has_fragment()) {
        problem = "it must not have a fragment";
        return error_code(errc::invalid_argument);
    }
    url_target out{*ep, std::string(u.encoded_path())};
    if (out.target.empty() || out.target.front() != '/') out.target.insert(out.target.begin(), '/');
    if (u.has_query()) {
        out.target += '?';
        out.target += u.encoded_query();
    }
    return out;
}

// Joins a base target (`/` or `/prefix/`) and an absolute path.
inline std::string join_target(std::string const& base, std::string_view path) {
    std::string out = base;
    auto const q = out.find('?');
    if (q != std::string::npos) out.resize(q);
    while (!out.empty() && out.back() == '/') out.pop_back();
    out += path;
    return out;
}

inline std::string describe_transport_failure(std::string const& what, http::request_info const& info,
                                              error_code ec) {
    return what + ": " + (info.diag.message.empty() ? ec.message() : info.diag.message);
}

// The four fields of a credentials JSON document (container endpoint, IMDS). On failure: `invalid_response`
// (or `auth_failed` for an IMDS `Code` other than `Success`) and a reason naming the field.
inline error_code parse_json_credentials(std::string_view body, credentials& out, std::string& reason,
                                         diagnostics& diag) {
    boost::system::error_code jec;
    boost::json::value const v = boost::json::parse(body, jec);
    if (jec) {
        reason = "the response is not valid JSON (" + jec.message() + ")";
        return errc::invalid_response;
    }
    auto const* obj = v.if_object();
    if (obj == nullptr) {
        reason = "the response is not a JSON object";
        return errc::invalid_response;
    }
    auto field = [&](char const* name) -> std::optional<std::string> {
        auto const* f = obj->if_contains(name);
        if (f == nullptr || !f->is_string()) return std::nullopt;
        return std::string(f->as_string());
    };
    if (auto const* code = obj->if_contains("Code")) {
        if (!code->is_string()) {
            reason = "the response's 'Code' is not a string";
            return errc::invalid_response;
        }
        if (code->as_string() != "Success") {
            diag.service_code = printable(std::string_view(code->as_string()));
            auto const msg = field("Message");
            reason = "the endpoint answered with Code '" + diag.service_code + "'" +
                     (msg ? ": " + printable(*msg, 200) : std::string());
            return errc::auth_failed;
        }
    }
    for (char const* name : {"AccessKeyId", "SecretAccessKey", "Token", "Expiration"}) {
        auto const value = field(name);
        if (!value || value->empty()) {
            reason = std::string("the response has no '") + name + "' string";
            return errc::invalid_response;
        }
    }
    out.access_key_id = *field("AccessKeyId");
    out.secret_access_key = *field("SecretAccessKey");
    out.session_token = *field("Token");
    auto const expiration = *field("Expiration");
    out.expiration = parse_iso8601(expiration);
    if (!out.expiration) {
        reason = "the response's 'Expiration' ('" + printable(expiration, 40) + "') is not an ISO 8601 time";
        return errc::invalid_response;
    }
    if (auto p = credentials_problem(out)) {
        reason = "the response's credentials are unusable: " + *p;
        return errc::invalid_response;
    }
    return {};
}

// The error classes of a credentials endpoint's non-200 status.
inline error_code status_error(unsigned status) {
    if (status == 401 || status == 403) return errc::auth_failed;
    if (status == 429) return errc::throttled;
    if (status >= 500) return errc::service_unavailable;
    return errc::invalid_response;
}

// ---- static and environment --------------------------------------------------------------

class static_source final : public credentials_source {
public:
    explicit static_source(credentials c) : credentials_source("static"), creds_(std::move(c)) {}
    void fetch(source_callback done) override { std::move(done)(found_outcome(name(), creds_)); }

private:
    credentials creds_;
};

class environment_source final : public credentials_source {
public:
    environment_source(env_lookup env, bool skip_when_profile_chosen)
        : credentials_source("environment"), env_(std::move(env)), skip_(skip_when_profile_chosen) {}

    void fetch(source_callback done) override { std::move(done)(read()); }

private:
    env_lookup env_;
    bool skip_;

    source_outcome read() const {
        if (skip_) {
            auto const choice = choose_profile(env_);
            if (choice.is_explicit()) return absent_outcome(name(), "skipped: " + choice.chosen_by + " is set");
        }
        auto const id = env_value(env_, "AWS_ACCESS_KEY_ID");
        auto const secret = env_value(env_, "AWS_SECRET_ACCESS_KEY");
        if (!id)
            return absent_outcome(name(), secret ? "AWS_ACCESS_KEY_ID not set, though AWS_SECRET_ACCESS_KEY is"
                                                 : "AWS_ACCESS_KEY_ID not set");
        if (!secret)
            return failed_outcome(name(), errc::no_credentials,
                                  "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not; set both, or neither");
        credentials c;
        c.access_key_id = *id;
        c.secret_access_key = *secret;
        if (auto t = env_value(env_, "AWS_SESSION_TOKEN"))
            c.session_token = *t;
        else if (auto legacy = env_value(env_, "AWS_SECURITY_TOKEN"))
            c.session_token = *legacy;
        if (auto e = env_value(env_, "AWS_CREDENTIAL_EXPIRATION")) {
            c.expiration = parse_iso8601(*e);
            if (!c.expiration)
                return failed_outcome(name(), errc::no_credentials,
                                      "AWS_CREDENTIAL_EXPIRATION ('" + printable(*e, 40) +
                                          "') is not an ISO 8601 time such as 2026-01-31T12:00:00Z");
        }
        if (auto p = credentials_problem(c)) return failed_outcome(name(), errc::no_credentials, "unusable: " + *p);
        return found_outcome(name(), std::move(c));
    }
};

// ---- STS AssumeRoleWithWebIdentity ---------------------------------------------------------

struct web_identity_settings {
    std::string role_arn;
    std::string token_file;
    std::string session_name;             // may be empty: one is generated
    std::optional<std::string> region;    // for the STS endpoint
    std::string configured_by;            // `AWS_WEB_IDENTITY_TOKEN_FILE` or `profile 'x' (file line N)`
};

// The STS endpoint: AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL (the same rules as every other service, see
// resolve_endpoint_url), else the regional AWS one, else the global one.
inline boost::system::result<url_target> sts_target(env_lookup const& env, std::optional<std::string> const& region,
                                                    std::string& problem) {
    diagnostics d;
    auto configured = resolve_endpoint_url("STS", d, env);
    if (!configured) {
        problem = d.message;
        return configured.error();
    }
    std::string url = "https://sts.amazonaws.com";
    if (*configured) {
        url = (*configured)->url;
    } else if (region) {
        if (!is_valid_region_name(*region)) {
            problem = "the region '" + printable(*region) + "' is not a region name";
            return error_code(errc::invalid_argument);
        }
        url = default_endpoint_url("sts", *region);
    }
    return split_url(url, problem);
}

inline error_code sts_error_code(std::string_view code, unsigned status) {
    if (code == "Throttling" || code == "ThrottlingException" || code == "RequestLimitExceeded") return errc::throttled;
    if (code == "IDPCommunicationError" || code == "ServiceUnavailable" || code == "InternalFailure" || status >= 500)
        return errc::service_unavailable;
    if (code == "ValidationError" || code == "MalformedPolicyDocument" || code == "PackedPolicyTooLarge")
        return errc::invalid_argument;
    return errc::auth_failed; // InvalidIdentityToken, ExpiredTokenException, AccessDenied, IDPRejectedClaim, ...
}

class web_identity_op : public std::enable_shared_from_this<web_identity_op> {
public:
    web_identity_op(http::client client, provider_options const& opts, env_lookup env, std::string label,
                    web_identity_settings s, source_callback done)
        : client_(std::move(client)), opts_(opts), env_(std::move(env)), label_(std::move(label)),
          s_(std::move(s)), done_(std::move(done)) {}

    void start() {
        std::string problem;
        auto t = sts_target(env_, s_.region, problem);
        if (!t) return fail(t.error(), "cannot build the STS endpoint: " + problem);
        target_ = std::move(*t);

        std::string token, why;
        switch (read_small_file(s_.token_file, opts_.max_token_file_bytes, token, why)) {
        case file_read::missing:
            return fail(errc::no_credentials, "the web identity token file '" + printable(s_.token_file, 200) +
                                                  "' (" + s_.configured_by + ") does not exist");
        case file_read::failed:
            return fail(errc::no_credentials, "cannot read the web identity token file '" +
                                                  printable(s_.token_file, 200) + "': " + why);
        case file_read::ok: break;
        }
        token_ = std::string(trim_token(token));
        if (token_.empty())
            return fail(errc::no_credentials,
                        "the web identity token file '" + printable(s_.token_file, 200) + "' is empty");
        auto const session = !s_.session_name.empty()
                                 ? s_.session_name
                                 : "baton-session-" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                                         opts_.current_time().time_since_epoch())
                                                                         .count());
        auto enc = [](std::string_view v) { return boost::urls::encode(v, boost::urls::unreserved_chars); };
        std::string body = "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=" + enc(s_.role_arn) +
                           "&RoleSessionName=" + enc(session) + "&WebIdentityToken=" + enc(token_);
        if (opts_.web_identity_duration.count() != 0)
            body += "&DurationSeconds=" + std::to_string(opts_.web_identity_duration.count());
        http::request req{bhttp::verb::post, target_.target, 11};
        req.set(bhttp::field::host, target_.ep.host_header());
        req.set(bhttp::field::content_type, "application/x-www-form-urlencoded; charset=utf-8");
        req.set(bhttp::field::accept, "text/xml");
        req.body() = std::move(body);
        req.prepare_payload();
        client_.async_request(target_.ep, std::move(req), info_,
                              [self = shared_from_this()](error_code ec, http::response res) {
                                  self->on_response(ec, std::move(res));
                              });
    }

private:
    http::client client_;
    provider_options const& opts_;
    env_lookup env_;
    std::string label_;
    web_identity_settings s_;
    source_callback done_;
    url_target target_;
    std::string token_;
    http::request_info info_;

    std::string where() const { return "STS AssumeRoleWithWebIdentity at " + target_.ep.origin(); }

    void fail(error_code ec, std::string reason, diagnostics d = {}) {
        std::move(done_)(failed_outcome(label_, ec, scrub(std::move(reason), token_), std::move(d)));
    }

    void on_response(error_code ec, http::response res) {
        if (ec) return fail(ec, describe_transport_failure(where(), info_, ec));
        diagnostics d;
        d.http_status = res.result_int();
        if (auto rid = res.find("x-amzn-RequestId"); rid != res.end()) d.request_id = printable(rid->value(), 80);
        baton::detail::s3_xml::element root;
        diagnostics xml_diag;
        auto const xml_ec = baton::detail::s3_xml::parse_xml(res.body(), root, xml_diag);
        if (res.result_int() != 200 || (!xml_ec && root.local_name() == "ErrorResponse")) {
            std::string code, message;
            if (!xml_ec) {
                if (auto const* e = root.child("Error")) {
                    code = printable(e->child_text("Code"), 80);
                    message = printable(e->child_text("Message"), 300);
                }
                if (d.request_id.empty()) d.request_id = printable(root.child_text("RequestId"), 80);
            }
            d.service_code = code;
            auto const reason = where() + " refused: HTTP " + std::to_string(d.http_status) +
                                (code.empty() ? std::string() : " " + code) +
                                (message.empty() ? std::string() : ": " + message) + hint(code);
            auto const ec = sts_error_code(code, d.http_status);
            return fail(ec, reason, std::move(d));
        }
        if (xml_ec) return fail(errc::invalid_response, where() + ": " + xml_diag.message, std::move(d));
        if (root.local_name() != "AssumeRoleWithWebIdentityResponse")
            return fail(errc::invalid_response,
                        where() + ": unexpected root element '" + printable(root.local_name()) + "'", std::move(d));
        auto const* result = root.child("AssumeRoleWithWebIdentityResult");
        auto const* creds = result != nullptr ? result->child("Credentials") : nullptr;
        if (creds == nullptr)
            return fail(errc::invalid_response,
                        where() + ": the response has no AssumeRoleWithWebIdentityResult/Credentials", std::move(d));
        credentials c;
        for (char const* name : {"AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration"}) {
            if (creds->child(name) == nullptr || creds->child_text(name).empty())
                return fail(errc::invalid_response, where() + ": the response has no Credentials/" + name,
                            std::move(d));
        }
        c.access_key_id = trim_token(creds->child_text("AccessKeyId"));
        c.secret_access_key = trim_token(creds->child_text("SecretAccessKey"));
        c.session_token = trim_token(creds->child_text("SessionToken"));
        auto const exp = trim_token(creds->child_text("Expiration"));
        c.expiration = parse_iso8601(exp);
        if (!c.expiration)
            return fail(errc::invalid_response,
                        where() + ": Credentials/Expiration ('" + printable(exp, 40) + "') is not an ISO 8601 time",
                        std::move(d));
        if (auto p = credentials_problem(c))
            return fail(errc::invalid_response, where() + ": unusable credentials: " + *p, std::move(d));
        std::move(done_)(found_outcome(label_, std::move(c)));
    }

    std::string hint(std::string const& code) const {
        if (code == "InvalidIdentityToken" || code == "ExpiredTokenException")
            return " (check the token file " + s_.configured_by + " and the role's OIDC provider)";
        if (code == "AccessDenied") return " (check the role's trust policy for this identity provider)";
        return {};
    }
};

class web_identity_source final : public credentials_source {
public:
    web_identity_source(env_lookup env, provider_options const& opts, http::client sts)
        : credentials_source("web identity"), env_(std::move(env)), opts_(opts), sts_(std::move(sts)) {}

    void fetch(source_callback done) override {
        auto const file = env_value(env_, "AWS_WEB_IDENTITY_TOKEN_FILE");
        if (!file) return std::move(done)(absent_outcome(name(), "AWS_WEB_IDENTITY_TOKEN_FILE not set"));
        auto const role = env_value(env_, "AWS_ROLE_ARN");
        if (!role)
            return std::move(done)(
                absent_outcome(name(), "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not"));
        web_identity_settings s;
        s.role_arn = *role;
        s.token_file = *file;
        s.session_name = env_value(env_, "AWS_ROLE_SESSION_NAME").value_or(std::string());
        s.configured_by = "AWS_WEB_IDENTITY_TOKEN_FILE";
        // Only the variables: reading the shared files here could fail this source for an unrelated typo.
        s.region = env_value(env_, "AWS_REGION");
        if (!s.region) s.region = env_value(env_, "AWS_DEFAULT_REGION");
        std::make_shared<web_identity_op>(sts_, opts_, env_, name(), std::move(s), std::move(done))->start();
    }

private:
    env_lookup env_;
    provider_options const& opts_;
    http::client sts_;
};

// ---- shared profile files ------------------------------------------------------------------

inline std::string expand_home(std::string path, env_lookup const& env) {
    if (path == "~" || path.rfind("~/", 0) == 0) {
        if (auto home = env_value(env, "HOME")) return *home + path.substr(1);
    }
    return path;
}

class profile_source final : public credentials_source {
public:
    profile_source(std::string fixed_profile, env_lookup env, provider_options const& opts, http::client sts)
        : credentials_source("profile"), fixed_(std::move(fixed_profile)), env_(std::move(env)), opts_(opts),
          sts_(std::move(sts)) {}

    void fetch(source_callback done) override {
        profile_choice const choice = fixed_.empty() ? choose_profile(env_) : profile_choice{fixed_, "the caller"};
        std::string const label = "profile '" + printable(choice.name) + "'";
        shared_config files;
        diagnostics d;
        if (auto ec = load_shared_config(files, d, env_))
            return std::move(done)(failed_outcome(label, ec, d.message));
        auto const* p = files.find(choice.name);
        if (p == nullptr) {
            if (choice.is_explicit())
                return std::move(done)(failed_outcome(
                    label, errc::no_credentials,
                    (fixed_.empty() ? choice.chosen_by + " names it, but it" : std::string("it")) +
                        " is not in the shared files (" + files.describe_files() + "); check the name" +
                        (fixed_.empty() ? " or unset " + choice.chosen_by : std::string())));
            return std::move(done)(absent_outcome(label, files.describe_files()));
        }
        auto unsupported = [&](std::string what) {
            return failed_outcome(label, errc::no_credentials,
                                  "uses " + what + ", which baton does not support; put its credentials in the "
                                  "environment (eval \"$(aws configure export-credentials --profile " +
                                      printable(choice.name) + " --format env)\") or use static keys");
        };
        auto where = [&](char const* key) { return p->find(key)->where(); };
        auto const role_arn = p->get("role_arn");
        auto const token_file = p->get("web_identity_token_file");
        if (role_arn && token_file) {
            web_identity_settings s;
            s.role_arn = *role_arn;
            s.token_file = expand_home(*token_file, env_);
            s.session_name = p->get("role_session_name").value_or(std::string());
            s.configured_by = label + " (" + where("web_identity_token_file") + ")";
            s.region = env_value(env_, "AWS_REGION");
            if (!s.region) s.region = env_value(env_, "AWS_DEFAULT_REGION");
            if (!s.region) s.region = p->get("region");
            std::make_shared<web_identity_op>(sts_, opts_, env_, label, std::move(s), std::move(done))->start();
            return;
        }
        if (role_arn) {
            std::string const via = p->get("source_profile")      ? "source_profile"
                                    : p->get("credential_source") ? "credential_source"
                                                                  : "no source";
            return std::move(done)(unsupported("role_arn with " + via + " (" + where("role_arn") + ")"));
        }
        if (p->get("sso_session") || p->get("sso_start_url"))
            return std::move(done)(unsupported("IAM Identity Center (sso_* settings)"));
        for (char const* key : {"aws_access_key_id", "aws_secret_access_key", "aws_session_token"}) {
            // configparser semantics: an indented line continues the value above it. Here that is a typo.
            if (auto v = p->get(key); v && v->find('\n') != std::string::npos)
                return std::move(done)(failed_outcome(
                    label, errc::no_credentials,
                    std::string(key) + " (" + where(key) +
                        ") continues on the next line because that line is indented; remove the indentation"));
        }
        auto const id = p->get("aws_access_key_id");
        auto const secret = p->get("aws_secret_access_key");
        if (id || secret) {
            if (!id || !secret)
                return std::move(done)(failed_outcome(
                    label, errc::no_credentials,
                    std::string("sets ") + (id ? "aws_access_key_id (" + where("aws_access_key_id") + ")"
                                               : "aws_secret_access_key (" + where("aws_secret_access_key") + ")") +
                        " but not " + (id ? "aws_secret_access_key" : "aws_access_key_id") + "; set both"));
            credentials c;
            c.access_key_id = *id;
            c.secret_access_key = *secret;
            if (auto t = p->get("aws_session_token"))
                c.session_token = *t;
            else if (auto legacy = p->get("aws_security_token"))
                c.session_token = *legacy;
            if (auto problem = credentials_problem(c))
                return std::move(done)(failed_outcome(label, errc::no_credentials,
                                                      "keys (" + where("aws_access_key_id") + "): " + *problem));
            return std::move(done)(found_outcome(label, std::move(c)));
        }
        if (p->get("credential_process"))
            return std::move(done)(unsupported("credential_process (" + where("credential_process") + ")"));
        return std::move(done)(absent_outcome(label, "has no aws_access_key_id, role_arn or other credentials"));
    }

private:
    std::string fixed_;
    env_lookup env_;
    provider_options const& opts_;
    http::client sts_;
};

// ---- container endpoint (ECS, EKS Pod Identity) ----------------------------------------------

// Over plain HTTP only link-local container agents and this host may serve credentials.
inline bool container_host_allowed(http::endpoint const& ep) {
    if (ep.is_tls()) return true;
    if (ep.host == "localhost") return true;
    error_code ec;
    auto const a = asio::ip::make_address(ep.host, ec);
    if (ec) return false;
    if (a.is_loopback()) return true;
    if (a.is_v4()) {
        auto const s = a.to_string();
        return s == "169.254.170.2" || s == "169.254.170.23";
    }
    return a == asio::ip::make_address("fd00:ec2::23");
}

class container_op : public std::enable_shared_from_this<container_op> {
public:
    container_op(http::client client, provider_options const& opts, std::string label, source_callback done)
        : client_(std::move(client)), opts_(opts), label_(std::move(label)), done_(std::move(done)) {}

    void start(url_target target, std::string auth_token) {
        target_ = std::move(target);
        auth_ = std::move(auth_token);
        http::request req{bhttp::verb::get, target_.target, 11};
        req.set(bhttp::field::host, target_.ep.host_header());
        req.set(bhttp::field::accept, "application/json");
        if (!auth_.empty()) req.set(bhttp::field::authorization, auth_);
        http::request_options ro;
        ro.attempt_timeout = opts_.container_timeout;
        client_.async_request(target_.ep, std::move(req), ro, info_,
                              [self = shared_from_this()](error_code ec, http::response res) {
                                  self->on_response(ec, std::move(res));
                              });
    }

private:
    http::client client_;
    provider_options const& opts_;
    std::string label_;
    source_callback done_;
    url_target target_;
    std::string auth_;
    http::request_info info_;

    void fail(error_code ec, std::string reason, diagnostics d = {}) {
        std::move(done_)(failed_outcome(label_, ec, scrub(std::move(reason), auth_), std::move(d)));
    }

    void on_response(error_code ec, http::response res) {
        std::string const where = "GET " + target_.ep.origin();
        if (ec) return fail(ec, describe_transport_failure(where, info_, ec));
        diagnostics d;
        d.http_status = res.result_int();
        if (res.result_int() != 200) {
            std::string detail;
            boost::system::error_code jec;
            auto const v = boost::json::parse(res.body(), jec);
            if (!jec && v.is_object()) {
                for (char const* k : {"code", "Code"})
                    if (auto const* c = v.as_object().if_contains(k); c != nullptr && c->is_string())
                        d.service_code = printable(std::string_view(c->as_string()), 80);
                for (char const* k : {"message", "Message"})
                    if (auto const* m = v.as_object().if_contains(k); m != nullptr && m->is_string())
                        detail = printable(std::string_view(m->as_string()), 300);
            }
            auto const ec = status_error(d.http_status);
            auto reason = where + " answered HTTP " + std::to_string(d.http_status) +
                          (d.service_code.empty() ? std::string() : " " + d.service_code) +
                          (detail.empty() ? std::string() : ": " + detail) +
                          (d.http_status == 401 || d.http_status == 403
                               ? " (check AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE / AWS_CONTAINER_AUTHORIZATION_TOKEN)"
                               : std::string());
            return fail(ec, std::move(reason), std::move(d));
        }
        credentials c;
        std::string reason;
        if (auto pec = parse_json_credentials(res.body(), c, reason, d))
            return fail(pec, where + ": " + reason, std::move(d));
        std::move(done_)(found_outcome(label_, std::move(c)));
    }
};

class container_source final : public credentials_source {
public:
    container_source(env_lookup env, provider_options const& opts, http::client metadata)
        : credentials_source("container"), env_(std::move(env)), opts_(opts), client_(std::move(metadata)) {}

    void fetch(source_callback done) override {
        url_target target;
        if (auto rel = env_value(env_, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")) {
            if (rel->front() != '/' || !header_safe(*rel) || rel->find(' ') != std::string::npos)
                return std::move(done)(failed_outcome(
                    name(), errc::no_credentials,
                    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI must be a path starting with '/'"));
            target.ep = http::endpoint{http::scheme::http, "169.254.170.2", 80};
            target.target = *rel;
        } else if (auto full = env_value(env_, "AWS_CONTAINER_CREDENTIALS_FULL_URI")) {
            std::string why;
            auto t = split_url(*full, why);
            if (!t)
                return std::move(done)(
                    failed_outcome(name(), errc::no_credentials, "AWS_CONTAINER_CREDENTIALS_FULL_URI: " + why));
            if (!container_host_allowed(t->ep))
                return std::move(done)(failed_outcome(
                    name(), errc::no_credentials,
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI names host '" + printable(t->ep.host) +
                        "' over plain http; use https, or a loopback, 169.254.170.2, 169.254.170.23 or "
                        "fd00:ec2::23 address"));
            target = std::move(*t);
        } else {
            return std::move(done)(
                absent_outcome(name(), "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI not set"));
        }
        std::string token;
        if (auto file = env_value(env_, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")) {
            // Re-read on every fetch: EKS Pod Identity rotates the file.
            std::string why;
            switch (read_small_file(*file, opts_.max_token_file_bytes, token, why)) {
            case file_read::ok: break;
            case file_read::missing:
            case file_read::failed:
                return std::move(done)(failed_outcome(name(), errc::no_credentials,
                                                      "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE '" +
                                                          printable(*file, 200) + "': " + why));
            }
            token = std::string(trim_token(token));
            if (!header_safe(token))
                return std::move(done)(failed_outcome(
                    name(), errc::no_credentials,
                    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE holds an empty token or one with line breaks or "
                    "control characters"));
        } else if (auto t = env_value(env_, "AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
            token = *t;
            if (!header_safe(token))
                return std::move(done)(failed_outcome(
                    name(), errc::no_credentials,
                    "AWS_CONTAINER_AUTHORIZATION_TOKEN holds line breaks or control characters"));
        }
        std::make_shared<container_op>(client_, opts_, name(), std::move(done))->start(std::move(target), token);
    }

private:
    env_lookup env_;
    provider_options const& opts_;
    http::client client_;
};

// ---- EC2 instance metadata (IMDSv2, IMDSv1 fallback) -------------------------------------------

class imds_op : public std::enable_shared_from_this<imds_op> {
public:
    imds_op(http::client client, provider_options const& opts, std::string label, url_target base,
            bool v1_allowed, source_callback done)
        : client_(std::move(client)), opts_(opts), label_(std::move(label)), base_(std::move(base)),
          v1_allowed_(v1_allowed), done_(std::move(done)) {}

    void start() {
        http::request req{bhttp::verb::put, join_target(base_.target, "/latest/api/token"), 11};
        req.set("X-aws-ec2-metadata-token-ttl-seconds", std::to_string(opts_.imds_token_ttl_seconds));
        send(std::move(req), [](imds_op& self, error_code ec, http::response res) { self.on_token(ec, std::move(res)); });
    }

private:
    http::client client_;
    provider_options const& opts_;
    std::string label_;
    url_target base_;
    bool v1_allowed_;
    source_callback done_;
    std::optional<std::string> token_; // IMDSv2 session token; none: IMDSv1
    std::string role_;
    http::request_info info_;

    template <class Next>
    void send(http::request req, Next next) {
        req.set(bhttp::field::host, base_.ep.host_header());
        if (token_) req.set("X-aws-ec2-metadata-token", *token_);
        info_ = http::request_info{};
        http::request_options ro;
        ro.attempt_timeout = opts_.metadata_timeout;
        client_.async_request(base_.ep, std::move(req), ro, info_,
                              [self = shared_from_this(), next](error_code ec, http::response res) {
                                  next(*self, ec, std::move(res));
                              });
    }

    void fail(error_code ec, std::string reason, diagnostics d = {}) {
        if (token_) reason = scrub(std::move(reason), *token_);
        std::move(done_)(failed_outcome(label_, ec, std::move(reason), std::move(d)));
    }
    void absent(std::string reason) { std::move(done_)(absent_outcome(label_, std::move(reason))); }

    diagnostics status_diag(http::response const& res) const {
        diagnostics d;
        d.http_status = res.result_int();
        return d;
    }

    void on_token(error_code ec, http::response res) {
        if (ec) {
            // A PUT answered by nothing: an IMDSv2 hop limit of 1 drops the reply inside containers. botocore
            // then tries IMDSv1; a connect failure, in contrast, means there is no metadata service at all.
            if (ec == errc::timeout && info_.request_sent && v1_allowed_) return get_role();
            return fail(ec, describe_transport_failure("IMDSv2 token request", info_, ec) +
                                (ec == errc::timeout && info_.request_sent
                                     ? "; IMDSv1 is disabled by AWS_EC2_METADATA_V1_DISABLED"
                                     : std::string()));
        }
        auto const status = res.result_int();
        if (status == 200) {
            auto const t = trim_token(res.body());
            if (!header_safe(t) || t.size() > 4096)
                return fail(errc::invalid_response, "the IMDSv2 token response is empty, too long or not text",
                            status_diag(res));
            token_ = std::string(t);
            return get_role();
        }
        if (status == 403 || status == 404 || status == 405) {
            if (v1_allowed_) return get_role();
            return fail(errc::auth_failed, "the IMDSv2 token request was refused with HTTP " + std::to_string(status) +
                                               " and AWS_EC2_METADATA_V1_DISABLED forbids the IMDSv1 fallback",
                        status_diag(res));
        }
        if (status == 400)
            return fail(errc::invalid_argument,
                        "the IMDSv2 token request was refused with HTTP 400 (bad TTL header?); not falling back to "
                        "IMDSv1",
                        status_diag(res));
        return fail(status_error(status), "the IMDSv2 token request answered HTTP " + std::to_string(status),
                    status_diag(res));
    }

    void get_role() {
        http::request req{bhttp::verb::get, join_target(base_.target, "/latest/meta-data/iam/security-credentials/"),
                          11};
        send(std::move(req), [](imds_op& self, error_code ec, http::response res) { self.on_role(ec, std::move(res)); });
    }

    std::string version() const { return token_ ? "IMDSv2" : "IMDSv1"; }

    void on_role(error_code ec, http::response res) {
        if (ec) return fail(ec, describe_transport_failure(version() + " role name request", info_, ec));
        auto const status = res.result_int();
        if (status == 404) return absent("no IAM role is attached to this instance (HTTP 404 from " + version() + ")");
        if (status != 200)
            return fail(status == 401 ? errc::auth_failed : status_error(status),
                        version() + " role name request answered HTTP " + std::to_string(status), status_diag(res));
        std::string_view body = res.body();
        auto const nl = body.find_first_of("\r\n");
        auto const role = trim_token(body.substr(0, nl));
        if (role.empty() || role.size() > 256 || !header_safe(role))
            return fail(errc::invalid_response, version() + " role name response is empty, too long or not text",
                        status_diag(res));
        role_ = std::string(role);
        http::request req{bhttp::verb::get,
                          join_target(base_.target, "/latest/meta-data/iam/security-credentials/" +
                                                        boost::urls::encode(role_, boost::urls::unreserved_chars)),
                          11};
        send(std::move(req), [](imds_op& self, error_code ec, http::response res) { self.on_creds(ec, std::move(res)); });
    }

    void on_creds(error_code ec, http::response res) {
        std::string const what = version() + " credentials of role '" + printable(role_) + "'";
        if (ec) return fail(ec, describe_transport_failure(what, info_, ec));
        auto d = status_diag(res);
        if (res.result_int() != 200)
            return fail(res.result_int() == 401 ? errc::auth_failed : status_error(res.result_int()),
                        what + ": HTTP " + std::to_string(res.result_int()), std::move(d));
        credentials c;
        std::string reason;
        if (auto pec = parse_json_credentials(res.body(), c, reason, d)) return fail(pec, what + ": " + reason, d);
        std::move(done_)(found_outcome(label_, std::move(c)));
    }
};

class instance_metadata_source final : public credentials_source {
public:
    instance_metadata_source(env_lookup env, provider_options const& opts, http::client metadata)
        : credentials_source("instance metadata"), env_(std::move(env)), opts_(opts), client_(std::move(metadata)) {}

    void fetch(source_callback done) override {
        if (env_true(env_, "AWS_EC2_METADATA_DISABLED"))
            return std::move(done)(absent_outcome(name(), "AWS_EC2_METADATA_DISABLED is true"));
        url_target base;
        if (auto ep = env_value(env_, "AWS_EC2_METADATA_SERVICE_ENDPOINT")) {
            std::string why;
            auto t = split_url(*ep, why);
            if (!t)
                return std::move(done)(
                    failed_outcome(name(), errc::invalid_argument, "AWS_EC2_METADATA_SERVICE_ENDPOINT: " + why));
            base = std::move(*t);
        } else {
            auto mode = env_value(env_, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE").value_or("IPv4");
            for (char& c : mode)
                if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
            if (mode == "ipv6")
                base.ep = http::endpoint{http::scheme::http, "fd00:ec2::254", 80};
            else if (mode == "ipv4")
                base.ep = http::endpoint{http::scheme::http, "169.254.169.254", 80};
            else
                return std::move(done)(failed_outcome(name(), errc::invalid_argument,
                                                      "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE must be IPv4 or IPv6"));
            base.target = "/";
        }
        bool const v1_allowed = !env_true(env_, "AWS_EC2_METADATA_V1_DISABLED");
        std::make_shared<imds_op>(client_, opts_, name(), std::move(base), v1_allowed, std::move(done))->start();
    }

private:
    env_lookup env_;
    provider_options const& opts_;
    http::client client_;
};

// ---- the default chain ---------------------------------------------------------------------------

class chain_source final : public credentials_source {
public:
    struct link {
        std::unique_ptr<credentials_source> source;
        bool failure_means_absent = false; // instance metadata: probed last, unreachable is normal off EC2
    };

    explicit chain_source(std::vector<link> links) : credentials_source("default chain"), links_(std::move(links)) {}

    void fetch(source_callback done) override {
        if (!winner_) return discover(0, {}, std::move(done));
        auto const i = *winner_;
        links_[i].source->fetch([this, done = std::move(done)](source_outcome o) mutable {
            if (o.what != source_outcome::kind::absent) return std::move(done)(std::move(o));
            winner_.reset(); // the source that worked is no longer configured: search again
            discover(0, {}, std::move(done));
        });
    }

private:
    std::vector<link> links_;
    std::optional<std::size_t> winner_;

    void discover(std::size_t i, std::string tried, source_callback done) {
        if (i == links_.size()) return std::move(done)(absent_outcome({}, std::move(tried)));
        links_[i].source->fetch([this, i, tried = std::move(tried), done = std::move(done)](source_outcome o) mutable {
            using kind = source_outcome::kind;
            if (o.what == kind::found) {
                winner_ = i;
                return std::move(done)(std::move(o));
            }
            if (o.what == kind::failed && !links_[i].failure_means_absent) return std::move(done)(std::move(o));
            if (!tried.empty()) tried += "; ";
            tried += o.tried_entry();
            discover(i + 1, std::move(tried), std::move(done));
        });
    }
};

// ---- the cache and refresh logic behind a provider handle --------------------------------------------

class provider_state : public std::enable_shared_from_this<provider_state> {
public:
    using handler_type = asio::any_completion_handler<void(error_code, fetched_credentials)>;
    using time_point = std::chrono::system_clock::time_point;
    using source_factory =
        std::function<std::unique_ptr<credentials_source>(asio::any_io_executor const&, provider_options const&)>;

    provider_state(asio::any_io_executor ex, std::string name, provider_options opts, source_factory const& make)
        : ex_(std::move(ex)), strand_(asio::make_strand(ex_)), opts_(std::move(opts)), name_(std::move(name)) {
        opts_.validate();
        src_ = make(strand_, opts_);
    }

    asio::any_io_executor const& executor() const noexcept { return ex_; }
    std::string const& name() const noexcept { return name_; }

    void get(handler_type h) {
        std::unique_lock lock(m_);
        auto const now = opts_.current_time();
        if (cached_ && now < wait_after_) {
            refresh_if_due(now);
            fetched_credentials fc{cached_, {}, cached_source_};
            lock.unlock();
            complete(std::move(h), {}, std::move(fc));
            return;
        }
        auto& w = waiters_.emplace_back();
        w.id = ++next_waiter_id_;
        auto slot = asio::get_associated_cancellation_slot(h);
        w.handler.emplace(std::move(h));
        if (slot.is_connected()) {
            w.slot = slot;
            w.cancelled = std::make_shared<std::atomic<bool>>(false);
            slot.assign([weak = weak_from_this(), id = w.id, flag = w.cancelled](asio::cancellation_type) {
                flag->store(true);
                if (auto self = weak.lock()) self->cancel_waiter(id);
            });
        }
        if (!fetching_) start_fetch();
    }

    std::shared_ptr<credentials const> usable_now() {
        std::lock_guard lock(m_);
        auto const now = opts_.current_time();
        if (!cached_ || now >= wait_after_) return nullptr;
        refresh_if_due(now);
        return cached_;
    }

    void invalidate() {
        std::lock_guard lock(m_);
        cached_.reset();
        cached_source_.clear();
        wait_after_ = refresh_after_ = time_point::min();
    }

    std::string current_source() const {
        std::lock_guard lock(m_);
        return cached_source_;
    }

    std::uint64_t fetch_count() const {
        std::lock_guard lock(m_);
        return fetches_;
    }

private:
    struct waiter {
        std::uint64_t id = 0;
        std::optional<handler_type> handler; // emplaced, never move-assigned (Boost 1.81)
        asio::cancellation_slot slot;
        // Set by the slot: a cancellation that arrives after the fetch took the waiter
        // (cancel_waiter no longer finds it) must still win over the result.
        std::shared_ptr<std::atomic<bool>> cancelled;
    };

    asio::any_io_executor ex_;
    asio::any_io_executor strand_;
    provider_options opts_;
    std::string name_;
    std::unique_ptr<credentials_source> src_;

    mutable std::mutex m_;
    std::shared_ptr<credentials const> cached_;
    std::string cached_source_;
    time_point wait_after_ = time_point::min();    // from here on, callers wait for a fetch
    time_point refresh_after_ = time_point::min(); // from here on, use starts a background fetch
    bool fetching_ = false;
    std::uint64_t fetches_ = 0;
    std::list<waiter> waiters_;
    std::uint64_t next_waiter_id_ = 0;

    void complete(handler_type h, error_code ec, fetched_credentials fc) {
        // Never inline: through the handler's associated executor (default: the provider's).
        asio::post(ex_, asio::append(std::move(h), ec, std::move(fc)));
    }

    // Completes a waiter whose cancellation slot we used. The slot is cleared on the handler's own
    // executor, where the caller may emit the signal, not on the strand that finished the fetch.
    void complete_waiter(handler_type h, asio::cancellation_slot slot, std::shared_ptr<std::atomic<bool>> cancelled,
                         error_code ec, fetched_credentials fc) {
        auto const hex = asio::get_associated_executor(h, ex_);
        asio::post(ex_, asio::bind_executor(hex, [this_name = name_, h = std::move(h), slot, cancelled, ec,
                                                  fc = std::move(fc)]() mutable {
                       if (slot.is_connected()) slot.clear();
                       if (cancelled && cancelled->load()) {
                           fetched_credentials none;
                           none.diag.message = "cancelled while waiting for credentials from " + this_name;
                           return std::move(h)(asio::error::operation_aborted, std::move(none));
                       }
                       std::move(h)(ec, std::move(fc));
                   }));
    }

    // Called with m_ held.
    void refresh_if_due(time_point now) {
        if (!fetching_ && now >= refresh_after_) start_fetch();
    }

    // Called with m_ held.
    void start_fetch() {
        fetching_ = true;
        ++fetches_;
        asio::post(strand_, [self = shared_from_this()] {
            self->src_->fetch([self](source_outcome o) { self->on_fetched(std::move(o)); });
        });
    }

    void cancel_waiter(std::uint64_t id) {
        std::optional<handler_type> h;
        {
            std::lock_guard lock(m_);
            auto it = std::find_if(waiters_.begin(), waiters_.end(), [id](waiter const& w) { return w.id == id; });
            if (it == waiters_.end()) return;
            h.emplace(std::move(*it->handler));
            waiters_.erase(it); // the slot still runs this very handler: it is not cleared here
        }
        fetched_credentials fc;
        fc.diag.message = "cancelled while waiting for credentials from " + name_ + " (the fetch goes on for others)";
        complete(std::move(*h), asio::error::operation_aborted, std::move(fc));
    }

    void on_fetched(source_outcome o) {
        std::list<waiter> ready;
        error_code ec;
        fetched_credentials fc;
        {
            std::lock_guard lock(m_);
            auto const now = opts_.current_time();
            fetching_ = false;
            if (o.what == source_outcome::kind::found) {
                cached_ = std::move(o.creds);
                cached_source_ = o.label;
                set_windows(now);
                fc = fetched_credentials{cached_, {}, cached_source_};
            } else {
                diagnostics d = std::move(o.diag);
                if (o.what == source_outcome::kind::absent) {
                    ec = errc::no_credentials;
                    d.message = "no AWS credentials found; tried: " + o.tried_entry();
                } else {
                    ec = o.ec;
                    d.message = o.label.empty() ? o.reason : o.label + ": " + o.reason;
                }
                bool const still_valid = cached_ && (!cached_->expiration || now < *cached_->expiration);
                if (still_valid) {
                    // Keep what works until it expires; try again after the pause, not on every use.
                    refresh_after_ = now + opts_.min_refresh_interval;
                    if (cached_->expiration)
                        wait_after_ = std::max(wait_after_, std::min(*cached_->expiration,
                                                                     now + opts_.min_refresh_interval));
                    d.message = "refreshing the credentials failed; the current ones (" + cached_source_ +
                                ") stay in use until they expire: " + d.message;
                    fc = fetched_credentials{cached_, std::move(d), cached_source_};
                    ec = {};
                } else {
                    fc.diag = std::move(d);
                }
            }
            ready.splice(ready.end(), waiters_);
        }
        for (auto& w : ready) complete_waiter(std::move(*w.handler), w.slot, w.cancelled, ec, fc);
    }

    // Called with m_ held, after a successful fetch.
    void set_windows(time_point now) {
        if (!cached_->expiration) {
            wait_after_ = refresh_after_ = time_point::max();
            return;
        }
        auto const e = *cached_->expiration;
        auto const pause = now + opts_.min_refresh_interval;
        wait_after_ = std::max(e - opts_.mandatory_refresh, std::min(e, pause));
        refresh_after_ = std::max(e - opts_.advisory_refresh, pause);
    }
};

struct provider_access;

} // namespace detail
#endif

/** A source of AWS credentials with a cache that refreshes them before they expire.

    A copyable handle: copies share one cache and one source, so a provider
    can be handed by value to several stores. Made by the factories below
    (`default_chain`, `static_credentials`, ...).

    @par Thread safety
    Safe: any member may be called from any thread, concurrently.
    Fetches run on a strand of the executor given to the factory.

    @par Object lifetimes
    A fetch in progress keeps the shared state alive; destroying every
    copy does not abort it.
*/
class credentials_provider {
public:
    /// The executor completions run on by default, and (through a strand) every fetch.
    using executor_type = boost::asio::any_io_executor;

    /** Gets usable credentials: the cached ones, or the result of a fetch.

        Completes at once (never inline) with the cached credentials while
        more than `mandatory_refresh` remains before they expire, starting
        one background refresh when fewer than `advisory_refresh` remain.
        Otherwise waits for a fetch; concurrent callers share one fetch.

        @par Handler signature
        `void(error_code, fetched_credentials)`. Errors:
        - `errc::no_credentials`: no source is configured (the message lists
          each source tried and why it has nothing), or a configured source
          cannot yield credentials (a partial key pair, a missing profile
          named by `AWS_PROFILE`, an unsupported profile kind, a missing
          token file): the message names the fix.
        - `errc::invalid_argument`: a shared file or an endpoint variable is
          malformed (the message names the file and line or the variable).
        - `errc::invalid_response`: malformed, incomplete or oversized
          response; the message names the source and the field.
        - `errc::auth_failed`: the endpoint or STS refused (HTTP 401/403,
          `InvalidIdentityToken`, `AccessDenied`, IMDS `Code` not `Success`).
        - `errc::throttled`, `errc::service_unavailable`, `errc::timeout` and
          connection errors: transient, `baton::is_retryable`.
        - `asio::error::operation_aborted`: cancelled.

        A failed refresh while the current credentials have not expired yet
        completes successfully with them, and says why in `diag.message`.

        @par Per-Operation Cancellation
        All types: this caller stops waiting and gets `operation_aborted`;
        the fetch itself goes on for other callers and the cache.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_get(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, fetched_credentials)>(
            [](auto handler, std::shared_ptr<detail::provider_state> const& st) {
                st->get(detail::provider_state::handler_type(std::move(handler)));
            },
            token, state_);
    }

    /** The cached credentials when they are good for more than `mandatory_refresh`, else null. Never blocks.

        The fast path for signers. When fewer than `advisory_refresh`
        remain, starts one background refresh (callers keep getting the
        current credentials meanwhile). On null, call `async_get`.
    */
    std::shared_ptr<credentials const> usable_now() const { return state_->usable_now(); }

    /** Forgets the cached credentials, e.g. after the service said `ExpiredToken`: the next use fetches.

        A fetch already in progress still completes and fills the cache.
    */
    void invalidate() { state_->invalidate(); }

    /// What this provider is, e.g. `environment` or `default chain`.
    std::string const& name() const noexcept { return state_->name(); }

    /// Which source produced the cached credentials (e.g. `profile 'dev'`), or empty when none are cached.
    std::string current_source() const { return state_->current_source(); }

    /// How many fetches were started so far: a gauge for refresh behaviour.
    std::uint64_t fetch_count() const { return state_->fetch_count(); }

    /// The executor given to the factory.
    executor_type get_executor() const noexcept { return state_->executor(); }

private:
    friend struct detail::provider_access;
    explicit credentials_provider(std::shared_ptr<detail::provider_state> st) : state_(std::move(st)) {}
    std::shared_ptr<detail::provider_state> state_;
};

#ifndef BATON_DOXYGEN
namespace detail {
struct provider_access {
    static credentials_provider make(boost::asio::any_io_executor ex, std::string name, provider_options opts,
                                     provider_state::source_factory const& f) {
        return credentials_provider(
            std::make_shared<provider_state>(std::move(ex), std::move(name), std::move(opts), f));
    }
};

inline http::client metadata_client(boost::asio::any_io_executor const& strand, provider_options const& o) {
    http::client_options co;
    co.connect_timeout = std::max(o.metadata_timeout, o.container_timeout);
    co.attempt_timeout = co.connect_timeout;
    co.max_response_body_bytes = o.max_response_bytes;
    co.max_connections_per_endpoint = 2;
    return http::client(strand, std::move(co));
}

inline http::client sts_client(boost::asio::any_io_executor const& strand, provider_options const& o) {
    http::client_options co = o.sts_http;
    co.max_response_body_bytes = std::min<std::uint64_t>(co.max_response_body_bytes, o.max_response_bytes);
    return http::client(strand, std::move(co));
}
} // namespace detail
#endif

/** Fixed credentials, e.g. from command-line flags. They never expire unless `creds.expiration` says so.

    @throws config_error when the key id or the secret is empty or contains white space.
*/
inline credentials_provider static_credentials(boost::asio::any_io_executor ex, credentials creds,
                                               provider_options opts = {}) {
    if (auto p = detail::credentials_problem(creds)) throw config_error("static_credentials: " + *p);
    return detail::provider_access::make(
        std::move(ex), "static", std::move(opts),
        [c = std::move(creds)](auto const&, provider_options const&) { return std::make_unique<detail::static_source>(c); });
}

/** Credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` and `AWS_CREDENTIAL_EXPIRATION`.

    Read again at each fetch (so after `invalidate()`, and before an
    `AWS_CREDENTIAL_EXPIRATION` passes).
    @throws config_error when `opts` breaks a rule.
*/
inline credentials_provider environment_credentials(boost::asio::any_io_executor ex,
                                                    env_lookup env = process_environment(),
                                                    provider_options opts = {}) {
    return detail::provider_access::make(std::move(ex), "environment", std::move(opts),
                                         [env = std::move(env)](auto const&, provider_options const&) {
                                             return std::make_unique<detail::environment_source>(env, false);
                                         });
}

/** Credentials from a profile of the shared files: static keys, or `role_arn` with `web_identity_token_file`.

    The files are read again at each fetch. `profile_name` empty (default)
    selects the profile from `AWS_PROFILE` / `AWS_DEFAULT_PROFILE`, else
    `default`. Profiles that assume a role from another profile, use IAM
    Identity Center (SSO) or `credential_process` are reported as
    unsupported, with a command that exports their credentials instead.
    @throws config_error when `opts` breaks a rule.
*/
inline credentials_provider profile_credentials(boost::asio::any_io_executor ex, std::string profile_name = {},
                                                env_lookup env = process_environment(), provider_options opts = {}) {
    std::string const label =
        "profile '" + detail::printable(profile_name.empty() ? choose_profile(env).name : profile_name) + "'";
    return detail::provider_access::make(
        std::move(ex), label, std::move(opts),
        [name = std::move(profile_name), env = std::move(env)](auto const& strand, provider_options const& o) {
            return std::make_unique<detail::profile_source>(name, env, o, detail::sts_client(strand, o));
        });
}

/** Credentials from STS `AssumeRoleWithWebIdentity` (EKS IRSA and similar).

    Configured by `AWS_WEB_IDENTITY_TOKEN_FILE`, `AWS_ROLE_ARN` and
    optionally `AWS_ROLE_SESSION_NAME`; the token file is read again at
    every refresh (it rotates). The request is unsigned and goes to
    `AWS_ENDPOINT_URL_STS` (else `AWS_ENDPOINT_URL`, unless
    `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true`; see `resolve_endpoint_url`), else to
    `https://sts.<AWS_REGION or AWS_DEFAULT_REGION>.amazonaws.com/`, else
    to the global `https://sts.amazonaws.com/`.
    @throws config_error when `opts` breaks a rule.
*/
inline credentials_provider web_identity_credentials(boost::asio::any_io_executor ex,
                                                     env_lookup env = process_environment(),
                                                     provider_options opts = {}) {
    return detail::provider_access::make(std::move(ex), "web identity", std::move(opts),
                                         [env = std::move(env)](auto const& strand, provider_options const& o) {
                                             return std::make_unique<detail::web_identity_source>(
                                                 env, o, detail::sts_client(strand, o));
                                         });
}

/** Credentials from the container endpoint (ECS task roles, EKS Pod Identity).

    `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` (a path on
    `http://169.254.170.2`), else `AWS_CONTAINER_CREDENTIALS_FULL_URI`
    (https anywhere; plain http only to a loopback address, `localhost`,
    `169.254.170.2`, `169.254.170.23` or `fd00:ec2::23`). The
    `Authorization` header is the content of
    `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` (read at every fetch), else
    `AWS_CONTAINER_AUTHORIZATION_TOKEN`.
    @throws config_error when `opts` breaks a rule.
*/
inline credentials_provider container_credentials(boost::asio::any_io_executor ex,
                                                  env_lookup env = process_environment(),
                                                  provider_options opts = {}) {
    return detail::provider_access::make(std::move(ex), "container", std::move(opts),
                                         [env = std::move(env)](auto const& strand, provider_options const& o) {
                                             return std::make_unique<detail::container_source>(
                                                 env, o, detail::metadata_client(strand, o));
                                         });
}

/** Credentials of the EC2 instance's role, from the instance metadata service.

    IMDSv2: a session token from `PUT /latest/api/token`, then the role
    name and the role's credentials. Falls back to IMDSv1 when the token
    request gets 403, 404 or 405 or its answer never comes (a hop limit
    of 1 in a container), unless `AWS_EC2_METADATA_V1_DISABLED=true`.
    `AWS_EC2_METADATA_DISABLED=true` turns it off;
    `AWS_EC2_METADATA_SERVICE_ENDPOINT` (or `..._ENDPOINT_MODE=IPv6`)
    moves it. Each request times out after
    `provider_options::metadata_timeout` (1 s).
    @throws config_error when `opts` breaks a rule.
*/
inline credentials_provider instance_credentials(boost::asio::any_io_executor ex,
                                                 env_lookup env = process_environment(),
                                                 provider_options opts = {}) {
    return detail::provider_access::make(std::move(ex), "instance metadata", std::move(opts),
                                         [env = std::move(env)](auto const& strand, provider_options const& o) {
                                             return std::make_unique<detail::instance_metadata_source>(
                                                 env, o, detail::metadata_client(strand, o));
                                         });
}

/** The SDKs' default chain: environment, web identity, profile, container, instance metadata.

    See the file comment for how the chain decides and what it remembers.
    When nothing yields credentials, `async_get` fails with
    `errc::no_credentials` and a message such as `no AWS credentials
    found; tried: environment (AWS_ACCESS_KEY_ID not set); web identity
    (AWS_WEB_IDENTITY_TOKEN_FILE not set); profile 'default'
    (/root/.aws/credentials: no such file; /root/.aws/config: no such
    file); container (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI not
    set); instance metadata (IMDSv2 token request: connecting to
    http://169.254.169.254:80 timed out ...)`.
    @throws config_error when `opts` breaks a rule.
*/
inline credentials_provider default_chain(boost::asio::any_io_executor ex, env_lookup env = process_environment(),
                                          provider_options opts = {}) {
    return detail::provider_access::make(
        std::move(ex), "default chain", std::move(opts),
        [env = std::move(env)](auto const& strand, provider_options const& o) {
            auto const sts = detail::sts_client(strand, o);
            auto const metadata = detail::metadata_client(strand, o);
            std::vector<detail::chain_source::link> links;
            links.push_back({std::make_unique<detail::environment_source>(env, false), false});
            links.push_back({std::make_unique<detail::web_identity_source>(env, o, sts), false});
            links.push_back({std::make_unique<detail::profile_source>(std::string(), env, o, sts), false});
            links.push_back({std::make_unique<detail::container_source>(env, o, metadata), false});
            links.push_back({std::make_unique<detail::instance_metadata_source>(env, o, metadata), true});
            return std::make_unique<detail::chain_source>(std::move(links));
        });
}

} // namespace baton::aws

#endif
