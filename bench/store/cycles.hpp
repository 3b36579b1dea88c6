// Part of store_bench (bench/store/main.cpp): figures 1 and 3, sequential acquire+release cycles
// on DynamoDB and S3.
#ifndef BATON_BENCH_STORE_CYCLES_HPP
#define BATON_BENCH_STORE_CYCLES_HPP

namespace {

// ---- figure 1 and 3: sequential acquire+release cycles --------------------------------

struct cycle_result {
    std::vector<double> lat;
    double secs = 0;
    client_cost cost;
    std::string error;
};

template <class Lease>
cycle_result run_cycles(asio::io_context& ioc, Lease& lease, int warmup, int n, std::chrono::seconds max_time) {
    cycle_result out;
    out.lat.reserve(static_cast<std::size_t>(n));
    int done = 0;
    bool finished = false;
    clock_type::time_point t0 = clock_type::now(), t_cycle, deadline = clock_type::time_point::max();
    client_cost cost0;
    std::function<void()> next = [&] {
        if (done == warmup) {
            t0 = clock_type::now();
            cost0 = client_cost::now();
            deadline = t0 + max_time;
        }
        if (done >= warmup + n || clock_type::now() >= deadline) {
            out.secs = std::chrono::duration<double>(clock_type::now() - t0).count();
            out.cost = client_cost::now() - cost0;
            finished = true;
            return;
        }
        t_cycle = clock_type::now();
        lease.async_acquire([&](error_code ec, baton::lease_grant) {
            if (ec) {
                out.error = "acquire: " + ec.message() + " " + lease.last_diagnostics().to_string();
                finished = true;
                return;
            }
            lease.async_release([&](error_code ec2) {
                if (ec2) {
                    out.error = "release: " + ec2.message() + " " + lease.last_diagnostics().to_string();
                    finished = true;
                    return;
                }
                if (done >= warmup) out.lat.push_back(ms_since(t_cycle));
                ++done;
                next();
            });
        });
    };
    next();
    if (!run_until(ioc, [&] { return finished; }, max_time + 60s)) out.error = "timed out";
    return out;
}

// One JSON line per measured run: rates, latency percentiles and the client's cost per operation.
void print_result(char const* harness, std::string const& variant, std::vector<double> const& lat, double secs,
                  client_cost const& cost, std::string const& extra) {
    auto const n = static_cast<double>(lat.size());
    std::printf("{\"harness\":\"%s\",\"variant\":\"%s\",\"n\":%zu,\"secs\":%.3f,\"ops_per_s\":%.1f,\"p50_ms\":%.3f,"
                "\"p99_ms\":%.3f,\"max_ms\":%.3f,\"client_cpu_us_per_op\":%.1f,\"client_user_us_per_op\":%.1f,"
                "\"client_allocs_per_op\":%.1f%s}\n",
                harness, variant.c_str(), lat.size(), secs, n / secs, pct(lat, 50), pct(lat, 99), pct(lat, 100),
                cost.cpu * 1e6 / n, cost.user * 1e6 / n, static_cast<double>(cost.allocs) / n, extra.c_str());
    std::fflush(stdout);
}

void print_cycle(char const* harness, char const* variant, cycle_result const& r, std::string const& extra) {
    if (!r.error.empty()) die(std::string(harness) + ": " + r.error);
    print_result(harness, variant, r.lat, r.secs, r.cost, extra);
}

int cmd_ddb_cycle(args const& a) {
    int const n = static_cast<int>(a.num("n", 2000)), warmup = static_cast<int>(a.num("warmup", 50));
    ensure_table();
    asio::io_context ioc(1);
    baton::dynamodb_backend store(ioc.get_executor(), ddb_params());
    baton::dynamodb_lease lease(ioc.get_executor(), store,
                                lease_opts("bench/cycle/" + random_suffix(), "bench", 1000ms, 20000ms, yield::never));
    // Count wire requests with the exact alias: wrap the signer the lease adopted (same signing work).
    auto wc = std::make_shared<wire_counts>();
    lease.backend().use_signer(counting_signer<baton::aws::sigv4_signer>{baton::aws::sigv4_signer{}, wc});
    auto r = run_cycles(ioc, lease, warmup, n, std::chrono::seconds(a.num("max-seconds", 30)));
    char extra[256];
    double const cycles = static_cast<double>(r.lat.size() + static_cast<std::size_t>(warmup));
    std::snprintf(extra, sizeof extra,
                  ",\"requests_per_cycle\":%.2f,\"put\":%" PRIu64 ",\"get\":%" PRIu64 ",\"delete\":%" PRIu64
                  ",\"connections_opened\":%" PRIu64,
                  static_cast<double>(wc->total()) / cycles, wc->put, wc->get, wc->erase,
                  lease.backend().client().connections_opened());
    print_cycle("baton_dynamodb_lease", "cycle", r, extra);
    return 0;
}

// The S3 store of the figures: BATON_S3_* (Ceph RGW under with-servers.sh), bucket --bucket.
baton::s3_backend_params s3_params(args const& a) {
    baton::s3_backend_params p;
    p.endpoint = need_env("BATON_S3_ENDPOINT");
    p.region = env("BATON_S3_REGION").empty() ? "us-east-1" : env("BATON_S3_REGION");
    p.credentials.access_key_id = need_env("BATON_S3_ACCESS_KEY");
    p.credentials.secret_access_key = need_env("BATON_S3_SECRET_KEY");
    p.bucket = a.str("bucket", "baton-bench");
    return p;
}

int cmd_s3_cycle(args const& a) {
    int const n = static_cast<int>(a.num("n", 1000)), warmup = static_cast<int>(a.num("warmup", 50));
    asio::io_context ioc(1);
    baton::s3_backend_params const p = s3_params(a);
    baton::s3_backend store(ioc.get_executor(), p);
    {
        std::optional<error_code> done;
        baton::diagnostics diag;
        store.async_create_bucket([&](error_code ec, baton::diagnostics d) {
            done = ec;
            diag = std::move(d);
        });
        if (!run_until(ioc, [&] { return done.has_value(); }, 30s)) die("CreateBucket did not complete in 30 s");
        if (*done && *done != errc::precondition_failed) die("CreateBucket: " + diag.to_string());
    }
    // The probe (five to nine requests, once per backend) runs in the warm-up.
    baton::s3_lease lease(ioc.get_executor(), store, lease_opts("bench/cycle/" + random_suffix(), "bench", 1000ms, 20000ms, yield::never));
    auto r = run_cycles(ioc, lease, warmup, n, std::chrono::seconds(a.num("max-seconds", 30)));
    char extra[160];
    std::snprintf(extra, sizeof extra, ",\"connections_opened\":%" PRIu64 ",\"if_match_unquoted\":%s",
                  lease.backend().client().connections_opened(),
                  lease.backend().sends_unquoted_etags() ? "true" : "false");
    print_cycle("baton_s3_lease", "cycle", r, extra);
    return 0;
}

} // namespace

#endif
