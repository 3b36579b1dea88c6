// Part of store_bench (bench/store/main.cpp): figure 2, contention across processes.
#ifndef BATON_BENCH_STORE_CONTENTION_HPP
#define BATON_BENCH_STORE_CONTENTION_HPP

namespace {

// ---- figure 2: contention across processes --------------------------------------------

using counted_ddb_lease =
    baton::basic_lease<counting_store<baton::dynamodb_backend>, baton::steady_clock, baton::standard_retry,
                       baton::aws::sigv4_signer>;

// A contender's lease: --poll-ms, --ttl-ms, and --yield-ms (lease_options::yield_after; 0, the
// default, is two poll intervals; -1 never yields).
baton::lease_options contender_opts(args const& a, int id) {
    auto o = lease_opts(a.str("key", ""), "bench-" + std::to_string(id), std::chrono::milliseconds(a.num("poll-ms", 5)),
                        std::chrono::milliseconds(a.num("ttl-ms", 20000)));
    auto const y = a.num("yield-ms", 0);
    o.yield_after = y < 0 ? std::chrono::milliseconds::max() : std::chrono::milliseconds(y);
    return o;
}

// One contender: loops acquire (waiting) -> hold -> release between `start` and `deadline`,
// then writes its intervals and counts to --out.
int cmd_contend_child(args const& a) {
    auto const start = clock_type::time_point(std::chrono::nanoseconds(a.num("start-ns", 0)));
    auto const deadline = clock_type::time_point(std::chrono::nanoseconds(a.num("deadline-ns", 0)));
    auto const hold = std::chrono::milliseconds(a.num("hold-ms", 2));
    std::string const out_path = a.str("out", "");
    int const id = static_cast<int>(a.num("id", 0));

    asio::io_context ioc(1);
    auto sc = std::make_shared<store_counts>();
    auto wc = std::make_shared<wire_counts>();
    sc->from = wc->from = start;
    sc->until = wc->until = deadline;
    auto store = counting(baton::dynamodb_backend(ioc.get_executor(), ddb_params()), sc, wc);
    counted_ddb_lease lease(ioc.get_executor(), store,
                            contender_opts(a, id));
    asio::steady_timer hold_timer(ioc);

    struct interval {
        std::int64_t acquired, released;
    };
    std::vector<interval> intervals;
    std::vector<double> waits;
    std::uint64_t acquire_errors = 0, release_errors = 0;
    std::string last_error;
    bool finished = false;

    std::this_thread::sleep_until(start);
    std::function<void()> loop = [&] {
        auto const w0 = clock_type::now();
        if (w0 >= deadline) {
            finished = true;
            return;
        }
        baton::acquire_options o;
        o.timeout = std::chrono::ceil<std::chrono::milliseconds>(deadline - w0);
        lease.async_acquire(o, [&, w0](error_code ec, baton::lease_grant) {
            if (ec) {
                if (ec != errc::timeout) {
                    ++acquire_errors;
                    last_error = "acquire: " + ec.message() + " " + lease.last_diagnostics().to_string();
                }
                finished = true;
                return;
            }
            auto const t_acquired = clock_type::now();
            hold_timer.expires_after(hold);
            hold_timer.async_wait([&, w0, t_acquired](error_code) {
                auto const t_release = clock_type::now();
                if (t_acquired < deadline) {
                    intervals.push_back({mono_ns(t_acquired), mono_ns(t_release)});
                    waits.push_back(std::chrono::duration<double, std::milli>(t_acquired - w0).count());
                }
                lease.async_release([&](error_code ec2) {
                    if (ec2) {
                        ++release_errors;
                        last_error = "release: " + ec2.message() + " " + lease.last_diagnostics().to_string();
                    }
                    loop();
                });
            });
        });
    };
    loop();
    if (!run_until(ioc, [&] { return finished; }, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - start) + 30s))
        die("contender " + std::to_string(id) + " did not finish");

    std::FILE* f = std::fopen(out_path.c_str(), "w");
    if (!f) die("cannot write " + out_path);
    std::fprintf(f, "C %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                    " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
                 sc->gets, sc->puts, sc->puts_precondition_failed, sc->puts_other_error, sc->erases, wc->get, wc->put,
                 wc->erase, wc->other, acquire_errors, release_errors);
    for (std::size_t i = 0; i < intervals.size(); ++i)
        std::fprintf(f, "I %" PRId64 " %" PRId64 " %.4f\n", intervals[i].acquired, intervals[i].released, waits[i]);
    std::fprintf(f, "U %.6f\n", client_cost::now().cpu);
    if (!last_error.empty()) std::fprintf(f, "E %s\n", last_error.c_str());
    std::fclose(f);
    return 0;
}

int cmd_ddb_contend(args const& a) {
    int const procs = static_cast<int>(a.num("procs", 8));
    long long const seconds = a.num("seconds", 10), hold_ms = a.num("hold-ms", 2), poll_ms = a.num("poll-ms", 5),
                    ttl_ms = a.num("ttl-ms", 20000), yield_ms = a.num("yield-ms", 0);
    if (procs < 1 || procs > 64 || seconds < 1 || seconds > 120) die("--procs 1..64, --seconds 1..120");
    ensure_table();
    std::string const key = "bench/contended/" + random_suffix();
    char dir_template[] = "/tmp/baton-store-bench.XXXXXX";
    char* dir = ::mkdtemp(dir_template);
    if (!dir) die("mkdtemp failed");
    auto const start = clock_type::now() + 300ms; // children are up in a few ms
    auto const deadline = start + std::chrono::seconds(seconds);

    std::vector<pid_t> kids;
    std::vector<std::string> outs;
    for (int i = 0; i < procs; ++i) {
        outs.push_back(std::string(dir) + "/child-" + std::to_string(i));
        std::vector<std::string> argv_s = {"store_bench",  "ddb-contend-child",
                                           "--id",         std::to_string(i),
                                           "--key",        key,
                                           "--start-ns",   std::to_string(mono_ns(start)),
                                           "--deadline-ns", std::to_string(mono_ns(deadline)),
                                           "--hold-ms",    std::to_string(hold_ms),
                                           "--poll-ms",    std::to_string(poll_ms),
                                           "--ttl-ms",     std::to_string(ttl_ms),
                                           "--yield-ms",   std::to_string(yield_ms),
                                           "--out",        outs.back()};
        std::vector<char*> argv_c;
        for (auto& s : argv_s) argv_c.push_back(s.data());
        argv_c.push_back(nullptr);
        pid_t pid = 0;
        if (int rc = ::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv_c.data(), environ); rc != 0)
            die("posix_spawn: " + std::string(std::strerror(rc)));
        kids.push_back(pid);
    }
    bool all_ok = true;
    for (pid_t pid : kids) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) all_ok = false;
    }
    if (!all_ok) die("a contender failed (see its message above)");

    struct iv {
        std::int64_t a, r;
        int who;
    };
    std::vector<iv> all;
    std::vector<double> waits;
    std::vector<std::uint64_t> per_proc(static_cast<std::size_t>(procs), 0);
    std::array<std::uint64_t, 11> sum{};
    std::string errors;
    double cpu_total = 0; // whole life of each contender, set-up included
    for (int i = 0; i < procs; ++i) {
        std::FILE* f = std::fopen(outs[static_cast<std::size_t>(i)].c_str(), "r");
        if (!f) die("contender " + std::to_string(i) + " wrote no result");
        char line[4096];
        while (std::fgets(line, sizeof line, f)) {
            if (line[0] == 'C') {
                std::array<unsigned long long, 11> c{};
                if (std::sscanf(line + 2, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &c[0], &c[1], &c[2],
                                &c[3], &c[4], &c[5], &c[6], &c[7], &c[8], &c[9], &c[10]) != 11)
                    die("bad counts line from contender " + std::to_string(i));
                for (std::size_t k = 0; k < c.size(); ++k) sum[k] += c[k];
            } else if (line[0] == 'I') {
                long long ta = 0, tr = 0;
                double w = 0;
                if (std::sscanf(line + 2, "%lld %lld %lf", &ta, &tr, &w) != 3) die("bad interval line");
                all.push_back({ta, tr, i});
                waits.push_back(w);
                ++per_proc[static_cast<std::size_t>(i)];
            } else if (line[0] == 'U') {
                cpu_total += std::strtod(line + 2, nullptr);
            } else if (line[0] == 'E') {
                std::string e = line + 2;
                while (!e.empty() && (e.back() == '\n' || e.back() == '"' || e.back() == '\\')) e.pop_back();
                for (auto& ch : e)
                    if (ch == '"' || ch == '\\') ch = '\'';
                errors += (errors.empty() ? "" : "; ") + e;
            }
        }
        std::fclose(f);
        std::remove(outs[static_cast<std::size_t>(i)].c_str());
    }
    ::rmdir(dir);

    // Mutual exclusion: sorted by acquisition, every interval must start after all earlier ones ended.
    std::sort(all.begin(), all.end(), [](iv const& x, iv const& y) { return x.a < y.a; });
    std::uint64_t overlaps = 0, handovers = 0; // handover: acquired by another process than the last holder
    for (std::size_t i = 1; i < all.size(); ++i) handovers += all[i].who != all[i - 1].who;
    std::int64_t max_end = std::numeric_limits<std::int64_t>::min(), min_gap = std::numeric_limits<std::int64_t>::max();
    for (auto const& x : all) {
        if (x.a < max_end) ++overlaps;
        else if (max_end != std::numeric_limits<std::int64_t>::min()) min_gap = std::min(min_gap, x.a - max_end);
        max_end = std::max(max_end, x.r);
    }
    std::uint64_t const acq = all.size();
    double const per = acq ? 1.0 / static_cast<double>(acq) : 0.0;
    auto const [gets, puts, put_pf, put_err, erases, w_get, w_put, w_del, w_other, acq_err, rel_err] = sum;
    (void)erases;
    std::uint64_t const wire = w_get + w_put + w_del + w_other;
    std::uint64_t served = 0, min_pp = ~0ull, max_pp = 0;
    std::string pp;
    double pp_sum = 0, pp_squares = 0; // Jain's fairness index: (sum x)^2 / (n sum x^2), 1 = all equal
    for (auto c : per_proc) {
        pp_sum += static_cast<double>(c);
        pp_squares += static_cast<double>(c) * static_cast<double>(c);
    }
    double const jain = pp_squares > 0 ? pp_sum * pp_sum / (static_cast<double>(procs) * pp_squares) : 0.0;
    for (auto c : per_proc) {
        served += c > 0;
        min_pp = std::min(min_pp, c);
        max_pp = std::max(max_pp, c);
        pp += (pp.empty() ? "" : ",") + std::to_string(c);
    }
    // Puts split by purpose: an acquisition's winning write and its release are 2 per
    // acquisition; the rest are lost races (failed conditions) or other errors.
    std::printf("{\"harness\":\"baton_dynamodb_lease_contention\",\"variant\":\"procs-k%d-poll%lldms%s\",\"k\":%d,"
                "\"seconds\":%lld,\"hold_ms\":%lld,\"poll_ms\":%lld,\"ttl_ms\":%lld,\"acquisitions\":%" PRIu64
                ",\"ops_per_s\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_wait_ms\":%.3f,"
                "\"requests_per_acq\":%.2f,\"wire_get_per_acq\":%.2f,\"wire_put_per_acq\":%.2f,"
                "\"poll_reads_per_acq\":%.2f,\"reads_after_failed_put_per_acq\":%.2f,"
                "\"failed_cond_puts_per_acq\":%.2f,\"other_put_errors\":%" PRIu64 ",\"acquire_errors\":%" PRIu64
                ",\"release_errors\":%" PRIu64 ",\"handovers_per_s\":%.1f,\"clients_that_acquired\":%" PRIu64 ",\"min_per_client\":%" PRIu64
                ",\"max_per_client\":%" PRIu64 ",\"per_client\":[%s],\"jain\":%.3f,\"overlaps\":%" PRIu64
                ",\"min_handover_gap_ms\":%.3f,\"client_cpu_us_per_acq\":%.1f,\"wire\":{\"GetItem\":%" PRIu64 ",\"PutItem\":%" PRIu64
                ",\"DeleteItem\":%" PRIu64 ",\"other\":%" PRIu64 "},\"store\":{\"get\":%" PRIu64 ",\"put\":%" PRIu64
                "}%s%s%s}\n",
                procs, poll_ms, yield_ms == 0 ? "" : ("-yield" + std::to_string(yield_ms) + "ms").c_str(), procs,
                seconds, hold_ms, poll_ms, ttl_ms, acq,
                static_cast<double>(acq) / static_cast<double>(seconds), pct(waits, 50), pct(waits, 99),
                pct(waits, 100), static_cast<double>(wire) * per, static_cast<double>(w_get) * per,
                static_cast<double>(w_put) * per, static_cast<double>(gets) * per,
                static_cast<double>(w_get > gets ? w_get - gets : 0) * per, static_cast<double>(put_pf) * per,
                put_err, acq_err, rel_err, static_cast<double>(handovers) / static_cast<double>(seconds), served, min_pp == ~0ull ? 0 : min_pp, max_pp, pp.c_str(), jain, overlaps,
                min_gap == std::numeric_limits<std::int64_t>::max() ? 0.0 : static_cast<double>(min_gap) / 1e6,
                cpu_total * 1e6 * per, w_get,
                w_put, w_del, w_other, gets, puts, errors.empty() ? "" : ",\"errors\":\"", errors.c_str(),
                errors.empty() ? "" : "\"");
    std::fflush(stdout);
    return overlaps == 0 ? 0 : 3;
}

} // namespace

#endif
