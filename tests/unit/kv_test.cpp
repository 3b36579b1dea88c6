// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
// The versioned key-value store: the record format, conditions and their
// costs in requests, tombstones, read-modify-write under contention, and
// ambiguous answers settled by reading back (memory store, sim kit faults).

#include <baton/memory.hpp>
#include <baton/sim.hpp>

#include <doctest/doctest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace sim = baton::sim;
using namespace std::chrono_literals;
using baton::errc;
using baton::error_code;
using baton::kv_condition;

using baton::memory_kv;
using faulty_store = sim::faulty_backend<baton::memory_backend>;
using faulty_kv = baton::basic_kv<faulty_store, sim::manual_clock>;

struct write_outcome {
    bool done = false;
    error_code ec;
    baton::kv_write_result r;
};

void drain(asio::io_context& ioc) {
    ioc.restart();
    ioc.run();
}

write_outcome put(asio::io_context& ioc, memory_kv& kv, std::string key, std::string value, kv_condition c = kv_condition::none()) {
    write_outcome o;
    kv.async_put(std::move(key), std::move(value), c, [&](error_code ec, baton::kv_write_result r) { o = {true, ec, std::move(r)}; });
    drain(ioc);
    return o;
}

write_outcome erase(asio::io_context& ioc, memory_kv& kv, std::string key, kv_condition c = kv_condition::none()) {
    write_outcome o;
    kv.async_erase(std::move(key), c, [&](error_code ec, baton::kv_write_result r) { o = {true, ec, std::move(r)}; });
    drain(ioc);
    return o;
}

std::optional<baton::kv_entry> get(asio::io_context& ioc, memory_kv& kv, std::string key, error_code* ec_out = nullptr) {
    std::optional<baton::kv_entry> out;
    error_code got;
    kv.async_get(std::move(key), [&](error_code ec, std::optional<baton::kv_entry> e) {
        got = ec;
        out = std::move(e);
    });
    drain(ioc);
    if (ec_out) *ec_out = got;
    else REQUIRE_FALSE(got);
    return out;
}

// An update that adds one to a decimal counter (absent counts as 0).
struct increment {
    std::optional<std::string> operator()(std::optional<baton::kv_entry> const& cur) const {
        return std::to_string((cur ? std::stoull(cur->value) : 0) + 1);
    }
};

} // namespace

TEST_SUITE("kv") {

TEST_CASE("the record format round-trips any bytes, marks tombstones, and refuses what it did not write") {
    using baton::detail::decode_kv;
    auto encode_kv = [](std::uint64_t v, std::string nonce, std::uint64_t fence, bool live, std::string value, std::string recent = {}) {
        return baton::detail::encode_kv(baton::detail::kv_body{v, std::move(nonce), fence, std::move(recent), live, std::move(value)});
    };
    static constexpr char raw[] = "a\nb\0\xff";
    std::string const value(raw, sizeof raw - 1);
    baton::detail::kv_body b;
    baton::diagnostics d;
    REQUIRE_FALSE(decode_kv(encode_kv(18446744073709551615ull, "00ff", 0, true, value), b, d));
    CHECK(b.version == 18446744073709551615ull);
    CHECK(b.live);
    CHECK(b.nonce == "00ff");
    CHECK(b.value == value);

    CHECK(b.fence == 0);

    auto const tomb = encode_kv(7, "abc", 0, false, "ignored");
    CHECK(tomb == "baton-kv 1 7 abc tombstone\n");
    REQUIRE_FALSE(decode_kv(tomb, b, d));
    CHECK_FALSE(b.live);
    CHECK(b.version == 7);
    CHECK(b.value.empty());

    auto const fenced = encode_kv(3, "abc", 42, true, "v");
    CHECK(fenced == "baton-kv 1 3 abc fence=42\nv");
    REQUIRE_FALSE(decode_kv(fenced, b, d));
    CHECK(b.fence == 42);
    CHECK(b.value == "v");
    REQUIRE_FALSE(decode_kv(encode_kv(4, "abc", 42, false, ""), b, d));
    CHECK(b.fence == 42);
    CHECK_FALSE(b.live);

    // The recent writers: the newest first, at most 16, each the first 16 digits of a nonce.
    std::string recent = baton::detail::recent_after("0123456789abcdef0123456789abcdef", "");
    CHECK(recent == "0123456789abcdef");
    // (No all-zero nonce: its prefix would read as the origin marker, and it ends the chain.)
    for (int i = 0; i < 20; ++i) recent = baton::detail::recent_after(std::string(32, "f123456789abcdef"[i % 16]), recent);
    CHECK(recent.size() == 16 * 17 - 1);
    CHECK(baton::detail::recent_at(recent, 0) == std::string(16, '3'));
    CHECK(baton::detail::recent_at(recent, 15) == std::string(16, '4'));
    CHECK(baton::detail::recent_at(recent, 16).empty());
    auto const with_recent = encode_kv(9, "abc", 3, false, "", recent);
    CHECK(with_recent.rfind("baton-kv 1 9 abc fence=3 recent=3333333333333333,", 0) == 0);
    REQUIRE_FALSE(decode_kv(with_recent, b, d));
    CHECK(b.recent == recent);
    CHECK_FALSE(b.live);

    for (std::string bad : {"", "value", "baton-kv 1 ", "baton-kv 1 1 ab", "baton-kv 2 1 ab\nv", "baton-kv 1 0 ab\nv",
                            "baton-kv 1 01 ab\nv", "baton-kv 1 18446744073709551616 ab\nv", "baton-kv 1 1 AB\nv",
                            "baton-kv 1 1\nv", "baton-kv 1 1 ab tombstone\nv", "baton-kv 1 1 ab dead\n",
                            "baton-kv 1 1 ab fence=0\nv", "baton-kv 1 1 ab fence=x\nv", "baton-kv 1 1 ab fence=\nv",
                            "baton-kv 1 1 ab tombstone fence=2\n", "baton-kv 1 1 ab recent=0123\nv",
                            "baton-kv 1 1 ab recent=0123456789abcdef fence=2\nv", "baton-kv 1 1 ab \nv",
                            "baton-kv 1 1 ab recent=0123456789abcdef,\nv", "baton-kv 1 1 ab what=1\nv",
                            "baton-fenced 1 1 ab\nv"}) {
        CAPTURE(bad);
        d.clear();
        CHECK(decode_kv(bad, b, d) == errc::foreign_record);
        CHECK(d.message.rfind("not a kv record", 0) == 0);
    }
}

TEST_CASE("conditions hold or fail with the current version; a version this client read costs one request") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    memory_kv a(ioc.get_executor(), store), b(ioc.get_executor(), store);

    auto w = put(ioc, a, "cfg", "one", kv_condition::absent());
    REQUIRE_FALSE(w.ec);
    CHECK(w.r.version == 1);
    CHECK(w.r.written);
    CHECK(w.r.requests == 1); // a new key: one write conditional on absence

    w = put(ioc, a, "cfg", "two");
    REQUIRE_FALSE(w.ec);
    CHECK(w.r.version == 2);
    CHECK(w.r.requests == 1); // this client wrote version 1: it names it

    w = put(ioc, b, "cfg", "again?", kv_condition::absent());
    CHECK(w.ec == errc::precondition_failed);
    CHECK(w.r.current_version == 2);
    CHECK(w.r.diag.message == "expected no value, found version 2");

    auto e = get(ioc, b, "cfg");
    REQUIRE(e);
    CHECK(e->value == "two");
    CHECK(e->version == 2);
    w = put(ioc, b, "cfg", "three", kv_condition::version(2));
    REQUIRE_FALSE(w.ec);
    CHECK(w.r.version == 3);
    CHECK(w.r.requests == 1); // read-then-write costs one write after the read

    // `a` still believes version 2: its conditional write is refused by the store, and the
    // verdict comes from a fresh read, never from its cache.
    w = put(ioc, a, "cfg", "stale", kv_condition::version(2));
    CHECK(w.ec == errc::precondition_failed);
    CHECK(w.ec == baton::condition::contention);
    CHECK(w.r.current_version == 3);
    CHECK(w.r.requests == 1); // the refusal carries the current record (the memory store's do, as DynamoDB's)
    // And a version `a` never saw is checked against the store, not against its cache.
    w = put(ioc, a, "cfg", "four", kv_condition::version(3));
    REQUIRE_FALSE(w.ec);
    CHECK(w.r.version == 4);
    CHECK(get(ioc, b, "cfg")->value == "four");

    w = put(ioc, a, "cfg", "x", kv_condition::version(0));
    CHECK(w.ec == errc::invalid_argument);
    CHECK(w.r.requests == 0);
}

TEST_CASE("erase leaves a tombstone: versions keep rising, and a stale writer cannot bring the key back") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    memory_kv a(ioc.get_executor(), store), stale(ioc.get_executor(), store);
    REQUIRE_FALSE(put(ioc, a, "job", "v1").ec);
    REQUIRE(get(ioc, stale, "job")->version == 1);

    auto w = erase(ioc, a, "job", kv_condition::version(1));
    REQUIRE_FALSE(w.ec);
    CHECK(w.r.version == 2);
    CHECK(w.r.written);
    CHECK_FALSE(get(ioc, a, "job"));
    CHECK(store.peek("job")->body.find(" tombstone\n") != std::string::npos);

    // The stale writer's version 1 no longer names a value.
    w = put(ioc, stale, "job", "resurrected?", kv_condition::version(1));
    CHECK(w.ec == errc::precondition_failed);
    CHECK(w.r.current_version == 0);
    CHECK(w.r.diag.message == "expected version 1, found no value");
    w = erase(ioc, stale, "job", kv_condition::version(1));
    CHECK(w.ec == errc::precondition_failed);

    // Erasing what is gone writes nothing; `absent` is not a condition for erase.
    w = erase(ioc, stale, "job");
    REQUIRE_FALSE(w.ec);
    CHECK_FALSE(w.r.written);
    CHECK(w.r.version == 0); // no value
    CHECK(erase(ioc, a, "job", kv_condition::absent()).ec == errc::invalid_argument);
    w = erase(ioc, a, "never-written");
    REQUIRE_FALSE(w.ec);
    CHECK_FALSE(w.r.written);
    CHECK(w.r.version == 0);

    // Re-create: the version continues from the tombstone's.
    memory_kv fresh(ioc.get_executor(), store);
    w = put(ioc, fresh, "job", "v3", kv_condition::absent());
    REQUIRE_FALSE(w.ec);
    CHECK(w.r.version == 3);
    CHECK(w.r.requests == 2); // `absent` refused by the tombstone, then a write over it
    w = put(ioc, stale, "job", "v4", kv_condition::absent());
    CHECK(w.ec == errc::precondition_failed); // `stale` saw the tombstone; the store knows better
    CHECK(w.r.current_version == 3);
    auto e = get(ioc, a, "job");
    REQUIRE(e);
    CHECK(e->version == 3);
    CHECK(e->value == "v3");
}

TEST_CASE("update: concurrent read-modify-writes from several clients are each applied exactly once") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    std::vector<memory_kv> clients;
    for (int i = 0; i < 4; ++i) clients.emplace_back(ioc.get_executor(), store);
    int const updates = 200;
    int succeeded = 0;
    unsigned requests = 0;
    for (int i = 0; i < updates; ++i)
        clients[static_cast<std::size_t>(i) % clients.size()].async_update("counter", increment{}, [&](error_code ec, baton::kv_write_result r) {
            CHECK_FALSE(ec);
            if (!ec) ++succeeded;
            requests += r.requests;
        });
    drain(ioc);
    CHECK(succeeded == updates);
    auto e = get(ioc, clients[0], "counter");
    REQUIRE(e);
    CHECK(e->value == std::to_string(updates));
    CHECK(e->version == static_cast<std::uint64_t>(updates));
    MESSAGE("requests per update under 200-way contention on the memory store: ", double(requests) / updates);

    // An update that changes nothing writes nothing.
    write_outcome o;
    clients[1].async_update("counter", [](std::optional<baton::kv_entry> const&) { return std::optional<std::string>(); },
                            [&](error_code ec, baton::kv_write_result r) { o = {true, ec, std::move(r)}; });
    drain(ioc);
    REQUIRE_FALSE(o.ec);
    CHECK_FALSE(o.r.written);
    CHECK(o.r.version == static_cast<std::uint64_t>(updates));
    CHECK(o.r.requests == 1);
}

TEST_CASE("fenced writes: the key keeps the highest token, and the store refuses a lower one") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    memory_kv old_holder(ioc.get_executor(), store), new_holder(ioc.get_executor(), store);
    auto w = put(ioc, old_holder, "ckpt", "100", kv_condition::none().with_fence(1));
    REQUIRE_FALSE(w.ec);
    CHECK(w.r.requests == 2);
    w = put(ioc, old_holder, "ckpt", "150", kv_condition::none().with_fence(1));
    REQUIRE_FALSE(w.ec);
    CHECK(w.r.requests == 1); // same token, version known: one write

    REQUIRE_FALSE(put(ioc, new_holder, "ckpt", "200", kv_condition::none().with_fence(2)).ec);
    // An unfenced write keeps the fence as it is.
    REQUIRE_FALSE(put(ioc, new_holder, "ckpt", "210").ec);
    auto e = get(ioc, new_holder, "ckpt");
    REQUIRE(e);
    CHECK(e->fence == 2);
    CHECK(e->version == 4);

    // The old holder's cache names version 2: the store refuses its write, and the verdict is fenced.
    w = put(ioc, old_holder, "ckpt", "stale", kv_condition::none().with_fence(1));
    CHECK(w.ec == errc::fenced);
    CHECK(w.r.winning_token == 2);
    CHECK(w.r.diag.message == "token 1 is below token 2 already accepted for this key");
    // Conditions and fences together; erase and update are fenced too; the fence survives a tombstone.
    CHECK(put(ioc, old_holder, "ckpt", "stale", kv_condition::version(4).with_fence(1)).ec == errc::fenced);
    CHECK(erase(ioc, old_holder, "ckpt", kv_condition::none().with_fence(1)).ec == errc::fenced);
    write_outcome o;
    old_holder.async_update("ckpt", increment{}, kv_condition::none().with_fence(1),
                            [&](error_code ec, baton::kv_write_result r) { o = {true, ec, std::move(r)}; });
    drain(ioc);
    CHECK(o.ec == errc::fenced);
    CHECK(get(ioc, old_holder, "ckpt")->value == "210");
    REQUIRE_FALSE(erase(ioc, new_holder, "ckpt", kv_condition::version(4).with_fence(2)).ec);
    CHECK(put(ioc, old_holder, "ckpt", "back?", kv_condition::absent().with_fence(1)).ec == errc::fenced);
    w = put(ioc, new_holder, "ckpt", "300", kv_condition::absent().with_fence(3));
    REQUIRE_FALSE(w.ec);
    CHECK(w.r.version == 6);
    CHECK(get(ioc, old_holder, "ckpt")->fence == 3);

    o = {};
    old_holder.async_update("ckpt", increment{}, kv_condition::version(6),
                            [&](error_code ec, baton::kv_write_result r) { o = {true, ec, std::move(r)}; });
    drain(ioc);
    CHECK(o.ec == errc::invalid_argument);
}

TEST_CASE("a key holding something else is foreign_record everywhere and is left alone") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    store.async_put("cfg", "plain text", baton::precondition::none(), [](error_code ec, baton::put_result) { REQUIRE_FALSE(ec); });
    drain(ioc);
    memory_kv kv(ioc.get_executor(), store);
    error_code ec;
    CHECK_FALSE(get(ioc, kv, "cfg", &ec));
    CHECK(ec == errc::foreign_record);
    CHECK(put(ioc, kv, "cfg", "overwrite?").ec == errc::foreign_record);
    CHECK(erase(ioc, kv, "cfg").ec == errc::foreign_record);
    write_outcome o;
    kv.async_update("cfg", increment{}, [&](error_code e, baton::kv_write_result r) { o = {true, e, std::move(r)}; });
    drain(ioc);
    CHECK(o.ec == errc::foreign_record);
    CHECK(o.r.diag.message.find("(key cfg)") != std::string::npos);
    CHECK(store.peek("cfg")->body == "plain text");

    // Bad keys and oversized values are refused by the store; nothing is written.
    CHECK(put(ioc, kv, "", "v").ec == errc::invalid_argument);
    CHECK(put(ioc, kv, "big", std::string(baton::memory_backend_params{}.max_body_bytes, 'x')).ec == errc::invalid_argument);
    CHECK_FALSE(store.peek("big"));
}

TEST_CASE("list: keys with values, in order, with their versions; erased keys left out; pages") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    memory_kv kv(ioc.get_executor(), store);
    for (auto k : {"app/a", "app/b", "app/c", "app/d", "other"}) REQUIRE_FALSE(put(ioc, kv, k, std::string("v-") + k).ec);
    REQUIRE_FALSE(put(ioc, kv, "app/c", "v2").ec);
    REQUIRE_FALSE(erase(ioc, kv, "app/b").ec);

    auto list = [&](std::string after, std::size_t limit) {
        baton::kv_list_page page;
        error_code got;
        kv.async_list("app/", std::move(after), limit, [&](error_code ec, baton::kv_list_page p) {
            got = ec;
            page = std::move(p);
        });
        drain(ioc);
        REQUIRE_FALSE(got);
        return page;
    };
    auto all = list("", 100);
    REQUIRE(all.entries.size() == 3);
    CHECK(all.entries[0].key == "app/a");
    CHECK(all.entries[1].key == "app/c");
    CHECK(all.entries[1].entry.value == "v2");
    CHECK(all.entries[1].entry.version == 2);
    CHECK(all.entries[2].key == "app/d");
    CHECK_FALSE(all.truncated);

    auto first = list("", 2); // app/a and app/b (erased): one entry, more to come
    REQUIRE(first.entries.size() == 1);
    CHECK(first.truncated);
    CHECK(first.next_after == "app/b");
    auto rest = list(first.next_after, 2);
    REQUIRE(rest.entries.size() == 2);
    CHECK(rest.entries[0].key == "app/c");
}

TEST_CASE("ambiguous answers are settled by reading back: an update is applied once, and reported once") {
    sim::scheduler sched(7);
    baton::memory_backend inner(sched.get_executor());
    faulty_store net(inner, sched.get_executor(), 8, sim::fault_profile::none());
    faulty_kv kv(sched.get_executor(), net);
    auto update = [&] {
        write_outcome o;
        kv.async_update("n", increment{}, [&](error_code ec, baton::kv_write_result r) { o = {true, ec, std::move(r)}; });
        sched.run_for(60s);
        REQUIRE(o.done);
        return o;
    };
    REQUIRE_FALSE(update().ec);

    net.inject_next(sim::fault_kind::pass);          // the read
    net.inject_next(sim::fault_kind::drop_response); // the write: applied, the answer lost
    auto o = update();
    REQUIRE_FALSE(o.ec);
    CHECK(o.r.settled_by_read);
    CHECK(o.r.version == 2);

    net.inject_next(sim::fault_kind::pass);
    net.inject_next(sim::fault_kind::server_error_applied);
    o = update();
    REQUIRE_FALSE(o.ec);
    CHECK(o.r.settled_by_read);

    net.inject_next(sim::fault_kind::pass);
    net.inject_next(sim::fault_kind::server_error_lost); // not applied: read back, compute again, write
    o = update();
    REQUIRE_FALSE(o.ec);
    CHECK_FALSE(o.r.settled_by_read);

    auto const body = net.inner().peek("n")->body;
    CHECK(body.find("\n4") != std::string::npos);
    CHECK(body.rfind("baton-kv 1 4 ", 0) == 0);
}

TEST_CASE("a 5xx answered to a write that lost a race is contention, not a failure: no retry budget is spent on it") {
    sim::scheduler sched(11);
    baton::memory_backend inner(sched.get_executor());
    faulty_store net(inner, sched.get_executor(), 12, sim::fault_profile::none());
    baton::basic_kv<faulty_store, sim::manual_clock, baton::no_retry> kv(sched.get_executor(), net);
    int calls = 0;
    auto increment_while_another_writes = [&](std::optional<baton::kv_entry> const& cur) -> std::optional<std::string> {
        if (++calls == 1) {
            // Another writer gets in between this update's read and its write.
            auto const found = inner.peek("n");
            inner.async_put("n", baton::detail::encode_kv(baton::detail::kv_body{found ? 2u : 1u, "0b", 0, {}, true, "other"}),
                            found ? baton::precondition::matches(found->version) : baton::precondition::absent(),
                            [](error_code ec, baton::put_result) { REQUIRE_FALSE(ec); });
        }
        return increment{}(cur ? std::optional<baton::kv_entry>(baton::kv_entry{cur->value == "other" ? "10" : cur->value, cur->version, 0})
                               : std::nullopt);
    };
    net.inject_next(sim::fault_kind::pass);              // the read
    net.inject_next(sim::fault_kind::server_error_lost); // the write: 500, not applied (the record had moved on)
    write_outcome o;
    kv.async_update("n", increment_while_another_writes, [&](error_code ec, baton::kv_write_result r) { o = {true, ec, std::move(r)}; });
    sched.run_for(60s);
    REQUIRE(o.done);
    INFO(o.r.diag.to_string());
    REQUIRE_FALSE(o.ec); // with no_retry: the 500 was settled by reading, and the race was lost, not the service
    CHECK(o.r.version == 2);
    CHECK(calls == 2);
    CHECK(o.r.requests == 4); // read, write (500), read (moved on), write
    CHECK(net.inner().peek("n")->body.find("\n11") != std::string::npos);
}

TEST_CASE("cancelling an update in its backoff writes nothing more; a write already sent is settled first") {
    sim::scheduler sched(9);
    baton::memory_backend inner(sched.get_executor());
    faulty_store net(inner, sched.get_executor(), 10, sim::fault_profile::none());
    faulty_kv kv(sched.get_executor(), net);
    asio::cancellation_signal cancel;
    write_outcome o;

    net.inject_next(sim::fault_kind::unavailable); // the read: 503; a backoff follows, nothing was written
    kv.async_update("n", increment{}, asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, baton::kv_write_result r) {
                        o = {true, ec, std::move(r)};
                    }));
    sched.run_for(20ms);
    REQUIRE_FALSE(o.done);
    cancel.emit(asio::cancellation_type::terminal);
    sched.run_for(60s);
    REQUIRE(o.done);
    CHECK(o.ec == asio::error::operation_aborted);
    CHECK_FALSE(net.inner().peek("n"));

    // A write answered 503 (not applied, but a 5xx may hide one that was), then cancelled in the
    // backoff: the settling read shows the key as the write found it, so the write may still
    // land. The caller is told unknown_outcome, never "aborted" (it would write again).
    net.inject_next(sim::fault_kind::pass);
    net.inject_next(sim::fault_kind::unavailable);
    o = {};
    auto const sent = net.counts().requests;
    kv.async_update("n", increment{}, asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, baton::kv_write_result r) {
                        o = {true, ec, std::move(r)};
                    }));
    while (net.counts().requests < sent + 2) sched.run_for(1ms); // the write is on its way
    REQUIRE_FALSE(o.done);
    cancel.emit(asio::cancellation_type::terminal);
    sched.run_for(60s);
    REQUIRE(o.done);
    CHECK(o.ec == errc::unknown_outcome);
    CHECK_FALSE(net.inner().peek("n"));

    // A write whose answer is lost, then cancelled while its settlement waits: the read decides.
    net.inject_next(sim::fault_kind::pass);
    net.inject_next(sim::fault_kind::drop_response);
    o = {};
    kv.async_update("n", increment{}, asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, baton::kv_write_result r) {
                        o = {true, ec, std::move(r)};
                    }));
    sched.run_for(2500ms); // the write timed out; its settling read waits for a backoff
    cancel.emit(asio::cancellation_type::terminal);
    sched.run_for(60s);
    REQUIRE(o.done);
    CHECK_FALSE(o.ec);
    CHECK(o.r.settled_by_read);
    CHECK(net.inner().peek("n")->body.rfind("baton-kv 1 1 ", 0) == 0);
}

} // TEST_SUITE

TEST_CASE("kv: a call refused before any request completes later, never inside the call, on its handler's executor") {
    asio::io_context ioc;
    memory_kv kv(ioc.get_executor(), baton::memory_backend(ioc.get_executor()), {}, {}, 1);
    auto strand = asio::make_strand(ioc);
    std::vector<error_code> seen;
    bool returned = false;
    auto check = [&](error_code ec, baton::kv_write_result) {
        CHECK(returned);
        CHECK(strand.running_in_this_thread());
        seen.push_back(ec);
    };
    kv.async_erase("k", kv_condition::absent(), asio::bind_executor(strand, check));      // refused by the recipe
    kv.async_put("k", "v", kv_condition::version(0), asio::bind_executor(strand, check)); // refused by the machine
    kv.async_update("k", [](auto const&) { return std::optional<std::string>("x"); }, kv_condition::absent(),
                    asio::bind_executor(strand, check));
    returned = true;
    ioc.run();
    CHECK(seen == std::vector<error_code>{errc::invalid_argument, errc::invalid_argument, errc::invalid_argument});
    CHECK(kv.backend().counts().puts == 0);
}

TEST_CASE("kv: a cancelled update whose write landed is never reported aborted, also when the settling read is stale") {
    // The update reads version 1 and writes version 2, which is applied with its answer lost; the
    // caller cancels. Two stale reads answer "absent" after the timeout: the first is seen to be
    // stale, the second is the settling read after the cancellation. Told "aborted", the caller
    // would increment again and the counter would end one too high.
    sim::scheduler sched(13);
    baton::memory_backend inner(sched.get_executor());
    faulty_store net(inner, sched.get_executor(), 14, sim::fault_profile::none());
    faulty_kv kv(sched.get_executor(), net);
    std::optional<error_code> got;
    kv.async_get("n", [&](error_code ec, std::optional<baton::kv_entry>) { got = ec; }); // reads "absent"
    sched.run_for(1s);
    REQUIRE(got);
    write_outcome o;
    kv.async_put("n", "1", kv_condition::absent(), [&](error_code ec, baton::kv_write_result r) { o = {true, ec, std::move(r)}; });
    sched.run_for(1s);
    REQUIRE(o.done);
    REQUIRE_FALSE(o.ec);

    asio::cancellation_signal cancel;
    net.inject_next(sim::fault_kind::pass);          // the update's read: version 1
    net.inject_next(sim::fault_kind::drop_response); // its write of version 2: applied, the answer lost
    net.inject_next(sim::fault_kind::stale_read);    // "absent": older than what the call knows
    net.inject_next(sim::fault_kind::stale_read);    // "absent" again: the settling read after the cancellation
    o = {};
    kv.async_update("n", increment{}, asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, baton::kv_write_result r) {
                        o = {true, ec, std::move(r)};
                    }));
    sched.run_for(1s); // the write was applied; its answer will never come
    REQUIRE(net.inner().peek("n")->body.rfind("baton-kv 1 2 ", 0) == 0);
    cancel.emit(asio::cancellation_type::terminal);
    sched.run_for(60s);
    REQUIRE(o.done);
    INFO(o.ec.message() << ": " << o.r.diag.to_string());
    CHECK(o.ec != asio::error::operation_aborted);
    CHECK((!o.ec || o.ec == errc::unknown_outcome));
}
