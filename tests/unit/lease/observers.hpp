// Part of the lease's unit tests (tests/unit/lease_test.cpp, one unit): observers and
// lease_metrics.
#ifndef BATON_TESTS_UNIT_LEASE_OBSERVERS_HPP
#define BATON_TESTS_UNIT_LEASE_OBSERVERS_HPP

// ---- observers -------------------------------------------------------------------

namespace {
// Records every event it is shown, as one line each.
struct recording_observer {
    std::shared_ptr<std::vector<std::string>> log = std::make_shared<std::vector<std::string>>();
    void on_acquired(baton::lease_acquired_event const& e) {
        log->push_back("acquired " + std::string(e.key) + " token " + std::to_string(e.fencing_token) +
                       (e.created_record ? " created" : "") + (e.took_over ? " takeover" : ""));
    }
    void on_renewed(baton::lease_renewed_event const& e) {
        log->push_back("renewed token " + std::to_string(e.fencing_token) +
                       (e.latency >= 0ns && e.margin > 0ns && e.margin <= renew_deadline ? " timed" : " BAD-TIMES"));
    }
    void on_lost(baton::lease_lost_event const& e) {
        log->push_back("lost token " + std::to_string(e.fencing_token) + ": " + std::string(e.reason) +
                       (e.detail.empty() ? "" : " / " + std::string(e.detail)));
    }
    void on_released(baton::lease_released_event const& e) {
        log->push_back("released token " + std::to_string(e.fencing_token) + (e.ec ? " " + e.ec.message() : " ok"));
    }
    void on_request(baton::lease_request_event const& e) {
        log->push_back(std::string("request ") + to_string(e.lane) + (e.write ? " write " : " read ") + to_string(e.kind));
    }
    void on_settled(baton::lease_settled_event const& e) {
        log->push_back(std::string("settled ") + to_string(e.lane) + " " + to_string(e.outcome) + " token " +
                       std::to_string(e.fencing_token));
    }
    void on_retry(baton::lease_retry_event const& e) {
        log->push_back(std::string("retry ") + to_string(e.lane) + " " + std::to_string(e.attempt) + " " + e.ec.message());
    }
};

using observed_lease = baton::basic_lease<baton::memory_backend, sim::manual_clock, baton::standard_retry,
                                          baton::backend_signer, asio::any_io_executor, recording_observer>;
} // namespace

TEST_CASE("an observer sees acquisition, renewals, every store answer, a takeover's conflict and the loss") {
    sim::scheduler sched(40);
    baton::memory_backend store(sched.get_executor());
    recording_observer seen;
    observed_lease a(sched.get_executor(), store, options("a", 41), {}, {}, {}, seen);
    acquire_now(sched, a);
    // Two renewals, each 90-110% of the interval after the last (a third comes at 270% at the earliest).
    sched.run_until(vtime(renew_interval * 22 / 10 + 1ms));
    baton::detail::lease_body intruder{"intruder#1", "", "n", 2, false, ttl};
    store.async_put("jobs/nightly", baton::detail::encode_lease_body(intruder), baton::precondition::none(),
                    [](error_code, baton::put_result) {});
    sched.run_until(vtime(renew_interval * 33 / 10 + 1ms));
    std::vector<std::string> const want{"request acquire write ok", "acquired jobs/nightly token 1 created",
                                        "request renew write ok",   "renewed token 1 timed",
                                        "request renew write ok",   "renewed token 1 timed",
                                        "request renew write conflict"};
    REQUIRE(seen.log->size() >= want.size() + 1);
    CHECK(std::vector<std::string>(seen.log->begin(), seen.log->begin() + want.size()) == want);
    // The refusal carried the current record (someone else's): the term ends at once, with no read.
    CHECK(seen.log->size() == want.size() + 1);
    CHECK(seen.log->back() == "lost token 1: taken over (the record changed or vanished) / the record changed");
}

TEST_CASE("an observer sees a release, and lease_metrics writes the figures in Prometheus text format") {
    sim::scheduler sched(42);
    baton::memory_backend store(sched.get_executor());
    baton::lease_metrics metrics;
    using metered_lease = baton::basic_lease<baton::memory_backend, sim::manual_clock, baton::standard_retry,
                                             baton::backend_signer, asio::any_io_executor, baton::lease_metrics>;
    metered_lease a(sched.get_executor(), store, options("a", 43), {}, {}, {}, metrics);
    acquire_now(sched, a);
    sched.run_until(vtime(renew_interval * 11 / 10 + 1ms)); // one renewal
    {
        std::string const text = metrics.prometheus_text();
        CHECK(text.find("baton_lease_acquisitions_total{key=\"jobs/nightly\",how=\"created\"} 1\n") != std::string::npos);
        CHECK(text.find("baton_lease_renewals_total{key=\"jobs/nightly\"} 1\n") != std::string::npos);
        CHECK(text.find("baton_lease_renewal_latency_seconds_count{key=\"jobs/nightly\"} 1\n") != std::string::npos);
        CHECK(text.find("baton_lease_renewal_latency_seconds_bucket{key=\"jobs/nightly\",le=\"+Inf\"} 1\n") != std::string::npos);
        CHECK(text.find("baton_lease_held{key=\"jobs/nightly\"} 1\n") != std::string::npos);
        CHECK(text.find("baton_lease_fencing_token{key=\"jobs/nightly\"} 1\n") != std::string::npos);
        CHECK(text.find("# TYPE baton_lease_renewal_latency_seconds histogram\n") != std::string::npos);
    }
    release_now(sched, a);
    // Released: the next participant takes it at once, with the next token.
    metered_lease b(sched.get_executor(), store, options("b", 44), {}, {}, {}, metrics);
    acquire_now(sched, b);
    std::string const text = metrics.prometheus_text();
    CHECK(text.find("baton_lease_releases_total{key=\"jobs/nightly\",result=\"ok\"} 1\n") != std::string::npos);
    CHECK(text.find("baton_lease_acquisitions_total{key=\"jobs/nightly\",how=\"free\"} 1\n") != std::string::npos);
    CHECK(text.find("baton_lease_fencing_token{key=\"jobs/nightly\"} 2\n") != std::string::npos);
    CHECK(text.find("baton_lease_requests_total{key=\"jobs/nightly\",lane=\"release\",request=\"write\",outcome=\"ok\"} 1\n") !=
          std::string::npos);
}

TEST_CASE("an observer sees each write in doubt settled, landed or not, and each retry, in every lane") {
    sim::scheduler sched(60);
    baton::memory_backend store(sched.get_executor());
    sim::fault_profile profile;
    profile.max_latency = 5ms;
    profile.request_timeout = 2s;
    faulty_store net(store, sched.get_executor(), 61, profile);
    net.set_faults_enabled(false); // only what the test scripts
    recording_observer seen;
    using observed_faulty_lease = baton::basic_lease<faulty_store, sim::manual_clock, baton::standard_retry,
                                                     baton::backend_signer, asio::any_io_executor, recording_observer>;
    observed_faulty_lease a(sched.get_executor(), net, options("a", 61), {}, {}, {}, seen);
    net.inject_next(sim::fault_kind::drop_response); // the claim lands; its answer is lost
    acquired got;
    a.async_acquire(on_acquired(got));
    sched.run_for(5s); // the timeout (2 s), a pause, the read back
    REQUIRE(got.ec.has_value());
    REQUIRE_FALSE(*got.ec);
    CHECK(got.grant.fencing_token == 1);
    net.inject_next(sim::fault_kind::drop_request); // the first renewal never arrives
    sched.run_until(vtime(renew_interval + 5s));    // its timeout, a read back, the renewal again
    net.inject_next(sim::fault_kind::drop_response); // the released marker lands; its answer is lost
    completed released;
    a.async_release(on_completed(released));
    sched.run_for(5s);
    REQUIRE(released.ec.has_value());
    CHECK_FALSE(*released.ec);
    auto count = [&](std::string const& line) { return std::count(seen.log->begin(), seen.log->end(), line); };
    std::string const timed_out = error_code(errc::timeout).message();
    CHECK(count("retry acquire 1 " + timed_out) == 1);
    CHECK(count("settled acquire landed token 1") == 1);
    CHECK(count("retry renew 1 " + timed_out) == 1);
    CHECK(count("settled renew not_landed token 1") == 1);
    CHECK(count("retry release 1 " + timed_out) == 1);
    CHECK(count("settled release landed token 1") == 1);
    CHECK(count("released token 1 ok") == 1);
    // The same through lease_metrics.
    baton::lease_metrics metrics;
    baton::lease_settled_event settled;
    settled.key = "k";
    settled.lane = baton::lease_lane::renew;
    settled.outcome = baton::settlement_outcome::not_landed;
    metrics.on_settled(settled);
    baton::lease_retry_event retried;
    retried.key = "k";
    retried.lane = baton::lease_lane::renew;
    metrics.on_retry(retried);
    metrics.on_retry(retried);
    std::string const text = metrics.prometheus_text();
    CHECK(text.find("baton_lease_settlements_total{key=\"k\",lane=\"renew\",outcome=\"not_landed\"} 1\n") !=
          std::string::npos);
    CHECK(text.find("baton_lease_retries_total{key=\"k\",lane=\"renew\"} 2\n") != std::string::npos);
}

TEST_CASE("lease_metrics escapes label values and counts conflicts by the store's cause") {
    baton::lease_metrics metrics;
    baton::diagnostics d;
    d.http_status = 412;
    d.service_code = "PreconditionFailed";
    baton::lease_request_event e;
    e.key = "a \"quoted\"\\key\n";
    e.lane = baton::lease_lane::renew;
    e.write = true;
    e.ec = errc::precondition_failed;
    e.kind = baton::classify_answer(e.ec, true);
    e.diag = &d;
    metrics.on_request(e);
    d.service_code = "ConditionalCheckFailedException";
    metrics.on_request(e);
    metrics.on_request(e);
    std::string const text = metrics.prometheus_text();
    std::string const key = "key=\"a \\\"quoted\\\"\\\\key\\n\"";
    CHECK(text.find("baton_lease_conflicts_total{" + key + ",cause=\"PreconditionFailed\"} 1\n") != std::string::npos);
    CHECK(text.find("baton_lease_conflicts_total{" + key + ",cause=\"ConditionalCheckFailedException\"} 2\n") !=
          std::string::npos);
    CHECK(text.find("baton_lease_requests_total{" + key + ",lane=\"renew\",request=\"write\",outcome=\"conflict\"} 3\n") !=
          std::string::npos);
    CHECK(baton::classify_answer(errc::throttled, true) == baton::answer_kind::throttled);
    CHECK(baton::classify_answer(errc::timeout, true) == baton::answer_kind::ambiguous);
    CHECK(baton::classify_answer(errc::timeout, false) == baton::answer_kind::failed);
    CHECK(baton::classify_answer(error_code{}, false) == baton::answer_kind::ok);
}

#endif
