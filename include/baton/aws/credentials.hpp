// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_CREDENTIALS_HPP
#define BATON_AWS_CREDENTIALS_HPP

/** @file
    Layer: wire (aws). Where AWS credentials come from, and how they are kept fresh.

    A `credentials_provider` is a handle to one source (or to the default
    chain of sources) and a cache in front of it:

    - Sources: static keys, the environment (`AWS_ACCESS_KEY_ID`, ...),
      a profile of the shared files, web identity (`AWS_WEB_IDENTITY_TOKEN_FILE`
      and `AWS_ROLE_ARN` through STS `AssumeRoleWithWebIdentity`), the
      container endpoint (ECS, EKS Pod Identity) and EC2 instance metadata
      (IMDSv2, falling back to IMDSv1 where allowed).
    - A profile is read as the AWS CLI reads it, in its order: a role to
      assume (`role_arn` with `source_profile` or `credential_source`,
      STS `AssumeRole` signed with the source's credentials, chains of
      roles), web identity (the variables, then `web_identity_token_file`),
      IAM Identity Center (`sso_session` or the legacy `sso_start_url`: the
      login `aws sso login` cached, refreshed when it can be), keys in the
      credentials file, `credential_process` (run without a shell), keys in
      the config file. STS, the SSO portal and SSO OIDC are reached at
      their `AWS_ENDPOINT_URL_*` variable, `AWS_ENDPOINT_URL`, the
      profile's `services` section or its `endpoint_url`, else AWS.
    - `default_chain` tries them in the AWS CLI's order: environment, the
      profile (which includes web identity from the variables), container,
      instance metadata. Keys in the environment win even when
      `AWS_PROFILE` names a profile, as in botocore; a profile chosen in
      code (the CLI's `--profile`) turns the environment's keys and web
      identity variables off.
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

#include <baton/aws/detail/credential_source.hpp>
#include <baton/aws/detail/endpoint_sources.hpp>
#include <baton/aws/detail/profile_source.hpp>
#include <baton/aws/detail/provider_state.hpp>
#include <baton/aws/detail/web_identity_sources.hpp>
#include <baton/aws/provider_options.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/profile.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/aws/detail/xml.hpp>
#include <baton/core/error.hpp>
#include <baton/http/client.hpp>

namespace baton::aws {

#ifndef BATON_DOXYGEN
namespace detail {
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

    /** Forgets the cached credentials (after an `ExpiredToken` answer, say): the next use fetches.

        A fetch already in progress still completes and fills the cache.
    */
    void invalidate() { state_->invalidate(); }

    /// What this provider is, e.g. `environment` or `default chain`.
    std::string const& name() const noexcept { return state_->name(); }

    /// Which source produced the cached credentials (e.g. <tt>profile 'dev'</tt>), or empty when none are cached.
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

BATON_LAZY http::client metadata_client(boost::asio::any_io_executor const& strand, provider_options const& o) {
    http::client_options co;
    co.connect_timeout = std::max(o.metadata_timeout, o.container_timeout);
    co.attempt_timeout = co.connect_timeout;
    co.max_response_body_bytes = o.max_response_bytes;
    co.max_connections_per_endpoint = 2;
    return http::client(strand, std::move(co));
}

BATON_LAZY http::client sts_client(boost::asio::any_io_executor const& strand, provider_options const& o) {
    http::client_options co = o.sts_http;
    co.max_response_body_bytes = std::min<std::uint64_t>(co.max_response_body_bytes, o.max_response_bytes);
    return http::client(strand, std::move(co));
}
} // namespace detail
#endif

/** Fixed credentials (from command-line flags, say). They never expire unless `creds.expiration` says so.

    @throws config_error when the key id or the secret is empty or contains white space.
*/
BATON_LAZY credentials_provider static_credentials(boost::asio::any_io_executor ex, credentials creds,
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
BATON_LAZY credentials_provider environment_credentials(boost::asio::any_io_executor ex,
                                                    env_lookup env = process_environment(),
                                                    provider_options opts = {}) {
    return detail::provider_access::make(std::move(ex), "environment", std::move(opts),
                                         [env = std::move(env)](auto const&, provider_options const&) {
                                             return std::make_unique<detail::environment_source>(env, false);
                                         });
}

/** Credentials from a profile of the shared files, found as the AWS CLI finds them (see the file comment).

    The files are read again at each fetch. `profile_name` empty (default)
    selects the profile from `AWS_PROFILE` / `AWS_DEFAULT_PROFILE`, else
    `default`, and lets `AWS_WEB_IDENTITY_TOKEN_FILE`, `AWS_ROLE_ARN` and
    `AWS_ROLE_SESSION_NAME` configure web identity; a name given here is
    a choice made in code, as the CLI's `--profile`, and those variables
    do not count. A profile that needs an MFA code (`mfa_serial`) is
    refused with the command that exports its credentials instead.
    @throws config_error when `opts` breaks a rule.
*/
BATON_LAZY credentials_provider profile_credentials(boost::asio::any_io_executor ex, std::string profile_name = {},
                                                env_lookup env = process_environment(), provider_options opts = {}) {
    std::string const label =
        "profile '" + detail::printable(profile_name.empty() ? choose_profile(env).name : profile_name) + "'";
    return detail::provider_access::make(
        std::move(ex), label, std::move(opts),
        [name = std::move(profile_name), env = std::move(env)](auto const& strand, provider_options const& o) {
            return std::make_unique<detail::profile_source>(name, env, o, strand, detail::sts_client(strand, o),
                                                            detail::metadata_client(strand, o));
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
BATON_LAZY credentials_provider web_identity_credentials(boost::asio::any_io_executor ex,
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
BATON_LAZY credentials_provider container_credentials(boost::asio::any_io_executor ex,
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
BATON_LAZY credentials_provider instance_credentials(boost::asio::any_io_executor ex,
                                                 env_lookup env = process_environment(),
                                                 provider_options opts = {}) {
    return detail::provider_access::make(std::move(ex), "instance metadata", std::move(opts),
                                         [env = std::move(env)](auto const& strand, provider_options const& o) {
                                             return std::make_unique<detail::instance_metadata_source>(
                                                 env, o, detail::metadata_client(strand, o));
                                         });
}

/** The AWS CLI's default chain: environment, the profile (web identity included), container, instance metadata.

    `profile_name` empty (default): the profile `AWS_PROFILE` names, and
    the environment's keys and web identity variables count. A name: that
    profile, chosen in code as the CLI's `--profile` chooses it; the
    environment's keys and web identity variables are then not used.
    See the file comment for how the chain decides and what it remembers.
    When nothing yields credentials, `async_get` fails with
    `errc::no_credentials` and a message such as (one line, wrapped here):

        no AWS credentials found; tried: environment (AWS_ACCESS_KEY_ID not set); web identity
        (AWS_WEB_IDENTITY_TOKEN_FILE not set); profile 'default' (/root/.aws/credentials: no such
        file; /root/.aws/config: no such file); container
        (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI not set); instance metadata (IMDSv2
        token request: connecting to http://169.254.169.254:80 timed out ...)

    @throws config_error when `opts` breaks a rule.
*/
BATON_LAZY credentials_provider default_chain(boost::asio::any_io_executor ex, env_lookup env = process_environment(),
                                          provider_options opts = {}, std::string profile_name = {}) {
    return detail::provider_access::make(
        std::move(ex), "default chain", std::move(opts),
        [env = std::move(env), name = std::move(profile_name)](auto const& strand, provider_options const& o) {
            auto const sts = detail::sts_client(strand, o);
            auto const metadata = detail::metadata_client(strand, o);
            std::vector<detail::chain_source::link> links;
            if (name.empty()) links.push_back({std::make_unique<detail::environment_source>(env, false), false});
            links.push_back({std::make_unique<detail::profile_source>(name, env, o, strand, sts, metadata), false});
            links.push_back({std::make_unique<detail::container_source>(env, o, metadata), false});
            links.push_back({std::make_unique<detail::instance_metadata_source>(env, o, metadata), true});
            return std::make_unique<detail::chain_source>(std::move(links));
        });
}

} // namespace baton::aws

#endif
