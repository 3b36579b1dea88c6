// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
//
// failover_bench: one participant of the failover and handoff figures
// (bench/run-failover-bench.sh drives it; bench/failover/driver.py starts the processes, signals
// them and measures).
//
//   failover_bench setup  --store ddb|s3
//   failover_bench ROLE   --store ddb|s3 --key KEY [--ttl-ms 2000] [--poll-ms 100] [--skew 2]
//
// ROLE is one of
//   hold     acquire the lease; release it when stdin says "release" (EOF: exit holding it)
//   contend  acquire the lease, waiting while someone else holds it
//   lead     campaign in an election (basic_election) and lead until killed
//   standby  campaign, following the leader meanwhile, as examples/s3_leader.cpp does
// `setup` creates the table (DynamoDB, string HASH key `pk`) or the bucket (S3) once.
//
// The stores are those of tests/servers/with-servers.sh: BATON_DYNAMODB_* (dynalite, table
// --table, default baton-failover) and BATON_S3_* (Ceph RGW, bucket --bucket, default
// baton-failover). Every event is one JSON line on stdout whose "t" is CLOCK_MONOTONIC in
// nanoseconds (std::chrono::steady_clock on Linux), the clock the driver and the Node peer read
// too, so events of different processes compare directly:
//   ready         the first read of an acquisition was answered: a contender is waiting
//   held          acquired (or elected), with the token, whether it took over a silent holder,
//                 and the acquisition's slowest read and its claim's latency, in ms
//   renewed       a renewal's answer came, with its latency in ms (from sending it)
//   leader_expired  (standby) the leader it follows was reported expired
//   release_call  just before async_release is called
//   released      the release completed
//   error         what failed
// Only the poll interval, the ttl and the skew factor are set; renewals and the renew deadline
// keep their defaults (ttl/3 and 2/3 ttl).

// The two stores it measures and the two recipes, not <baton/baton.hpp>: the Azure and file
// stores' code would only add to the compile.
#include <baton/backend/dynamodb.hpp>
#include <baton/backend/s3.hpp>
#include <baton/recipe/election.hpp>
#include <baton/recipe/lease.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <unistd.h>

namespace {

namespace asio = boost::asio;
using baton::error_code;
using namespace std::chrono_literals;

[[noreturn]] void die(std::string const& why) {
    std::printf("{\"ev\":\"error\",\"what\":\"%s\"}\n", why.c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "failover_bench: %s\n", why.c_str());
    std::_Exit(1);
}

std::int64_t mono_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void event(char const* ev, std::string const& extra = {}) {
    std::printf("{\"ev\":\"%s\",\"t\":%lld%s}\n", ev, static_cast<long long>(mono_ns()), extra.c_str());
    std::fflush(stdout);
}

std::string env(char const* name) {
    char const* v = std::getenv(name);
    return v ? v : "";
}

std::string need_env(char const* name) {
    auto v = env(name);
    if (v.empty()) die(std::string(name) + " is not set: run under tests/servers/with-servers.sh");
    return v;
}

struct args {
    std::string role;
    std::map<std::string, std::string> kv;
    args(int argc, char** argv) {
        if (argc < 2) die("usage: failover_bench setup|hold|contend|lead|standby --store ddb|s3 [--key K] ...");
        role = argv[1];
        for (int i = 2; i < argc; i += 2) {
            std::string a = argv[i];
            if (!a.starts_with("--") || i + 1 >= argc) die("options are --name value: '" + a + "'");
            kv[a.substr(2)] = argv[i + 1];
        }
    }
    std::string str(std::string const& k, std::string def) const {
        auto it = kv.find(k);
        return it == kv.end() ? def : it->second;
    }
    double num(std::string const& k, double def) const {
        auto it = kv.find(k);
        if (it == kv.end()) return def;
        char* end = nullptr;
        double v = std::strtod(it->second.c_str(), &end);
        if (!end || *end) die("--" + k + " must be a number");
        return v;
    }
};

baton::dynamodb_backend_params ddb_params(args const& a) {
    baton::dynamodb_backend_params p;
    p.endpoint = need_env("BATON_DYNAMODB_ENDPOINT");
    p.region = env("BATON_DYNAMODB_REGION").empty() ? "us-east-1" : env("BATON_DYNAMODB_REGION");
    p.credentials.access_key_id = need_env("BATON_DYNAMODB_ACCESS_KEY");
    p.credentials.secret_access_key = need_env("BATON_DYNAMODB_SECRET_KEY");
    p.table = a.str("table", "baton-failover");
    return p;
}

baton::s3_backend_params s3_params(args const& a) {
    baton::s3_backend_params p;
    p.endpoint = need_env("BATON_S3_ENDPOINT");
    p.region = env("BATON_S3_REGION").empty() ? "us-east-1" : env("BATON_S3_REGION");
    p.credentials.access_key_id = need_env("BATON_S3_ACCESS_KEY");
    p.credentials.secret_access_key = need_env("BATON_S3_SECRET_KEY");
    p.bucket = a.str("bucket", "baton-failover");
    return p;
}

// Reports the first answered read of an acquisition: from then on the contender has seen the
// holder's record and is polling, which is when the driver may release, kill or freeze the holder.
// It also keeps the acquisition's request latencies, which the bounds leave out (docs/lease.md):
// the slowest read and the last write (the claim), reported with "held".
struct ready_observer {
    struct state {
        bool report = false;
        std::chrono::nanoseconds max_read{0}, last_write{0};
    };
    std::shared_ptr<state> s = std::make_shared<state>();
    void on_request(baton::lease_request_event const& e) {
        if (e.lane != baton::lease_lane::acquire) return;
        if (e.write) s->last_write = e.latency;
        else s->max_read = std::max(s->max_read, e.latency);
        if (s->report && !e.write && e.kind == baton::answer_kind::ok) {
            s->report = false;
            event("ready");
        }
    }
    // A holder's renewals: one sent before a kill or a stop may still land after it, up to its latency later.
    void on_renewed(baton::lease_renewed_event const& e) {
        event("renewed", ",\"latency_ms\":" + std::to_string(std::chrono::duration<double, std::milli>(e.latency).count()));
    }
};

std::string grant_fields(baton::lease_grant const& g, ready_observer const& obs) {
    auto ms = [](std::chrono::nanoseconds d) { return std::to_string(std::chrono::duration<double, std::milli>(d).count()); };
    return ",\"token\":" + std::to_string(g.fencing_token) + ",\"took_over\":" + (g.took_over ? "true" : "false") +
           ",\"max_read_ms\":" + ms(obs.s->max_read) + ",\"claim_ms\":" + ms(obs.s->last_write);
}

template <class Backend>
int run_role(asio::io_context& ioc, Backend backend, args const& a) {
    baton::lease_options o;
    o.key = a.str("key", "");
    if (o.key.empty()) die("--key is required");
    o.owner = a.role;
    o.value = a.role;
    o.ttl = std::chrono::milliseconds(static_cast<long long>(a.num("ttl-ms", 2000)));
    o.poll_interval = std::chrono::milliseconds(static_cast<long long>(a.num("poll-ms", 100)));
    o.max_clock_rate_skew = a.num("skew", 2.0);
    ready_observer obs;
    obs.s->report = a.role == "contend" || a.role == "standby";
    using lease_t = baton::basic_lease<Backend, baton::steady_clock, baton::standard_retry, baton::aws::sigv4_signer,
                                       asio::any_io_executor, ready_observer>;
    using election_t = baton::basic_election<Backend, baton::steady_clock, baton::standard_retry,
                                             baton::aws::sigv4_signer, asio::any_io_executor, ready_observer>;
    auto ex = ioc.get_executor();

    if (a.role == "hold" || a.role == "contend") {
        lease_t lease(ex, std::move(backend), o, {}, {}, {}, obs);
        asio::posix::stream_descriptor in(ioc, ::dup(0));
        std::string line;
        lease.async_acquire([&](error_code ec, baton::lease_grant g) {
            if (ec) die("acquire: " + ec.message() + " " + lease.last_diagnostics().to_string());
            event("held", grant_fields(g, obs));
            if (a.role == "contend") std::_Exit(0); // every run uses a key of its own: nothing to clean up
            asio::async_read_until(in, asio::dynamic_buffer(line), '\n', [&](error_code rec, std::size_t) {
                if (rec || line != "release\n") std::_Exit(0); // EOF: leave holding it, as a crash would
                event("release_call");
                lease.async_release([&](error_code rel) {
                    if (rel) die("release: " + rel.message());
                    event("released");
                    std::_Exit(0);
                });
            });
        });
        ioc.run();
        return 0;
    }
    if (a.role == "lead" || a.role == "standby") {
        election_t e(ex, std::move(backend), o, {}, {}, {}, obs);
        e.async_campaign([&](error_code ec, baton::lease_grant g) {
            if (ec) die("campaign: " + ec.message());
            event("held", grant_fields(g, obs));
            if (a.role == "standby") std::_Exit(0);
        });
        // A standby follows the leader while it campaigns, as a real one does to redirect clients;
        // the campaign alone decides when it leads.
        std::function<void(std::optional<baton::lease_info>)> follow = [&](std::optional<baton::lease_info> known) {
            e.async_wait_for_change(known, [&](error_code ec, std::optional<baton::lease_info> now) {
                if (ec) return;
                if (now && now->expired) event("leader_expired");
                follow(std::move(now));
            });
        };
        if (a.role == "standby")
            e.async_leader([&](error_code ec, std::optional<baton::lease_info> now) {
                if (!ec) follow(std::move(now));
            });
        ioc.run();
        return 0;
    }
    die("unknown role '" + a.role + "'");
}

int setup(asio::io_context& ioc, args const& a) {
    std::optional<error_code> done;
    std::string what;
    if (a.str("store", "ddb") == "ddb") {
        auto p = ddb_params(a);
        p.partition_key = "pk";
        baton::dynamodb_backend b(ioc.get_executor(), std::move(p));
        b.async_create_table([&](error_code ec, baton::dynamodb_table_info i) {
            done = ec;
            what = i.diag.to_string();
        });
        ioc.run_for(30s);
        if (!done || *done) die("CreateTable: " + what);
    } else {
        baton::s3_backend b(ioc.get_executor(), s3_params(a));
        b.async_create_bucket([&](error_code ec, baton::diagnostics d) {
            done = ec;
            what = d.to_string();
        });
        ioc.run_for(30s);
        if (!done || (*done && *done != baton::errc::precondition_failed)) die("CreateBucket: " + what);
    }
    event("setup");
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    args const a(argc, argv);
    asio::io_context ioc(1);
    if (a.role == "setup") return setup(ioc, a);
    auto const store = a.str("store", "ddb");
    if (store == "ddb") return run_role(ioc, baton::dynamodb_backend(ioc.get_executor(), ddb_params(a)), a);
    if (store == "s3") return run_role(ioc, baton::s3_backend(ioc.get_executor(), s3_params(a)), a);
    die("--store must be ddb or s3");
}
