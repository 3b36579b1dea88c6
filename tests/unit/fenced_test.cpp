// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
// Fenced writes: the record format, the store refusing stale tokens, and
// ambiguous answers settled by reading back (memory store, sim kit faults).

#include <baton/memory.hpp>
#include <baton/recipe/lease_metrics.hpp>
#include <baton/sim.hpp>

#include <doctest/doctest.h>
#include <test_common/recording_backend.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace sim = baton::sim;
using namespace std::chrono_literals;
using baton::errc;
using baton::error_code;

using baton::memory_fenced;
using faulty_store = sim::faulty_backend<baton::memory_backend>;
using faulty_fenced = baton::basic_fenced<faulty_store, sim::manual_clock>;

struct write_outcome {
    bool done = false;
    error_code ec;
    baton::fenced_write_result r;
};

template <class Fenced>
write_outcome write(asio::io_context& ioc, Fenced& f, std::string key, std::string value, std::uint64_t token) {
    write_outcome o;
    f.async_write(std::move(key), std::move(value), token, [&](error_code ec, baton::fenced_write_result r) {
        o = {true, ec, std::move(r)};
    });
    ioc.restart();
    ioc.run();
    return o;
}

template <class Fenced>
std::optional<baton::fenced_value> read(asio::io_context& ioc, Fenced& f, std::string key, error_code* ec_out = nullptr) {
    std::optional<baton::fenced_value> out;
    error_code got;
    f.async_read(std::move(key), [&](error_code ec, std::optional<baton::fenced_value> v) {
        got = ec;
        out = std::move(v);
    });
    ioc.restart();
    ioc.run();
    if (ec_out) *ec_out = got;
    else REQUIRE_FALSE(got);
    return out;
}

} // namespace

TEST_SUITE("fenced") {

TEST_CASE("the record format round-trips any bytes and refuses what it did not write") {
    using baton::detail::decode_fenced;
    using baton::detail::encode_fenced;
    static constexpr char raw[] = "line one\nline two\0\xff binary";
    std::string const value(raw, sizeof raw - 1); // the NUL and the 0xff byte included
    auto body = encode_fenced(18446744073709551615ull, "0123456789abcdef0123456789abcdef", value);
    baton::detail::fenced_body b;
    baton::diagnostics d;
    REQUIRE_FALSE(decode_fenced(body, b, d));
    CHECK(b.token == 18446744073709551615ull);
    CHECK(b.nonce == "0123456789abcdef0123456789abcdef");
    CHECK(b.value == value);
    CHECK(body.rfind("baton-fenced 2 18446744073709551615 0123", 0) == 0);
    CHECK(b.format == 2);
    CHECK(b.recent.empty());

    // Format 2 names the writes before it; format 1 (what earlier versions write) is read as well.
    std::string const recent = "0123456789abcdef,0000000000000000";
    body = encode_fenced(7, "fedcba9876543210fedcba9876543210", value, recent);
    CHECK(body.rfind("baton-fenced 2 7 fedcba9876543210fedcba9876543210 recent=0123456789abcdef,0000000000000000\n", 0) == 0);
    REQUIRE_FALSE(decode_fenced(body, b, d));
    CHECK(b.recent == recent);
    CHECK(b.value == value);
    body = encode_fenced(7, "fedcba9876543210fedcba9876543210", value, recent, 1);
    CHECK(body.rfind("baton-fenced 1 7 fedcba9876543210fedcba9876543210\n", 0) == 0); // format 1 has no writers
    REQUIRE_FALSE(decode_fenced(body, b, d));
    CHECK(b.format == 1);
    CHECK(b.recent.empty());
    CHECK(b.value == value);

    for (std::string bad : {"", "hello", "baton-fenced 1 ", "baton-fenced 1 12 abcd", "baton-fenced 3 1 ab\nv",
                            "baton-fenced 1 012 ab\nv", "baton-fenced 1 18446744073709551616 ab\nv",
                            "baton-fenced 1 -1 ab\nv", "baton-fenced 1 1 AB\nv", "baton-fenced 1 1 \nv",
                            "baton-fenced 1 1\nv", "baton-fenced 1 1 a b\nv", "baton-fenced 1 1 ab recent=0123456789abcdef\nv",
                            "baton-fenced 2 1 ab recent=\nv", "baton-fenced 2 1 ab recent=0123\nv", "baton-fenced 2 1 ab other=1\nv",
                            "baton-fenced 2 1 ab recent=0123456789abcdef extra\nv", "baton-fenced 2 1 ab recent=0123456789ABCDEF\nv"}) {
        CAPTURE(bad);
        d.clear();
        CHECK(decode_fenced(bad, b, d) == errc::foreign_record);
        CHECK(d.message.rfind("not a fenced record", 0) == 0);
    }
}

TEST_CASE("a higher token wins; a stale holder is refused by the store with the winning token named") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    memory_fenced old_holder(ioc.get_executor(), store), new_holder(ioc.get_executor(), store);

    auto w = write(ioc, old_holder, "shard/7", "from token 1", 1);
    REQUIRE_FALSE(w.ec);
    CHECK(w.r.requests == 2); // read (absent), then a write conditional on absence
    w = write(ioc, old_holder, "shard/7", "again from token 1", 1);
    REQUIRE_FALSE(w.ec);
    CHECK(w.r.requests == 1); // the version is known: one conditional write

    w = write(ioc, new_holder, "shard/7", "from token 2", 2);
    REQUIRE_FALSE(w.ec);
    CHECK(w.r.requests == 2);

    // The old holder still believes it holds: its write is conditional on a version now replaced.
    w = write(ioc, old_holder, "shard/7", "stale", 1);
    CHECK(w.ec == errc::fenced);
    CHECK(w.ec == baton::condition::contention);
    CHECK(w.r.winning_token == 2);
    CHECK(w.r.diag.message.find("token 1 is below token 2") != std::string::npos);
    // And again, now that it knows the record's token: refused, never written.
    w = write(ioc, old_holder, "shard/7", "stale again", 1);
    CHECK(w.ec == errc::fenced);

    auto v = read(ioc, new_holder, "shard/7");
    REQUIRE(v);
    CHECK(v->value == "from token 2");
    CHECK(v->token == 2);

    // Equal tokens are accepted: one holder writes many times, also through a fresh object.
    memory_fenced same_holder(ioc.get_executor(), store);
    w = write(ioc, same_holder, "shard/7", "token 2, second write", 2);
    CHECK_FALSE(w.ec);
    CHECK(read(ioc, old_holder, "shard/7")->value == "token 2, second write");
}

TEST_CASE("a cached version never lets a lower token through") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    memory_fenced f(ioc.get_executor(), store);
    REQUIRE_FALSE(write(ioc, f, "k", "five", 5).ec);
    // The same object, a lower token: the cached version would make `matches` succeed; the token must not.
    auto w = write(ioc, f, "k", "four", 4);
    CHECK(w.ec == errc::fenced);
    CHECK(w.r.winning_token == 5);
    CHECK(read(ioc, f, "k")->value == "five");
}

TEST_CASE("a key holding something else is foreign_record and is left alone") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    store.async_put("cfg", "plain text", baton::precondition::none(), [](error_code ec, baton::put_result) { REQUIRE_FALSE(ec); });
    ioc.run();
    memory_fenced f(ioc.get_executor(), store);
    auto w = write(ioc, f, "cfg", "overwrite?", 9);
    CHECK(w.ec == errc::foreign_record);
    CHECK(w.r.diag.message.find("not a fenced record") != std::string::npos);
    error_code ec;
    CHECK_FALSE(read(ioc, f, "cfg", &ec));
    CHECK(ec == errc::foreign_record);
    auto found = store.peek("cfg");
    REQUIRE(found);
    CHECK(found->body == "plain text");
}

TEST_CASE("a lost answer is settled by reading back: landed means success, not landed means write again") {
    sim::scheduler sched(41);
    baton::memory_backend inner(sched.get_executor());
    faulty_store net(inner, sched.get_executor(), 42, sim::fault_profile::none());
    faulty_fenced f(sched.get_executor(), net);
    auto run = [&](std::string value, std::uint64_t token) {
        write_outcome o;
        f.async_write("k", std::move(value), token, [&](error_code ec, baton::fenced_write_result r) { o = {true, ec, std::move(r)}; });
        sched.run_for(60s);
        REQUIRE(o.done);
        return o;
    };
    REQUIRE_FALSE(run("first", 3).ec);

    net.inject_next(sim::fault_kind::drop_response); // applied; the answer is lost
    auto o = run("landed", 3);
    REQUIRE_FALSE(o.ec);
    CHECK(o.r.settled_by_read);
    CHECK(o.r.requests == 2); // the write, the read that found its nonce
    CHECK(net.inner().peek("k")->body.find("\nlanded") != std::string::npos);

    net.inject_next(sim::fault_kind::drop_request); // never reached the store
    o = run("resent", 3);
    REQUIRE_FALSE(o.ec);
    CHECK_FALSE(o.r.settled_by_read);
    CHECK(o.r.requests == 3); // the lost write, the read, the write again

    net.inject_next(sim::fault_kind::throttle_applied); // applied, yet answered throttled
    o = run("throttled", 3);
    REQUIRE_FALSE(o.ec);
    CHECK(o.r.settled_by_read);

    // A duplicate delivered late cannot undo a higher token: its write is conditional on an old version.
    net.inject_next(sim::fault_kind::duplicate);
    REQUIRE_FALSE(run("dup", 3).ec);
    faulty_fenced other(sched.get_executor(), net);
    write_outcome o2;
    other.async_write("k", "token 4", 4, [&](error_code ec, baton::fenced_write_result r) { o2 = {true, ec, std::move(r)}; });
    sched.run_for(60s);
    REQUIRE_FALSE(o2.ec);
    CHECK(net.inner().peek("k")->body.rfind("baton-fenced 2 4 ", 0) == 0);
}

TEST_CASE("a write held in the network past its sender's timeout never lands over a higher token") {
    sim::scheduler sched(43);
    baton::memory_backend inner(sched.get_executor());
    faulty_store net(inner, sched.get_executor(), 44, sim::fault_profile::none());
    faulty_fenced stale(sched.get_executor(), net), fresh(sched.get_executor(), net);
    write_outcome a, b;
    stale.async_write("k", "one", 1, [&](error_code ec, baton::fenced_write_result r) { a = {true, ec, std::move(r)}; });
    sched.run_for(10s);
    REQUIRE_FALSE(a.ec);
    // The stale holder's next write is held in the network (it knows the version: one request).
    net.inject_next(sim::fault_kind::hold);
    a = {};
    stale.async_write("k", "late", 1, [&](error_code ec, baton::fenced_write_result r) { a = {true, ec, std::move(r)}; });
    sched.run_for(1s);
    fresh.async_write("k", "two", 2, [&](error_code ec, baton::fenced_write_result r) { b = {true, ec, std::move(r)}; });
    sched.run_for(10s);
    REQUIRE(b.done);
    REQUIRE_FALSE(b.ec);
    REQUIRE(net.held_count() == 1);
    net.deliver_held(0); // lands now, or tries to
    sched.run_for(60s);
    REQUIRE(a.done);
    CHECK(a.ec == errc::fenced);
    CHECK(a.r.winning_token == 2);
    CHECK(net.inner().peek("k")->body.rfind("baton-fenced 2 2 ", 0) == 0);
}

TEST_CASE("cancelled while a write is in doubt: one uncancelled read decides what the caller is told") {
    sim::scheduler sched(45);
    baton::memory_backend inner(sched.get_executor());
    faulty_store net(inner, sched.get_executor(), 46, sim::fault_profile::none());
    faulty_fenced f(sched.get_executor(), net);
    asio::cancellation_signal stop;
    for (auto kind : {sim::fault_kind::server_error_applied, sim::fault_kind::server_error_lost}) {
        CAPTURE(static_cast<int>(kind));
        write_outcome o;
        f.async_write("k", "base", 7, [&](error_code ec, baton::fenced_write_result r) { o = {true, ec, std::move(r)}; });
        sched.run_for(10s);
        REQUIRE_FALSE(o.ec); // the version is known now: the next write is the first request
        net.inject_next(kind); // 500: applied or not, the client cannot tell
        o = {};
        f.async_write("k", "maybe", 7, asio::bind_cancellation_slot(stop.slot(), [&](error_code ec, baton::fenced_write_result r) {
                          o = {true, ec, std::move(r)};
                      }));
        sched.run_for(500us); // the write is on its way
        stop.emit(asio::cancellation_type::terminal);
        sched.run_for(60s);
        REQUIRE(o.done);
        bool const landed = net.inner().peek("k") && net.inner().peek("k")->body.find("\nmaybe") != std::string::npos;
        if (landed) {
            CHECK_FALSE(o.ec);
            CHECK(o.r.settled_by_read);
        } else {
            // The record is still the one the write was made on: the read cannot tell a write
            // that failed from one still on its way, which would land. Never "aborted" then.
            CHECK(o.ec == errc::unknown_outcome);
        }
        CHECK(landed == (kind == sim::fault_kind::server_error_applied));
    }
}

TEST_CASE("reads that keep failing after a write in doubt report unknown_outcome, never success or failure") {
    sim::scheduler sched(47);
    baton::memory_backend inner(sched.get_executor());
    faulty_store net(inner, sched.get_executor(), 48, sim::fault_profile::none());
    baton::retry_params rp;
    rp.max_attempts = 2;
    faulty_fenced f(sched.get_executor(), net, baton::standard_retry(rp));
    net.inject_next(sim::fault_kind::drop_request);     // the first read is lost
    net.inject_next(sim::fault_kind::unavailable);      // ... and the retry; then the policy gives up
    write_outcome o;
    f.async_write("k", "v", 1, [&](error_code ec, baton::fenced_write_result r) { o = {true, ec, std::move(r)}; });
    sched.run_for(60s);
    REQUIRE(o.done);
    CHECK(o.ec == errc::service_unavailable); // nothing was written: a plain failure
    CHECK_FALSE(net.inner().peek("k"));

    REQUIRE_FALSE(o.r.requests == 0);
    o = {};
    f.async_write("k", "v0", 1, [&](error_code ec, baton::fenced_write_result r) { o = {true, ec, std::move(r)}; });
    sched.run_for(60s);
    REQUIRE_FALSE(o.ec); // the version is known now: the next write is the first request
    net.inject_next(sim::fault_kind::server_error_applied); // the write lands, answered 500
    net.inject_next(sim::fault_kind::unavailable);          // the settling read fails
    net.inject_next(sim::fault_kind::unavailable);          // and the last one too
    o = {};
    f.async_write("k", "v", 1, [&](error_code ec, baton::fenced_write_result r) { o = {true, ec, std::move(r)}; });
    sched.run_for(60s);
    REQUIRE(o.done);
    CHECK(o.ec == errc::unknown_outcome);
    CHECK(o.r.diag.message.find("may have landed") != std::string::npos);
}

TEST_CASE("out of retries with a write in doubt on a record that has not moved: unknown_outcome, never a plain failure") {
    sim::scheduler sched(49);
    baton::memory_backend inner(sched.get_executor());
    faulty_store net(inner, sched.get_executor(), 50, sim::fault_profile::none());
    baton::retry_params rp;
    rp.max_attempts = 2;
    faulty_fenced f(sched.get_executor(), net, baton::standard_retry(rp));
    write_outcome o;
    f.async_write("k", "v0", 1, [&](error_code ec, baton::fenced_write_result r) { o = {true, ec, std::move(r)}; });
    sched.run_for(60s);
    REQUIRE_FALSE(o.ec); // the version is known now: the next write is the first request
    net.inject_next(sim::fault_kind::server_error_lost); // 500, not applied (the client cannot tell)
    net.inject_next(sim::fault_kind::unavailable);       // the read after the backoff fails: retries spent
    o = {};
    f.async_write("k", "v1", 1, [&](error_code ec, baton::fenced_write_result r) { o = {true, ec, std::move(r)}; });
    sched.run_for(60s);
    REQUIRE(o.done);
    // The settling read shows the record the write was made on: a 500 may hide a write that
    // still lands, so the caller is not told it failed (the machine tests show the plain failure
    // once the record moved on without it).
    CHECK(o.ec == errc::unknown_outcome);
    CHECK(o.r.requests == 3); // the write, the failed read, the settling read
    CHECK(net.inner().peek("k")->body.find("\nv0") != std::string::npos);
}

TEST_CASE("move-only handlers are moved through, also when erased by the caller (fenced and kv)") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    memory_fenced f(ioc.get_executor(), store);
    baton::memory_kv kv(ioc.get_executor(), store);
    int done = 0;
    auto owned = std::make_unique<int>(7);
    f.async_write("fenced/k", "v", 1, [p = std::move(owned), &done](error_code ec, baton::fenced_write_result) {
        CHECK_FALSE(ec);
        CHECK(*p == 7);
        ++done;
    });
    // A caller that erased its handler first: an any_completion_handler passed on as an rvalue.
    asio::any_completion_handler<void(error_code, std::optional<baton::kv_entry>)> erased(
        [p = std::make_unique<int>(8), &done](error_code ec, std::optional<baton::kv_entry>) {
            CHECK_FALSE(ec);
            CHECK(*p == 8);
            ++done;
        });
    kv.async_get("kv/k", std::move(erased));
    kv.async_put("kv/k", "v", baton::kv_condition::none(),
                 [p = std::make_unique<int>(9), &done](error_code ec, baton::kv_write_result) {
                     CHECK_FALSE(ec);
                     CHECK(*p == 9);
                     ++done;
                 });
    ioc.run();
    CHECK(done == 3);
}

TEST_CASE("many writers with one token on one key all succeed, each write landing whole") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    std::vector<memory_fenced> writers;
    for (int i = 0; i < 8; ++i) writers.emplace_back(ioc.get_executor(), store);
    int ok = 0;
    for (int round = 0; round < 3; ++round)
        for (int i = 0; i < 8; ++i)
            writers[static_cast<std::size_t>(i)].async_write("k", "w" + std::to_string(i), 11, [&](error_code ec, baton::fenced_write_result) {
                CHECK_FALSE(ec);
                if (!ec) ++ok;
            });
    ioc.run();
    CHECK(ok == 24);
    auto v = read(ioc, writers[0], "k");
    REQUIRE(v);
    CHECK(v->token == 11);
    CHECK(v->value.size() == 2);
}

TEST_CASE("an observer sees each fenced and kv write call: outcome, fencing refusals, retries, settlement") {
    struct recording {
        std::shared_ptr<std::vector<std::string>> log = std::make_shared<std::vector<std::string>>();
        void on_write(baton::write_event const& e) {
            std::string line = std::string(e.recipe) + " " + std::string(e.operation) + " " + std::string(e.key) + " " +
                               to_string(e.outcome) + " token " + std::to_string(e.token) + " requests " +
                               std::to_string(e.requests) + " retries " + std::to_string(e.retries);
            if (e.outcome == baton::write_outcome::fenced) line += " winning " + std::to_string(e.winning_token);
            if (e.settlement) line += " ambiguous " + std::to_string(e.ambiguous) + " " + to_string(*e.settlement);
            if (e.latency < 0ns || (e.ec && !e.diag)) line += " BAD";
            log->push_back(line);
        }
    };
    sim::scheduler sched(61);
    baton::memory_backend inner(sched.get_executor());
    faulty_store net(inner, sched.get_executor(), 62, sim::fault_profile::none());
    recording seen;
    baton::lease_metrics metrics;
    baton::basic_fenced<faulty_store, sim::manual_clock, baton::standard_retry, asio::any_io_executor, recording> f(
        sched.get_executor(), net, {}, {}, 63, seen);
    baton::basic_fenced<faulty_store, sim::manual_clock, baton::standard_retry, asio::any_io_executor, baton::lease_metrics>
        metered(sched.get_executor(), net, {}, {}, 64, metrics);
    auto run = [&](auto& w, std::string value, std::uint64_t token) {
        std::optional<error_code> got;
        w.async_write("k", std::move(value), token, [&](error_code ec, baton::fenced_write_result) { got = ec; });
        sched.run_for(60s);
        REQUIRE(got.has_value());
        return *got;
    };
    CHECK_FALSE(run(f, "first", 5));
    CHECK(run(f, "stale", 3) == errc::fenced);
    net.inject_next(sim::fault_kind::drop_response); // applied; the answer is lost
    CHECK_FALSE(run(f, "landed", 5));
    net.inject_next(sim::fault_kind::drop_request); // never reached the store
    CHECK_FALSE(run(f, "resent", 5));
    std::vector<std::string> const want{
        "fenced write k ok token 5 requests 2 retries 0", // a read first: the version is not known yet
        "fenced write k fenced token 3 requests 1 retries 0 winning 5",
        "fenced write k ok token 5 requests 2 retries 1 ambiguous 1 landed",
        "fenced write k ok token 5 requests 3 retries 1 ambiguous 1 not_landed",
    };
    CHECK(*seen.log == want);

    CHECK(run(metered, "stale", 4) == errc::fenced);
    CHECK_FALSE(run(metered, "next", 6));
    std::string const text = metrics.prometheus_text();
    CHECK(text.find("baton_writes_total{recipe=\"fenced\",operation=\"write\",outcome=\"fenced\"} 1\n") != std::string::npos);
    CHECK(text.find("baton_writes_total{recipe=\"fenced\",operation=\"write\",outcome=\"ok\"} 1\n") != std::string::npos);
    CHECK(text.find("baton_write_latency_seconds_count{recipe=\"fenced\",operation=\"write\"} 2\n") != std::string::npos);

    // kv: a failed condition, and an erase; the token is the condition's fence.
    baton::basic_kv<faulty_store, sim::manual_clock, baton::standard_retry, asio::any_io_executor, recording> kv(
        sched.get_executor(), net, {}, {}, 65, seen);
    seen.log->clear();
    std::vector<error_code> got;
    kv.async_put("j", "v", baton::kv_condition::absent(), [&](error_code ec, baton::kv_write_result) { got.push_back(ec); });
    sched.run_for(10s);
    kv.async_put("j", "again", baton::kv_condition::absent(), [&](error_code ec, baton::kv_write_result) { got.push_back(ec); });
    sched.run_for(10s);
    kv.async_erase("j", baton::kv_condition::none().with_fence(9), [&](error_code ec, baton::kv_write_result) { got.push_back(ec); });
    sched.run_for(10s);
    REQUIRE(got.size() == 3);
    CHECK_FALSE(got[0]);
    CHECK(got[1] == errc::precondition_failed);
    CHECK_FALSE(got[2]);
    REQUIRE(seen.log->size() == 3);
    CHECK(seen.log->at(0) == "kv put j ok token 0 requests 1 retries 0");
    CHECK(seen.log->at(1).rfind("kv put j condition token 0 ", 0) == 0);
    CHECK(seen.log->at(2).rfind("kv erase j ok token 9 ", 0) == 0);
}

}

// What the caller is told, against adversarial interleavings: a write reported refused, fenced,
// aborted or failed never landed and never lands later; one that landed is never reported as
// anything but written (or unknown_outcome, when no read can tell).
TEST_SUITE("fenced outcomes") {

namespace {
struct fenced_rig {
    sim::scheduler sched;
    baton::memory_backend inner;
    faulty_store net;
    explicit fenced_rig(std::uint64_t seed)
        : sched(seed), inner(sched.get_executor()), net(inner, sched.get_executor(), seed + 1, sim::fault_profile::none()) {}

    template <class Fenced>
    write_outcome& start(Fenced& f, write_outcome& o, std::string value, std::uint64_t token, asio::cancellation_slot slot = {}) {
        o = {};
        f.async_write("k", std::move(value), token,
                      asio::bind_cancellation_slot(slot, [&o](error_code ec, baton::fenced_write_result r) { o = {true, ec, std::move(r)}; }));
        return o;
    }
    template <class Fenced>
    write_outcome write(Fenced& f, std::string value, std::uint64_t token) {
        write_outcome o;
        start(f, o, std::move(value), token);
        sched.run_for(60s);
        REQUIRE(o.done);
        return o;
    }
    // The value the store holds under "k" now.
    std::string stored() {
        auto r = inner.peek("k");
        REQUIRE(r);
        baton::detail::fenced_body b;
        baton::diagnostics d;
        REQUIRE_FALSE(baton::detail::decode_fenced(r->body, b, d));
        return b.value;
    }
};
} // namespace

TEST_CASE("a write that landed and was overwritten by a higher token before it was settled is reported written") {
    fenced_rig rig(201);
    faulty_fenced one(rig.sched.get_executor(), rig.net, {}, {}, 1), two(rig.sched.get_executor(), rig.net, {}, {}, 2);
    REQUIRE_FALSE(rig.write(one, "base", 1).ec); // `one` knows the version: its next write is one request
    rig.net.inject_next(sim::fault_kind::drop_response); // applied; the answer is lost
    write_outcome a, b;
    rig.start(one, a, "landed", 1);
    rig.sched.run_for(500ms); // applied, and `one` waits for its answer until its 2-s timeout
    CHECK(rig.stored() == "landed");
    rig.start(two, b, "two", 2); // a new holder writes over it
    rig.sched.run_for(60s);
    REQUIRE(b.done);
    REQUIRE_FALSE(b.ec);
    REQUIRE(a.done);
    INFO(a.ec.message() << ": " << a.r.diag.to_string());
    CHECK_FALSE(a.ec); // it landed: never "fenced", or the caller writes it again
    CHECK(a.r.settled_by_read);
    CHECK(rig.stored() == "two");
}

TEST_CASE("with the store's fenced-write hook, a write overwritten by a higher token is never reported fenced") {
    // The hook's first write is blind (one request on DynamoDB): it names no predecessor, so a
    // write it overwrote may not be told from one that never landed. Honest: unknown_outcome.
    sim::scheduler sched(203);
    auto log = std::make_shared<test_common::applied_log>();
    using hooked_net = sim::faulty_backend<test_common::hooked_recording_backend>;
    baton::memory_backend inner(sched.get_executor());
    hooked_net net(test_common::hooked_recording_backend(inner, log), sched.get_executor(), 204, sim::fault_profile::none());
    using hooked_fenced = baton::basic_fenced<hooked_net, sim::manual_clock>;
    hooked_fenced one(sched.get_executor(), net, {}, {}, 1), two(sched.get_executor(), net, {}, {}, 2);
    write_outcome a, b;
    one.async_write("k", "base", 1, [&](error_code ec, baton::fenced_write_result r) { a = {true, ec, std::move(r)}; });
    sched.run_for(10s);
    REQUIRE_FALSE(a.ec);
    net.inject_next(sim::fault_kind::drop_response);
    a = {};
    one.async_write("k", "landed", 1, [&](error_code ec, baton::fenced_write_result r) { a = {true, ec, std::move(r)}; });
    sched.run_for(500ms);
    two.async_write("k", "two", 2, [&](error_code ec, baton::fenced_write_result r) { b = {true, ec, std::move(r)}; });
    sched.run_for(60s);
    REQUIRE(b.done);
    REQUIRE_FALSE(b.ec);
    REQUIRE(a.done);
    INFO(a.ec.message() << ": " << a.r.diag.to_string());
    CHECK((!a.ec || a.ec == errc::unknown_outcome));
}

TEST_CASE("out of retries with a write held in the network on a version that still holds: unknown_outcome, and it lands") {
    fenced_rig rig(205);
    baton::retry_params rp;
    rp.max_attempts = 1;
    faulty_fenced f(rig.sched.get_executor(), rig.net, baton::standard_retry(rp), {}, 3);
    REQUIRE_FALSE(rig.write(f, "base", 1).ec);
    rig.net.inject_next(sim::fault_kind::hold); // reaches the store only when delivered
    write_outcome o;
    rig.start(f, o, "held", 1);
    rig.sched.run_for(60s);
    REQUIRE(o.done);
    INFO(o.ec.message() << ": " << o.r.diag.to_string());
    CHECK(o.ec == errc::unknown_outcome); // not "timeout": the write may still land, and does
    REQUIRE(rig.net.held_count() == 1);
    rig.net.deliver_held(0);
    rig.sched.run_for(10s);
    CHECK(rig.stored() == "held");
}

TEST_CASE("cancelled with a write in doubt, settled by a stale read: never operation_aborted while it is in the store") {
    fenced_rig rig(207);
    faulty_fenced f(rig.sched.get_executor(), rig.net, {}, {}, 4);
    REQUIRE_FALSE(rig.write(f, "v1", 1).ec);
    auto read_once = [&] {
        std::optional<error_code> got;
        f.async_read("k", [&](error_code ec, std::optional<baton::fenced_value>) { got = ec; });
        rig.sched.run_for(1s);
        REQUIRE(got);
        REQUIRE_FALSE(*got);
    };
    read_once(); // the store's reads of "k": v1 ...
    REQUIRE_FALSE(rig.write(f, "v2", 1).ec);
    read_once(); // ... then v2: a lagging replica may answer v1 next
    asio::cancellation_signal cancel;
    rig.net.inject_next(sim::fault_kind::drop_response); // applied; the answer is lost
    rig.net.inject_next(sim::fault_kind::stale_read);    // the settling read: v1
    write_outcome o;
    rig.start(f, o, "landed", 1, cancel.slot());
    rig.sched.run_for(1s);
    CHECK(rig.stored() == "landed");
    cancel.emit(asio::cancellation_type::terminal);
    rig.sched.run_for(60s);
    REQUIRE(o.done);
    INFO(o.ec.message() << ": " << o.r.diag.to_string());
    CHECK(o.ec != asio::error::operation_aborted); // it landed: written, or unknown when the read cannot tell
    CHECK((!o.ec || o.ec == errc::unknown_outcome));
}

TEST_CASE("two handles given the same seed draw different nonces: neither settles its write by the other's") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    memory_fenced one(ioc.get_executor(), store, {}, {}, 77), two(ioc.get_executor(), store, {}, {}, 77);
    REQUIRE_FALSE(write(ioc, one, "k1", "v", 1).ec);
    REQUIRE_FALSE(write(ioc, two, "k2", "v", 1).ec);
    baton::detail::fenced_body b1, b2;
    baton::diagnostics d;
    REQUIRE_FALSE(baton::detail::decode_fenced(store.peek("k1")->body, b1, d));
    REQUIRE_FALSE(baton::detail::decode_fenced(store.peek("k2")->body, b2, d));
    CHECK(b1.nonce != b2.nonce);
}

} // TEST_SUITE
