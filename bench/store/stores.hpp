// Part of store_bench (bench/store/main.cpp): requests counted on the wire and at the store, and
// the DynamoDB table.
#ifndef BATON_BENCH_STORE_STORES_HPP
#define BATON_BENCH_STORE_STORES_HPP

namespace {

// ---- request counting --------------------------------------------------------------

// Wire requests by operation. Every HTTP request a backend sends is signed
// exactly once, so a signer that counts before signing sees all of them,
// including the GetItem the DynamoDB backend adds after a failed condition.
struct wire_counts {
    std::uint64_t get = 0, put = 0, erase = 0, other = 0;
    // Only requests signed inside [from, until) are counted (the measured window).
    clock_type::time_point from = clock_type::time_point::min(), until = clock_type::time_point::max();

    void note(baton::http::request const& r) {
        auto const now = clock_type::now();
        if (now < from || now >= until) return;
        std::string_view target;
        if (auto it = r.find("X-Amz-Target"); it != r.end()) target = std::string_view(it->value().data(), it->value().size());
        if (target.ends_with(".GetItem") || (target.empty() && r.method() == bhttp::verb::get)) ++get;
        else if (target.ends_with(".PutItem") || (target.empty() && r.method() == bhttp::verb::put)) ++put;
        else if (target.ends_with(".DeleteItem") || (target.empty() && r.method() == bhttp::verb::delete_)) ++erase;
        else ++other;
    }
    std::uint64_t total() const { return get + put + erase + other; }
};

template <class Inner>
struct counting_signer {
    Inner inner;
    std::shared_ptr<wire_counts> counts;

    error_code sign(baton::http::request& r, baton::aws::credentials const& c, baton::aws::signing_params const& p,
                    std::chrono::system_clock::time_point now) const {
        counts->note(r);
        return inner.sign(r, c, p, now);
    }
};

// Record-store operations and their outcomes, as the lease sees them.
struct store_counts {
    std::uint64_t gets = 0, puts = 0, puts_precondition_failed = 0, puts_other_error = 0, erases = 0;
    clock_type::time_point from = clock_type::time_point::min(), until = clock_type::time_point::max();
    bool in_window() const {
        auto const now = clock_type::now();
        return now >= from && now < until;
    }
};

// Counts a lease's requests within the window, a put's refusals and failures, and (through
// the Signer the lease hands its store) the requests on the wire.
struct lease_store_counter {
    std::shared_ptr<store_counts> sc;
    std::shared_ptr<wire_counts> wc;

    bool on_request(bench::store_op op) {
        if (!sc->in_window()) return false;
        if (op == bench::store_op::get) ++sc->gets;
        if (op == bench::store_op::put) ++sc->puts;
        if (op == bench::store_op::erase) ++sc->erases;
        return op == bench::store_op::put;
    }
    void on_answer(bench::store_op, error_code ec, baton::put_result const&) {
        if (!ec) return;
        if (ec == errc::precondition_failed) ++sc->puts_precondition_failed;
        else ++sc->puts_other_error;
    }
    template <class S>
    counting_signer<S> signer(S s) {
        return counting_signer<S>{std::move(s), wc};
    }
};

template <class Inner>
using counting_store = bench::counting_store<Inner, lease_store_counter>;

template <class Inner>
counting_store<Inner> counting(Inner inner, std::shared_ptr<store_counts> sc, std::shared_ptr<wire_counts> wc) {
    return counting_store<Inner>(std::move(inner), std::make_shared<lease_store_counter>(lease_store_counter{std::move(sc), std::move(wc)}));
}

static_assert(baton::record_store<counting_store<baton::dynamodb_backend>>);

// ---- DynamoDB setup ------------------------------------------------------------------

constexpr char const* bench_table = "baton-bench";

baton::dynamodb_backend_params ddb_params() {
    baton::dynamodb_backend_params p;
    p.endpoint = need_env("BATON_DYNAMODB_ENDPOINT");
    p.region = env("BATON_DYNAMODB_REGION").empty() ? "us-east-1" : env("BATON_DYNAMODB_REGION");
    p.credentials.access_key_id = need_env("BATON_DYNAMODB_ACCESS_KEY");
    p.credentials.secret_access_key = need_env("BATON_DYNAMODB_SECRET_KEY");
    p.table = bench_table;
    return p;
}

// Makes the table (or accepts it with this key schema) and waits until it is ACTIVE.
void ensure_table(std::string table = bench_table, std::string partition_key = "pk") {
    asio::io_context ioc(1);
    auto params = ddb_params();
    params.table = std::move(table);
    params.partition_key = std::move(partition_key);
    baton::dynamodb_backend b(ioc.get_executor(), std::move(params));
    std::optional<std::pair<error_code, baton::dynamodb_table_info>> out;
    b.async_create_table([&](error_code ec, baton::dynamodb_table_info i) { out.emplace(ec, std::move(i)); });
    if (!run_until(ioc, [&] { return out.has_value(); }, 30s)) die("CreateTable did not complete in 30 s");
    if (out->first) die("CreateTable: " + out->second.diag.to_string());
}

// Settings a user of a short critical section would write down: only the poll
// interval and the TTL are set; renewals, deadlines and skew stay at their defaults.
// Figures 1 and 3 (one client, back-to-back cycles) measure what a cycle costs on the wire, so
// they turn the fairness yield off: with it, a client without rivals pauses 1.25 poll intervals
// after each turn (1, 2, 4 ... 16 poll intervals long), which would be measured as latency.
// Figure 2 (contention) runs with the default yield.
enum class yield { by_default, never };

baton::lease_options lease_opts(std::string key, std::string owner, std::chrono::milliseconds poll,
                                 std::chrono::milliseconds ttl, yield y = yield::by_default) {
    baton::lease_options o;
    o.key = std::move(key);
    o.owner = std::move(owner);
    o.ttl = ttl;
    o.poll_interval = poll;
    if (y == yield::never) o.yield_after = std::chrono::milliseconds::max();
    return o;
}

} // namespace

#endif
