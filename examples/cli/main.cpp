// baton: run a command only while holding a lease (like flock(1), across machines).
//
//   baton run    --store URL --key K [--ttl 20s] [--wait DURATION | --no-wait] [--owner NAME] -- CMD ARGS...
//   baton status --store URL --key K
//   baton watch  --store URL --key K [--json] [--interval 1s]
//   baton probe  --store URL
//   baton kv get|put|rm|list --store URL KEY [--value V] [--if-version N | --if-absent] [--fence T] [--json]
//
// Stores are URLs: file:///dir (the embedded default: a local directory),
// s3://bucket[/prefix] and dynamodb://table (endpoint, region and credentials
// from --endpoint/--region and the usual AWS_* environment variables), and
// s3://bucket[/prefix]?lock=dynamodb://table (or ?lock=file:///dir) for an S3
// store that ignores preconditions: objects in S3, commits in the lock store.
// The command gets BATON_FENCING_TOKEN and BATON_LEASE_KEY, is terminated when
// the lease is lost (at the renew deadline, before the lease could expire),
// and baton exits with its status; 75 (EX_TEMPFAIL) when the lease could not
// be had; 64 (EX_USAGE) on bad usage and on stores that cannot work as
// configured (missing bucket or table, refused credentials, a store that
// ignores preconditions). SIGINT/SIGTERM are passed to the command, then the
// lease is released.
// If baton itself is killed, the command is killed too (it would run unprotected).
//
// This file parses nothing and runs nothing itself: it picks the store and hands over to the
// command's header beside it (args, stores, run, status, watch, kv, table, observer, usage).

#include "kv.hpp"
#include "observer.hpp"
#include "policy.hpp"
#include "run.hpp"
#include "status.hpp"
#include "table.hpp"
#include "watch.hpp"

namespace baton_cli {

template <class Signer, class Backend>
int dispatch(asio::io_context& ioc, Backend backend, options const& o, store_context const& store) {
    using Lease = baton::basic_lease<Backend, baton::steady_clock, baton::standard_retry, Signer,
                                     asio::any_io_executor, cli_observer>;
    if (o.command == "probe") return run_probe(ioc, backend, o, store);
    if (o.command == "kv") {
        baton::basic_kv<Backend> kv(ioc.get_executor(), std::move(backend));
        return run_kv(ioc, kv, o, store);
    }
    if (o.command == "table") {
        baton::lease_table_options to;
        to.worker = o.worker.empty() ? default_owner() + "-" + std::to_string(::getpid()) : o.worker;
        to.ttl = o.ttl;
        to.max_shards = o.max_commands;
        to.poll_interval = std::min<std::chrono::milliseconds>(1000ms, std::max<std::chrono::milliseconds>(o.ttl / 10, 10ms));
        try {
            baton::basic_lease_table<Backend, baton::steady_clock, baton::standard_retry, Signer, worker_lease_observer>
                table(ioc.get_executor(), std::move(backend), to, {}, {}, {}, worker_lease_observer{late_renewal_margin(o.ttl)});
            return run_table(ioc, table, o, store);
        } catch (baton::config_error const& e) {
            die(exit_usage, e.what());
        }
    }
    baton::lease_options lo;
    lo.key = o.key;
    lo.owner = o.owner.empty() ? default_owner() : o.owner;
    lo.ttl = o.ttl;
    lo.wall_clock_tokens = o.wall_clock_tokens;
    lo.poll_interval = std::min<std::chrono::milliseconds>(1000ms, std::max<std::chrono::milliseconds>(o.ttl / 10, 10ms));
    try {
        cli_observer observer;
        observer.metrics_file = std::make_shared<std::string const>(o.metrics_file);
        observer.verbose = o.verbose;
        observer.late_margin = late_renewal_margin(o.ttl);
        // A path that cannot be written is a usage error, found before the lease is touched.
        if (o.command == "run" && !observer.write_metrics())
            die(exit_usage, "--metrics-file " + o.metrics_file + ": " + std::strerror(errno));
        Lease lease(ioc.get_executor(), std::move(backend), lo, {}, {}, {}, observer);
        if (o.command == "status") return show_status(ioc, lease, o, store);
        if (o.command == "watch") return run_watch(ioc, lease, o, store);
        return run_command(ioc, lease, o, store);
    } catch (baton::config_error const& e) {
        die(exit_usage, e.what());
    }
}

} // namespace baton_cli

using namespace baton_cli;

int main(int argc, char** argv) {
    options const o = parse_args(argc, argv);
    store_url const url = parse_store(o.store);
    if (o.path_style && url.scheme != "s3")
        die(exit_usage, "--path-style and --virtual-hosted apply to s3:// stores only");
    if (o.policy) return print_policy(url, o);
    asio::io_context ioc(1);
    store_context store;
    store.url = url.text;
    try {
        if (url.scheme == "s3") {
            auto const chosen = choose_endpoint(o, "S3");
            baton::s3_backend_params p;
            p.bucket = url.path;
            p.key_prefix = url.prefix;
            p.endpoint = chosen.url;
            p.region = choose_region(o);
            if (p.region.empty()) {
                if (chosen.url.empty())
                    die(exit_usage, "no region: pass --region or set AWS_REGION (it names the AWS S3 endpoint)");
                p.region = "us-east-1"; // what S3-compatible stores expect unless configured otherwise
            }
            p.path_style = o.path_style;
            auto creds = load_credentials(ioc, o);
            p.credentials_provider = creds.provider;
            baton::s3_backend backend(ioc.get_executor(), p);
            baton::diagnostics d;
            auto const address = baton::aws::resolve_s3_address(p.endpoint, p.region, p.bucket, p.path_style, d);
            store.container = "bucket '" + p.bucket + "'";
            if (!p.key_prefix.empty()) store.container += ", prefix '" + p.key_prefix + "'";
            if (address) store.location = describe_location(address->endpoint, chosen, p.region);
            store.identity = creds.first.redacted();
            store.credential_source = creds.source;
            store.addressing = backend.path_style() ? "path-style" : "virtual-hosted";
            if (url.lock.empty()) return dispatch<baton::aws::sigv4_signer>(ioc, std::move(backend), o, store);
            store_url const lock = parse_store(url.lock);
            if (lock.scheme == "file") {
                baton::file_backend_params fp;
                fp.root = lock.path;
                store.addressing += std::string(store.addressing.empty() ? "" : ", ") + "commits in directory '" + lock.path + "'";
                store.lock_container = "lock directory '" + lock.path + "'";
                return dispatch<baton::aws::sigv4_signer>(
                    ioc, baton::s3_file_commit(std::move(backend), baton::file_backend(ioc.get_executor(), fp)), o, store);
            }
            // The lock table's endpoint is resolved like any dynamodb:// store's (--endpoint names S3's).
            baton::dynamodb_backend_params lp;
            lp.table = lock.path;
            auto lock_endpoint = baton::aws::resolve_endpoint_url("DynamoDB", shared_files(), chosen_profile(o).name, d);
            if (!lock_endpoint) die(exit_usage, d.message);
            if (*lock_endpoint) lp.endpoint = (*lock_endpoint)->url;
            lp.region = p.region;
            lp.credentials_provider = creds.provider;
            store.addressing += std::string(store.addressing.empty() ? "" : ", ") + "commits in table '" + lp.table + "' at " +
                                baton::http::endpoint::from_url(lp.effective_endpoint()).origin();
            store.lock_container = "lock table '" + lp.table + "'";
            store.lock_location = describe_location(
                baton::http::endpoint::from_url(lp.effective_endpoint()),
                *lock_endpoint ? endpoint_choice{(*lock_endpoint)->url, (*lock_endpoint)->source} : endpoint_choice{},
                lp.region);
            return dispatch<baton::aws::sigv4_signer>(
                ioc, baton::s3_dynamodb_commit(std::move(backend), baton::dynamodb_backend(ioc.get_executor(), lp)), o, store);
        }
        if (url.scheme == "dynamodb") {
            auto const chosen = choose_endpoint(o, "DynamoDB");
            baton::dynamodb_backend_params p;
            p.table = url.path;
            p.endpoint = chosen.url;
            p.region = choose_region(o);
            if (p.region.empty()) die(exit_usage, "no region: pass --region or set AWS_REGION");
            auto creds = load_credentials(ioc, o);
            p.credentials_provider = creds.provider;
            baton::dynamodb_backend backend(ioc.get_executor(), p);
            store.container = "table '" + p.table + "'";
            store.location =
                describe_location(baton::http::endpoint::from_url(p.effective_endpoint()), chosen, p.region);
            store.identity = creds.first.redacted();
            store.credential_source = creds.source;
            return dispatch<baton::aws::sigv4_signer>(ioc, std::move(backend), o, store);
        }
        if (url.scheme == "azblob") {
            baton::azure_blob_backend_params p;
            baton::diagnostics d;
            if (!o.endpoint.empty() && !baton::azure::parse_blob_address(o.endpoint, d))
                die(exit_usage, "--endpoint: " + d.message);
            // --endpoint stands for AZURE_STORAGE_SERVICE_ENDPOINT, so that a SAS token needs no
            // more to name its account; a connection string's endpoint it replaces below.
            baton::env_lookup const process = baton::process_environment();
            baton::env_lookup const environment = [&](std::string_view name) -> std::optional<std::string> {
                if (!o.endpoint.empty() && name == "AZURE_STORAGE_SERVICE_ENDPOINT") return o.endpoint;
                return process(name);
            };
            if (baton::azure::account_from_environment(p.account, d, environment))
                die(exit_usage, "azblob: " + d.message);
            std::string endpoint_source = "the environment";
            if (!o.endpoint.empty()) {
                p.account.blob_endpoint = o.endpoint;
                endpoint_source = "--endpoint";
            }
            p.container = url.path;
            p.key_prefix = url.prefix;
            baton::azure_blob_backend backend(ioc.get_executor(), p);
            store.container = "container '" + p.container + "'";
            if (!p.key_prefix.empty()) store.container += ", prefix '" + p.key_prefix + "'";
            store.location = " at " + p.account.blob_endpoint + " (endpoint from " + endpoint_source + ")";
            store.identity = "account " + p.account.name;
            store.credential_source = !p.account.key.empty() ? "Shared Key" : !p.account.sas.empty() ? "SAS token" : "anonymous";
            store.missing_hint = "create it (az storage container create --name " + p.container +
                                 "), or check --store and the endpoint";
            store.credentials_hint = "AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or "
                                     "AZURE_STORAGE_SAS_TOKEN";
            return dispatch<baton::backend_signer>(ioc, std::move(backend), o, store);
        }
        baton::file_backend_params p;
        p.root = url.path;
        store.container = "directory '" + url.path + "'";
        return dispatch<baton::backend_signer>(ioc, baton::file_backend(ioc.get_executor(), p), o, store);
    } catch (baton::config_error const& e) {
        die(exit_usage, e.what());
    } catch (std::exception const& e) {
        die(exit_failure, e.what());
    }
}
