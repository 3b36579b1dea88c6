// Fenced writes against a real store, the same scenarios on every backend:
// a holder paused past its lease and taken over is refused by the store, and
// many writers with one token on one key all land whole.
#ifndef BATON_TEST_COMMON_FENCED_SCENARIOS_HPP
#define BATON_TEST_COMMON_FENCED_SCENARIOS_HPP

#include <baton/recipe/fenced.hpp>
#include <baton/recipe/lease.hpp>

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace test_common {

// Runs `ioc` until `done()` or `limit` of real time.
template <class Pred>
inline bool run_io_until(boost::asio::io_context& ioc, Pred done, std::chrono::milliseconds limit) {
    auto const end = std::chrono::steady_clock::now() + limit;
    ioc.restart();
    while (!done() && std::chrono::steady_clock::now() < end) ioc.run_for(std::chrono::milliseconds(10));
    return done();
}

struct fenced_outcome {
    std::optional<baton::error_code> ec;
    baton::fenced_write_result r;
};

/** The paused-holder scenario on `Backend`, built for an executor by `make`.

    Holder A acquires a lease (ttl `ttl`) and writes fenced with its token on its own
    io_context, which then stops running: A is paused, as by a GC pause or SIGSTOP. B waits out
    the takeover window, acquires with a larger token and writes. A resumes and writes with its
    old token, through the version it cached: the store refuses it (`errc::fenced`, B's token
    named), and the record keeps B's value.
*/
template <class Backend, class Make>
void check_paused_holder_is_fenced(Make make, std::string const& key, std::chrono::milliseconds ttl) {
    using lease_t = baton::basic_lease<Backend>;
    using fenced_t = baton::basic_fenced<Backend>;
    boost::asio::io_context paused, live;
    auto lease_options = [&](std::string owner) {
        baton::lease_options o;
        o.key = key + ".lease";
        o.owner = std::move(owner);
        o.ttl = ttl;
        o.poll_interval = std::chrono::milliseconds(100);
        return o;
    };

    lease_t a(paused.get_executor(), make(paused.get_executor()), lease_options("a"));
    fenced_t fa(paused.get_executor(), make(paused.get_executor()));
    std::optional<baton::error_code> aec;
    baton::lease_grant ag;
    a.async_acquire([&](baton::error_code ec, baton::lease_grant g) { aec = ec; ag = g; });
    REQUIRE(run_io_until(paused, [&] { return aec.has_value(); }, std::chrono::seconds(30)));
    REQUIRE_FALSE(*aec);
    fenced_outcome w;
    fa.async_write(key, "from a", ag.fencing_token, [&](baton::error_code ec, baton::fenced_write_result r) { w = {ec, r}; });
    REQUIRE(run_io_until(paused, [&] { return w.ec.has_value(); }, std::chrono::seconds(30)));
    INFO(w.r.diag.to_string());
    REQUIRE_FALSE(*w.ec);
    // A is paused from here: nothing on `paused` runs, its renewals included.

    lease_t b(live.get_executor(), make(live.get_executor()), lease_options("b"));
    fenced_t fb(live.get_executor(), make(live.get_executor()));
    std::optional<baton::error_code> bec;
    baton::lease_grant bg;
    b.async_acquire([&](baton::error_code ec, baton::lease_grant g) { bec = ec; bg = g; });
    REQUIRE(run_io_until(live, [&] { return bec.has_value(); }, ttl * 4 + std::chrono::seconds(30)));
    REQUIRE_FALSE(*bec);
    CHECK(bg.took_over);
    CHECK(bg.fencing_token > ag.fencing_token);
    fenced_outcome wb;
    fb.async_write(key, "from b", bg.fencing_token, [&](baton::error_code ec, baton::fenced_write_result r) { wb = {ec, r}; });
    REQUIRE(run_io_until(live, [&] { return wb.ec.has_value(); }, std::chrono::seconds(30)));
    INFO(wb.r.diag.to_string());
    REQUIRE_FALSE(*wb.ec);

    // A resumes and writes as if it still held.
    fenced_outcome stale;
    fa.async_write(key, "stale from a", ag.fencing_token, [&](baton::error_code ec, baton::fenced_write_result r) { stale = {ec, r}; });
    REQUIRE(run_io_until(paused, [&] { return stale.ec.has_value(); }, std::chrono::seconds(30)));
    INFO(stale.r.diag.to_string());
    CHECK(*stale.ec == baton::errc::fenced);
    CHECK(stale.r.winning_token == bg.fencing_token);
    CHECK(stale.r.requests <= 2); // its cached version: one refused write (plus a read where the store sends no current record)

    std::optional<baton::error_code> rec;
    std::optional<baton::fenced_value> v;
    fb.async_read(key, [&](baton::error_code ec, std::optional<baton::fenced_value> got) { rec = ec; v = std::move(got); });
    REQUIRE(run_io_until(live, [&] { return rec.has_value(); }, std::chrono::seconds(30)));
    REQUIRE_FALSE(*rec);
    REQUIRE(v);
    CHECK(v->value == "from b");
    CHECK(v->token == bg.fencing_token);

    std::optional<baton::error_code> rel;
    b.async_release([&](baton::error_code ec) { rel = ec; });
    run_io_until(live, [&] { return rel.has_value(); }, std::chrono::seconds(30));
}

/** `writers` fenced writers with one token on one key, each writing `rounds` times at once.

    Every write lands, except that a store may answer 5xx under such contention (RGW does) and
    a write may then fail transiently (or with unknown_outcome) once the retry policy (8
    attempts here) gives up: documented outcomes, counted; anything else (a cancellation nobody asked for, a refusal of
    an equal token, a foreign record) fails the test.
*/
template <class Backend, class Make>
void check_same_token_writers_all_land(Make make, std::string const& key, int writers, int rounds) {
    using fenced_t = baton::basic_fenced<Backend>;
    boost::asio::io_context ioc;
    baton::retry_params rp;
    rp.max_attempts = 8;
    std::vector<fenced_t> fs; // each its own retry budget, as separate processes would have
    for (int i = 0; i < writers; ++i) fs.emplace_back(ioc.get_executor(), make(ioc.get_executor()), baton::standard_retry(rp));
    int ok = 0, transient = 0, done = 0;
    std::vector<std::string> failures;
    unsigned requests = 0;
    for (int r = 0; r < rounds; ++r)
        for (int i = 0; i < writers; ++i)
            fs[static_cast<std::size_t>(i)].async_write(key, "writer " + std::to_string(i), 42,
                                                        [&](baton::error_code ec, baton::fenced_write_result res) {
                                                            ++done;
                                                            requests += res.requests;
                                                            if (!ec) ++ok;
                                                            else if (baton::is_retryable(ec)) ++transient; // unknown_outcome included
                                                            else failures.push_back(ec.message() + ": " + res.diag.to_string());
                                                        });
    REQUIRE(run_io_until(ioc, [&] { return done == writers * rounds; }, std::chrono::seconds(120)));
    INFO((failures.empty() ? std::string() : failures.front()));
    CHECK(failures.empty());
    CHECK(ok + transient == writers * rounds);
    CHECK(ok > 0);
    MESSAGE((writers * rounds) << " fenced writes with one token on one key: " << ok << " written, " << transient
                               << " failed transiently (5xx after 8 attempts); " << requests << " requests");
    std::optional<baton::error_code> rec;
    std::optional<baton::fenced_value> v;
    fs[0].async_read(key, [&](baton::error_code ec, std::optional<baton::fenced_value> got) { rec = ec; v = std::move(got); });
    REQUIRE(run_io_until(ioc, [&] { return rec.has_value(); }, std::chrono::seconds(30)));
    REQUIRE(v);
    CHECK(v->token == 42);
    CHECK(v->value.rfind("writer ", 0) == 0);
}

} // namespace test_common

#endif
