// Part of store_bench (bench/store/main.cpp): the commit protocol, composed and native.
#ifndef BATON_BENCH_STORE_COMMIT_HPP
#define BATON_BENCH_STORE_COMMIT_HPP

namespace {

// ---- the commit protocol: put-if-absent and reads, composed and native -------------------

// Every request a store sends, counted (the protocol's own cleanups included; probes apart).
struct request_counter {
    std::uint64_t sent = 0;
    bool on_request(bench::store_op op) {
        if (op != bench::store_op::probe) ++sent;
        return false;
    }
};
template <class B>
using counted = bench::counting_store<B, request_counter>;

struct commit_figure {
    double commits_per_s = 0, requests_per_commit = 0, gets_per_s = 0, requests_per_get = 0;
};

// n put-if-absent of fresh keys, one after another, then n reads of them; requests counted by `sent`.
template <class Store>
commit_figure run_commits(asio::io_context& ioc, Store& store, std::uint64_t const& sent, int n, std::string const& prefix) {
    commit_figure f;
    std::uint64_t const before_puts = sent;
    auto const t0 = clock_type::now();
    for (int i = 0; i < n; ++i) {
        bool done = false;
        store.async_put(prefix + std::to_string(i) + ".json", "{\"entry\":" + std::to_string(i) + "}", baton::precondition::absent(),
                        [&](error_code ec, baton::put_result r) {
                            if (ec) die("put-if-absent: " + ec.message() + " " + r.diag.to_string());
                            done = true;
                        });
        if (!run_until(ioc, [&] { return done; }, 30s)) die("put-if-absent timed out");
    }
    double const put_ms = ms_since(t0);
    run_until(ioc, [] { return false; }, 200ms); // cleanups in flight land before the reads are counted
    f.commits_per_s = n / (put_ms / 1000.0);
    f.requests_per_commit = double(sent - before_puts) / n;
    std::uint64_t const before_gets = sent;
    auto const t1 = clock_type::now();
    for (int i = 0; i < n; ++i) {
        bool done = false;
        store.async_get(prefix + std::to_string(i) + ".json", [&](error_code ec, baton::get_result r) {
            if (ec || !r.found) die("get: " + ec.message() + " " + r.diag.to_string());
            done = true;
        });
        if (!run_until(ioc, [&] { return done; }, 30s)) die("get timed out");
    }
    f.gets_per_s = n / (ms_since(t1) / 1000.0);
    f.requests_per_get = double(sent - before_gets) / n;
    return f;
}

int cmd_commit(args const& a) {
    int const n = static_cast<int>(a.num("n", 300));
    asio::io_context ioc(1);
    ensure_table();
    auto make_bucket = [&](baton::s3_backend_params const& p) {
        baton::s3_backend b(ioc.get_executor(), p);
        std::optional<error_code> done;
        b.async_create_bucket([&](error_code ec, baton::diagnostics) { done = ec; });
        if (!run_until(ioc, [&] { return done.has_value(); }, 30s)) die("CreateBucket did not complete in 30 s");
    };
    std::string const prefix = "_delta_log/" + random_suffix() + "/";
    // Native: RGW's own conditional PUT (probed first, as a lease would).
    baton::s3_backend_params const rgw = s3_params(a);
    make_bucket(rgw);
    auto native_sent = std::make_shared<request_counter>();
    counted<baton::s3_backend> native(baton::s3_backend(ioc.get_executor(), rgw), native_sent);
    {
        std::optional<error_code> done;
        native.async_probe([&](error_code ec, baton::capabilities) { done = ec; });
        if (!run_until(ioc, [&] { return done.has_value(); }, 30s) || *done) die("RGW probe failed");
    }
    auto const nat = run_commits(ioc, native, native_sent->sent, n, prefix);
    // Composed: objects in s3rver (no preconditions), commits in dynalite; and objects in RGW, commits in dynalite.
    baton::s3_backend_params s3rver;
    s3rver.endpoint = need_env("BATON_S3RVER_ENDPOINT");
    s3rver.region = "us-east-1";
    s3rver.credentials.access_key_id = "S3RVER";
    s3rver.credentials.secret_access_key = "S3RVER";
    s3rver.bucket = a.str("bucket", "baton-bench");
    make_bucket(s3rver);
    using composed = baton::basic_commit_protocol<counted<baton::s3_backend>, counted<baton::dynamodb_backend>>;
    auto run_composed = [&](baton::s3_backend_params const& objects, std::string const& sub) {
        auto sent = std::make_shared<request_counter>();
        composed store(counted<baton::s3_backend>(baton::s3_backend(ioc.get_executor(), objects), sent),
                       counted<baton::dynamodb_backend>(baton::dynamodb_backend(ioc.get_executor(), ddb_params()), sent));
        std::optional<error_code> done;
        store.async_probe([&](error_code ec, baton::capabilities) { done = ec; });
        if (!run_until(ioc, [&] { return done.has_value(); }, 30s) || *done) die("composed probe failed");
        // The lock store's probe, which the first write would run, is out of the timing too.
        bool warm = false;
        store.async_put(prefix + "warm", "x", baton::precondition::none(), [&](error_code ec, baton::put_result r) {
            if (ec) die("warm-up put: " + r.diag.to_string());
            warm = true;
        });
        if (!run_until(ioc, [&] { return warm; }, 30s)) die("warm-up timed out");
        return run_commits(ioc, store, sent->sent, n, prefix + sub);
    };
    auto const on_s3rver = run_composed(s3rver, "s3rver/");
    auto const on_rgw = run_composed(rgw, "rgw/");
    std::printf("{\"harness\":\"baton_commit\",\"n\":%d,"
                "\"native_rgw_commits_per_s\":%.1f,\"native_rgw_requests_per_commit\":%.2f,\"native_rgw_gets_per_s\":%.1f,\"native_rgw_requests_per_get\":%.2f,"
                "\"s3rver_dynalite_commits_per_s\":%.1f,\"s3rver_dynalite_requests_per_commit\":%.2f,\"s3rver_dynalite_gets_per_s\":%.1f,\"s3rver_dynalite_requests_per_get\":%.2f,"
                "\"rgw_dynalite_commits_per_s\":%.1f,\"rgw_dynalite_requests_per_commit\":%.2f,\"rgw_dynalite_gets_per_s\":%.1f,\"rgw_dynalite_requests_per_get\":%.2f,"
                "\"rgw_dynalite_vs_native_commits\":%.2f,\"rgw_dynalite_vs_native_gets\":%.2f}\n",
                n, nat.commits_per_s, nat.requests_per_commit, nat.gets_per_s, nat.requests_per_get, on_s3rver.commits_per_s,
                on_s3rver.requests_per_commit, on_s3rver.gets_per_s, on_s3rver.requests_per_get, on_rgw.commits_per_s,
                on_rgw.requests_per_commit, on_rgw.gets_per_s, on_rgw.requests_per_get, on_rgw.commits_per_s / nat.commits_per_s,
                on_rgw.gets_per_s / nat.gets_per_s);
    return 0;
}

} // namespace

#endif
