// Part of store_bench (bench/store/main.cpp): figure 5, sequential acquire+release cycles of a
// lease on Azure Blob Storage (Azurite), next to bench/azure/sdk_cycle.js (@azure/storage-blob).
#ifndef BATON_BENCH_STORE_AZURE_HPP
#define BATON_BENCH_STORE_AZURE_HPP

namespace {

// ---- figure 5: sequential acquire+release cycles on Azure Blob Storage --------------------

// The account: BATON_AZURITE_* (tests/servers/with-servers.sh azurite), else the variables the
// Azure CLI reads (AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT with _KEY or
// _SAS_TOKEN and _SERVICE_ENDPOINT), as baton::azure::account_from_environment reads them.
baton::azure::account azure_account() {
    baton::azure::account acct;
    if (!env("BATON_AZURITE_ENDPOINT").empty()) {
        acct.name = need_env("BATON_AZURITE_ACCOUNT");
        acct.blob_endpoint = need_env("BATON_AZURITE_ENDPOINT");
        acct.key = need_env("BATON_AZURITE_KEY");
        return acct;
    }
    baton::diagnostics diag;
    if (auto ec = baton::azure::account_from_environment(acct, diag))
        die("no Azure account (BATON_AZURITE_* or AZURE_STORAGE_*): " + diag.to_string());
    return acct;
}

// Requests counted at the record store: the Azure backend sends exactly one HTTP request per
// get, put and erase (it retries nothing itself; the lease's retries come back through here),
// so these are the wire requests of the measured cycles. Only requests are counted, not answers:
// an answer passes through untouched, as it does under the plain alias (a failed write fails
// the run). The backend's implicit probe runs inside it, before the first conditional write,
// in the warm-up, and is not seen here.
struct azure_request_counter {
    bool on = false;
    std::uint64_t get = 0, put = 0, erase = 0, other = 0;

    bool on_request(bench::store_op op) {
        if (!on) return false;
        if (op == bench::store_op::get) ++get;
        else if (op == bench::store_op::put) ++put;
        else if (op == bench::store_op::erase) ++erase;
        else ++other;
        return false;
    }
    std::uint64_t total() const { return get + put + erase + other; }
};

// baton::azure_lease is basic_lease<azure_blob_backend>; this is the same lease over the same
// backend behind the forwarding counter (as figure 2 counts dynamodb_backend).
using counted_azure_store = bench::counting_store<baton::azure_blob_backend, azure_request_counter>;
using counted_azure_lease = baton::basic_lease<counted_azure_store>;
static_assert(baton::record_store<counted_azure_store>);

int cmd_azure_cycle(args const& a) {
    int const n = static_cast<int>(a.num("n", 1000)), warmup = static_cast<int>(a.num("warmup", 50));
    auto const max_time = std::chrono::seconds(a.num("max-seconds", 30));
    asio::io_context ioc(1);
    baton::azure_blob_backend_params p;
    p.account = azure_account();
    p.container = a.str("container", "bench-" + random_suffix()); // fresh: lower-case letters, digits, '-'
    baton::azure_blob_backend store(ioc.get_executor(), p);
    {
        std::optional<error_code> done;
        baton::diagnostics diag;
        store.async_create_container([&](error_code ec, baton::diagnostics d) {
            done = ec;
            diag = std::move(d);
        });
        if (!run_until(ioc, [&] { return done.has_value(); }, 30s)) die("Create Container did not complete in 30 s");
        if (*done && *done != errc::precondition_failed) die("Create Container: " + diag.to_string());
    }
    auto counter = std::make_shared<azure_request_counter>();
    std::string const key = "bench/cycle/" + random_suffix();
    counted_azure_lease lease(ioc.get_executor(), counted_azure_store(store, counter),
                              lease_opts(key, "bench", 1000ms, 20000ms, yield::never));
    // The warm-up: the probe (five to seven requests, once per backend), the first acquire
    // (Put Blob If-None-Match: *), connections opened. Then only the measured cycles are counted.
    auto w = run_cycles(ioc, lease, 0, warmup, max_time);
    if (!w.error.empty()) die("baton_azure_lease warm-up: " + w.error);
    counter->on = true;
    auto r = run_cycles(ioc, lease, 0, n, max_time);
    counter->on = false;
    // The record a cycle writes (the released marker), for the size of the bodies on the wire.
    std::size_t record_bytes = 0;
    {
        std::optional<error_code> done;
        store.async_get(key, [&](error_code ec, baton::get_result g) {
            done = ec;
            if (g.found) record_bytes = g.found->body.size();
        });
        if (!run_until(ioc, [&] { return done.has_value(); }, 30s) || *done) die("Get Blob of the lease record failed");
    }
    char extra[320];
    double const cycles = static_cast<double>(r.lat.size());
    std::snprintf(extra, sizeof extra,
                  ",\"requests_per_cycle\":%.2f,\"put\":%" PRIu64 ",\"get\":%" PRIu64 ",\"delete\":%" PRIu64
                  ",\"other\":%" PRIu64 ",\"record_bytes\":%zu,\"connections_opened\":%" PRIu64 ",\"x_ms_version\":\"%s\"",
                  cycles > 0 ? static_cast<double>(counter->total()) / cycles : 0.0, counter->put, counter->get,
                  counter->erase, counter->other, record_bytes, store.client().connections_opened(),
                  std::string(baton::azure::api_version).c_str());
    print_cycle("baton_azure_lease", "cycle", r, extra);
    return 0;
}

} // namespace

#endif
