// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_DETAIL_WEB_IDENTITY_SOURCES_HPP
#define BATON_AWS_DETAIL_WEB_IDENTITY_SOURCES_HPP

// Layer: wire (aws), internal. The calls that assume a role through STS: `AssumeRoleWithWebIdentity`
// (unsigned, with a token file) and `AssumeRole` (signed with the credentials of the step before), and
// the web identity source the environment configures.

#include <baton/aws/detail/credential_source.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/profile.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/aws/detail/xml.hpp>
#include <baton/core/error.hpp>
#include <baton/http/client.hpp>

#ifndef BATON_DOXYGEN
namespace baton::aws::detail {

// ---- STS AssumeRoleWithWebIdentity ---------------------------------------------------------

struct web_identity_settings {
    std::string role_arn;
    std::string token_file;
    std::string session_name;             // may be empty: one is generated
    std::optional<std::string> region;    // for the STS endpoint
    std::string configured_by;            // `AWS_WEB_IDENTITY_TOKEN_FILE` or `profile 'x' (file line N)`
    std::string sts_url;                  // resolved with the profile's settings; empty: from `env` and `region`
};

// The STS endpoint: AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL (the same rules as every other service, see
// resolve_endpoint_url), else the regional AWS one, else the global one.
BATON_DECL boost::system::result<url_target> sts_target(env_lookup const& env, std::optional<std::string> const& region,
                                                        std::string& problem);

BATON_DECL error_code sts_error_code(std::string_view code, unsigned status);

// Reads the credentials of an STS answer to `action` (`AssumeRole`, `AssumeRoleWithWebIdentity`): the
// `<action>Response/<action>Result/Credentials` of a 200, or the error document of a refusal. On failure
// `reason` starts with `where` and `diag` carries the status, the service's code and the request id, each
// with `secrets` (what the request carried) removed.
// An STS query-API call: `POST` of the form `body` to `target`, asking for XML.
BATON_DECL http::request sts_form_request(url_target const& target, std::string body);

BATON_DECL error_code read_sts_credentials(http::response const& res, std::string_view action, std::string const& where,
                                           std::vector<std::string> const& secrets, credentials& out,
                                           std::string& reason, diagnostics& diag);

template <class V = void>
class basic_web_identity_op : public std::enable_shared_from_this<basic_web_identity_op<V>> {
public:
    basic_web_identity_op(http::client client, provider_options const& opts, env_lookup env, std::string label,
                    web_identity_settings s, source_callback done)
        : client_(std::move(client)), opts_(opts), env_(std::move(env)), label_(std::move(label)),
          s_(std::move(s)), done_(std::move(done)) {}

    void start() {
        std::string problem;
        auto t = s_.sts_url.empty() ? sts_target(env_, s_.region, problem) : split_url(s_.sts_url, problem);
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
        auto req = sts_form_request(target_, std::move(body));
        client_.async_request(target_.ep, std::move(req), info_,
                              [self = this->shared_from_this()](error_code ec, http::response res) {
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
        d.service_code = scrub(std::move(d.service_code), token_);
        d.request_id = scrub(std::move(d.request_id), token_);
        std::move(done_)(failed_outcome(label_, ec, scrub(std::move(reason), token_), std::move(d)));
    }

    void on_response(error_code ec, http::response res) {
        if (ec) return fail(ec, describe_transport_failure(where(), info_, ec));
        credentials c;
        std::string reason;
        diagnostics d;
        if (auto const err = read_sts_credentials(res, "AssumeRoleWithWebIdentity", where(), {token_}, c, reason, d)) {
            reason += hint(d.service_code);
            return fail(err, std::move(reason), std::move(d));
        }
        std::move(done_)(found_outcome(label_, std::move(c)));
    }

    std::string hint(std::string const& code) const {
        if (code == "InvalidIdentityToken" || code == "ExpiredTokenException")
            return " (check the token file " + s_.configured_by + " and the role's OIDC provider)";
        if (code == "AccessDenied") return " (check the role's trust policy for this identity provider)";
        return {};
    }
};
using web_identity_op = basic_web_identity_op<>;

// ---- STS AssumeRole ------------------------------------------------------------------------

struct assume_role_settings {
    std::string role_arn;
    std::string session_name;                    // may be empty: one is generated
    std::optional<std::string> external_id;
    std::optional<std::int64_t> duration_seconds;
    std::string sts_url;                         // resolved: configured, regional or global
    std::string signing_region;                  // the region in the signature's scope
    std::string configured_by;                   // `profile 'x' (file line N)`
};

// Assumes one role with the credentials of the step before (a source profile, or the role it assumed).
template <class V = void>
class basic_assume_role_op : public std::enable_shared_from_this<basic_assume_role_op<V>> {
public:
    basic_assume_role_op(http::client client, provider_options const& opts, std::string label, assume_role_settings s,
                         std::shared_ptr<credentials const> source, source_callback done)
        : client_(std::move(client)), opts_(opts), label_(std::move(label)), s_(std::move(s)),
          source_(std::move(source)), done_(std::move(done)) {}

    void start() {
        std::string problem;
        auto t = split_url(s_.sts_url, problem);
        if (!t) return fail(t.error(), "cannot build the STS endpoint: " + problem);
        target_ = std::move(*t);
        auto const now = opts_.current_time();
        auto const session = !s_.session_name.empty()
                                 ? s_.session_name
                                 : "baton-session-" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                                         now.time_since_epoch())
                                                                         .count());
        auto enc = [](std::string_view v) { return boost::urls::encode(v, boost::urls::unreserved_chars); };
        std::string body = "Action=AssumeRole&Version=2011-06-15&RoleArn=" + enc(s_.role_arn) +
                           "&RoleSessionName=" + enc(session);
        if (s_.duration_seconds) body += "&DurationSeconds=" + std::to_string(*s_.duration_seconds);
        if (s_.external_id) body += "&ExternalId=" + enc(*s_.external_id);
        auto req = sts_form_request(target_, std::move(body));
        if (auto ec = sign_request(req, *source_, signing_params::for_service("sts", s_.signing_region), now))
            return fail(ec, "cannot sign the STS request (region '" + printable(s_.signing_region) + "')");
        client_.async_request(target_.ep, std::move(req), info_,
                              [self = this->shared_from_this()](error_code ec, http::response res) {
                                  self->on_response(ec, std::move(res));
                              });
    }

private:
    http::client client_;
    provider_options const& opts_;
    std::string label_;
    assume_role_settings s_;
    std::shared_ptr<credentials const> source_;
    source_callback done_;
    url_target target_;
    http::request_info info_;

    std::string where() const {
        return "STS AssumeRole of " + printable(s_.role_arn, 200) + " (" + s_.configured_by + ") at " +
               target_.ep.origin();
    }

    std::vector<std::string> secrets() const { return {source_->secret_access_key, source_->session_token}; }

    void fail(error_code ec, std::string reason, diagnostics d = {}) {
        for (auto const& s : secrets()) {
            reason = scrub(std::move(reason), s);
            d.service_code = scrub(std::move(d.service_code), s);
            d.request_id = scrub(std::move(d.request_id), s);
        }
        std::move(done_)(failed_outcome(label_, ec, std::move(reason), std::move(d)));
    }

    void on_response(error_code ec, http::response res) {
        if (ec) return fail(ec, describe_transport_failure(where(), info_, ec));
        credentials c;
        std::string reason;
        diagnostics d;
        if (auto const err = read_sts_credentials(res, "AssumeRole", where(), secrets(), c, reason, d)) {
            if (d.service_code == "AccessDenied")
                reason += " (check the role's trust policy and that the source identity may call sts:AssumeRole on it)";
            else if (d.service_code == "InvalidClientTokenId" || d.service_code == "SignatureDoesNotMatch")
                reason += " (the source credentials were refused: check the source profile's keys)";
            return fail(err, std::move(reason), std::move(d));
        }
        std::move(done_)(found_outcome(label_, std::move(c)));
    }
};
using assume_role_op = basic_assume_role_op<>;

template <class = void>
class basic_web_identity_source final : public credentials_source {
public:
    basic_web_identity_source(env_lookup env, provider_options const& opts, http::client sts)
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
using web_identity_source = basic_web_identity_source<>;

// A path under the home directory: `~` and `~/...` are `HOME`'s, as the SDKs read them.
BATON_DECL std::string expand_home(std::string path, env_lookup const& env);

} // namespace baton::aws::detail
#endif

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/web_identity_sources.ipp>
#endif

#endif
