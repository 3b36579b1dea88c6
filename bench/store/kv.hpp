// Part of store_bench (bench/store/main.cpp): kv and fenced against the raw floor.
#ifndef BATON_BENCH_STORE_KV_HPP
#define BATON_BENCH_STORE_KV_HPP

namespace {

// ---- kv and fenced against the raw floor ------------------------------------------------

template <class Backend>
int run_kv_figure(asio::io_context& ioc, std::function<Backend()> make, std::string const& store_name, args const& a) {
    int const n = static_cast<int>(a.num("n", 300)), clients = static_cast<int>(a.num("clients", 8));
    std::string const prefix = "bench/kv/" + random_suffix() + "/";
    auto rate = [](int ops, double ms) { return ops / (ms / 1000.0); };

    // (floor) read, then write conditional on the version read: 2 requests, no recipe.
    Backend raw = make();
    double floor_ms = 0;
    {
        auto const t0 = clock_type::now();
        for (int i = 0; i < n; ++i) {
            std::optional<baton::get_result> got;
            raw.async_get(prefix + "floor", [&](error_code ec, baton::get_result r) {
                if (ec) die("floor get: " + r.diag.to_string());
                got = std::move(r);
            });
            if (!run_until(ioc, [&] { return got.has_value(); }, 30s)) die("floor get timed out");
            auto pc = got->found ? baton::precondition::matches(got->found->version) : baton::precondition::absent();
            bool put = false;
            raw.async_put(prefix + "floor", std::to_string(i), pc, [&](error_code ec, baton::put_result r) {
                if (ec) die("floor put: " + r.diag.to_string());
                put = true;
            });
            if (!run_until(ioc, [&] { return put; }, 30s)) die("floor put timed out");
        }
        floor_ms = ms_since(t0);
    }
    auto increment = [](std::optional<baton::kv_entry> const& cur) -> std::optional<std::string> {
        return std::to_string(cur ? std::stoull(cur->value) + 1 : 1);
    };
    // (update) one client, sequential.
    double update_ms = 0;
    unsigned update_requests = 0;
    {
        baton::basic_kv<Backend> kv(ioc.get_executor(), make());
        auto const t0 = clock_type::now();
        for (int i = 0; i < n; ++i) {
            bool done = false;
            kv.async_update(prefix + "seq", increment, [&](error_code ec, baton::kv_write_result r) {
                if (ec) die("update: " + ec.message() + " " + r.diag.to_string());
                update_requests += r.requests;
                done = true;
            });
            if (!run_until(ioc, [&] { return done; }, 60s)) die("update timed out");
        }
        update_ms = ms_since(t0);
    }
    // (contended) K clients, N updates of one key at once.
    double contended_ms = 0;
    unsigned contended_requests = 0;
    int contended_ok = 0, contended_failed = 0;
    std::uint64_t final_count = 0;
    {
        std::vector<baton::basic_kv<Backend>> kvs;
        for (int c = 0; c < clients; ++c) kvs.emplace_back(ioc.get_executor(), make());
        // Each client runs its share one after another, as K workers of a service would.
        int done = 0;
        std::function<void(int, int)> next = [&](int c, int left) {
            if (left == 0) return;
            kvs[static_cast<std::size_t>(c)].async_update(prefix + "hot", increment, [&, c, left](error_code ec, baton::kv_write_result r) {
                ++done;
                contended_requests += r.requests;
                if (ec) ++contended_failed;
                else ++contended_ok;
                next(c, left - 1);
            });
        };
        auto const t0 = clock_type::now();
        for (int c = 0; c < clients; ++c) next(c, n / clients + (c < n % clients ? 1 : 0));
        if (!run_until(ioc, [&] { return done == n; }, 300s)) die("contended updates timed out");
        contended_ms = ms_since(t0);
        std::optional<baton::kv_entry> e;
        bool got = false;
        kvs[0].async_get(prefix + "hot", [&](error_code ec, std::optional<baton::kv_entry> v) {
            if (ec) die("get: " + ec.message());
            e = std::move(v);
            got = true;
        });
        run_until(ioc, [&] { return got; }, 30s);
        final_count = e ? std::stoull(e->value) : 0;
        if (final_count != static_cast<std::uint64_t>(contended_ok)) die("contended: final count differs from updates done");
    }
    // (fenced) a new holder's first write, then n more with its token.
    unsigned first_write = 0, next_writes = 0;
    {
        baton::basic_fenced<Backend> f(ioc.get_executor(), make());
        for (int i = 0; i <= n; ++i) {
            bool done = false;
            f.async_write(prefix + "fenced", std::to_string(i), 7, [&](error_code ec, baton::fenced_write_result r) {
                if (ec) die("fenced write: " + ec.message() + " " + r.diag.to_string());
                (i == 0 ? first_write : next_writes) += r.requests;
                done = true;
            });
            if (!run_until(ioc, [&] { return done; }, 30s)) die("fenced write timed out");
        }
    }
    std::printf("{\"harness\":\"baton_kv\",\"store\":\"%s\",\"n\":%d,\"clients\":%d,"
                "\"floor_ops_per_s\":%.1f,\"update_ops_per_s\":%.1f,\"update_vs_floor\":%.2f,\"requests_per_update\":%.2f,"
                "\"contended_ops_per_s\":%.1f,\"contended_vs_floor\":%.2f,\"contended_requests_per_update\":%.2f,"
                "\"contended_done\":%d,\"contended_failed\":%d,\"final_count\":%" PRIu64 ","
                "\"fenced_first_write_requests\":%u,\"fenced_requests_per_write\":%.2f}\n",
                store_name.c_str(), n, clients, rate(n, floor_ms), rate(n, update_ms), floor_ms / update_ms,
                double(update_requests) / n, rate(contended_ok, contended_ms), floor_ms / n / (contended_ms / std::max(1, contended_ok)),
                double(contended_requests) / std::max(1, contended_ok), contended_ok, contended_failed, final_count, first_write,
                double(next_writes) / n);
    return 0;
}

int cmd_kv(args const& a) {
    asio::io_context ioc(1);
    auto const store = a.str("store", "ddb");
    if (store == "ddb") {
        ensure_table();
        return run_kv_figure<baton::dynamodb_backend>(ioc, [&] { return baton::dynamodb_backend(ioc.get_executor(), ddb_params()); },
                                                      "dynalite", a);
    }
    if (store == "s3") {
        baton::s3_backend_params const p = s3_params(a);
        {
            baton::s3_backend b(ioc.get_executor(), p);
            std::optional<error_code> done;
            b.async_create_bucket([&](error_code ec, baton::diagnostics) { done = ec; });
            if (!run_until(ioc, [&] { return done.has_value(); }, 30s)) die("CreateBucket did not complete in 30 s");
        }
        // One backend per client, probed once each (as separate processes would be) before timing starts.
        return run_kv_figure<baton::s3_backend>(ioc, [&] {
            baton::s3_backend b(ioc.get_executor(), p);
            std::optional<error_code> done;
            b.async_probe([&](error_code ec, baton::capabilities) { done = ec; });
            if (!run_until(ioc, [&] { return done.has_value(); }, 30s) || *done) die("probe failed");
            return b;
        }, "rgw", a);
    }
    die("--store must be ddb or s3");
}

} // namespace

#endif
