// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_DETAIL_CREDENTIAL_SOURCE_HPP
#define BATON_AWS_DETAIL_CREDENTIAL_SOURCE_HPP

// Layer: wire (aws), internal. What every credentials source is (`credentials_source`, its outcomes), the
// helpers they share (environment lookups, URL targets, JSON credential documents, scrubbing secrets from
// messages), and the static and environment sources.

#include <baton/aws/provider_options.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/profile.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/aws/detail/xml.hpp>
#include <baton/core/error.hpp>
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

#ifndef BATON_DOXYGEN
namespace baton::aws::detail {

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

BATON_DECL source_outcome found_outcome(std::string label, credentials c);
BATON_DECL source_outcome absent_outcome(std::string label, std::string reason);
BATON_DECL source_outcome failed_outcome(std::string label, error_code ec, std::string reason, diagnostics d = {});

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
BATON_DECL std::optional<std::string> credentials_problem(credentials const& c);

BATON_DECL bool env_true(env_lookup const& env, char const* name);

BATON_DECL std::optional<std::string> env_value(env_lookup const& env, char const* name);

// Removes every occurrence of `secret` from text that may echo it (service messages), and every run of
// 16 or more of its characters (a service may echo part of it).
BATON_DECL std::string scrub(std::string text, std::string_view secret);

// At most `max` printable characters of a service's text, with every secret removed first: cut first,
// a long secret that straddles the cut would survive in part.
BATON_DECL std::string redacted_excerpt(std::string_view text, std::vector<std::string> const& secrets,
                                        std::size_t max);

// A header value must be one line of visible characters; a token that is not would split the request.
BATON_DECL bool header_safe(std::string_view v);

BATON_DECL std::string_view trim_token(std::string_view s);

// A URL split into what the HTTP client pools on and the request target (path and query).
struct url_target {
    http::endpoint ep;
    std::string target; // starts with '/'
};

// Parses `scheme://host[:port][/path][?query]`. Messages never repeat the URL, which might carry a secret.
BATON_DECL boost::system::result<url_target> split_url(std::string_view url, std::string& problem);

// Joins a base target (`/` or `/prefix/`) and an absolute path.
BATON_DECL std::string join_target(std::string const& base, std::string_view path);

BATON_DECL std::string describe_transport_failure(std::string const& what, http::request_info const& info,
                                              error_code ec);

// The four fields of a credentials JSON document (container endpoint, IMDS). On failure: `invalid_response`
// (or `auth_failed` for an IMDS `Code` other than `Success`) and a reason naming the field.
BATON_DECL error_code parse_json_credentials(std::string_view body, credentials& out, std::string& reason,
                                         diagnostics& diag);

// The error classes of a credentials endpoint's non-200 status.
BATON_DECL error_code status_error(unsigned status);

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

    source_outcome read() const;
};

} // namespace baton::aws::detail
#endif

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/credential_source.ipp>
#endif

#endif
