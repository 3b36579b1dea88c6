// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_DETAIL_PROFILE_SOURCE_HPP
#define BATON_AWS_DETAIL_PROFILE_SOURCE_HPP

// Layer: wire (aws), internal. A profile's credentials as the AWS CLI finds them. The planner reads the
// shared files (no I/O beyond them) and decides which source gives the first credentials and which roles
// are then assumed in turn; the plan runner carries that out; the profile source does both at each fetch.
//
// The order inside a profile is the CLI's: a role to assume (`role_arn` with `source_profile` or
// `credential_source`), web identity (the variables first unless the profile was chosen in code, then the
// profile), IAM Identity Center, keys in the credentials file, `credential_process`, keys in the config
// file. A source profile is read the same way, without the variables; one with a role of its own and no
// keys is a link of a chain of roles.

#include <baton/aws/detail/credential_source.hpp>
#include <baton/aws/detail/endpoint_sources.hpp>
#include <baton/aws/detail/process_source.hpp>
#include <baton/aws/detail/sso_source.hpp>
#include <baton/aws/detail/web_identity_sources.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/profile.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/http/client.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#ifndef BATON_DOXYGEN
namespace baton::aws::detail {

// Where the first credentials of a plan come from.
enum class base_kind { static_keys, web_identity, sso, process, environment, instance_metadata, container };

struct profile_plan {
    base_kind base = base_kind::static_keys;
    std::string base_what;                  // for messages, e.g. `credential_source Environment of profile 'dev'`
    credentials keys;                       // static_keys
    web_identity_settings web;              // web_identity
    sso_settings sso;                       // sso
    process_settings process;               // process
    std::vector<assume_role_settings> roles; // assumed in this order, each with the credentials before it
};

// What the planner found: a plan, or why the profile configures no credentials (the chain then goes on).
struct profile_resolution {
    std::optional<profile_plan> plan;
    std::string label;  // `profile 'dev'`, or `web identity` when only the variables configure it
    std::string absent; // no plan: why
};

class profile_planner {
public:
    // `env_allowed`: the AWS_WEB_IDENTITY_TOKEN_FILE / AWS_ROLE_ARN / AWS_ROLE_SESSION_NAME variables count
    // (false when the profile was chosen in code, as the CLI's --profile turns them off).
    // `region`: the region given in code (provider_options::region), empty for the environment's or the profile's.
    BATON_DECL profile_planner(shared_config const& files, profile_choice choice, bool env_allowed, env_lookup env,
                               std::string region = {});

    // errc::no_credentials or errc::invalid_argument with `problem` naming the profile, the line and the fix.
    BATON_DECL error_code run(profile_resolution& out, std::string& problem);

private:
    shared_config const& files_;
    profile_choice choice_;
    bool env_allowed_;
    env_lookup env_;
    bool sts_resolved_ = false;
    std::optional<std::string> region_;
    std::string sts_url_, signing_region_;

    BATON_DECL error_code resolve_sts(std::string& problem);
    BATON_DECL error_code plan_role(profile const& p, std::vector<std::string>& visited, profile_plan& plan,
                                    std::string& problem);
    // The sources that read one profile's own settings, in the CLI's order; `found` false when none is set.
    BATON_DECL error_code plan_own(profile const* p, bool env_web, profile_plan& plan, bool& found,
                                   std::string& problem);
    BATON_DECL error_code plan_sso(profile const& p, profile_plan& plan, std::string& problem);
    BATON_DECL error_code read_keys(profile const& p, credentials& c, std::string& problem) const;
    BATON_DECL std::string endpoint_of(std::string_view service_id, std::string_view prefix,
                                       std::string const& region, std::string& problem, error_code& ec) const;
    BATON_DECL std::string named(profile const& p) const;
    BATON_DECL std::string at(profile const& p, std::string_view key) const;
    // Where `key` is set, for the `configured_by` of a source: the file and line, with the profile's
    // name when it is not the selected one.
    BATON_DECL std::string line_of(profile const& p, std::string_view key) const;
};

// Runs a plan: the first credentials, then each role with the credentials before it.
template <class V = void>
class basic_plan_op : public std::enable_shared_from_this<basic_plan_op<V>> {
public:
    basic_plan_op(asio::any_io_executor strand, http::client sts, http::client metadata, provider_options const& opts,
                  env_lookup env, std::string label, profile_plan plan, source_callback done)
        : strand_(std::move(strand)), sts_(std::move(sts)), metadata_(std::move(metadata)), opts_(opts),
          env_(std::move(env)), label_(std::move(label)), plan_(std::move(plan)), done_(std::move(done)) {}

    void start() {
        auto next = [self = this->shared_from_this()](source_outcome o) { self->on_base(std::move(o)); };
        switch (plan_.base) {
        case base_kind::static_keys: return next(found_outcome(label_, plan_.keys));
        case base_kind::web_identity:
            return std::make_shared<web_identity_op>(sts_, opts_, env_, label_, plan_.web, std::move(next))->start();
        case base_kind::sso: return start_sso_fetch(sts_, opts_, label_, plan_.sso, std::move(next));
        case base_kind::process: return start_credential_process(strand_, opts_, label_, plan_.process, std::move(next));
        case base_kind::environment: base_ = std::make_unique<environment_source>(env_, false); break;
        case base_kind::instance_metadata:
            base_ = std::make_unique<instance_metadata_source>(env_, opts_, metadata_);
            break;
        case base_kind::container: base_ = std::make_unique<container_source>(env_, opts_, metadata_); break;
        }
        base_->fetch(std::move(next));
    }

private:
    asio::any_io_executor strand_;
    http::client sts_, metadata_;
    provider_options const& opts_;
    env_lookup env_;
    std::string label_;
    profile_plan plan_;
    source_callback done_;
    std::unique_ptr<credentials_source> base_;
    std::size_t step_ = 0;

    void on_base(source_outcome o) {
        using kind = source_outcome::kind;
        // A credential_source names where the credentials must come from: nothing there is an error.
        if (o.what == kind::absent)
            return finish(failed_outcome(label_, errc::no_credentials,
                                         plan_.base_what + " gave no credentials: " + o.reason));
        if (o.what == kind::failed && base_) o.reason = plan_.base_what + ": " + o.tried_entry();
        if (o.what == kind::failed) o.label = label_;
        if (o.what != kind::found) return finish(std::move(o));
        next_role(std::move(o));
    }

    void next_role(source_outcome o) {
        if (o.what != source_outcome::kind::found || step_ == plan_.roles.size()) {
            if (o.what == source_outcome::kind::found) o.label = label_;
            return finish(std::move(o));
        }
        auto const& role = plan_.roles[step_++];
        std::make_shared<assume_role_op>(sts_, opts_, label_, role, std::move(o.creds),
                                         [self = this->shared_from_this()](source_outcome r) {
                                             self->next_role(std::move(r));
                                         })
            ->start();
    }

    void finish(source_outcome o) { std::move(done_)(std::move(o)); }
};
using plan_op = basic_plan_op<>;

// Credentials from a profile, planned anew at each fetch (the files may have changed).
template <class = void>
class basic_profile_source final : public credentials_source {
public:
    // `fixed_profile` empty: the profile AWS_PROFILE / AWS_DEFAULT_PROFILE / `default` names, and the web
    // identity variables count; otherwise that profile, chosen in code, and the variables do not.
    basic_profile_source(std::string fixed_profile, env_lookup env, provider_options const& opts,
                         asio::any_io_executor strand, http::client sts, http::client metadata)
        : credentials_source("profile"), fixed_(std::move(fixed_profile)), env_(std::move(env)), opts_(opts),
          strand_(std::move(strand)), sts_(std::move(sts)), metadata_(std::move(metadata)) {}

    void fetch(source_callback done) override {
        profile_choice const choice = fixed_.empty() ? choose_profile(env_) : profile_choice{fixed_, "the caller"};
        std::string const label = "profile '" + printable(choice.name) + "'";
        shared_config files;
        diagnostics d;
        if (auto ec = load_shared_config(files, d, env_)) return std::move(done)(failed_outcome(label, ec, d.message));
        profile_resolution r;
        std::string problem;
        profile_planner planner(files, choice, fixed_.empty(), env_, opts_.region);
        if (auto ec = planner.run(r, problem)) {
            // Most problems name the profile and the line already: the label would only repeat it.
            bool const named = problem.starts_with(label + " ");
            return std::move(done)(failed_outcome(named ? std::string() : label, ec, std::move(problem)));
        }
        if (!r.plan) {
            if (fixed_.empty())
                return std::move(done)(absent_outcome(
                    {}, "web identity (AWS_WEB_IDENTITY_TOKEN_FILE not set); " + label + " (" + r.absent + ")"));
            return std::move(done)(absent_outcome(label, std::move(r.absent)));
        }
        std::make_shared<plan_op>(strand_, sts_, metadata_, opts_, env_, r.label, std::move(*r.plan), std::move(done))
            ->start();
    }

private:
    std::string fixed_;
    env_lookup env_;
    provider_options const& opts_;
    asio::any_io_executor strand_;
    http::client sts_, metadata_;
};
using profile_source = basic_profile_source<>;

} // namespace baton::aws::detail
#endif

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/profile_source.ipp>
#endif

#endif
