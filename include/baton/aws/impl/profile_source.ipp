// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_PROFILE_SOURCE_IPP
#define BATON_AWS_IMPL_PROFILE_SOURCE_IPP

// Layer: wire (aws), internal. The compiled part of aws/detail/profile_source.hpp: the planner.
#include <baton/aws/detail/profile_source.hpp>

#include <charconv>

namespace baton::aws::detail {

BATON_DECL profile_planner::profile_planner(shared_config const& files, profile_choice choice, bool env_allowed,
                                            env_lookup env, std::string region)
    : files_(files), choice_(std::move(choice)), env_allowed_(env_allowed), env_(std::move(env)) {
    if (!region.empty()) region_ = std::move(region);
}

BATON_DECL std::string profile_planner::named(profile const& p) const { return "profile '" + printable(p.name) + "'"; }

BATON_DECL std::string profile_planner::at(profile const& p, std::string_view key) const {
    auto const* s = p.find(key);
    return s == nullptr ? named(p) : named(p) + " (" + s->where() + ")";
}

BATON_DECL std::string profile_planner::line_of(profile const& p, std::string_view key) const {
    auto const* s = p.find(key);
    if (p.name != choice_.name || s == nullptr) return at(p, key);
    return s->where(); // messages are prefixed with the selected profile already
}

BATON_DECL error_code profile_planner::run(profile_resolution& out, std::string& problem) {
    out = {};
    out.label = "profile '" + printable(choice_.name) + "'";
    auto const* p = files_.find(choice_.name);
    if (p == nullptr && choice_.is_explicit()) {
        problem = (choice_.chosen_by == "the caller" ? std::string("it") : choice_.chosen_by + " names it, but it") +
                  " is not in the shared files (" + files_.describe_files() + "); check the name" +
                  (choice_.chosen_by == "the caller" ? std::string() : " or unset " + choice_.chosen_by);
        return errc::no_credentials;
    }
    profile_plan plan;
    if (p != nullptr && p->get("role_arn") && !p->get("web_identity_token_file")) {
        std::vector<std::string> visited{p->name};
        if (auto ec = plan_role(*p, visited, plan, problem)) return ec;
        out.plan = std::move(plan);
        return {};
    }
    bool found = false;
    if (auto ec = plan_own(p, env_allowed_, plan, found, problem)) return ec;
    if (found) {
        // Web identity that only the variables configure keeps the name the SDKs give it.
        if (plan.base == base_kind::web_identity && plan.web.configured_by == "AWS_WEB_IDENTITY_TOKEN_FILE" &&
            (p == nullptr || !p->get("role_arn")))
            out.label = "web identity";
        out.plan = std::move(plan);
        return {};
    }
    out.absent = p == nullptr ? files_.describe_files() : "has no aws_access_key_id, role_arn or other credentials";
    return {};
}

BATON_DECL error_code profile_planner::resolve_sts(std::string& problem) {
    if (sts_resolved_) return {};
    std::string from = "provider_options::region";
    for (char const* var : {"AWS_REGION", "AWS_DEFAULT_REGION"})
        if (!region_ && (region_ = env_value(env_, var))) from = var;
    if (!region_)
        if (auto const* sel = files_.find(choice_.name); sel != nullptr && (region_ = sel->get("region")))
            from = at(*sel, "region");
    if (region_ && !is_valid_region_name(*region_)) {
        problem = "the region '" + printable(*region_) + "' (" + from + ") is not a region name";
        return errc::invalid_argument;
    }
    diagnostics d;
    auto configured = resolve_endpoint_url("STS", files_, choice_.name, d, env_);
    if (!configured) {
        problem = "cannot build the STS endpoint: " + d.message;
        return configured.error();
    }
    // Regional when the region is known (the CLI always is), else the global endpoint, signed for us-east-1
    // (as is the pseudo-region aws-global).
    bool const global = !region_ || *region_ == "aws-global";
    sts_url_ = *configured ? (*configured)->url
               : global    ? std::string("https://sts.amazonaws.com")
                           : default_endpoint_url("sts", *region_);
    signing_region_ = global ? std::string("us-east-1") : *region_;
    sts_resolved_ = true;
    return {};
}

BATON_DECL error_code profile_planner::plan_role(profile const& p, std::vector<std::string>& visited,
                                                 profile_plan& plan, std::string& problem) {
    if (auto ec = resolve_sts(problem)) return ec;
    assume_role_settings role;
    role.role_arn = *p.get("role_arn");
    role.configured_by = line_of(p, "role_arn");
    role.session_name = p.get("role_session_name").value_or(std::string());
    role.external_id = p.get("external_id");
    role.sts_url = sts_url_;
    role.signing_region = signing_region_;
    if (p.get("mfa_serial")) {
        problem = at(p, "mfa_serial") + " sets mfa_serial: assuming its role needs an MFA code, which baton cannot "
                  "ask for; export the credentials instead (eval \"$(aws configure export-credentials --profile " +
                  printable(choice_.name) + " --format env)\", then run without choosing the profile, so that "
                  "the environment's keys count) or use a role that does not require MFA";
        return errc::no_credentials;
    }
    if (auto d = p.get("duration_seconds")) {
        std::int64_t v = 0;
        auto [ptr, ec] = std::from_chars(d->data(), d->data() + d->size(), v);
        if (ec != std::errc() || ptr != d->data() + d->size() || v < 900 || v > 43200) {
            problem = at(p, "duration_seconds") + ": duration_seconds '" + printable(*d) +
                      "' is not a whole number of seconds from 900 to 43200";
            return errc::invalid_argument;
        }
        role.duration_seconds = v;
    }
    auto const source_profile = p.get("source_profile");
    auto const credential_source = p.get("credential_source");
    if (source_profile && credential_source) {
        problem = named(p) + " sets both source_profile (" + p.find("source_profile")->where() +
                  ") and credential_source (" + p.find("credential_source")->where() +
                  "); a role takes its first credentials from one of them: keep one";
        return errc::invalid_argument;
    }
    if (!source_profile && !credential_source) {
        problem = at(p, "role_arn") + " sets role_arn but neither source_profile nor credential_source; add "
                  "source_profile = NAME (a profile with credentials) or credential_source = Environment, "
                  "Ec2InstanceMetadata or EcsContainer";
        return errc::invalid_argument;
    }
    plan.roles.insert(plan.roles.begin(), std::move(role)); // the outermost role is assumed last
    if (credential_source) {
        if (*credential_source == "Environment") plan.base = base_kind::environment;
        else if (*credential_source == "Ec2InstanceMetadata") plan.base = base_kind::instance_metadata;
        else if (*credential_source == "EcsContainer") plan.base = base_kind::container;
        else {
            problem = at(p, "credential_source") + ": credential_source '" + printable(*credential_source) +
                      "' is not one of Environment, Ec2InstanceMetadata, EcsContainer (the names are case-sensitive)";
            return errc::invalid_argument;
        }
        plan.base_what = "credential_source " + *credential_source + " (" + line_of(p, "credential_source") + ")";
        return {};
    }
    auto const& name = *source_profile;
    if (std::find(visited.begin(), visited.end(), name) != visited.end()) {
        // A profile may name itself to say "my own keys assume my role".
        if (name == p.name && (p.get("aws_access_key_id") || p.get("aws_secret_access_key"))) {
            plan.base = base_kind::static_keys;
            plan.base_what = "the keys of " + named(p);
            return read_keys(p, plan.keys, problem);
        }
        std::string path;
        for (auto const& v : visited) path += "'" + printable(v) + "' -> ";
        problem = at(p, "source_profile") + ": source_profile '" + printable(name) +
                  "' leads back to a profile already on the way (" + path + "'" + printable(name) +
                  "'); a chain of roles must end at a profile with credentials";
        return errc::invalid_argument;
    }
    visited.push_back(name);
    auto const* src = files_.find(name);
    if (src == nullptr) {
        problem = at(p, "source_profile") + ": the source profile '" + printable(name) +
                  "' is not in the shared files (" + files_.describe_files() + ")";
        return errc::no_credentials;
    }
    bool const has_keys = src->get("aws_access_key_id") || src->get("aws_secret_access_key");
    if (!has_keys && src->get("role_arn") && !src->get("web_identity_token_file")) return plan_role(*src, visited, plan, problem);
    bool found = false;
    if (auto ec = plan_own(src, false, plan, found, problem)) return ec;
    if (!found) {
        problem = at(p, "source_profile") + ": the source profile '" + printable(name) +
                  "' has no credentials (no aws_access_key_id, role_arn, sso_*, credential_process or "
                  "web_identity_token_file)";
        return errc::no_credentials;
    }
    if (plan.base_what.empty()) plan.base_what = "source profile '" + printable(name) + "'";
    return {};
}

BATON_DECL error_code profile_planner::plan_own(profile const* p, bool env_web, profile_plan& plan, bool& found,
                                                std::string& problem) {
    found = false;
    // Web identity: each setting from its variable first (unless the profile was chosen in code), then the profile.
    std::optional<std::string> token_file, role_arn, session;
    std::string configured_by;
    if (env_web) {
        token_file = env_value(env_, "AWS_WEB_IDENTITY_TOKEN_FILE");
        role_arn = env_value(env_, "AWS_ROLE_ARN");
        session = env_value(env_, "AWS_ROLE_SESSION_NAME");
        if (token_file) configured_by = "AWS_WEB_IDENTITY_TOKEN_FILE";
    }
    if (p != nullptr) {
        if (!token_file && (token_file = p->get("web_identity_token_file")))
            configured_by = line_of(*p, "web_identity_token_file");
        if (!role_arn) role_arn = p->get("role_arn");
        if (!session) session = p->get("role_session_name");
    }
    if (token_file) {
        if (!role_arn) {
            problem = "web identity is configured (" + configured_by + ") but no role is: set " +
                      (env_web ? std::string("AWS_ROLE_ARN") : std::string()) +
                      (env_web && p != nullptr ? " or " : "") +
                      (p != nullptr ? "role_arn in " + named(*p) : std::string());
            return errc::no_credentials;
        }
        if (auto ec = resolve_sts(problem)) return ec;
        plan.base = base_kind::web_identity;
        plan.base_what = "web identity (" + configured_by + ")";
        plan.web.role_arn = *role_arn;
        plan.web.token_file = expand_home(*token_file, env_);
        plan.web.session_name = session.value_or(std::string());
        plan.web.configured_by = configured_by;
        plan.web.region = region_;
        plan.web.sts_url = sts_url_;
        found = true;
        return {};
    }
    if (p == nullptr) return {};
    if (p->get("sso_account_id") || p->get("sso_role_name")) {
        found = true;
        return plan_sso(*p, plan, problem);
    }
    auto in_credentials_file = [&](char const* key) {
        auto const* s = p->find(key);
        return s != nullptr && !s->value.empty() && s->file == files_.files.credentials;
    };
    if (in_credentials_file("aws_access_key_id")) {
        found = true;
        plan.base = base_kind::static_keys;
        plan.base_what = "the keys of " + named(*p);
        if (auto ec = read_keys(*p, plan.keys, problem)) return ec;
        // That provider reads the credentials file alone: a session token in the config file is not its.
        if (auto const* t = p->find("aws_session_token"); t != nullptr && t->file != files_.files.credentials)
            plan.keys.session_token.clear();
        return {};
    }
    if (auto cmd = p->get("credential_process")) {
        found = true;
        plan.base = base_kind::process;
        plan.base_what = "credential_process of " + named(*p);
        plan.process.command = *cmd;
        plan.process.configured_by = line_of(*p, "credential_process");
        return {};
    }
    if (p->get("aws_access_key_id") || p->get("aws_secret_access_key")) {
        found = true;
        plan.base = base_kind::static_keys;
        plan.base_what = "the keys of " + named(*p);
        return read_keys(*p, plan.keys, problem);
    }
    return {};
}

BATON_DECL error_code profile_planner::plan_sso(profile const& p, profile_plan& plan, std::string& problem) {
    auto& s = plan.sso;
    s.profile_name = p.name; // `aws sso login --profile` reads that profile's own settings
    s.configured_by = line_of(p, p.find("sso_session") ? "sso_session" : "sso_account_id");
    std::map<std::string, std::string, std::less<>> merged;
    for (char const* key : {"sso_start_url", "sso_region", "sso_account_id", "sso_role_name", "sso_session"})
        if (auto v = p.get(key)) merged[key] = *v;
    if (auto session = p.get("sso_session")) {
        auto const it = files_.sso_sessions.find(*session);
        if (it == files_.sso_sessions.end()) {
            problem = at(p, "sso_session") + " names sso_session '" + printable(*session) +
                      "', but the config file has no [sso-session " + printable(*session) + "] section";
            return errc::invalid_argument;
        }
        for (auto const& [key, setting] : it->second.settings) {
            if (setting.value.empty()) continue;
            auto const mine = merged.find(key);
            if (mine != merged.end() && mine->second != setting.value) {
                problem = "the value of " + key + " in " + at(p, key) + " differs from the one in [sso-session " +
                          printable(*session) + "] (" + setting.where() + "); remove one";
                return errc::invalid_argument;
            }
            merged[key] = setting.value;
        }
        s.session_name = *session;
    }
    std::string missing;
    for (char const* key : {"sso_start_url", "sso_region", "sso_account_id", "sso_role_name"})
        if (!merged.count(key)) missing += (missing.empty() ? "" : ", ") + std::string(key);
    if (!missing.empty()) {
        problem = named(p) + " is set up for IAM Identity Center (SSO) but lacks " + missing +
                  (s.session_name.empty() ? std::string(" (or an sso_session naming an [sso-session] section)")
                                          : " (in the profile or its [sso-session " + printable(s.session_name) + "])");
        return errc::invalid_argument;
    }
    s.start_url = merged["sso_start_url"];
    s.sso_region = merged["sso_region"];
    s.account_id = merged["sso_account_id"];
    s.role_name = merged["sso_role_name"];
    if (!is_valid_region_name(s.sso_region)) {
        problem = named(p) + ": sso_region '" + printable(s.sso_region) + "' is not a region name";
        return errc::invalid_argument;
    }
    error_code ec;
    s.portal_url = endpoint_of("SSO", "portal.sso", s.sso_region, problem, ec);
    if (ec) return ec;
    s.oidc_url = endpoint_of("SSO OIDC", "oidc", s.sso_region, problem, ec);
    if (ec) return ec;
    auto const home = env_value(env_, "HOME");
    if (!home) {
        problem = named(p) + " uses IAM Identity Center, whose login is cached under ~/.aws/sso/cache, but HOME is not set";
        return errc::no_credentials;
    }
    s.cache_dir = *home + (home->back() == '/' ? "" : "/") + ".aws/sso/cache";
    plan.base = base_kind::sso;
    plan.base_what = "IAM Identity Center (" + s.configured_by + ")";
    return {};
}

BATON_DECL std::string profile_planner::endpoint_of(std::string_view service_id, std::string_view prefix,
                                                    std::string const& region, std::string& problem,
                                                    error_code& ec) const {
    diagnostics d;
    auto configured = resolve_endpoint_url(service_id, files_, choice_.name, d, env_);
    if (!configured) {
        ec = configured.error();
        problem = d.message;
        return {};
    }
    if (*configured) return (*configured)->url;
    return default_endpoint_url(prefix, region);
}

BATON_DECL error_code profile_planner::read_keys(profile const& p, credentials& c, std::string& problem) const {
    // Messages are about the selected profile unless the keys are a source profile's.
    std::string const whose = p.name == choice_.name ? std::string() : "source " + named(p) + ": ";
    for (char const* key : {"aws_access_key_id", "aws_secret_access_key", "aws_session_token"}) {
        // configparser semantics: an indented line continues the value above it. Here that is a typo.
        if (auto v = p.get(key); v && v->find('\n') != std::string::npos) {
            problem = whose + key + " (" + p.find(key)->where() +
                      ") continues on the next line because that line is indented; remove the indentation";
            return errc::no_credentials;
        }
    }
    auto const id = p.get("aws_access_key_id");
    auto const secret = p.get("aws_secret_access_key");
    if (!id || !secret) {
        problem = whose + "sets " +
                  (id ? "aws_access_key_id (" + p.find("aws_access_key_id")->where() + ")"
                      : "aws_secret_access_key (" + p.find("aws_secret_access_key")->where() + ")") +
                  " but not " + (id ? "aws_secret_access_key" : "aws_access_key_id") + "; set both";
        return errc::no_credentials;
    }
    c.access_key_id = *id;
    c.secret_access_key = *secret;
    if (auto t = p.get("aws_session_token")) c.session_token = *t;
    else if (auto legacy = p.get("aws_security_token")) c.session_token = *legacy;
    if (auto bad = credentials_problem(c)) {
        problem = whose + "keys (" + p.find("aws_access_key_id")->where() + "): " + *bad;
        return errc::no_credentials;
    }
    return {};
}

} // namespace baton::aws::detail

#endif
