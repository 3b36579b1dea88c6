// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_DETAIL_WEB_IDENTITY_SOURCES_HPP
#define BATON_AWS_DETAIL_WEB_IDENTITY_SOURCES_HPP

// Layer: wire (aws), internal. The sources that may assume a role through STS: web identity
// (`AssumeRoleWithWebIdentity`) and the shared profile files (static keys, or `role_arn` with
// `web_identity_token_file`).

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
};

// The STS endpoint: AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL (the same rules as every other service, see
// resolve_endpoint_url), else the regional AWS one, else the global one.
BATON_DECL boost::system::result<url_target> sts_target(env_lookup const& env, std::optional<std::string> const& region,
                                                        std::string& problem);

BATON_DECL error_code sts_error_code(std::string_view code, unsigned status);

template <class V = void>
class basic_web_identity_op : public std::enable_shared_from_this<basic_web_identity_op<V>> {
public:
    basic_web_identity_op(http::client client, provider_options const& opts, env_lookup env, std::string label,
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
using web_identity_op = basic_web_identity_op<>;

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

// ---- shared profile files ------------------------------------------------------------------

BATON_DECL std::string expand_home(std::string path, env_lookup const& env);

template <class = void>
class basic_profile_source final : public credentials_source {
public:
    basic_profile_source(std::string fixed_profile, env_lookup env, provider_options const& opts, http::client sts)
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
using profile_source = basic_profile_source<>;

} // namespace baton::aws::detail
#endif

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/web_identity_sources.ipp>
#endif

#endif
