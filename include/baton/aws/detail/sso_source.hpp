// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_DETAIL_SSO_SOURCE_HPP
#define BATON_AWS_DETAIL_SSO_SOURCE_HPP

// Layer: wire (aws), internal. IAM Identity Center (SSO) role credentials, fetched as the AWS CLI v2
// fetches them: the access token `aws sso login` left in the token cache, refreshed through SSO OIDC
// CreateToken when it is about to expire (sso-session form only), then exchanged for role credentials
// with the portal's GetRoleCredentials. The profile code resolves the settings; this file does the rest.

#include <baton/aws/detail/credential_source.hpp>
#include <baton/aws/profile.hpp>
#include <baton/aws/provider_options.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/http/client.hpp>

#include <boost/asio/post.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/json/object.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#ifndef BATON_DOXYGEN
namespace baton::aws::detail {

struct sso_settings {
    std::string profile_name;   // for the hint "aws sso login --profile NAME"
    std::string session_name;   // [sso-session NAME]; empty in the legacy form (token never refreshed)
    std::string start_url;
    std::string sso_region;
    std::string account_id;
    std::string role_name;
    std::string portal_url;     // base URL of the portal, already resolved (https://portal.sso.REGION.amazonaws.com or an override such as http://127.0.0.1:PORT)
    std::string oidc_url;       // base URL of SSO OIDC, already resolved (https://oidc.REGION.amazonaws.com or an override)
    std::string cache_dir;      // the token cache directory, e.g. /home/me/.aws/sso/cache
    std::string configured_by;  // e.g. "profile 'dev' (/home/me/.aws/config line 3)"
};

// The cache file's name: sha1 hex of the session name, or of the start URL in the legacy form, + ".json".
// Empty only when OpenSSL cannot hash (SHA-1 disabled by its configuration).
BATON_DECL std::string sso_cache_file_name(sso_settings const& s);

// ---- the parts without I/O, shared by the op and its tests ------------------------------------

// The CLI refreshes a token when fewer than this remain before its expiresAt.
inline constexpr std::chrono::minutes sso_token_refresh_window{15};

// One token cache file as read. `doc` is the whole object, so that a refresh writes back every field.
struct sso_cached_token {
    boost::json::object doc;
    std::string access_token;
    std::chrono::system_clock::time_point expires_at;
};

// Parses a cache file's text. On failure a reason that names the field and never repeats a token.
BATON_DECL bool parse_sso_token(std::string_view text, sso_cached_token& out, std::string& reason);

// Whether the CLI would try to refresh this token now (the window is checked by the caller): the
// registration fields and a refresh token are present and the registration has not expired.
BATON_DECL bool sso_token_refreshable(boost::json::object const& doc, std::chrono::system_clock::time_point now,
                                      std::string& why_not);

// The CreateToken request body for a refreshable token.
BATON_DECL std::string sso_create_token_body(boost::json::object const& doc);

// Applies a CreateToken answer to `tok`: a new accessToken, expiresAt = now + expiresIn, refreshToken
// replaced when one came; every other field kept. Leaves `tok` unchanged when the answer is unusable.
BATON_DECL bool apply_sso_create_token(std::string_view body, std::chrono::system_clock::time_point now,
                                       sso_cached_token& tok, std::string& reason);

// The `%Y-%m-%dT%H:%M:%SZ` (UTC) form the CLI writes into the cache.
BATON_DECL std::string sso_time_text(std::chrono::system_clock::time_point t);

// Replaces `path` in one step: a temporary file in the same directory (mode 0600), fsynced, then renamed
// over it, so a reader (another process refreshing too) never sees half a file.
BATON_DECL bool replace_file_atomically(std::string const& path, std::string_view text, std::string& problem);

// Writes a (refreshed) token back to its cache file, as replace_file_atomically does.
BATON_DECL bool write_sso_token(std::string const& path, sso_cached_token const& tok, std::string& problem);

// The four fields of a GetRoleCredentials answer (expiration in epoch milliseconds).
BATON_DECL bool parse_sso_role_credentials(std::string_view body, credentials& out, std::string& reason);

// The error class of a refused portal (or OIDC) request, from its status and service code.
BATON_DECL error_code sso_status_error(unsigned status, std::string_view code);

// The service code (`x-amzn-ErrorType`, else the body's `__type`/`code`) and message of an error answer.
BATON_DECL void sso_error_details(http::response const& res, std::vector<std::string> const& secrets, diagnostics& d,
                                  std::string& message);

// "aws sso login --profile NAME", the name quoted for a POSIX shell when it needs it.
BATON_DECL std::string sso_login_command(std::string const& profile_name);

// ---- the fetch ------------------------------------------------------------------------------------

template <class V = void>
class basic_sso_op : public std::enable_shared_from_this<basic_sso_op<V>> {
public:
    basic_sso_op(http::client client, provider_options const& opts, std::string label, sso_settings s,
                 source_callback done)
        : client_(std::move(client)), opts_(opts), label_(std::move(label)), s_(std::move(s)),
          done_(std::move(done)) {}

    void start() {
        if (s_.account_id.empty() || s_.role_name.empty())
            return fail(errc::invalid_argument,
                        "IAM Identity Center (SSO) settings of " + s_.configured_by +
                            " lack sso_account_id or sso_role_name");
        if (s_.cache_dir.empty())
            return fail(errc::invalid_argument, "IAM Identity Center (SSO) settings of " + s_.configured_by +
                                                    " came without a token cache directory");
        if (s_.session_name.empty() && s_.start_url.empty())
            return fail(errc::invalid_argument, "IAM Identity Center (SSO) settings of " + s_.configured_by +
                                                    " name neither an sso_session nor an sso_start_url");
        auto const name = sso_cache_file_name(s_);
        if (name.empty())
            return fail(errc::no_credentials,
                        "cannot name the SSO token cache file: OpenSSL refused to compute a SHA-1 digest");
        path_ = s_.cache_dir;
        if (!path_.empty() && path_.back() != '/') path_ += '/';
        path_ += name;

        std::string text, why;
        switch (read_small_file(path_, opts_.max_token_file_bytes, text, why)) {
        case file_read::missing:
            return fail(errc::no_credentials, "no IAM Identity Center (SSO) login found for " + who() +
                                                  " (no token cache file " + printable(path_, 300) +
                                                  "); run: " + sso_login_command(s_.profile_name));
        case file_read::failed:
            return fail(errc::no_credentials,
                        "cannot read the SSO token cache file " + printable(path_, 300) + ": " + why);
        case file_read::ok: break;
        }
        if (!parse_sso_token(text, tok_, why))
            return fail(errc::no_credentials, "the SSO token cache file " + printable(path_, 300) + " " + why +
                                                  "; run: " + sso_login_command(s_.profile_name));
        remember_secrets();

        auto const now = opts_.current_time();
        if (!s_.session_name.empty() && tok_.expires_at - now < sso_token_refresh_window) {
            if (sso_token_refreshable(tok_.doc, now, refresh_problem_)) return refresh();
            refresh_problem_ = "cannot be refreshed (" + refresh_problem_ + ")";
        }
        get_role_credentials();
    }

private:
    http::client client_;
    provider_options const& opts_;
    std::string label_;
    sso_settings s_;
    source_callback done_;
    std::string path_;
    sso_cached_token tok_;
    std::vector<std::string> secrets_; // every token and secret seen, removed from any message
    std::string refresh_problem_;      // why no refresh was made, or why it failed
    error_code refresh_ec_;            // the refresh failed transiently (throttled, 5xx, network)
    url_target target_;
    http::request_info info_;

    std::string who() const { return "profile '" + printable(s_.profile_name) + "'"; }

    void remember_secrets() {
        for (char const* k : {"accessToken", "refreshToken", "clientSecret"})
            if (auto const* v = tok_.doc.if_contains(k); v != nullptr && v->is_string())
                secrets_.emplace_back(v->get_string());
        secrets_.push_back(tok_.access_token);
    }

    std::string clean(std::string text) const {
        for (auto const& s : secrets_) text = scrub(std::move(text), s);
        return text;
    }

    // `done_` runs through the client's executor and never inside start(): posted in every case.
    void finish(source_outcome o) {
        boost::asio::post(client_.get_executor(),
                          [self = this->shared_from_this(), o = std::move(o)]() mutable {
                              std::move(self->done_)(std::move(o));
                          });
    }

    void fail(error_code ec, std::string reason, diagnostics d = {}) {
        d.service_code = clean(std::move(d.service_code));
        d.request_id = clean(std::move(d.request_id));
        d.message = clean(std::move(d.message));
        finish(failed_outcome(label_, ec, clean(std::move(reason)), std::move(d)));
    }

    diagnostics response_diag(http::response const& res) const {
        diagnostics d;
        d.http_status = res.result_int();
        if (auto rid = res.find("x-amzn-RequestId"); rid != res.end())
            d.request_id = redacted_excerpt(rid->value(), secrets_, 80);
        return d;
    }

    // ---- SSO OIDC CreateToken (refresh_token grant) ----

    void refresh() {
        std::string problem;
        auto t = split_url(s_.oidc_url, problem);
        if (!t) {
            refresh_problem_ = "refreshing it failed: the SSO OIDC URL cannot be used: " + problem;
            return get_role_credentials();
        }
        target_ = std::move(*t);
        http::request req{bhttp::verb::post, join_target(target_.target, "/token"), 11};
        req.set(bhttp::field::host, target_.ep.host_header());
        req.set(bhttp::field::content_type, "application/json");
        req.set(bhttp::field::accept, "application/json");
        req.body() = sso_create_token_body(tok_.doc);
        req.prepare_payload();
        info_ = http::request_info{};
        client_.async_request(target_.ep, std::move(req), info_,
                              [self = this->shared_from_this()](error_code ec, http::response res) {
                                  self->on_refreshed(ec, std::move(res));
                              });
    }

    void on_refreshed(error_code ec, http::response res) {
        std::string const where = "refreshing it failed: SSO OIDC CreateToken at " + target_.ep.origin();
        if (ec) {
            refresh_ec_ = ec;
            refresh_problem_ = describe_transport_failure(where, info_, ec);
            return get_role_credentials();
        }
        if (res.result_int() != 200) {
            diagnostics d;
            std::string message;
            sso_error_details(res, secrets_, d, message);
            auto const cls = sso_status_error(res.result_int(), d.service_code);
            if (is_retryable(cls)) refresh_ec_ = cls;
            refresh_problem_ = where + " answered HTTP " + std::to_string(res.result_int()) +
                               (d.service_code.empty() ? std::string() : " " + d.service_code) +
                               (message.empty() ? std::string() : ": " + message);
            return get_role_credentials();
        }
        if (res.body().size() > opts_.max_response_bytes) {
            refresh_problem_ = where + ": the answer is larger than max_response_bytes";
            return get_role_credentials();
        }
        std::string reason;
        if (!apply_sso_create_token(res.body(), opts_.current_time(), tok_, reason)) {
            refresh_problem_ = where + ": " + reason;
            return get_role_credentials();
        }
        remember_secrets();
        refresh_problem_.clear();
        // A cache that cannot be written back still leaves a good token in hand: use it. The next run
        // then refreshes again from the file, as the CLI would after a failed write.
        std::string problem;
        (void)write_sso_token(path_, tok_, problem);
        get_role_credentials();
    }

    // ---- portal GetRoleCredentials ----

    void get_role_credentials() {
        auto const now = opts_.current_time();
        if (tok_.expires_at <= now) {
            std::string reason = "the IAM Identity Center (SSO) login for " + who() + " expired at " +
                                 sso_time_text(tok_.expires_at);
            if (!refresh_problem_.empty()) reason += " and " + refresh_problem_;
            reason += "; run: " + sso_login_command(s_.profile_name);
            // A refresh that failed for a passing reason may work on the next try; anything else needs a login.
            return fail(refresh_ec_ && is_retryable(refresh_ec_) ? refresh_ec_ : error_code(errc::auth_failed),
                        std::move(reason));
        }
        if (!header_safe(tok_.access_token))
            return fail(errc::no_credentials, "the SSO token cache file " + printable(path_, 300) +
                                                  " holds an accessToken with line breaks or control characters");
        std::string problem;
        auto t = split_url(s_.portal_url, problem);
        if (!t) return fail(errc::invalid_argument, "the IAM Identity Center portal URL cannot be used: " + problem);
        target_ = std::move(*t);
        auto enc = [](std::string_view v) { return boost::urls::encode(v, boost::urls::unreserved_chars); };
        http::request req{bhttp::verb::get,
                          join_target(target_.target, "/federation/credentials") + "?account_id=" +
                              enc(s_.account_id) + "&role_name=" + enc(s_.role_name),
                          11};
        req.set(bhttp::field::host, target_.ep.host_header());
        req.set(bhttp::field::accept, "application/json");
        req.set("x-amz-sso_bearer_token", tok_.access_token);
        info_ = http::request_info{};
        client_.async_request(target_.ep, std::move(req), info_,
                              [self = this->shared_from_this()](error_code ec, http::response res) {
                                  self->on_role(ec, std::move(res));
                              });
    }

    void on_role(error_code ec, http::response res) {
        std::string const where = "IAM Identity Center GetRoleCredentials at " + target_.ep.origin();
        if (ec) return fail(ec, describe_transport_failure(where, info_, ec));
        auto d = response_diag(res);
        auto const status = res.result_int();
        if (status != 200) {
            std::string message;
            sso_error_details(res, secrets_, d, message);
            auto const cls = sso_status_error(status, d.service_code);
            std::string const answered = "HTTP " + std::to_string(status) +
                                         (d.service_code.empty() ? std::string() : " " + d.service_code) +
                                         (message.empty() ? std::string() : ": " + message);
            std::string reason;
            if (status == 401 || d.service_code == "UnauthorizedException")
                reason = where + " refused the IAM Identity Center (SSO) login for " + who() +
                         " as expired or invalid (" + answered + "); run: " + sso_login_command(s_.profile_name);
            else if (status == 403)
                reason = where + " refused: " + answered + "; the role '" + printable(s_.role_name) +
                         "' in account '" + printable(s_.account_id) +
                         "' is not assigned to the user of this login (check sso_account_id and sso_role_name, " +
                         s_.configured_by + ")";
            else
                reason = where + " refused: " + answered;
            return fail(cls, std::move(reason), std::move(d));
        }
        if (res.body().size() > opts_.max_response_bytes)
            return fail(errc::invalid_response,
                        where + ": the answer is " + std::to_string(res.body().size()) +
                            " bytes, more than max_response_bytes (" + std::to_string(opts_.max_response_bytes) + ")",
                        std::move(d));
        credentials c;
        std::string reason;
        if (!parse_sso_role_credentials(res.body(), c, reason))
            return fail(errc::invalid_response, where + ": " + reason, std::move(d));
        finish(found_outcome(label_, std::move(c)));
    }
};
using sso_op = basic_sso_op<>;

// Fetches role credentials; `done` is called exactly once, through `client`'s executor (the provider's
// strand), never inline. `opts` must outlive the fetch (the provider owns it).
template <class V = void>
void start_sso_fetch(http::client client, provider_options const& opts, std::string label, sso_settings s,
                     source_callback done) {
    std::make_shared<basic_sso_op<V>>(std::move(client), opts, std::move(label), std::move(s), std::move(done))
        ->start();
}

} // namespace baton::aws::detail
#endif

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/sso_source.ipp>
#endif

#endif
