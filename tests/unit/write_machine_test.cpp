// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
// The settled-write machines (fenced, kv), the retried reads, election's leader reads, the
// commit protocol's operations and the object stores' conditional-write probe driven directly,
// without I/O: every step they ask for is answered by hand, so each rule is pinned to the step
// where it applies.

#include <baton/backend/detail/conditional_probe.hpp>
#include <baton/recipe/detail/fenced_machine.hpp>
#include <baton/recipe/detail/kv_machine.hpp>
#include <baton/recipe/detail/leader_watch.hpp>
#include <baton/recipe/detail/lease_record.hpp>
#include <baton/store/detail/commit_machines.hpp>
#include <baton/store/detail/machine_op.hpp>
#include <baton/store/detail/read_machines.hpp>
#include <baton/store/detail/recent_writers.hpp>

#include <doctest/doctest.h>

#include <boost/asio/error.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using baton::errc;
using baton::error_code;
using baton::get_result;
using baton::precondition;
using baton::put_result;
using baton::record;
using step = baton::detail::machine_step;
using kind = baton::detail::machine_step::type;

// Retries every retryable failure at once, up to `max` attempts; counts what the machine reports.
struct counting_retry {
    unsigned max = 3;
    unsigned failures = 0;
    unsigned successes = 0;
    baton::retry_decision on_failure(error_code const& ec, unsigned n, double) {
        ++failures;
        baton::retry_decision d;
        d.retry = baton::is_retryable(ec) && n < max;
        d.delay = std::chrono::milliseconds(10);
        return d;
    }
    void on_success(unsigned) { ++successes; }
};

using fenced_machine = baton::detail::fenced_write_machine<counting_retry, std::mt19937_64>;
using kv_machine = baton::detail::kv_write_machine<counting_retry, std::mt19937_64>;

get_result found(std::string version, std::string body) {
    get_result g;
    g.found = record{"k", std::move(body), std::move(version)};
    return g;
}

} // namespace

TEST_CASE("fenced machine: a timed-out write is read back and adopted when its nonce landed") {
    counting_retry retry;
    std::mt19937_64 rng(7);
    fenced_machine m("v", 5, std::nullopt, retry, rng);
    step s = m.start();
    REQUIRE(s.what == kind::read); // nothing known: read first
    s = m.on_get({}, get_result{});
    REQUIRE(s.what == kind::write);
    CHECK(s.pc.which() == precondition::kind::absent);
    std::string const body = s.body;
    s = m.on_put(errc::timeout, put_result{});
    REQUIRE(s.what == kind::wait); // the policy's pause, then a read: never a blind second write
    s = m.on_wait();
    REQUIRE(s.what == kind::read);
    s = m.on_get({}, found("v1", body));
    REQUIRE(s.what == kind::done);
    CHECK(!s.ec);
    CHECK(m.settled_by_read());
    CHECK(m.version() == "v1");
    CHECK(m.requests() == 3);
    CHECK(retry.successes == 1);
}

TEST_CASE("fenced machine: a higher token in the record refuses the write; the machine remembers what it read") {
    counting_retry retry;
    std::mt19937_64 rng(7);
    fenced_machine m("v", 5, std::nullopt, retry, rng);
    REQUIRE(m.start().what == kind::read);
    step s = m.on_get({}, found("v9", baton::detail::encode_fenced(9, "ab", "theirs")));
    REQUIRE(s.what == kind::done);
    CHECK(s.ec == errc::fenced);
    CHECK(m.winning_token() == 9);
    REQUIRE(m.last_seen());
    CHECK(m.last_seen()->version == "v9");
}

namespace {
// A record the fenced machines know: version `v`, token 4, written by a 32-digit nonce `n` after
// the writes `recent`.
baton::detail::fenced_seen seen4(std::string v, std::string n, std::string recent = {}) {
    return baton::detail::fenced_seen{std::move(v), 4, std::move(n), std::move(recent), 2};
}
std::string const nonce_a(32, 'a'), nonce_b(32, 'b'), nonce_c(32, 'c');
} // namespace

TEST_CASE("fenced machine: a cancellation after sending settles with one read; cancelled only once the write can never land") {
    for (bool moved_on : {false, true}) {
        CAPTURE(moved_on);
        counting_retry retry;
        std::mt19937_64 rng(7);
        fenced_machine m("v", 5, seen4("v1", nonce_a), retry, rng);
        step s = m.start();
        REQUIRE(s.what == kind::write); // known version with a lower token: one request
        CHECK(s.pc.which() == precondition::kind::matches);
        CHECK(s.body.find(" recent=" + nonce_a.substr(0, 16) + "\n") != std::string::npos); // it names what it replaces
        s = m.on_put(boost::asio::error::operation_aborted, put_result{});
        REQUIRE(s.what == kind::read);
        CHECK(m.stopping()); // the driver must not cancel this read
        if (moved_on) // another write of token 5 replaced v1: this one can never land
            s = m.on_get({}, found("v2", baton::detail::encode_fenced(5, nonce_b, "theirs", baton::detail::recent_after(nonce_a, ""))));
        else // v1 is still there: the write may be on its way
            s = m.on_get({}, found("v1", baton::detail::encode_fenced(4, nonce_a, "old")));
        REQUIRE(s.what == kind::done);
        CHECK(s.ec == (moved_on ? error_code(boost::asio::error::operation_aborted) : error_code(errc::unknown_outcome)));
    }
}

TEST_CASE("fenced machine: a write overwritten after it landed is found in the writers its successor names") {
    counting_retry retry;
    std::mt19937_64 rng(7);
    fenced_machine m("v", 5, seen4("v1", nonce_a), retry, rng);
    step s = m.start();
    REQUIRE(s.what == kind::write);
    baton::detail::fenced_body mine;
    baton::diagnostics d;
    REQUIRE_FALSE(baton::detail::decode_fenced(s.body, mine, d));
    CHECK(mine.recent == nonce_a.substr(0, 16));
    s = m.on_put(errc::timeout, put_result{});
    REQUIRE(s.what == kind::wait);
    REQUIRE(m.on_wait().what == kind::read);
    // Token 6 wrote over it: its record names ours among the writes before it.
    s = m.on_get({}, found("v3", baton::detail::encode_fenced(6, nonce_c, "later", baton::detail::recent_after(mine.nonce, mine.recent))));
    REQUIRE(s.what == kind::done);
    CHECK_FALSE(s.ec); // never "fenced": it landed
    CHECK(m.settled_by_read());
    CHECK(m.version().empty()); // overwritten before it could be read: its version is not known
    REQUIRE(m.last_seen());
    CHECK(m.last_seen()->version == "v3");
}

TEST_CASE("fenced machine: a write whose fate the record cannot tell is unknown_outcome, never fenced") {
    counting_retry retry;
    std::mt19937_64 rng(7);
    fenced_machine m("v", 5, seen4("v1", nonce_a), retry, rng);
    REQUIRE(m.start().what == kind::write);
    REQUIRE(m.on_put(errc::timeout, put_result{}).what == kind::wait);
    REQUIRE(m.on_wait().what == kind::read);
    // A higher token, over writes the record no longer names (a blind write, or too many since).
    step s = m.on_get({}, found("v9", baton::detail::encode_fenced(9, nonce_c, "theirs")));
    REQUIRE(s.what == kind::done);
    CHECK(s.ec == errc::unknown_outcome);
}

TEST_CASE("fenced machine: a read older than the record the write was made on is looked at again") {
    counting_retry retry;
    std::mt19937_64 rng(7);
    fenced_machine m("v", 5, seen4("v2", nonce_b, baton::detail::recent_after(nonce_a, "")), retry, rng);
    REQUIRE(m.start().what == kind::write);
    REQUIRE(m.on_put(errc::timeout, put_result{}).what == kind::wait);
    REQUIRE(m.on_wait().what == kind::read);
    step s = m.on_get({}, found("v1", baton::detail::encode_fenced(4, nonce_a, "older"))); // a lagging replica
    REQUIRE(s.what == kind::wait); // no verdict from it
    REQUIRE(m.on_wait().what == kind::read);
    s = m.on_get({}, found("v2", baton::detail::encode_fenced(4, nonce_b, "base", baton::detail::recent_after(nonce_a, ""))));
    REQUIRE(s.what == kind::write); // the record it was made on: write again; only one of the two can land
    CHECK(s.pc.version() == "v2");
}

TEST_CASE("fenced machine: refusals past the contention limit fail with precondition_failed, paced from the third") {
    counting_retry retry;
    std::mt19937_64 rng(7);
    fenced_machine m("v", 5, std::nullopt, retry, rng);
    step s = m.start();
    unsigned waits = 0;
    for (unsigned round = 0; round < 200 && s.what != kind::done; ++round) {
        if (s.what == kind::read) s = m.on_get({}, found("v" + std::to_string(round), baton::detail::encode_fenced(1, "ee", "x")));
        else if (s.what == kind::write) s = m.on_put(errc::precondition_failed, put_result{});
        else if (s.what == kind::wait) {
            ++waits;
            CHECK(s.delay <= std::chrono::seconds(1));
            s = m.on_wait();
        }
    }
    REQUIRE(s.what == kind::done);
    CHECK(s.ec == errc::precondition_failed);
    CHECK(waits == fenced_machine::max_contention_rounds - 2);
}

TEST_CASE("fenced machine: out of retries with a write in doubt, one last read decides; the failure only once it can never land") {
    for (bool moved_on : {false, true}) {
        CAPTURE(moved_on);
        counting_retry retry;
        retry.max = 1;
        std::mt19937_64 rng(7);
        fenced_machine m("v", 5, seen4("v1", nonce_a), retry, rng);
        REQUIRE(m.start().what == kind::write);
        step s = m.on_put(errc::service_unavailable, put_result{});
        REQUIRE(s.what == kind::read);
        CHECK(m.stopping());
        if (moved_on)
            s = m.on_get({}, found("v2", baton::detail::encode_fenced(4, nonce_b, "other", baton::detail::recent_after(nonce_a, ""))));
        else
            s = m.on_get({}, found("v1", baton::detail::encode_fenced(4, nonce_a, "old")));
        REQUIRE(s.what == kind::done);
        CHECK(s.ec == (moved_on ? error_code(errc::service_unavailable) : error_code(errc::unknown_outcome)));
    }
}

TEST_CASE("fenced machine: the settling read failing too reports unknown_outcome") {
    counting_retry retry;
    retry.max = 1;
    std::mt19937_64 rng(7);
    fenced_machine m("v", 5, seen4("v1", nonce_a), retry, rng);
    REQUIRE(m.start().what == kind::write);
    REQUIRE(m.on_put(errc::timeout, put_result{}).what == kind::read);
    step s = m.on_get(errc::timeout, get_result{});
    REQUIRE(s.what == kind::done);
    CHECK(s.ec == errc::unknown_outcome);
}

TEST_CASE("kv machine: version(0) is refused at the first step, before any request") {
    counting_retry retry;
    std::mt19937_64 rng(7);
    baton::detail::kv_expect e;
    e.which = baton::detail::kv_expect::kind::version;
    e.version = 0;
    kv_machine m(baton::detail::kv_op::put, "v", e, std::nullopt, retry, rng);
    step s = m.start();
    REQUIRE(s.what == kind::done);
    CHECK(s.ec == errc::invalid_argument);
    CHECK(m.requests() == 0);
}

TEST_CASE("kv machine: an update computes on what it read and writes the next version over it") {
    counting_retry retry;
    std::mt19937_64 rng(7);
    kv_machine m(baton::detail::kv_op::update, "", {}, std::nullopt, retry, rng);
    REQUIRE(m.start().what == kind::read);
    baton::detail::kv_body b;
    b.version = 4;
    b.nonce = "0123456789abcdef0123456789abcdef";
    b.value = "old";
    step s = m.on_get({}, found("s4", baton::detail::encode_kv(b)));
    REQUIRE(s.what == kind::compute);
    REQUIRE(m.current());
    CHECK(*m.current() == "old");
    CHECK(m.current_version() == 4);
    s = m.on_computed(std::string("new"));
    REQUIRE(s.what == kind::write);
    CHECK(s.pc.which() == precondition::kind::matches);
    CHECK(s.pc.version() == "s4");
    baton::detail::kv_body written;
    baton::diagnostics d;
    REQUIRE(!baton::detail::decode_kv(s.body, written, d));
    CHECK(written.version == 5);
    CHECK(written.value == "new");
    CHECK(written.recent.starts_with("0123456789abcdef"));
    s = m.on_put({}, put_result{"s5", {}, {}});
    REQUIRE(s.what == kind::done);
    CHECK(!s.ec);
    CHECK(m.version() == 5);
    CHECK(m.written());
}

TEST_CASE("kv machine: a lost answer whose write another writer overwrote is found among the recent writers") {
    counting_retry retry;
    std::mt19937_64 rng(7);
    baton::detail::kv_expect none;
    kv_machine m(baton::detail::kv_op::put, "mine", none, baton::detail::kv_seen{"s1", 1, true, 0, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", ""}, retry, rng);
    step s = m.start();
    REQUIRE(s.what == kind::write);
    baton::detail::kv_body mine;
    baton::diagnostics d;
    REQUIRE(!baton::detail::decode_kv(s.body, mine, d));
    CHECK(mine.version == 2);
    s = m.on_put(errc::timeout, put_result{});
    REQUIRE(s.what == kind::read); // settle first, blame later
    baton::detail::kv_body theirs;
    theirs.version = 3;
    theirs.nonce = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    theirs.recent = baton::detail::recent_after(mine.nonce, mine.recent);
    theirs.value = "theirs";
    s = m.on_get({}, found("s3", baton::detail::encode_kv(theirs)));
    REQUIRE(s.what == kind::done);
    CHECK(!s.ec);
    CHECK(m.settled_by_read());
    CHECK(m.version() == 2); // its own write, never applied twice
}

TEST_CASE("kv machine: a read older than what the call already knows is a lagging replica and decides nothing") {
    counting_retry retry;
    std::mt19937_64 rng(7);
    baton::detail::kv_expect e;
    e.which = baton::detail::kv_expect::kind::version;
    e.version = 7;
    kv_machine m(baton::detail::kv_op::put, "v", e, baton::detail::kv_seen{"s7", 7, true, 0, "aa", ""}, retry, rng);
    REQUIRE(m.start().what == kind::write);
    REQUIRE(m.on_put(errc::precondition_failed, put_result{}).what == kind::read);
    step s = m.on_get({}, get_result{}); // absent: but the key had version 7, and records are never removed
    REQUIRE(s.what == kind::wait);
    CHECK(m.diag().message.find("lagging replica") != std::string::npos);
    REQUIRE(m.on_wait().what == kind::read);
}

TEST_CASE("kv machine: cancelled while paused with nothing in doubt ends at once") {
    counting_retry retry;
    std::mt19937_64 rng(7);
    kv_machine m(baton::detail::kv_op::put, "v", {}, std::nullopt, retry, rng);
    REQUIRE(m.start().what == kind::read);
    step s = m.on_get(errc::service_unavailable, get_result{});
    REQUIRE(s.what == kind::wait);
    s = m.on_cancel();
    REQUIRE(s.what == kind::done);
    CHECK(s.ec == boost::asio::error::operation_aborted);
    CHECK(!m.stopping());
}

namespace {
// A 32-digit nonce of another writer, different for each `i`.
std::string other_nonce(int i) {
    std::string n = std::to_string(1000000 + i);
    return n + std::string(32 - n.size(), 'a');
}
} // namespace

TEST_CASE("fenced machine: past the contention limit with a write in doubt, the refusal is settled before it is reported") {
    // Another writer wins 64 rounds; then this call's write W is answered with a timeout, and the
    // record is still W's anchor, so W2 is written on it; W lands late and W2 is refused. The
    // 65th refusal is W's own doing: reporting precondition_failed would be false.
    counting_retry retry;
    std::mt19937_64 rng(7);
    fenced_machine m("v", 5, std::nullopt, retry, rng);
    auto other = [](int i) { return found("v" + std::to_string(i), baton::detail::encode_fenced(1, other_nonce(i), "x")); };
    int ver = 0;
    step s = m.start();
    REQUIRE(s.what == kind::read);
    s = m.on_get({}, other(ver));
    for (int i = 0; i < 64; ++i) {
        REQUIRE(s.what == kind::write);
        s = m.on_put(errc::precondition_failed, put_result{});
        if (s.what == kind::wait) s = m.on_wait();
        REQUIRE(s.what == kind::read);
        s = m.on_get({}, other(++ver));
    }
    REQUIRE(s.what == kind::write);
    baton::detail::fenced_body w;
    baton::diagnostics d;
    REQUIRE_FALSE(baton::detail::decode_fenced(s.body, w, d));
    s = m.on_put(errc::timeout, put_result{}); // W: its answer is lost; it lands late
    REQUIRE(s.what == kind::wait);
    REQUIRE(m.on_wait().what == kind::read);
    s = m.on_get({}, other(ver)); // still W's anchor: W may land
    REQUIRE(s.what == kind::write); // W2 on the same version
    s = m.on_put(errc::precondition_failed, put_result{}); // refused: W landed
    REQUIRE(s.what == kind::read); // settle first
    CHECK(m.stopping());
    s = m.on_get({}, found("w", baton::detail::encode_fenced(5, w.nonce, "v", w.recent)));
    REQUIRE(s.what == kind::done);
    CHECK_FALSE(s.ec);
    CHECK(m.settled_by_read());
}

TEST_CASE("kv machine: past the contention limit with a put in doubt, the refusal is settled before it is reported") {
    counting_retry retry;
    std::mt19937_64 rng(7);
    kv_machine m(baton::detail::kv_op::put, "mine", baton::detail::kv_expect{}, std::nullopt, retry, rng);
    auto rec = [](std::uint64_t v) {
        baton::detail::kv_body b;
        b.version = v;
        b.nonce = other_nonce(static_cast<int>(v));
        b.value = "other";
        return found("s" + std::to_string(v), baton::detail::encode_kv(b));
    };
    std::uint64_t ver = 1;
    step s = m.start();
    REQUIRE(s.what == kind::read);
    s = m.on_get({}, rec(ver));
    for (int i = 0; i < 64; ++i) {
        REQUIRE(s.what == kind::write);
        s = m.on_put(errc::precondition_failed, put_result{});
        if (s.what == kind::wait) s = m.on_wait();
        REQUIRE(s.what == kind::read);
        s = m.on_get({}, rec(++ver));
    }
    REQUIRE(s.what == kind::write);
    std::string const w = s.body;
    s = m.on_put(errc::timeout, put_result{}); // W: answer lost, lands late
    REQUIRE(s.what == kind::read);
    s = m.on_get({}, rec(ver)); // W may still land: the retry policy's pause, then a read
    REQUIRE(s.what == kind::wait);
    REQUIRE(m.on_wait().what == kind::read);
    s = m.on_get({}, rec(ver));
    REQUIRE(s.what == kind::write); // W2 on the same version
    s = m.on_put(errc::precondition_failed, put_result{}); // refused: W landed
    REQUIRE(s.what == kind::read);
    s = m.on_get({}, found("w", w));
    REQUIRE(s.what == kind::done);
    CHECK_FALSE(s.ec);
    CHECK(m.written());
}

TEST_CASE("recent writers: a nonce that begins like the origin marker names no writer") {
    using baton::detail::chain_fate;
    using baton::detail::doubt_fate;
    using baton::detail::origin_writer;
    std::string const zeros = std::string(16, '0') + std::string(16, 'f');
    CHECK(baton::detail::writer_prefix(zeros).empty());
    CHECK(baton::detail::recent_after(zeros, std::string(origin_writer)).empty()); // the chain ends there
    // A record created on the origin, then one by that nonce, then a write W on the latter: a stale
    // read of the first must not place W's anchor after it ("never").
    std::string const creator = std::string(32, 'c'), w = std::string(32, 'e');
    CHECK(chain_fate(w, baton::detail::writer_prefix(zeros), true, creator, origin_writer) == doubt_fate::unsure);
}

TEST_CASE("kv machine: a record whose writer list ends early cannot tell a write below it: unknown_outcome") {
    counting_retry retry;
    std::mt19937_64 rng(7);
    baton::detail::kv_expect e;
    e.which = baton::detail::kv_expect::kind::version;
    e.version = 1;
    baton::detail::kv_seen known{"s1", 1, true, 0, std::string(32, 'a'), ""};
    kv_machine m(baton::detail::kv_op::put, "mine", e, known, retry, rng);
    step s = m.start();
    REQUIRE(s.what == kind::write); // version 2 on s1
    s = m.on_put(errc::timeout, put_result{});
    REQUIRE(s.what == kind::read);
    // Version 3 by a writer whose own predecessor had a nonce too short to list: its list is empty.
    baton::detail::kv_body b;
    b.version = 3;
    b.nonce = std::string(32, 'b');
    b.value = "other";
    s = m.on_get({}, found("s3", baton::detail::encode_kv(b)));
    REQUIRE(s.what == kind::done);
    CHECK(s.ec == errc::unknown_outcome); // not "version(1) failed": version 2 may be ours
}

TEST_CASE("retried read: a retryable failure waits per the policy and reads again; success refunds; a hard failure ends") {
    counting_retry retry;
    std::mt19937_64 rng(3);
    baton::detail::retried_get<counting_retry, std::mt19937_64> m(retry, rng);
    REQUIRE(m.start().what == kind::read);
    step s = m.on_get(errc::service_unavailable, {});
    REQUIRE(s.what == kind::wait);
    CHECK(s.delay == std::chrono::milliseconds(10));
    CHECK(m.attempt() == 2);
    REQUIRE(m.on_wait().what == kind::read);
    s = m.on_get({}, found("v1", "body"));
    REQUIRE(s.what == kind::done);
    CHECK(!s.ec);
    REQUIRE(m.result().found);
    CHECK(m.result().found->version == "v1");
    CHECK(retry.failures == 1);
    CHECK(retry.successes == 1);

    baton::detail::retried_get<counting_retry, std::mt19937_64> hard(retry, rng);
    (void)hard.start();
    s = hard.on_get(errc::auth_failed, {}); // not retryable: the policy is not even asked
    CHECK(s.what == kind::done);
    CHECK(s.ec == errc::auth_failed);
    CHECK(retry.failures == 1);
}

TEST_CASE("retried read: the policy's last no ends the read with that failure; a stop between attempts reports it") {
    counting_retry retry;
    retry.max = 2;
    std::mt19937_64 rng(4);
    baton::detail::retried_get<counting_retry, std::mt19937_64> m(retry, rng);
    (void)m.start();
    REQUIRE(m.on_get(errc::timeout, {}).what == kind::wait);
    REQUIRE(m.on_wait().what == kind::read);
    step s = m.on_get(errc::throttled, {});
    CHECK(s.what == kind::done);
    CHECK(s.ec == errc::throttled);

    baton::detail::retried_get<counting_retry, std::mt19937_64> stopped(retry, rng);
    (void)stopped.start();
    REQUIRE(stopped.on_get(errc::timeout, {}).what == kind::wait);
    s = stopped.on_cancel(); // its owner is going away: no second attempt
    CHECK(s.what == kind::done);
    CHECK(s.ec == errc::timeout);
}

TEST_CASE("paged list: pages resume after the last key; a failed page is retried from the same place") {
    counting_retry retry;
    std::mt19937_64 rng(5);
    baton::detail::paged_list<counting_retry, std::mt19937_64> m(retry, rng);
    step s = m.start();
    REQUIRE(s.what == kind::list);
    CHECK(s.after.empty());
    CHECK(s.limit == 1000);
    baton::list_page p1;
    p1.entries = {{"p/a", "1"}, {"p/b", "2"}};
    p1.truncated = true;
    s = m.on_list({}, p1);
    REQUIRE(s.what == kind::list);
    CHECK(s.after == "p/b");
    baton::list_page failed;
    failed.diag.message = "503";
    s = m.on_list(errc::service_unavailable, failed);
    REQUIRE(s.what == kind::wait);
    s = m.on_wait();
    REQUIRE(s.what == kind::list);
    CHECK(s.after == "p/b"); // the same page again
    baton::list_page p2;
    p2.entries = {{"p/c", "3"}};
    s = m.on_list({}, p2);
    REQUIRE(s.what == kind::done);
    CHECK(!s.ec);
    REQUIRE(m.entries().size() == 3);
    CHECK(m.entries()[2].key == "p/c");
    CHECK(retry.successes == 2);
    CHECK(retry.failures == 1);
}

TEST_CASE("paged list: \"more follow\" on a page with no keys is a bad answer, not a loop; a failure keeps the pages and the diagnostics") {
    counting_retry retry;
    retry.max = 1;
    std::mt19937_64 rng(6);
    // A store that says "more" and gives nothing cannot say where to resume: asking again would
    // get the same page for ever, on the first page or a later one.
    for (bool const later : {false, true}) {
        CAPTURE(later);
        baton::detail::paged_list<counting_retry, std::mt19937_64> hostile(retry, rng);
        step s = hostile.start();
        if (later) {
            baton::list_page first;
            first.entries = {{"p/a", "1"}};
            first.truncated = true;
            s = hostile.on_list({}, first);
            REQUIRE(s.what == kind::list);
        }
        baton::list_page none;
        none.truncated = true;
        s = hostile.on_list({}, none);
        CHECK(s.what == kind::done);
        CHECK(s.ec == errc::invalid_response);
        CHECK_FALSE(hostile.diag().message.empty());
    }
    baton::detail::paged_list<counting_retry, std::mt19937_64> empty(retry, rng);
    (void)empty.start();
    step s = empty.on_list({}, baton::list_page{}); // an empty table: done, nothing listed
    CHECK(s.what == kind::done);
    CHECK(!s.ec);
    CHECK(empty.entries().empty());

    baton::detail::paged_list<counting_retry, std::mt19937_64> m(retry, rng);
    (void)m.start();
    baton::list_page p1;
    p1.entries = {{"p/a", "1"}};
    p1.truncated = true;
    REQUIRE(m.on_list({}, p1).what == kind::list);
    baton::list_page failed;
    failed.diag.message = "slow down";
    s = m.on_list(errc::throttled, failed);
    CHECK(s.what == kind::done);
    CHECK(s.ec == errc::throttled);
    CHECK(m.entries().size() == 1);
    CHECK(m.diag().message == "slow down");
}

// ---- election's leader reads ----------------------------------------------------------------

namespace {
using namespace std::chrono_literals;
using ns = std::chrono::nanoseconds;

get_result leader_record(std::string owner, std::uint64_t token, std::string version, bool released = false) {
    return found(std::move(version), baton::detail::encode_lease_body(owner, "addr", "n1", token, released, 2000ms));
}
} // namespace

TEST_CASE("leader read: one read; a record unchanged across reads ages from the first answer to the latest sending") {
    baton::detail::leader_sighting seen;
    {
        baton::detail::leader_read r(seen, 1.1);
        step s = r.start(ns(1s));
        CHECK(s.what == kind::read);
        CHECK(s.key.empty()); // the election's own key
        s = r.on_get({}, leader_record("a-1", 3, "v1"), ns(2s));
        REQUIRE(s.what == kind::done);
        CHECK(!s.ec);
        REQUIRE(r.leader());
        CHECK(r.leader()->owner == "a-1");
        CHECK(r.leader()->fencing_token == 3);
        CHECK(r.leader()->unchanged_for == ns(0)); // first seen now: sent before it was answered
        CHECK(!r.leader()->expired);
    }
    baton::detail::leader_read again(seen, 1.1);
    again.start(ns(4s));
    step s = again.on_get({}, leader_record("a-1", 3, "v1"), ns(5s));
    REQUIRE(s.what == kind::done);
    CHECK(again.leader()->unchanged_for == ns(2s)); // answered at 2 s, this read sent at 4 s
    CHECK(!again.leader()->expired);                // 2 s < 2 s x 1.1

    baton::detail::leader_read late(seen, 1.1);
    late.start(ns(2s + 2200ms));
    late.on_get({}, leader_record("a-1", 3, "v1"), ns(9s));
    CHECK(late.leader()->expired); // 2.2 s unchanged: ttl x skew

    baton::detail::leader_read resigned(seen, 1.1);
    resigned.start(ns(10s));
    s = resigned.on_get({}, leader_record("a-1", 3, "v2", true), ns(10s));
    CHECK(!s.ec);
    CHECK(!resigned.leader()); // a released record: nobody leads

    baton::detail::leader_read foreign(seen, 1.1);
    foreign.start(ns(11s));
    s = foreign.on_get({}, found("v3", "not a lease"), ns(11s));
    CHECK(s.ec == errc::foreign_record);
    CHECK(!foreign.leader());
    CHECK(!foreign.diag().message.empty());
}

TEST_CASE("leader watch: polls until the leader differs; retryable failures wait, others end it; a stop aborts") {
    baton::detail::leader_sighting seen;
    baton::detail::leader_read first(seen, 1.1);
    first.start(ns(0));
    first.on_get({}, leader_record("a-1", 3, "v1"), ns(0));
    auto known = first.leader();

    baton::detail::leader_watch w(seen, 1.1, known, 500ms);
    step s = w.start(ns(1s));
    CHECK(s.what == kind::read);
    s = w.on_get({}, leader_record("a-1", 3, "v1"), ns(1s));
    REQUIRE(s.what == kind::wait); // the same leader
    CHECK(s.delay == ns(500ms));
    s = w.on_wait(ns(1500ms));
    CHECK(s.what == kind::read);
    s = w.on_get(errc::throttled, get_result{}, ns(1500ms));
    CHECK(s.what == kind::wait); // retryable: the next poll tries again
    s = w.on_wait(ns(2s));
    s = w.on_get({}, leader_record("b-2", 4, "v2"), ns(2s));
    REQUIRE(s.what == kind::done);
    CHECK(!s.ec);
    CHECK(w.leader()->owner == "b-2");

    baton::detail::leader_watch hard(seen, 1.1, known, 500ms);
    hard.start(ns(3s));
    s = hard.on_get(errc::auth_failed, get_result{}, ns(3s));
    REQUIRE(s.what == kind::done);
    CHECK(s.ec == errc::auth_failed);
    CHECK(!hard.leader());

    baton::detail::leader_watch stopped(seen, 1.1, known, 500ms);
    stopped.start(ns(4s));
    stopped.on_get({}, leader_record("b-2", 4, "v2"), ns(4s)); // read while the caller stops: not reported
    s = stopped.on_cancel();
    CHECK(s.ec == boost::asio::error::operation_aborted);
    CHECK(!stopped.leader());

    // Aging alone changes the leader: the same holder, now expired.
    baton::detail::leader_sighting fresh;
    baton::detail::leader_read prime(fresh, 1.1);
    prime.start(ns(0));
    prime.on_get({}, leader_record("a-1", 3, "v1"), ns(0));
    baton::detail::leader_watch aging(fresh, 1.1, known, 500ms);
    aging.start(ns(0) + 2200ms);
    s = aging.on_get({}, leader_record("a-1", 3, "v1"), ns(3s));
    REQUIRE(s.what == kind::done);
    CHECK(aging.leader()->expired);
}

// ---- the commit protocol's operations ---------------------------------------------------------

namespace {
using store_id = baton::detail::machine_step::store_id;
using baton::detail::commit_knowledge;

commit_knowledge knowledge(bool probe = false) {
    baton::commit_protocol_params p;
    p.object_prefix = "_o/";
    p.check_lock_store = probe;
    return commit_knowledge(p, 11);
}
baton::capabilities honouring() {
    baton::capabilities c;
    c.conditional_create = c.conditional_replace = c.conditional_erase = true;
    return c;
}
get_result pointer_to(std::string object, std::string const& body, std::string version) {
    return found(std::move(version), baton::detail::encode_commit_pointer(baton::detail::commit_pointer{
                                          false, std::move(object), body.size(), baton::detail::commit_sha256(body), {}}));
}
get_result tombstone(std::string nonce, std::string version) {
    return found(std::move(version), baton::detail::encode_commit_pointer(baton::detail::commit_pointer{true, {}, 0, {}, std::move(nonce)}));
}
put_result put_answer(std::string version) {
    put_result r;
    r.version = std::move(version);
    return r;
}
} // namespace

TEST_CASE("commit put: probe first, an object under a fresh name, then one conditional pointer write") {
    auto k = knowledge(true);
    baton::detail::commit_put_machine m(k, "key", "bytes", precondition::absent());
    step s = m.start();
    REQUIRE(s.what == kind::probe);
    CHECK(s.where == store_id::records);
    s = m.on_probe({}, honouring());
    REQUIRE(s.what == kind::write);
    CHECK(s.where == store_id::objects);
    std::string const object = s.key;
    CHECK(object.rfind("_o/key.baton-0000000000000000-", 0) == 0); // conditional on absence
    CHECK(s.body == "bytes");
    CHECK(s.pc.which() == precondition::kind::none);
    s = m.on_put({}, put_answer("o1"));
    REQUIRE(s.what == kind::write);
    CHECK(s.where == store_id::records);
    CHECK(s.key == "key");
    CHECK(s.pc.which() == precondition::kind::absent);
    baton::detail::commit_pointer p;
    baton::diagnostics d;
    REQUIRE(!baton::detail::decode_commit_pointer(s.body, p, d));
    CHECK(p.object == object);
    CHECK(p.size == 5);
    s = m.on_put({}, put_answer("p1"));
    REQUIRE(s.what == kind::done);
    CHECK(!s.ec);
    CHECK(m.result().version == "p1");
    CHECK(s.discard.empty());
    CHECK(k.object_at("key", "p1") == object); // a later replace deletes it at once
    CHECK(!k.needs_probe());
}

TEST_CASE("commit put: a lock store that ignores preconditions is refused before any byte is written") {
    auto k = knowledge(true);
    baton::detail::commit_put_machine m(k, "key", "bytes", precondition::none());
    REQUIRE(m.start().what == kind::probe);
    step s = m.on_probe({}, baton::capabilities{});
    REQUIRE(s.what == kind::done);
    CHECK(s.ec == errc::capability_missing);
    CHECK(m.result().diag.message.find("ignores preconditions") != std::string::npos);
}

TEST_CASE("commit put: a refusal that names our own object is a success; a refusal by another deletes the object") {
    auto k = knowledge();
    {
        baton::detail::commit_put_machine m(k, "key", "bytes", precondition::matches("p1"));
        step s = m.start();
        std::string const object = s.key;
        s = m.on_put({}, put_answer("o"));
        REQUIRE(s.what == kind::write);
        put_result refused;
        refused.current = pointer_to(object, "bytes", "p2").found; // our duplicate landed
        s = m.on_put(errc::precondition_failed, refused);
        REQUIRE(s.what == kind::done);
        CHECK(!s.ec);
        CHECK(m.result().version == "p2");
        CHECK(s.discard.empty());
    }
    {
        baton::detail::commit_put_machine m(k, "key", "bytes", precondition::matches("p2"));
        step s = m.start();
        std::string const object = s.key;
        s = m.on_put({}, put_answer("o"));
        s = m.on_put(errc::precondition_failed, put_result{}); // no current record sent: read it
        REQUIRE(s.what == kind::read);
        CHECK(s.where == store_id::records);
        s = m.on_get({}, pointer_to("_o/other", "x", "p3"));
        REQUIRE(s.what == kind::done);
        CHECK(s.ec == errc::precondition_failed);
        REQUIRE(s.discard.size() == 1);
        CHECK(s.discard[0] == object);
    }
    {
        // The refusal's read fails: unsure whether our own commit landed, so the object stays.
        baton::detail::commit_put_machine m(k, "key", "bytes", precondition::matches("p3"));
        m.start();
        m.on_put({}, put_answer("o"));
        m.on_put(errc::precondition_failed, put_result{});
        step s = m.on_get(errc::timeout, get_result{});
        CHECK(s.ec == errc::unknown_outcome);
        CHECK(s.discard.empty());
    }
}

TEST_CASE("commit put: an error after the commit was sent keeps the object; a refusal before sending deletes it") {
    auto k = knowledge();
    baton::detail::commit_put_machine m(k, "key", "bytes", precondition::absent());
    m.start();
    m.on_put({}, put_answer("o"));
    step s = m.on_put(errc::timeout, put_result{});
    CHECK(s.ec == errc::timeout);
    CHECK(s.discard.empty()); // it may have landed: the key stays readable

    baton::detail::commit_put_machine n(k, "key2", "bytes", precondition::absent());
    std::string const object = n.start().key;
    n.on_put({}, put_answer("o"));
    s = n.on_put(errc::auth_failed, put_result{});
    CHECK(s.ec == errc::auth_failed);
    REQUIRE(s.discard.size() == 1);
    CHECK(s.discard[0] == object);

    // Stopped before the object is sent: nothing to delete.
    baton::detail::commit_put_machine early(k, "key4", "bytes", precondition::absent());
    REQUIRE(early.start().what == kind::write);
    s = early.on_cancel();
    CHECK(s.ec == boost::asio::error::operation_aborted);
    CHECK(s.discard.empty());

    // Stopped between the object and the commit: the object can never be named.
    baton::detail::commit_put_machine c(k, "key3", "bytes", precondition::absent());
    std::string const third = c.start().key;
    REQUIRE(c.on_put({}, put_answer("o")).what == kind::write);
    s = c.on_cancel();
    CHECK(s.ec == boost::asio::error::operation_aborted);
    REQUIRE(s.discard.size() == 1);
    CHECK(s.discard[0] == third);
}

TEST_CASE("commit put: absent over a tombstone commits on the tombstone's version; none retries on what is there") {
    auto k = knowledge();
    baton::detail::commit_put_machine m(k, "key", "bytes", precondition::absent());
    std::string const first = m.start().key;
    m.on_put({}, put_answer("o"));
    put_result refused;
    refused.current = tombstone("t1", "p5").found;
    step s = m.on_put(errc::precondition_failed, refused);
    REQUIRE(s.what == kind::write); // a second object, based on the tombstone
    CHECK(s.where == store_id::objects);
    CHECK(s.key != first);
    s = m.on_put({}, put_answer("o2"));
    REQUIRE(s.what == kind::write);
    CHECK(s.pc.which() == precondition::kind::matches);
    CHECK(s.pc.version() == "p5");
    s = m.on_put({}, put_answer("p6"));
    REQUIRE(s.what == kind::done);
    CHECK(!s.ec);
    REQUIRE(s.discard.size() == 1);
    CHECK(s.discard[0] == first); // the first object, once the second is committed

    baton::detail::commit_put_machine n(k, "key", "bytes", precondition::none());
    s = n.start();
    REQUIRE(s.what == kind::read); // none: read what is there, commit on exactly that
    s = n.on_get({}, pointer_to("_o/old", "old", "p6"));
    REQUIRE(s.what == kind::write);
    std::string const o1 = s.key;
    n.on_put({}, put_answer("o"));
    put_result lost;
    lost.current = pointer_to("_o/theirs", "t", "p7").found;
    s = n.on_put(errc::precondition_failed, lost);
    REQUIRE(s.what == kind::write); // lost the race: a fresh object on the winner's version
    REQUIRE(s.discard.size() == 1);
    CHECK(s.discard[0] == o1);
    n.on_put({}, put_answer("o"));
    s = n.on_put({}, put_answer("p8"));
    REQUIRE(s.what == kind::done);
    REQUIRE(s.discard.size() == 1);
    CHECK(s.discard[0] == "_o/theirs"); // the object the commit replaced
}

TEST_CASE("commit get: the pointer, then its object, checked; a vanished object reads the pointer again") {
    auto k = knowledge();
    baton::detail::commit_get_machine m(k, "key");
    step s = m.start();
    REQUIRE(s.what == kind::read);
    CHECK(s.where == store_id::records);
    s = m.on_get({}, pointer_to("_o/a", "hello", "p1"));
    REQUIRE(s.what == kind::read);
    CHECK(s.where == store_id::objects);
    CHECK(s.key == "_o/a");
    s = m.on_get({}, get_result{}); // replaced and deleted meanwhile
    REQUIRE(s.what == kind::read);
    CHECK(s.where == store_id::records);
    s = m.on_get({}, pointer_to("_o/b", "world", "p2"));
    s = m.on_get({}, found("o", "world"));
    REQUIRE(s.what == kind::done);
    CHECK(!s.ec);
    CHECK(m.result().found->body == "world");
    CHECK(m.result().found->version == "p2");

    baton::detail::commit_get_machine bad(k, "key");
    bad.start();
    bad.on_get({}, pointer_to("_o/b", "world", "p2"));
    s = bad.on_get({}, found("o", "WORLD"));
    CHECK(s.ec == errc::invalid_response); // changed outside baton: never returned

    baton::detail::commit_get_machine erased(k, "key");
    erased.start();
    s = erased.on_get({}, tombstone("t", "p3"));
    REQUIRE(s.what == kind::done);
    CHECK(!s.ec);
    CHECK(!erased.result().found);
}

TEST_CASE("commit erase: a tombstone on the version read, then the erased object deleted before completing") {
    auto k = knowledge();
    baton::detail::commit_erase_machine m(k, "key", precondition::none());
    step s = m.start();
    REQUIRE(s.what == kind::read);
    s = m.on_get({}, pointer_to("_o/a", "x", "p1"));
    REQUIRE(s.what == kind::write);
    CHECK(s.pc.version() == "p1");
    baton::detail::commit_pointer p;
    baton::diagnostics d;
    REQUIRE(!baton::detail::decode_commit_pointer(s.body, p, d));
    CHECK(p.erased);
    std::string const nonce = p.nonce;
    put_result refused; // our own tombstone had landed
    refused.current = tombstone(nonce, "p2").found;
    s = m.on_put(errc::precondition_failed, refused);
    REQUIRE(s.what == kind::erase);
    CHECK(s.where == store_id::objects);
    CHECK(s.key == "_o/a");
    s = m.on_erase(errc::timeout, baton::erase_result{});
    REQUIRE(s.what == kind::done);
    CHECK(!s.ec); // the object is garbage either way

    // Stopped before deleting the erased object: erased all the same, and the object goes without waiting.
    baton::detail::commit_erase_machine stopped(k, "key", precondition::none());
    stopped.start();
    stopped.on_get({}, pointer_to("_o/b", "x", "p4"));
    REQUIRE(stopped.on_put({}, put_answer("p5")).what == kind::erase);
    s = stopped.on_cancel();
    REQUIRE(s.what == kind::done);
    CHECK(!s.ec);
    REQUIRE(s.discard.size() == 1);
    CHECK(s.discard[0] == "_o/b");

    baton::detail::commit_erase_machine missing(k, "key", precondition::matches("p9"));
    s = missing.start();
    REQUIRE(s.what == kind::write);
    s = missing.on_put(errc::precondition_failed, put_result{});
    s = missing.on_get({}, tombstone("other", "p10"));
    CHECK(s.ec == errc::not_found);
}

TEST_CASE("commit list, probe, copy and collect: each step addressed to its store") {
    auto k = knowledge();
    {
        baton::detail::commit_list_machine m("k", "", 2);
        step s = m.start();
        REQUIRE(s.what == kind::list);
        CHECK(s.key == "k");
        baton::list_page page;
        page.entries = {baton::list_entry{"k1", "p1"}, baton::list_entry{"k2", "p2"}};
        page.truncated = true;
        s = m.on_list({}, page);
        CHECK(s.key == "k1");
        s = m.on_get({}, tombstone("t", "p1"));
        CHECK(s.key == "k2");
        s = m.on_get({}, found("p2", "foreign"));
        REQUIRE(s.what == kind::list); // only tombstones and foreign records: list on
        CHECK(s.after == "k2");
        page.entries = {baton::list_entry{"k3", "p3"}};
        page.truncated = false;
        m.on_list({}, page);
        s = m.on_get({}, pointer_to("_o/x", "x", "p3"));
        REQUIRE(s.what == kind::done);
        REQUIRE(m.result().entries.size() == 1);
        CHECK(m.result().entries[0].key == "k3");
    }
    {
        baton::detail::commit_probe_machine m(k);
        CHECK(m.start().what == kind::probe);
        step s = m.on_probe({}, honouring());
        REQUIRE(s.what == kind::write);
        CHECK(s.where == store_id::objects);
        std::string const body = s.body;
        s = m.on_put({}, put_answer("o"));
        REQUIRE(s.what == kind::read);
        s = m.on_get({}, found("o", "something else"));
        REQUIRE(s.what == kind::done);
        CHECK(s.ec == errc::invalid_response);
        CHECK(!m.result().findings.empty());

        // Stopped after its scratch object was written: deleted without waiting.
        baton::detail::commit_probe_machine stopped(k);
        stopped.start();
        s = stopped.on_probe({}, honouring());
        std::string const scratch = s.key;
        stopped.on_put({}, put_answer("o"));
        s = stopped.on_cancel();
        CHECK(s.ec == boost::asio::error::operation_aborted);
        REQUIRE(s.discard.size() == 1);
        CHECK(s.discard[0] == scratch);
    }
    {
        // In the store: the source's pointer names an object the store copies; gone meanwhile, read again.
        baton::detail::commit_copy_machine m(k, "from", "to", precondition::absent(), true);
        step s = m.start();
        REQUIRE(s.what == kind::read);
        CHECK(s.key == "from");
        s = m.on_get({}, pointer_to("_o/src1", "abc", "p1"));
        REQUIRE(s.what == kind::copy);
        CHECK(s.source == "_o/src1");
        CHECK(s.where == store_id::objects);
        s = m.on_put(errc::not_found, put_result{});
        REQUIRE(s.what == kind::read);
        CHECK(s.key == "from");
        s = m.on_get({}, pointer_to("_o/src2", "abc", "p2"));
        CHECK(s.source == "_o/src2");
        s = m.on_put({}, put_answer("o"));
        REQUIRE(s.what == kind::write);
        CHECK(s.key == "to");
        s = m.on_put({}, put_answer("p9"));
        REQUIRE(s.what == kind::done);
        CHECK(!s.ec);
        CHECK(m.result().version == "p9");

        // Through this process: the record is read, then written again.
        baton::detail::commit_copy_machine r(k, "from", "to2", precondition::none(), false);
        s = r.start();
        REQUIRE(s.what == kind::read);
        s = r.on_get({}, pointer_to("_o/src2", "abc", "p2"));
        s = r.on_get({}, found("o", "abc"));
        REQUIRE(s.what == kind::read); // the put's own read of `to` (none)
        CHECK(s.key == "to2");
        s = r.on_get({}, get_result{});
        REQUIRE(s.what == kind::write);
        CHECK(s.body == "abc");

        // A record larger than the store takes is refused before anything is written.
        auto small_k = [] {
            baton::commit_protocol_params p;
            p.object_prefix = "_o/";
            p.check_lock_store = false;
            p.max_body_bytes = 2;
            return commit_knowledge(p, 12);
        }();
        baton::detail::commit_copy_machine big(small_k, "from", "to3", precondition::none(), false);
        big.start();
        big.on_get({}, pointer_to("_o/src2", "abc", "p2"));
        s = big.on_get({}, found("o", "abc"));
        CHECK(s.ec == errc::invalid_argument);

        baton::detail::commit_copy_machine absent(k, "nothing", "to", precondition::none(), true);
        absent.start();
        s = absent.on_get({}, get_result{});
        CHECK(s.ec == errc::not_found);
    }
    {
        baton::detail::commit_collect_machine m(k, "key");
        step s = m.start();
        REQUIRE(s.what == kind::list);
        CHECK(s.where == store_id::objects);
        CHECK(s.key == "_o/key");
        std::string const stale = baton::detail::commit_object_name("_o/", "key", baton::detail::commit_base_tag(std::string_view("p1")), "0123456789abcdef0123456789abcdef");
        std::string const live = baton::detail::commit_object_name("_o/", "key", baton::detail::commit_base_tag(std::string_view("p2")), "fedcba9876543210fedcba9876543210");
        baton::list_page page;
        page.entries = {baton::list_entry{stale, "e1"}, baton::list_entry{"_o/not-ours", "e2"}, baton::list_entry{live, "e3"}};
        s = m.on_list({}, page);
        REQUIRE(s.what == kind::read);
        CHECK(s.key == "key");
        s = m.on_get({}, pointer_to(live, "x", "p3")); // p3 names the live object; the stale one's base is gone
        REQUIRE(s.what == kind::erase);
        CHECK(s.key == stale);
        s = m.on_erase({}, baton::erase_result{});
        REQUIRE(s.what == kind::read);
        s = m.on_get({}, pointer_to(live, "x", "p3"));
        REQUIRE(s.what == kind::done);
        CHECK(m.result().scanned == 2);
        CHECK(m.result().collected == 1);
        CHECK(m.result().kept == 1);
    }
}

TEST_CASE("listed reads: one page of keys, each read in turn; a deleted key is skipped; accept may end the page") {
    struct keep {
        std::vector<std::string> seen;
        error_code operator()(record& r, baton::diagnostics& d) {
            if (r.body == "foreign") {
                d.message = "not ours: " + r.key;
                return errc::foreign_record;
            }
            seen.push_back(r.key + "=" + r.body);
            return {};
        }
    };
    baton::detail::listed_reads<keep> m("a", 3, keep{});
    step s = m.start();
    REQUIRE(s.what == kind::list);
    CHECK(s.after == "a");
    CHECK(s.limit == 3);
    baton::list_page page;
    page.entries = {baton::list_entry{"b", "1"}, baton::list_entry{"c", "2"}, baton::list_entry{"d", "3"}};
    page.truncated = true;
    s = m.on_list({}, page);
    REQUIRE(s.what == kind::read);
    CHECK(s.key == "b");
    s = m.on_get({}, found("1", "x"));
    CHECK(s.key == "c");
    s = m.on_get({}, get_result{}); // deleted since the listing
    CHECK(s.key == "d");
    s = m.on_get({}, found("3", "y"));
    REQUIRE(s.what == kind::done);
    CHECK(!s.ec);
    CHECK(m.accepted().seen == std::vector<std::string>{"b=x", "d=y"});
    CHECK(m.truncated());
    CHECK(m.next_after() == "d");

    baton::detail::listed_reads<keep> bad("", 10, keep{});
    bad.start();
    page.entries = {baton::list_entry{"e", "1"}};
    bad.on_list({}, page);
    s = bad.on_get({}, found("1", "foreign"));
    CHECK(s.ec == errc::foreign_record);
    CHECK(bad.diag().message == "not ours: e");

    baton::detail::listed_reads<keep> failed("", 10, keep{});
    failed.start();
    baton::list_page refused;
    refused.diag.message = "throttled";
    s = failed.on_list(errc::throttled, refused);
    CHECK(s.ec == errc::throttled);
    CHECK(!failed.listed());
    CHECK(failed.diag().message == "throttled");
}

// ---- the driver's lane mode -------------------------------------------------------------------
// A lane of an object that outlives its calls (the lease's) runs on the same driver as every
// call: its continuation waits itself, is told what leaves, rests on `none`, and completes at
// once. Here a scripted store and a continuation that logs what the driver asks of it.
namespace {

struct scripted_lane_store {
    std::vector<std::string> sent;                                  // "get k", "put k body"
    std::vector<std::function<void(error_code, get_result)>> gets;  // answers still owed
    std::vector<std::function<void(error_code, put_result)>> puts;
    template <class H>
    void async_get(std::string key, H&& h) {
        sent.push_back("get " + key);
        gets.emplace_back(std::forward<H>(h));
    }
    template <class H>
    void async_put(std::string key, std::string body, precondition, H&& h) {
        sent.push_back("put " + key + " " + body);
        puts.emplace_back(std::forward<H>(h));
    }
};

struct lane_host {
    scripted_lane_store backend;
};

// Read, then write what was read plus one; a refused write waits 5 ms and reads again; a written
// one rests (nothing to do until the owner wakes the lane). A stopped wait ends aborted.
struct counting_lane {
    int* writes;
    step on_get(error_code ec, get_result r) {
        if (ec) return step::done(ec);
        return step::write(r.found ? r.found->body + "+" : std::string("1"), precondition::none());
    }
    step on_put(error_code ec, put_result) {
        if (ec == errc::precondition_failed) return step::wait(std::chrono::milliseconds(5));
        if (ec) return step::done(ec);
        ++*writes;
        return step::none();
    }
    step on_wait() { return step::read(); }
    step on_cancel() { return step::done(boost::asio::error::operation_aborted); }
};

struct lane_test_ctx {
    struct spec {
        using machine = counting_lane;
        using result_type = int;
        static constexpr bool passes_store_aborts = true;
        int finish(lane_host&, std::string const&, counting_lane& m, error_code&) const { return *m.writes; }
    };
    struct view {
        counting_lane lane;
        counting_lane* operator->() { return &lane; }
        counting_lane& operator*() { return lane; }
        void reset() {}
    };
    using host_type = lane_host;
    using spec_type = spec;
    lane_host* host;
    std::string key;
    spec_type spec{};
    view m;
    std::string asked{};
    bool went_async = true;
};
using lane_test_driver = baton::detail::machine_driver<lane_test_ctx>;

struct lane_test_call {
    lane_test_ctx* c;
    std::vector<std::string>* log;
    boost::asio::cancellation_type cancelled() const { return boost::asio::cancellation_type::none; }
    void sending(step const& s) { log->push_back(s.what == kind::read ? "sending read" : "sending write"); }
    void wait(std::chrono::nanoseconds d) {
        log->push_back("wait " + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + "ms");
    }
    void rest() { log->push_back("rest"); }
    void complete(error_code ec, int writes) { log->push_back("done " + ec.message() + " after " + std::to_string(writes)); }
    void operator()(error_code ec, get_result r) { lane_test_driver::answer(*c, *this, ec, std::move(r)); }
    void operator()(error_code ec, put_result r) { lane_test_driver::answer(*c, *this, ec, std::move(r)); }
};

} // namespace

TEST_CASE("one driver, lane mode: the continuation waits, is told what leaves, rests on none, completes at once") {
    lane_host host;
    int writes = 0;
    lane_test_ctx c{&host, "lane/k", {}, {counting_lane{&writes}}};
    std::vector<std::string> log;
    lane_test_call call{&c, &log};

    lane_test_driver::step(c, call, step::read());
    REQUIRE(host.backend.sent == std::vector<std::string>{"get lane/k"});
    CHECK(log == std::vector<std::string>{"sending read"});

    // The record reads "a": the write sends "a+"; it is refused, so the lane waits (on the continuation's own timer).
    auto g = std::move(host.backend.gets.back());
    g(error_code{}, found("v1", "a"));
    REQUIRE(host.backend.sent.back() == "put lane/k a+");
    auto p = std::move(host.backend.puts.back());
    p(errc::precondition_failed, put_result{});
    CHECK(log == std::vector<std::string>{"sending read", "sending write", "wait 5ms"});
    CHECK(host.backend.sent.size() == 2); // nothing leaves while it waits

    // The owner's timer fires: read again, write, and rest without completing.
    lane_test_driver::waited(c, call, error_code{});
    host.backend.gets.back()(error_code{}, found("v2", "b"));
    CHECK(host.backend.sent.back() == "put lane/k b+");
    host.backend.puts.back()(error_code{}, put_result{});
    CHECK(writes == 1);
    CHECK(log.back() == "rest");
    CHECK(log.size() == 6);

    // Woken with a step again, and stopped at a wait: on_cancel ends it, completing inside the
    // call that stopped it (a lane's pending operation posts the user's handler itself).
    lane_test_driver::step(c, call, step::wait(std::chrono::milliseconds(7)));
    CHECK(log.back() == "wait 7ms");
    lane_test_driver::waited(c, call, boost::asio::error::operation_aborted);
    CHECK(log.back() == "done " + error_code(boost::asio::error::operation_aborted).message() + " after 1");
}

// ---- the conditional-write probe -----------------------------------------------------------
// The probe against a scripted wire: each request is recorded as a line, and answered at once
// from the script. What the cleanup sends matters to a bucket policy that refuses deletes
// without If-Match (AWS S3's conditional-delete enforcement): the probe must pass it.

namespace probe_tests {

using baton::detail::probe_findings;
using baton::detail::probe_outcome;

struct script {
    std::deque<probe_outcome> answers;
    std::vector<std::string> sent;
    std::optional<error_code> done;
    probe_findings found;
};

probe_outcome ok(std::string etag = {}) {
    probe_outcome o;
    o.answer = "HTTP 200";
    o.etag = std::move(etag);
    return o;
}

probe_outcome refused(error_code ec, std::string answer) {
    probe_outcome o;
    o.ec = ec;
    o.answer = std::move(answer);
    return o;
}

// A wire of S3's kind: ETags come quoted, and the bare form is worth a try.
struct scripted_wire {
    std::shared_ptr<script> s;

    template <class F>
    void answer(std::string line, F&& f) const {
        s->sent.push_back(std::move(line));
        REQUIRE(!s->answers.empty());
        auto o = std::move(s->answers.front());
        s->answers.pop_front();
        f(std::move(o));
    }
    template <class F>
    void put(std::optional<std::string> if_none_match, std::optional<std::string> if_match, F&& f) const {
        answer("put" + (if_none_match ? " if-none-match " + *if_none_match : std::string()) +
                   (if_match ? " if-match " + *if_match : std::string()),
               std::forward<F>(f));
    }
    template <class F>
    void erase(std::optional<std::string> if_match, F&& f) const {
        answer("erase" + (if_match ? " if-match " + *if_match : std::string()), std::forward<F>(f));
    }
    template <class F>
    void read(F&& f) const {
        answer("read", std::forward<F>(f));
    }
    std::optional<std::string> unquoted(std::string const& etag) const {
        if (etag.size() < 2 || etag.front() != '"' || etag.back() != '"') return std::nullopt;
        return etag.substr(1, etag.size() - 2);
    }
    void done(error_code ec, probe_findings f) const {
        s->done = ec;
        s->found = std::move(f);
    }
};

std::shared_ptr<script> run_probe(std::deque<probe_outcome> answers) {
    auto s = std::make_shared<script>();
    s->answers = std::move(answers);
    std::make_shared<baton::detail::conditional_probe<scripted_wire>>(scripted_wire{s})->start();
    return s;
}

} // namespace probe_tests

TEST_SUITE("conditional_probe") {

using namespace probe_tests;

TEST_CASE("a probe that fails midway erases its scratch object on the ETag it reads back") {
    auto s = run_probe({ok("\"e1\""),                                      // put if absent: created
                        refused(errc::service_unavailable, "HTTP 500"),      // put if absent again: fails the probe
                        ok("\"e1\""),                                      // read: still the first write
                        ok()});                                              // erase if matching: gone
    REQUIRE(s->done);
    CHECK(*s->done == errc::service_unavailable); // the probe's own failure, not the cleanup's
    CHECK(s->sent == std::vector<std::string>{"put if-none-match *", "put if-none-match *", "read",
                                              "erase if-match \"e1\""});
    CHECK(s->answers.empty());
}

TEST_CASE("the cleanup reads again when the object changed under it; it gives up after three rounds") {
    auto s = run_probe({ok("\"e1\""), refused(errc::service_unavailable, "HTTP 500"),
                        ok("\"e1\""), refused(errc::precondition_failed, "HTTP 412"), // quoted: refused,
                        refused(errc::precondition_failed, "HTTP 412"),                 // bare: refused too
                        ok("\"e2\""), ok()});
    REQUIRE(s->done);
    CHECK(s->sent == std::vector<std::string>{"put if-none-match *", "put if-none-match *", "read",
                                              "erase if-match \"e1\"", "erase if-match e1", "read",
                                              "erase if-match \"e2\""});

    // Changed before every erase: three rounds, never an unconditional erase.
    std::deque<probe_outcome> answers{ok("\"e1\""), refused(errc::service_unavailable, "HTTP 500")};
    for (int round = 0; round < 3; ++round) {
        answers.push_back(ok("\"x\""));
        answers.push_back(refused(errc::precondition_failed, "HTTP 412"));
        answers.push_back(refused(errc::precondition_failed, "HTTP 412"));
    }
    s = run_probe(std::move(answers));
    REQUIRE(s->done);
    CHECK(s->answers.empty());
    CHECK(s->sent.size() == 2 + 3 * 3);
    for (auto const& line : s->sent) CHECK(line != "erase");
}

TEST_CASE("the cleanup of a missing object sends no erase; a lost erase answer is read back") {
    probe_outcome lost = refused(errc::timeout, "");
    lost.transport = true;
    auto s = run_probe({lost, refused(errc::not_found, "HTTP 404 NoSuchKey")});
    REQUIRE(s->done);
    CHECK(*s->done == errc::timeout);
    CHECK(s->sent == std::vector<std::string>{"put if-none-match *", "read"});

    s = run_probe({ok("\"e1\""), refused(errc::service_unavailable, "HTTP 500"), ok("\"e1\""), lost,
                   refused(errc::not_found, "HTTP 404 NoSuchKey")});
    REQUIRE(s->done);
    CHECK(s->sent == std::vector<std::string>{"put if-none-match *", "put if-none-match *", "read",
                                              "erase if-match \"e1\"", "read"});
}

TEST_CASE("only a store that refuses conditional erases is cleaned up without a precondition") {
    // Found by the probe: erase if matching a stale ETag refused as not supported.
    auto s = run_probe({ok("\"e1\""),                                        // put if absent: created
                        refused(errc::precondition_failed, "HTTP 412"),        // again: refused (honoured)
                        ok("\"e2\""),                                        // put if matching: accepted
                        refused(errc::precondition_failed, "HTTP 412"),        // stale: refused (honoured)
                        refused(errc::invalid_argument, "HTTP 501 NotImplemented"), // erase if matching: not supported
                        ok()});                                                // cleanup
    REQUIRE(s->done);
    CHECK(!*s->done);
    CHECK(s->found.caps.supports_leases());
    CHECK(!s->found.caps.conditional_erase);
    CHECK(s->sent.back() == "erase");
    CHECK(s->sent.size() == 6);

    // Found by the cleanup's own erase, after a probe that failed before its erase checks.
    s = run_probe({ok("\"e1\""), refused(errc::service_unavailable, "HTTP 500"), ok("\"e1\""),
                   refused(errc::invalid_argument, "HTTP 501 NotImplemented"), ok()});
    REQUIRE(s->done);
    CHECK(s->sent == std::vector<std::string>{"put if-none-match *", "put if-none-match *", "read",
                                              "erase if-match \"e1\"", "erase"});
}

TEST_CASE("a probe that succeeds on a store honouring every precondition leaves nothing to clean up") {
    auto s = run_probe({ok("\"e1\""), refused(errc::precondition_failed, "HTTP 412"), ok("\"e2\""),
                        refused(errc::precondition_failed, "HTTP 412"), refused(errc::precondition_failed, "HTTP 412"),
                        ok(), refused(errc::not_found, "HTTP 404 NoSuchKey")});
    REQUIRE(s->done);
    CHECK(!*s->done);
    CHECK(s->found.caps.conditional_erase);
    CHECK(s->answers.empty());
    CHECK(s->sent == std::vector<std::string>{"put if-none-match *", "put if-none-match *", "put if-match \"e1\"",
                                              "put if-match \"e1\"", "erase if-match \"e1\"",
                                              "erase if-match \"e2\"", "put if-match \"e1\""});
}

} // TEST_SUITE conditional_probe
