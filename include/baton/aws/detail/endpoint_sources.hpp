// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_DETAIL_ENDPOINT_SOURCES_HPP
#define BATON_AWS_DETAIL_ENDPOINT_SOURCES_HPP

// Layer: wire (aws), internal. The sources behind a local HTTP endpoint: the container endpoint (ECS, EKS
// Pod Identity) and EC2 instance metadata (IMDSv2, falling back to IMDSv1 where allowed).

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

// ---- container endpoint (ECS, EKS Pod Identity) ----------------------------------------------

// Over plain HTTP only link-local container agents and this host may serve credentials.
BATON_DECL bool container_host_allowed(http::endpoint const& ep);

template <class V = void>
class basic_container_op : public std::enable_shared_from_this<basic_container_op<V>> {
public:
    basic_container_op(http::client client, provider_options const& opts, std::string label, source_callback done)
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
                              [self = this->shared_from_this()](error_code ec, http::response res) {
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
        d.service_code = scrub(std::move(d.service_code), auth_);
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
                        d.service_code = redacted_excerpt(std::string_view(c->as_string()), {auth_}, 80);
                for (char const* k : {"message", "Message"})
                    if (auto const* m = v.as_object().if_contains(k); m != nullptr && m->is_string())
                        detail = redacted_excerpt(std::string_view(m->as_string()), {auth_}, 300);
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
using container_op = basic_container_op<>;

template <class = void>
class basic_container_source final : public credentials_source {
public:
    basic_container_source(env_lookup env, provider_options const& opts, http::client metadata)
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
using container_source = basic_container_source<>;

// ---- EC2 instance metadata (IMDSv2, IMDSv1 fallback) -------------------------------------------

template <class V = void>
class basic_imds_op : public std::enable_shared_from_this<basic_imds_op<V>> {
public:
    basic_imds_op(http::client client, provider_options const& opts, std::string label, url_target base,
            bool v1_allowed, source_callback done)
        : client_(std::move(client)), opts_(opts), label_(std::move(label)), base_(std::move(base)),
          v1_allowed_(v1_allowed), done_(std::move(done)) {}

    void start() {
        http::request req{bhttp::verb::put, join_target(base_.target, "/latest/api/token"), 11};
        req.set("X-aws-ec2-metadata-token-ttl-seconds", std::to_string(opts_.imds_token_ttl_seconds));
        send(std::move(req), [](basic_imds_op& self, error_code ec, http::response res) { self.on_token(ec, std::move(res)); });
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
                              [self = this->shared_from_this(), next](error_code ec, http::response res) {
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
        send(std::move(req), [](basic_imds_op& self, error_code ec, http::response res) { self.on_role(ec, std::move(res)); });
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
        send(std::move(req), [](basic_imds_op& self, error_code ec, http::response res) { self.on_creds(ec, std::move(res)); });
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
using imds_op = basic_imds_op<>;

template <class = void>
class basic_instance_metadata_source final : public credentials_source {
public:
    basic_instance_metadata_source(env_lookup env, provider_options const& opts, http::client metadata)
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
using instance_metadata_source = basic_instance_metadata_source<>;

} // namespace baton::aws::detail
#endif

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/endpoint_sources.ipp>
#endif

#endif
