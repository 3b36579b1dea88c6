// Part of the baton command-line tool (examples/cli/main.cpp). The stores: what messages name, errors worth a line, credentials, endpoints and region.
#ifndef BATON_CLI_STORES_HPP
#define BATON_CLI_STORES_HPP

#include "args.hpp"

namespace baton_cli {

// ---- stores ----------------------------------------------------------------

// What messages about the store name: the container, where it is, and whose credentials were used.
struct store_context {
    std::string url;       // the --store URL
    std::string container; // "bucket 'b'", "table 't'", "directory '/d'"
    std::string location;  // " at https://host:443 (endpoint from AWS_ENDPOINT_URL_S3)"; empty for local stores
    std::string identity;  // the credentials' key id, never the secret; empty for local stores
    std::string credential_source; // which source gave them, e.g. "environment" or "profile 'dev'"
    std::string addressing; // s3: "path-style" or "virtual-hosted"
    std::string lock_container; // composed stores (?lock=): "lock table 't'", "lock directory '/d'"
    std::string lock_location;  // composed stores: where the lock table is, as `location`
    // What to check when the container is missing or the credentials are refused; empty: the AWS
    // stores' (--store, --endpoint, --region; the credentials' source).
    std::string missing_hint, credentials_hint;
};

// Prints one line for a failed store operation and returns the exit status it deserves.
// Problems that waiting cannot fix (a missing bucket or table, refused credentials, a store that
// ignores preconditions) are configuration errors, exit 64; anything else exits `otherwise`.
int report_store_error(store_context const& s, std::string const& doing, baton::error_code ec,
                       baton::diagnostics const& d, int otherwise) {
    std::string const said = d.empty() ? ec.message() : d.to_string();
    std::string line;
    int code = exit_usage;
    // A composed store has two parts, and the headline names the one that is missing: DynamoDB
    // answers a missing table with ResourceNotFoundException, S3 a missing bucket with NoSuchBucket.
    // An answer without diagnostics could be either (`kv get`, whose recipe keeps none, reads the
    // key again from the store to find out; both are named only when that read no longer fails).
    bool const composed = !s.lock_container.empty();
    if (ec == baton::errc::not_found && composed && d.service_code == "ResourceNotFoundException") {
        line = doing + ": " + s.lock_container + " does not exist" + s.lock_location + " (" + said +
               "); create it, or check the table in ?lock=, its endpoint and --region";
    } else if (ec == baton::errc::not_found && composed && d.empty()) {
        line = doing + ": " + s.container + s.location + " or " + s.lock_container + s.lock_location +
               " does not exist (" + said + "); check --store, the endpoints and --region";
    } else if (ec == baton::errc::not_found) {
        line = doing + ": " + s.container + " does not exist" + s.location + " (" + said + "); " +
               (s.missing_hint.empty() ? "create it, or check --store, --endpoint and --region" : s.missing_hint);
    } else if (ec == baton::errc::auth_failed) {
        line = doing + ": the store" + s.location + " refused the credentials (" + s.identity + ") of " +
               s.credential_source + ": " + said + "; check " +
               (!s.credentials_hint.empty()              ? s.credentials_hint
                : s.credential_source == "environment" ? "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and --region"
                                                         : "that source and --region");
    } else if (ec == baton::errc::capability_missing) {
        line = doing + ": " + s.container + s.location + " cannot hold leases safely: " +
               (d.message.empty() ? ec.message() : d.message) + " ('baton probe --store " + s.url +
               "' shows what it honours)";
    } else {
        line = doing + ": " + ec.message() + (d.empty() ? std::string() : ": " + d.to_string());
        code = otherwise;
    }
    print_error(line);
    return code;
}

// The credentials that sign requests to AWS stores, from the AWS CLI's default chain
// (environment, the profile, container, instance metadata; --profile as the CLI's). Fetched
// once up front so that "no credentials" is one clear line before anything starts;
// the backend then keeps them fresh through the provider.
struct loaded_credentials {
    baton::aws::credentials_provider provider;
    baton::aws::credentials first; // what the first fetch gave, for messages (redacted there)
    std::string source;            // which source gave them, e.g. "profile 'dev'"
};

loaded_credentials load_credentials(asio::io_context& ioc, options const& o) {
    baton::aws::provider_options opts;
    opts.region = o.region; // as the AWS CLI's --region: the STS endpoint that assumes a profile's roles
    auto provider = baton::aws::default_chain(ioc.get_executor(), baton::aws::process_environment(), opts, o.profile);
    std::optional<std::pair<baton::error_code, baton::aws::fetched_credentials>> got;
    provider.async_get([&](baton::error_code ec, baton::aws::fetched_credentials fc) { got.emplace(ec, std::move(fc)); });
    while (!got) ioc.run_one();
    ioc.restart(); // running out of work stopped it; the store's operations run on it next
    auto& [ec, fc] = *got;
    if (ec) die(exit_usage, fc.diag.message.empty() ? "no AWS credentials: " + ec.message() : fc.diag.message);
    return {std::move(provider), *fc.value, fc.source};
}

// The profile in use: --profile, else AWS_PROFILE / AWS_DEFAULT_PROFILE, else `default`.
baton::aws::profile_choice chosen_profile(options const& o) {
    if (!o.profile.empty()) return {o.profile, "--profile"};
    return baton::aws::choose_profile();
}

// The shared files, read once; broken ones are one clear line, not a silent default.
baton::aws::shared_config const& shared_files() {
    static baton::aws::shared_config const files = [] {
        baton::aws::shared_config c;
        baton::diagnostics d;
        if (baton::aws::load_shared_config(c, d)) die(exit_usage, d.message);
        return c;
    }();
    return files;
}

// The endpoint an AWS store uses: --endpoint, else the environment (AWS_ENDPOINT_URL_<SERVICE>,
// AWS_ENDPOINT_URL), else the profile's services section or endpoint_url, else none (the
// backend's AWS default). `source` says which, for messages.
struct endpoint_choice {
    std::string url;
    std::string source;
};

endpoint_choice choose_endpoint(options const& o, std::string_view service_id) {
    baton::diagnostics d;
    if (!o.endpoint.empty()) {
        if (!baton::http::parse_endpoint(o.endpoint, d)) die(exit_usage, "--endpoint: " + d.message);
        return {o.endpoint, "--endpoint"};
    }
    auto configured = baton::aws::resolve_endpoint_url(service_id, shared_files(), chosen_profile(o).name, d);
    if (!configured) die(exit_usage, d.message);
    if (*configured) return {(*configured)->url, (*configured)->source};
    return {};
}

// --region, else AWS_REGION (the SDKs' variable), else AWS_DEFAULT_REGION (the CLI's), else the
// profile's `region`; may be empty. Broken shared files are one clear line, not a silent default.
std::string choose_region(options const& o) {
    if (!o.region.empty()) return o.region;
    baton::diagnostics d;
    auto const choice = chosen_profile(o);
    if (!o.profile.empty() && !shared_files().find(o.profile))
        die(exit_usage, "--profile '" + o.profile + "' is not in the shared files (" + shared_files().describe_files() +
                            "); check the name");
    auto region = baton::aws::resolve_region(shared_files(), choice, d);
    return region ? region->name : std::string();
}

// " at ORIGIN (endpoint from SOURCE)": where requests go, for messages and the probe report.
std::string describe_location(baton::http::endpoint const& ep, endpoint_choice const& chosen,
                              std::string const& region) {
    return " at " + ep.origin() + " (endpoint " +
           (chosen.source.empty() ? "of AWS in " + region : "from " + chosen.source) + ")";
}

} // namespace baton_cli

#endif
