// The foundation: lease options, retry policies, the lease record codec, the
// memory backend, and minimal exemplars of the four policy concepts.
#include <test_common/fixtures.hpp>
#include <test_common/run_op.hpp>
#include <baton/backend/memory.hpp>
#include <baton/core/clock.hpp>
#include <baton/recipe/detail/lease_record.hpp>
#include <baton/core/error.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/recipe/lease_options.hpp>
#include <baton/core/detail/timer_queue.hpp>
#include <baton/core/retry.hpp>
#include <baton/core/signer.hpp>
#include <baton/sim/scheduler.hpp>
#include <baton/sim/virtual_timer.hpp>
#include <baton/store/record_store.hpp>

#include <doctest/doctest.h>

#include <boost/asio/append.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using baton::errc;
using baton::error_code;

baton::lease_options valid_options() {
    baton::lease_options o;
    o.key = "jobs/nightly";
    return o;
}

// The message of the config_error `f` throws, or a marker when it throws none.
template <class F>
std::string config_error_of(F&& f) {
    try {
        f();
    } catch (baton::config_error const& e) {
        return e.what();
    }
    return "<no config_error>";
}

using test_common::contains;

using test_common::run_op;

} // namespace

TEST_SUITE("lease_options") {

TEST_CASE("defaults with a key are valid and derive renew interval and deadline from ttl") {
    auto o = valid_options();
    CHECK_NOTHROW(o.validate());
    CHECK(o.ttl == 20s);
    CHECK(o.effective_renew_interval() == std::chrono::milliseconds(6666));
    CHECK(o.effective_renew_deadline() == std::chrono::milliseconds(13333));
    CHECK(o.max_clock_rate_skew == 2.0);

    o.ttl = 30s;
    CHECK(o.effective_renew_interval() == 10s);
    CHECK(o.effective_renew_deadline() == 20s);
    CHECK_NOTHROW(o.validate());

    o.renew_interval = 5s;
    o.renew_deadline = 12s;
    CHECK(o.effective_renew_interval() == 5s);
    CHECK(o.effective_renew_deadline() == 12s);
    CHECK_NOTHROW(o.validate());
}

TEST_CASE("timing rules are rejected with a message naming the rule") {
    auto o = valid_options();
    SUBCASE("ttl must be positive") {
        o.ttl = 0ms;
        CHECK(contains(config_error_of([&] { o.validate(); }), "ttl must be positive"));
    }
    SUBCASE("ttl at least 3 x renew_interval") {
        o.ttl = 20s;
        o.renew_interval = 7s;
        o.renew_deadline = 10s;
        CHECK(contains(config_error_of([&] { o.validate(); }),
                       "ttl (20000ms) must be at least 3 x renew_interval (7000ms)"));
        o.renew_interval = std::chrono::milliseconds(6667); // 3 x 6667 = 20001 > ttl
        CHECK(contains(config_error_of([&] { o.validate(); }), "at least 3 x renew_interval"));
        o.renew_interval = std::chrono::milliseconds(6666);
        CHECK_NOTHROW(o.validate());
    }
    SUBCASE("renew_deadline below ttl") {
        o.renew_deadline = 20s;
        CHECK(contains(config_error_of([&] { o.validate(); }), "renew_deadline (20000ms) must be less than ttl (20000ms)"));
        o.renew_deadline = 25s;
        CHECK(contains(config_error_of([&] { o.validate(); }), "must be less than ttl"));
    }
    SUBCASE("renew_deadline above renew_interval") {
        o.ttl = 30s;
        o.renew_interval = 10s;
        o.renew_deadline = 10s;
        CHECK(contains(config_error_of([&] { o.validate(); }),
                       "renew_deadline (10000ms) must be greater than renew_interval (10000ms)"));
        o.renew_deadline = std::chrono::milliseconds(10001);
        CHECK_NOTHROW(o.validate());
    }
    SUBCASE("max_clock_rate_skew at least 1") {
        o.max_clock_rate_skew = 0.99;
        CHECK(contains(config_error_of([&] { o.validate(); }), "max_clock_rate_skew must be at least 1"));
        o.max_clock_rate_skew = std::nan("");
        CHECK(contains(config_error_of([&] { o.validate(); }), "max_clock_rate_skew must be at least 1"));
        o.max_clock_rate_skew = 1.0;
        CHECK_NOTHROW(o.validate());
    }
    SUBCASE("poll_interval positive and at most ttl") {
        o.poll_interval = 0ms;
        CHECK(contains(config_error_of([&] { o.validate(); }), "poll_interval must be positive"));
        o.poll_interval = std::chrono::milliseconds(20001);
        CHECK(contains(config_error_of([&] { o.validate(); }), "poll_interval (20001ms) must not exceed ttl (20000ms)"));
        o.poll_interval = 20s;
        CHECK_NOTHROW(o.validate());
    }
}

TEST_CASE("key, owner and value sizes are bounded") {
    auto o = valid_options();
    o.key.clear();
    CHECK(contains(config_error_of([&] { o.validate(); }), "key must not be empty"));
    o.key.assign(1025, 'k');
    CHECK(contains(config_error_of([&] { o.validate(); }), "key must be at most 1024 bytes (it is 1025)"));
    o.key.assign(1024, 'k');
    CHECK_NOTHROW(o.validate());

    o.value.assign(8 * 1024 + 1, 'v');
    CHECK(contains(config_error_of([&] { o.validate(); }), "value must be at most 8 KiB"));
    o.value.assign(8 * 1024, 'v');
    CHECK_NOTHROW(o.validate());

    o.owner.assign(1024 + 1, 'o');
    CHECK(contains(config_error_of([&] { o.validate(); }), "owner must be at most 1 KiB"));
    o.owner = "host-\xc3\xa9"; // é: fine
    CHECK_NOTHROW(o.validate());
    o.owner = "host-\xc3"; // truncated sequence: every contender would fail to read the record
    CHECK(contains(config_error_of([&] { o.validate(); }), "owner must be valid UTF-8"));
    o.owner = "ok";
    o.value = "\xed\xa0\x80"; // a UTF-16 surrogate
    CHECK(contains(config_error_of([&] { o.validate(); }), "value must be valid UTF-8"));
}

TEST_CASE("the largest valid owner and value, escaped, still make a readable record") {
    baton::detail::lease_body b;
    b.owner.assign(1024, '\x01'); // escapes to \u0001: six bytes each
    b.value.assign(8 * 1024, '\x01');
    b.nonce = "0123456789abcdef0123456789abcdef";
    b.token = ~std::uint64_t(0);
    b.ttl = std::chrono::hours(24);
    baton::detail::lease_body back;
    baton::diagnostics d;
    CHECK_FALSE(baton::detail::decode_lease_body(baton::detail::encode_lease_body(b), back, d));
    CHECK(back.value == b.value);
}

TEST_CASE("a lease constructor validates its options") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    auto o = valid_options();
    o.renew_deadline = 30s;
    CHECK_THROWS_WITH_AS(baton::basic_lease<baton::memory_backend>(ioc.get_executor(), store, o),
                         doctest::Contains("renew_deadline (30000ms) must be less than ttl"), baton::config_error);
    CHECK_NOTHROW(baton::basic_lease<baton::memory_backend>(ioc.get_executor(), store, valid_options()));
}

}

TEST_SUITE("retry") {

TEST_CASE("standard_retry never retries non-retryable errors and honours max_attempts; no_retry never retries") {
    baton::standard_retry r;
    long const full = r.budget();
    for (auto e : {errc::precondition_failed, errc::held_by_other, errc::foreign_record, errc::invalid_argument,
                   errc::auth_failed, errc::not_found, errc::lease_lost}) {
        auto d = r.on_failure(e, 1, 0.5);
        CHECK_FALSE(d.retry);
        CHECK(d.delay == 0ns);
    }
    CHECK_FALSE(r.on_failure(asio::error::operation_aborted, 1, 0.5).retry);
    CHECK(r.budget() == full); // refusals cost nothing

    baton::retry_params p;
    p.max_attempts = 3;
    baton::standard_retry three(p);
    CHECK(three.on_failure(errc::service_unavailable, 1, 0.5).retry);
    CHECK(three.on_failure(errc::timeout, 2, 0.5).retry);
    CHECK_FALSE(three.on_failure(errc::timeout, 3, 0.5).retry);
    CHECK_FALSE(three.on_failure(errc::timeout, 7, 0.5).retry);

    p.max_attempts = 1;
    baton::standard_retry once(p);
    CHECK_FALSE(once.on_failure(errc::throttled, 1, 0.5).retry);

    // Connection-level failures are transient too.
    CHECK(r.on_failure(asio::error::connection_reset, 1, 0.5).retry);

    baton::no_retry never;
    for (auto e : {errc::timeout, errc::throttled, errc::service_unavailable, errc::conflict}) {
        auto d = never.on_failure(e, 1, 0.9);
        CHECK_FALSE(d.retry);
        CHECK(d.delay == 0ns);
    }
    never.on_success(1);
}

TEST_CASE("standard_retry delays follow full-jitter exponential backoff with a cap") {
    baton::retry_params p;
    p.max_attempts = 20;
    p.quota = 100000;
    baton::standard_retry r(p);
    double const almost_one = std::nextafter(1.0, 0.0);
    auto ceiling_of = [&](error_code ec, unsigned n) { return r.on_failure(ec, n, almost_one).delay; };
    auto near = [](std::chrono::nanoseconds got, std::chrono::nanoseconds cap) { return got <= cap && got >= cap - 1ns; };

    SUBCASE("u = 0 gives no delay") {
        for (unsigned n = 1; n < 10; ++n) {
            CHECK(r.on_failure(errc::timeout, n, 0.0).delay == 0ns);
            CHECK(r.on_failure(errc::throttled, n, 0.0).delay == 0ns);
        }
    }
    SUBCASE("transient failures grow from the transient base") {
        CHECK(near(ceiling_of(errc::timeout, 1), 50ms));
        CHECK(near(ceiling_of(errc::service_unavailable, 2), 100ms));
        CHECK(near(ceiling_of(errc::conflict, 3), 200ms));
        CHECK(near(ceiling_of(errc::timeout, 4), 400ms));
        CHECK(r.on_failure(errc::timeout, 3, 0.5).delay == 100ms);
    }
    SUBCASE("throttling grows from the throttling base") {
        CHECK(near(ceiling_of(errc::throttled, 1), 1000ms));
        CHECK(near(ceiling_of(errc::throttled, 2), 2000ms));
        CHECK(near(ceiling_of(errc::throttled, 3), 4000ms));
        CHECK(r.on_failure(errc::throttled, 2, 0.25).delay == 500ms);
    }
    SUBCASE("max_backoff caps every delay") {
        CHECK(near(ceiling_of(errc::throttled, 5), 16000ms));
        CHECK(near(ceiling_of(errc::throttled, 6), 20000ms)); // 32 s, capped
        CHECK(near(ceiling_of(errc::throttled, 19), 20000ms));
        CHECK(near(ceiling_of(errc::timeout, 19), 20000ms));
        CHECK(r.on_failure(errc::throttled, 19, 1.0).delay == 20000ms);  // u is clamped to [0, 1]
        CHECK(r.on_failure(errc::throttled, 19, 7.0).delay == 20000ms);
        CHECK(r.on_failure(errc::throttled, 19, -3.0).delay == 0ns);
    }
    SUBCASE("every draw lies within [0, ceiling]") {
        for (unsigned n = 1; n < 12; ++n)
            for (double u = 0; u < 1.0; u += 0.0625) {
                auto const ceiling = std::min<std::chrono::nanoseconds>(50ms * (1 << (n - 1)), 20s);
                auto const d = r.on_failure(errc::timeout, n, u).delay;
                CHECK(d >= 0ns);
                CHECK(d <= ceiling);
            }
    }
}

TEST_CASE("the retry budget is shared by copies, drains, refuses when empty, and refills on success") {
    baton::retry_params p;
    p.max_attempts = 10;
    p.quota = 30;
    p.transient_cost = 14;
    p.throttling_cost = 5;
    baton::standard_retry a(p);
    baton::standard_retry b = a; // same budget
    baton::standard_retry other(p); // a budget of its own

    CHECK(a.budget() == 30);
    CHECK(a.on_failure(errc::timeout, 1, 0.5).retry);
    CHECK(b.budget() == 16);
    CHECK(b.on_failure(errc::service_unavailable, 1, 0.5).retry);
    CHECK(a.budget() == 2);
    // 2 left: a transient retry (14) is refused, even at the first attempt.
    auto refused = b.on_failure(errc::timeout, 1, 0.5);
    CHECK_FALSE(refused.retry);
    CHECK(refused.delay == 0ns);
    CHECK(a.budget() == 2);
    CHECK_FALSE(a.on_failure(errc::throttled, 1, 0.5).retry); // throttling costs 5
    CHECK(other.budget() == 30);
    CHECK(other.on_failure(errc::timeout, 1, 0.5).retry);

    // Successes refill it, up to the quota.
    auto& r = a;
    REQUIRE(r.budget() == 2);
    r.on_success(1); // first-attempt success: the small refund
    CHECK(r.budget() == 3);
    r.on_success(2); // success after a retry: the retry's cost back
    CHECK(r.budget() == 17);
    baton::standard_retry copy = r;
    CHECK(copy.on_failure(errc::throttled, 1, 0.5).retry);
    CHECK(r.budget() == 12);
    for (int i = 0; i < 10; ++i) copy.on_success(3);
    CHECK(r.budget() == 30); // never above the quota
}

TEST_CASE("retry_params::validate names the broken rule") {
    baton::retry_params p;
    CHECK_NOTHROW(p.validate());
    p.max_attempts = 0;
    CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("max_attempts must be at least 1"), baton::config_error);
    CHECK_THROWS_AS(baton::standard_retry{p}, baton::config_error);
    p = {};
    p.transient_base = -1ms;
    CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("must not be negative"), baton::config_error);
    p = {};
    p.max_backoff = 999ms; // below the throttling base
    CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("max_backoff must be at least each backoff base"),
                         baton::config_error);
    // In nanoseconds this cap overflows: the backoff would come out negative.
    p = {};
    p.max_backoff = std::chrono::milliseconds::max();
    CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("max_backoff must be at most 1 hour"), baton::config_error);
    p.max_backoff = std::chrono::hours(1);
    p.transient_base = std::chrono::hours(1);
    CHECK_NOTHROW(p.validate());
    baton::standard_retry r{p};
    auto d = r.on_failure(baton::errc::timeout, 2, 1.0); // base × 2, capped
    CHECK(d.retry);
    CHECK(d.delay == std::chrono::hours(1));
}

TEST_CASE("a custom retry policy's delay is kept within [0, 24 h] by the lease engine") {
    CHECK(baton::detail::machine_step::wait(std::chrono::nanoseconds::max()).delay == std::chrono::hours(24));
    CHECK(baton::detail::machine_step::wait(std::chrono::nanoseconds::min()).delay == std::chrono::nanoseconds(0));
    CHECK(baton::detail::machine_step::wait(5ms).delay == 5ms);
}

}

TEST_SUITE("lease record") {

using baton::detail::decode_lease_body;
using baton::detail::encode_lease_body;
using baton::detail::lease_body;

namespace {
lease_body sample_body() {
    lease_body b;
    b.owner = "host-1#00ff";
    b.value = "10.0.0.7:8080";
    b.nonce = "0123456789abcdef0123456789abcdef";
    b.token = 7;
    b.ttl = 20s;
    return b;
}

// Decodes `text`, expecting foreign_record with an explanation containing `why`.
void check_foreign(std::string const& text, std::string const& why) {
    lease_body out;
    baton::diagnostics d;
    auto ec = decode_lease_body(text, out, d);
    CHECK_MESSAGE(ec == errc::foreign_record, text.substr(0, 200));
    CHECK_MESSAGE(contains(d.message, why), d.message, " (wanted: ", why, ")");
    CHECK(contains(d.message, "lease record: "));
}

std::string with_field(std::string const& field, std::string const& json_value) {
    std::string body = encode_lease_body(sample_body());
    auto const at = body.find("\"" + field + "\":");
    REQUIRE(at != std::string::npos);
    auto const start = at + field.size() + 3;
    auto end = start;
    if (body[start] == '"') {
        end = body.find('"', start + 1) + 1;
    } else {
        while (body[end] != ',' && body[end] != '}') ++end;
    }
    return body.substr(0, start) + json_value + body.substr(end);
}

std::string without_field(std::string const& field) {
    std::string body = with_field(field, "0");
    auto const at = body.find("\"" + field + "\":0");
    auto len = field.size() + 4;
    // Remove the member and one adjacent comma.
    if (body[at + len] == ',') ++len;
    else if (body[at - 1] == ',') {
        return body.substr(0, at - 1) + body.substr(at + len);
    }
    return body.substr(0, at) + body.substr(at + len);
}
} // namespace

TEST_CASE("a lease body's turn (turn_ms) is optional advice: absent or invalid reads as 0, written only when set") {
    auto b = sample_body();
    CHECK_FALSE(contains(encode_lease_body(b), "turn_ms")); // the bytes of a record without a turn are unchanged
    b.turn = 25ms;
    auto const text = encode_lease_body(b);
    CHECK(contains(text, R"("ttl_ms":20000,"turn_ms":25,"value")"));
    lease_body out;
    baton::diagnostics d;
    REQUIRE_FALSE(decode_lease_body(text, out, d));
    CHECK(out.turn == 25ms);
    REQUIRE_FALSE(decode_lease_body(encode_lease_body(sample_body()), out, d));
    CHECK(out.turn == 0ms);
    auto const turn_of = [&](std::string const& json_value) {
        std::string t = text;
        t.replace(t.find("\"turn_ms\":25"), 12, "\"turn_ms\":" + json_value);
        return t;
    };
    REQUIRE_FALSE(decode_lease_body(turn_of("86400000"), out, d));
    CHECK(out.turn == std::chrono::hours(24));
    // Advice only: anything else reads as no turn, never as a foreign record.
    for (char const* bad : {"86400001", "-1", "\"25\"", "25.0", "null"}) {
        INFO(bad);
        REQUIRE_FALSE(decode_lease_body(turn_of(bad), out, d));
        CHECK(out.turn == 0ms);
    }
}

TEST_CASE("lease bodies round-trip, escaping quotes, control characters and UTF-8") {
    SUBCASE("plain") {
        auto b = sample_body();
        auto const text = encode_lease_body(b);
        CHECK(text ==
              R"({"baton":"lease/1","owner":"host-1#00ff","token":7,"nonce":"0123456789abcdef0123456789abcdef","state":"held","ttl_ms":20000,"value":"10.0.0.7:8080"})");
        // Sized to fit: the lease and the memory store keep the record, and its spare capacity
        // counted in lease_bench's bytes per held lease (room for six bytes a byte made it 1,359).
        CHECK(text.capacity() < text.size() + 32);
        for (bool released : {false, true})
            for (long turn : {0L, -5L, 25L, std::numeric_limits<long>::max()}) {
                auto const t = encode_lease_body("o\"w", "v\n", "n", 7, released, std::chrono::milliseconds(-1),
                                                 std::chrono::milliseconds(turn));
                CHECK(t.capacity() < t.size() + 32);
            }
        lease_body out;
        baton::diagnostics d;
        REQUIRE_FALSE(decode_lease_body(text, out, d));
        CHECK(d.empty());
        CHECK(out.owner == b.owner);
        CHECK(out.value == b.value);
        CHECK(out.nonce == b.nonce);
        CHECK(out.token == 7);
        CHECK_FALSE(out.released);
        CHECK(out.ttl == 20s);
    }
    SUBCASE("hostile strings") {
        lease_body b = sample_body();
        b.owner = std::string("a \"quoted\" \\ owner\n\r\t\x01\x1f\x7f end") + std::string(1, '\0') + "nul";
        b.value = "{\"not\":\"parsed\"} \xc3\xbc\xc3\xb1\xc3\xaf \xe2\x9c\x93 \xf0\x9f\x9a\x80 </script>";
        b.released = true;
        b.token = std::numeric_limits<std::uint64_t>::max();
        b.ttl = std::chrono::hours(24);
        auto const text = encode_lease_body(b);
        CHECK(contains(text, R"(\"quoted\")"));
        CHECK(contains(text, R"(\\ owner\n\r\t\u0001\u001f)"));
        CHECK(contains(text, R"(\u0000nul)"));
        CHECK(contains(text, "\xf0\x9f\x9a\x80")); // UTF-8 passes through as is
        CHECK(contains(text, R"("state":"released")"));
        lease_body out;
        baton::diagnostics d;
        REQUIRE_FALSE(decode_lease_body(text, out, d));
        CHECK(out.owner == b.owner);
        CHECK(out.value == b.value);
        CHECK(out.released);
        CHECK(out.token == std::numeric_limits<std::uint64_t>::max());
        CHECK(out.ttl == std::chrono::hours(24));
    }
    SUBCASE("other writers' spelling: reordered members, whitespace, escapes") {
        std::string const text = " {\n \"value\" : \"v\\u00fc\", \"ttl_ms\":1, \"state\":\"held\", \"nonce\":\"n\","
                                 " \"token\":0, \"owner\":\"\\\"o\\\"\", \"baton\":\"lease/1\", \"extra\":[1,2] } ";
        lease_body out;
        baton::diagnostics d;
        REQUIRE_FALSE(decode_lease_body(text, out, d));
        CHECK(out.value == "v\xc3\xbc");
        CHECK(out.owner == "\"o\"");
        CHECK(out.token == 0);
        CHECK(out.ttl == 1ms);
    }
}

TEST_CASE("non-lease bodies and missing fields are foreign records with an explanation") {
    check_foreign("", "not JSON");
    check_foreign("hello", "not JSON");
    check_foreign("{\"baton\":\"lease/1\",", "not JSON");
    check_foreign(encode_lease_body(sample_body()) + "}", "not JSON");
    check_foreign("[1,2,3]", "not a JSON object");
    check_foreign("\"lease/1\"", "not a JSON object");
    check_foreign("42", "not a JSON object");
    check_foreign("null", "not a JSON object");
    check_foreign(with_field("baton", "\"lease/2\""), "format tag");
    check_foreign(with_field("baton", "1"), "format tag");
    check_foreign(with_field("state", "\"expired\""), "\"state\" must be \"held\" or \"released\"");
    check_foreign(with_field("owner", "7"), "\"owner\" missing or not a string");
    check_foreign(with_field("value", "null"), "\"value\" missing or not a string");
    // Each missing field is named.
    check_foreign(without_field("baton"), "format tag");
    check_foreign(without_field("owner"), "\"owner\"");
    check_foreign(without_field("nonce"), "\"nonce\"");
    check_foreign(without_field("value"), "\"value\"");
    check_foreign(without_field("token"), "\"token\"");
    check_foreign(without_field("state"), "\"state\"");
    check_foreign(without_field("ttl_ms"), "\"ttl_ms\"");
    check_foreign("{}", "format tag");
}

TEST_CASE("tokens must be non-negative integers that fit 64 bits; ttl must be within (0, 24 h]") {
    std::string const token_rule = "\"token\" missing or not a non-negative integer";
    check_foreign(with_field("token", "-1"), token_rule);
    check_foreign(with_field("token", "1.5"), token_rule);
    check_foreign(with_field("token", "1e3"), token_rule);
    check_foreign(with_field("token", "18446744073709551616"), token_rule); // 2^64
    check_foreign(with_field("token", "1e300"), token_rule);
    check_foreign(with_field("token", "\"7\""), token_rule);

    check_foreign(with_field("ttl_ms", "0"), "\"ttl_ms\" missing or not a positive integer");
    check_foreign(with_field("ttl_ms", "-20000"), "\"ttl_ms\" missing or not a positive integer");
    check_foreign(with_field("ttl_ms", "20000.5"), "\"ttl_ms\" missing or not a positive integer");
    check_foreign(with_field("ttl_ms", "86400001"), "\"ttl_ms\" exceeds 24 hours");
    check_foreign(with_field("ttl_ms", "18446744073709551615"), "\"ttl_ms\" exceeds 24 hours");

    lease_body out;
    baton::diagnostics d;
    CHECK_FALSE(decode_lease_body(with_field("ttl_ms", "86400000"), out, d));
    CHECK(out.ttl == std::chrono::hours(24));
    CHECK_FALSE(decode_lease_body(with_field("token", "18446744073709551615"), out, d));
    CHECK(out.token == std::numeric_limits<std::uint64_t>::max());
}

TEST_CASE("bodies over 64 KiB are refused before parsing") {
    std::string body = encode_lease_body(sample_body());
    // Pad with whitespace (still valid JSON) to exactly the limit: accepted.
    std::string at_limit = body + std::string(baton::detail::max_lease_body_bytes - body.size(), ' ');
    lease_body out;
    baton::diagnostics d;
    CHECK_FALSE(decode_lease_body(at_limit, out, d));
    check_foreign(at_limit + " ", "body larger than 64 KiB");
    auto big = sample_body();
    big.value.assign(70 * 1024, 'x');
    check_foreign(encode_lease_body(big), "body larger than 64 KiB");
}

TEST_CASE("the decoder never crashes on truncated or corrupted bodies") {
    auto b = sample_body();
    b.owner = "o\"\\\x01\xc3\xbc";
    std::string const body = encode_lease_body(b);
    int refused = 0;
    for (std::size_t n = 0; n < body.size(); ++n) {
        lease_body out;
        baton::diagnostics d;
        auto ec = decode_lease_body(std::string_view(body).substr(0, n), out, d);
        CHECK_MESSAGE(ec == errc::foreign_record, "prefix of ", n, " bytes");
        CHECK_FALSE(d.message.empty());
        refused += ec == errc::foreign_record;
    }
    CHECK(refused == static_cast<int>(body.size()));
    // Every single-byte corruption: either a well-formed record or a refusal, nothing else.
    for (std::size_t i = 0; i < body.size(); ++i)
        for (char c : {'"', '\\', '{', '}', ',', ':', '\0', '\x80', '\xff', '9', '-', ' '}) {
            std::string bad = body;
            bad[i] = c;
            lease_body out;
            baton::diagnostics d;
            auto ec = decode_lease_body(bad, out, d);
            CHECK((!ec || ec == errc::foreign_record));
            if (ec) CHECK_FALSE(d.message.empty());
        }
}

}

TEST_SUITE("memory_backend") {

using baton::precondition;

TEST_CASE("get and put: absent, matches and unconditional semantics") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());

    auto [ec0, g0] = run_op<baton::get_result>(ioc, [&](auto h) { store.async_get("k", h); });
    CHECK_FALSE(ec0);
    CHECK_FALSE(g0.found.has_value());

    auto p1_result = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("k", "one", precondition::absent(), h); });
    auto& ec1 = std::get<0>(p1_result);
    auto& p1 = std::get<1>(p1_result);
    REQUIRE_FALSE(ec1);
    CHECK_FALSE(p1.version.empty());
    CHECK_FALSE(p1.current.has_value());

    auto [ec2, g2] = run_op<baton::get_result>(ioc, [&](auto h) { store.async_get("k", h); });
    CHECK_FALSE(ec2);
    REQUIRE(g2.found.has_value());
    CHECK(g2.found->key == "k");
    CHECK(g2.found->body == "one");
    CHECK(g2.found->version == p1.version);

    // absent on an existing key: refused, with the current record.
    auto [ec3, p3] = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("k", "two", precondition::absent(), h); });
    CHECK(ec3 == errc::precondition_failed);
    REQUIRE(p3.current.has_value());
    CHECK(p3.current->body == "one");
    CHECK(p3.current->version == p1.version);
    CHECK(p3.version.empty());

    // matches the current version: applied, new version.
    auto p4_result = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("k", "two", precondition::matches(p1.version), h); });
    auto& ec4 = std::get<0>(p4_result);
    auto& p4 = std::get<1>(p4_result);
    REQUIRE_FALSE(ec4);
    CHECK(p4.version != p1.version);

    // matches a stale version: refused, with the current record.
    auto [ec5, p5] = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("k", "three", precondition::matches(p1.version), h); });
    CHECK(ec5 == errc::precondition_failed);
    REQUIRE(p5.current.has_value());
    CHECK(p5.current->body == "two");
    CHECK(p5.current->version == p4.version);

    // matches on a missing key: refused, nothing to return.
    auto [ec6, p6] = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("gone", "x", precondition::matches(p4.version), h); });
    CHECK(ec6 == errc::precondition_failed);
    CHECK_FALSE(p6.current.has_value());

    // unconditional: always applied.
    auto [ec7, p7] = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("k", "four", precondition::none(), h); });
    CHECK_FALSE(ec7);
    CHECK(p7.version != p4.version);
    CHECK(store.size() == 1);
}

TEST_CASE("every put gets a fresh version, even with identical bytes") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    auto a_result = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("k", "same", precondition::none(), h); });
    auto& e1 = std::get<0>(a_result);
    auto& a = std::get<1>(a_result);
    auto [e2, b] = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("k", "same", precondition::matches(a.version), h); });
    REQUIRE_FALSE(e1);
    REQUIRE_FALSE(e2);
    CHECK(a.version != b.version);
    // The old version no longer matches (no ABA).
    auto [e3, c] = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("k", "same", precondition::matches(a.version), h); });
    CHECK(e3 == errc::precondition_failed);
    // Versions are not reused across keys either.
    auto [e4, d] = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("other", "same", precondition::none(), h); });
    CHECK(d.version != a.version);
    CHECK(d.version != b.version);
    // A rebound handle talks to the same store.
    asio::io_context ioc2;
    auto other = store.rebind(ioc2.get_executor());
    auto [e5, g] = run_op<baton::get_result>(ioc2, [&](auto h) { other.async_get("k", h); });
    REQUIRE(g.found.has_value());
    CHECK(g.found->version == b.version);
}

TEST_CASE("erase semantics") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    auto put = [&](std::string body) {
        return run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("k", body, precondition::none(), h); }).second.version;
    };
    auto erase = [&](precondition pc) {
        return run_op<baton::erase_result>(ioc, [&](auto h) { store.async_erase("k", pc, h); }).first;
    };
    // Missing key.
    CHECK(erase(precondition::matches("m1")) == errc::not_found);
    CHECK_FALSE(erase(precondition::none()));
    CHECK_FALSE(erase(precondition::absent()));

    auto const v1 = put("a");
    auto const v2 = put("b");
    CHECK(erase(precondition::absent()) == errc::precondition_failed);
    CHECK(erase(precondition::matches(v1)) == errc::precondition_failed);
    CHECK(store.size() == 1);
    CHECK_FALSE(erase(precondition::matches(v2)));
    CHECK(store.size() == 0);
    CHECK(erase(precondition::matches(v2)) == errc::not_found);

    put("c");
    CHECK_FALSE(erase(precondition::none()));
    CHECK(store.size() == 0);
}

TEST_CASE("list pages by prefix, after and limit") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    for (std::string k : {"a/3", "a/1", "b/1", "a/2", "ab", "a"})
        run_op<baton::put_result>(ioc, [&](auto h) { store.async_put(k, "x", precondition::none(), h); });
    auto list = [&](std::string prefix, std::string after, std::size_t limit) {
        return run_op<baton::list_page>(ioc, [&](auto h) { store.async_list(prefix, after, limit, h); });
    };
    auto keys = [](baton::list_page const& p) {
        std::string s;
        for (auto& e : p.entries) s += e.key + " ";
        return s;
    };

    auto [e1, all] = list("", "", 100);
    CHECK_FALSE(e1);
    CHECK(keys(all) == "a a/1 a/2 a/3 ab b/1 ");
    CHECK_FALSE(all.truncated);
    for (auto& e : all.entries) CHECK_FALSE(e.version.empty());

    auto [e2, a] = list("a/", "", 100);
    CHECK(keys(a) == "a/1 a/2 a/3 ");
    CHECK_FALSE(a.truncated);

    auto [e3, first] = list("a/", "", 2);
    CHECK(keys(first) == "a/1 a/2 ");
    CHECK(first.truncated);
    auto [e4, rest] = list("a/", first.entries.back().key, 2);
    CHECK(keys(rest) == "a/3 ");
    CHECK_FALSE(rest.truncated);

    auto [e5, exact] = list("a/", "", 3); // exactly the keys there are: not truncated
    CHECK(keys(exact) == "a/1 a/2 a/3 ");
    CHECK_FALSE(exact.truncated);

    auto [e6, after_before_prefix] = list("a/", "0", 10); // `after` sorts before the prefix
    CHECK(keys(after_before_prefix) == "a/1 a/2 a/3 ");
    auto [e7, after_between] = list("a/", "a/1x", 10);
    CHECK(keys(after_between) == "a/2 a/3 ");
    auto [e8, none] = list("c/", "", 10);
    CHECK(none.entries.empty());
    CHECK_FALSE(none.truncated);

    auto [e9, zero] = list("a/", "", 0);
    CHECK(e9 == errc::invalid_argument);
}

TEST_CASE("key and body limits fail with invalid_argument and diagnostics") {
    asio::io_context ioc;
    baton::memory_backend_params params;
    params.max_body_bytes = 16;
    baton::memory_backend store(ioc.get_executor(), params);
    std::string const long_key(baton::store_limits::max_key_bytes + 1, 'k');
    std::string const max_key(baton::store_limits::max_key_bytes, 'k');

    SUBCASE("empty and oversized keys") {
        for (std::string key : {std::string(), long_key}) {
            auto [eg, g] = run_op<baton::get_result>(ioc, [&](auto h) { store.async_get(key, h); });
            CHECK(eg == errc::invalid_argument);
            CHECK(contains(g.diag.message, "key"));
            auto [ep, p] = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put(key, "x", precondition::none(), h); });
            CHECK(ep == errc::invalid_argument);
            CHECK(contains(p.diag.message, "key"));
            auto [ee, e] = run_op<baton::erase_result>(ioc, [&](auto h) { store.async_erase(key, precondition::none(), h); });
            CHECK(ee == errc::invalid_argument);
            CHECK(contains(e.diag.message, "key"));
        }
        auto [ep, p] = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put(max_key, "x", precondition::none(), h); });
        CHECK_FALSE(ep);
    }
    SUBCASE("oversized bodies") {
        auto [ep, p] = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("k", std::string(17, 'b'), precondition::none(), h); });
        CHECK(ep == errc::invalid_argument);
        CHECK(p.diag.message == "body of 17 bytes exceeds the store's limit of 16");
        CHECK(store.size() == 0);
        auto [ok, q] = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("k", std::string(16, 'b'), precondition::none(), h); });
        CHECK_FALSE(ok);
    }
    SUBCASE("a zero list limit") {
        auto [el, l] = run_op<baton::list_page>(ioc, [&](auto h) { store.async_list("", "", 0, h); });
        CHECK(el == errc::invalid_argument);
        CHECK(contains(l.diag.message, "limit"));
    }
}

TEST_CASE("requests are counted by kind") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    auto copy = store; // copies share counts
    run_op<baton::get_result>(ioc, [&](auto h) { store.async_get("k", h); });
    auto v = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("k", "a", precondition::absent(), h); }).second.version;
    run_op<baton::put_result>(ioc, [&](auto h) { copy.async_put("k", "b", precondition::absent(), h); });    // refused
    run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("", "b", precondition::none(), h); });      // invalid
    run_op<baton::erase_result>(ioc, [&](auto h) { copy.async_erase("k", precondition::matches("x"), h); }); // refused
    run_op<baton::erase_result>(ioc, [&](auto h) { store.async_erase("k", precondition::matches(v), h); });
    run_op<baton::list_page>(ioc, [&](auto h) { store.async_list("", "", 10, h); });
    run_op<baton::list_page>(ioc, [&](auto h) { store.async_list("", "", 10, h); });
    auto const c = copy.counts();
    CHECK(c.gets == 1);
    CHECK(c.puts == 3);
    CHECK(c.erases == 2);
    CHECK(c.lists == 2);
    CHECK(c.probes == 0);
    CHECK(c.refused == 2);
}

TEST_CASE("completions never run inside the initiating call") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    int ran = 0;
    auto check_after = [&](bool const& returned) {
        return [&ran, &returned](error_code, auto&&) {
            CHECK(returned);
            ++ran;
        };
    };
    bool returned = false;
    store.async_get("k", check_after(returned));
    store.async_put("k", "a", precondition::none(), check_after(returned));
    store.async_put("", "a", precondition::none(), check_after(returned)); // failing at once is still not inline
    store.async_erase("nope", precondition::matches("v"), check_after(returned));
    store.async_list("", "", 10, check_after(returned));
    store.async_probe(check_after(returned));
    returned = true;
    CHECK(ran == 0);
    ioc.run();
    CHECK(ran == 6);
}

TEST_CASE("probe reports all three capabilities and leaves nothing behind") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    auto [ec, caps] = run_op<baton::capabilities>(ioc, [&](auto h) { store.async_probe(h); });
    CHECK_FALSE(ec);
    CHECK(caps.conditional_create);
    CHECK(caps.conditional_replace);
    CHECK(caps.conditional_erase);
    CHECK(caps.supports_leases());
    CHECK(caps.findings.size() == 3);
    for (auto& f : caps.findings) CHECK(contains(f, "refused (honoured)"));
    CHECK(caps.diag.empty());
    CHECK(store.size() == 0);
    CHECK(store.counts().probes == 1);
}

}

// ---- minimal exemplars of the policy concepts ------------------------------

namespace {

// The smallest record store: every operation completes (never inline) with not_found.
struct minimal_backend {
    using executor_type = asio::any_io_executor;
    executor_type ex;

    executor_type get_executor() const { return ex; }

    template <class Result, class Token>
    auto complete(Token&& token) {
        return asio::async_initiate<Token, void(error_code, Result)>(
            [](auto handler, executor_type e) {
                asio::post(e, asio::append(std::move(handler), error_code(errc::not_found), Result{}));
            },
            token, ex);
    }
    template <class Token>
    auto async_get(std::string, Token&& t) { return complete<baton::get_result>(std::forward<Token>(t)); }
    template <class Token>
    auto async_put(std::string, std::string, baton::precondition, Token&& t) {
        return complete<baton::put_result>(std::forward<Token>(t));
    }
    template <class Token>
    auto async_erase(std::string, baton::precondition, Token&& t) { return complete<baton::erase_result>(std::forward<Token>(t)); }
    template <class Token>
    auto async_list(std::string, std::string, std::size_t, Token&& t) { return complete<baton::list_page>(std::forward<Token>(t)); }
    template <class Token>
    auto async_probe(Token&& t) { return complete<baton::capabilities>(std::forward<Token>(t)); }
};

// The smallest Clock: the steady clock, read through the policy.
struct minimal_clock {
    using timer_clock = std::chrono::steady_clock;
    using duration = timer_clock::duration;
    using time_point = timer_clock::time_point;
    time_point now() const { return timer_clock::now(); }
    timer_clock::time_point timer_expiry(duration d) const { return timer_clock::now() + d; }
};

// The smallest RetryPolicy: never retries.
struct minimal_retry {
    baton::retry_decision on_failure(error_code const&, unsigned, double) { return {}; }
    void on_success(unsigned) {}
};

// The smallest Signer: any copyable value.
struct minimal_signer {
    int id = 0;
};

// A backend that adopts signers: `basic_lease` hands it its Signer.
struct signing_backend : minimal_backend {
    std::shared_ptr<int> adopted = std::make_shared<int>(0);
    void use_signer(minimal_signer const& s) { *adopted = s.id; }
};

static_assert(baton::record_store<minimal_backend>);
static_assert(baton::record_store<signing_backend>);
static_assert(baton::clock_policy<minimal_clock>);
static_assert(baton::retry_policy<minimal_retry>);
static_assert(baton::signer_policy<minimal_signer>);
static_assert(baton::record_store<baton::memory_backend>);
static_assert(!baton::record_store<int>);
static_assert(!baton::clock_policy<std::chrono::steady_clock>); // the Clock policy is not a std clock
static_assert(!baton::retry_policy<minimal_clock>);

} // namespace

TEST_SUITE("concepts") {

TEST_CASE("a lease composes from the minimal policy exemplars") {
    asio::io_context ioc;
    using minimal_lease = baton::basic_lease<minimal_backend, minimal_clock, minimal_retry, minimal_signer>;
    minimal_lease lease(ioc.get_executor(), minimal_backend{ioc.get_executor()}, valid_options(), minimal_retry{},
                        minimal_signer{}, minimal_clock{});
    CHECK(lease.state() == baton::lease_state::idle);
    CHECK_FALSE(lease.is_held());
    CHECK(lease.fencing_token() == 0);
    CHECK(lease.remaining() == 0ns);
    CHECK_FALSE(lease.valid_until().has_value());

    // Drive one try-once acquisition through the whole async path: the store
    // answers not_found to the create, and a try-once gives up with it.
    std::optional<error_code> got;
    lease.async_try_acquire([&](error_code ec, baton::lease_grant) { got = ec; });
    CHECK_FALSE(got.has_value());
    ioc.run();
    REQUIRE(got.has_value());
    CHECK(*got == errc::not_found);
    CHECK(lease.state() == baton::lease_state::idle);

    // A waiting acquisition gives up too: a missing bucket or table is final,
    // not a reason to poll forever.
    got.reset();
    ioc.restart();
    lease.async_acquire([&](error_code ec, baton::lease_grant) { got = ec; });
    ioc.run_for(std::chrono::seconds(5));
    REQUIRE(got.has_value());
    CHECK(*got == errc::not_found);

    // The Signer reaches a backend that has `use_signer`.
    signing_backend sb{{ioc.get_executor()}};
    baton::basic_lease<signing_backend, minimal_clock, minimal_retry, minimal_signer> signed_lease(
        ioc.get_executor(), sb, valid_options(), minimal_retry{}, minimal_signer{42});
    CHECK(*sb.adopted == 42);
}

}

// ---- the shared timer queue (core/detail/timer_queue.hpp) ----------------------------------
namespace {

using vqueue = baton::detail::timer_queue<baton::sim::virtual_clock>;
using vtime = baton::sim::virtual_clock::time_point;

// An owner of one entry that records when it ran (virtual time, from the queue's reading).
struct recorder : std::enable_shared_from_this<recorder> {
    std::string name;
    std::vector<std::pair<std::string, vtime>>* log = nullptr;
    std::shared_ptr<vqueue> q;
    vqueue::entry e;
    recorder(std::string n, std::vector<std::pair<std::string, vtime>>& l, std::shared_ptr<vqueue> queue)
        : name(std::move(n)), log(&l), q(std::move(queue)) {
        e.owner = this;
        e.lock = [](void* o) -> std::shared_ptr<void> { return static_cast<recorder*>(o)->weak_from_this().lock(); };
        e.fire = [](void* o, vtime t) {
            auto& self = *static_cast<recorder*>(o);
            self.log->emplace_back(self.name, t);
        };
    }
    ~recorder() { q->remove(e); }
};

vtime at(std::chrono::milliseconds ms) { return vtime(ms); }

std::pair<std::string, vtime> ran(std::string name, std::chrono::milliseconds ms) { return {std::move(name), at(ms)}; }

// A simulation's queue for its executor, and the log of which owner ran when.
struct queue_run {
    baton::sim::scheduler sched;
    std::shared_ptr<vqueue> q;
    std::vector<std::pair<std::string, vtime>> log;
    explicit queue_run(std::uint64_t seed)
        : sched(seed), q(baton::detail::timer_queues<baton::sim::virtual_clock>::of(sched.get_executor())) {}
    std::shared_ptr<recorder> owner(std::string name) { return std::make_shared<recorder>(std::move(name), log, q); }
};

} // namespace

TEST_SUITE("timer queue") {

TEST_CASE("entries run by their latest time, in that order, ties in the order scheduled") {
    queue_run run(1);
    auto a = run.owner("a"), b = run.owner("b"), c = run.owner("c");
    run.q->schedule(c->e, at(30ms), at(30ms));
    run.q->schedule(a->e, at(10ms), at(10ms));
    run.q->schedule(b->e, at(30ms), at(30ms));
    run.sched.run_for(100ms);
    CHECK(run.log == std::vector{ran("a", 10ms), ran("c", 30ms), ran("b", 30ms)});
    CHECK(run.q->size() == 0);
}

TEST_CASE("entries whose windows are open share a wake-up; one whose window has not opened waits") {
    queue_run run(2);
    auto a = run.owner("a"), b = run.owner("b"), c = run.owner("c");
    run.q->schedule(a->e, at(10ms), at(20ms));
    run.q->schedule(b->e, at(15ms), at(30ms)); // open at 20: runs with a
    run.q->schedule(c->e, at(25ms), at(40ms)); // not open at 20: runs at its latest
    run.sched.run_for(100ms);
    CHECK(run.log == std::vector{ran("a", 20ms), ran("b", 20ms), ran("c", 40ms)});
}

TEST_CASE("an entry scheduled earlier than the pending wake-up is never late; rescheduling replaces the window") {
    queue_run run(3);
    auto a = run.owner("a"), b = run.owner("b");
    run.q->schedule(a->e, at(50ms), at(50ms));
    run.sched.run_for(5ms);
    run.q->schedule(b->e, at(10ms), at(10ms)); // earlier than the wait pending for a
    run.q->schedule(a->e, at(70ms), at(70ms)); // a moved later
    run.sched.run_for(100ms);
    CHECK(run.log == std::vector{ran("b", 10ms), ran("a", 70ms)});
}

TEST_CASE("an owner that throws leaves the rest of its batch queued: they still run, by their latest time") {
    queue_run run(5);
    auto a = run.owner("a"), b = run.owner("b"), c = run.owner("c");
    a->e.fire = [](void* o, vtime t) {
        auto& self = *static_cast<recorder*>(o);
        self.log->emplace_back(self.name, t);
        throw std::runtime_error("an observer threw");
    };
    run.q->schedule(a->e, at(20ms), at(20ms));
    run.q->schedule(b->e, at(20ms), at(20ms));
    run.q->schedule(c->e, at(10ms), at(30ms)); // open at 20: in the same batch, after b
    CHECK_THROWS_AS(run.sched.run_for(100ms), std::runtime_error);
    CHECK(run.log == std::vector{ran("a", 20ms)});
    CHECK(run.q->size() == 2);
    run.sched.run_for(100ms); // the application runs its executor again
    CHECK(run.log == std::vector{ran("a", 20ms), ran("b", 20ms), ran("c", 20ms)});
    CHECK(run.q->size() == 0);
}

TEST_CASE("a removed entry does not run, an owner being destroyed is not called, and an empty queue holds no work") {
    asio::io_context ioc;
    {
        queue_run run(4);
        auto a = run.owner("a"), b = run.owner("b");
        run.q->schedule(a->e, at(10ms), at(10ms));
        run.q->schedule(b->e, at(20ms), at(20ms));
        run.q->remove(a->e);
        b.reset(); // its destructor takes its entry out
        run.sched.run_for(100ms);
        CHECK(run.log.empty());
        CHECK(run.q->size() == 0);
    }
    // On a real io_context: a queue whose last entry went leaves no wait behind, so run() returns.
    using squeue = baton::detail::timer_queue<std::chrono::steady_clock>;
    auto q = baton::detail::timer_queues<std::chrono::steady_clock>::of(ioc.get_executor());
    squeue::entry e;
    int fired = 0;
    e.owner = &fired;
    e.lock = [](void*) -> std::shared_ptr<void> { return std::make_shared<int>(0); };
    e.fire = [](void* o, std::chrono::steady_clock::time_point) { ++*static_cast<int*>(o); };
    q->schedule(e, std::chrono::steady_clock::now() + 1h, std::chrono::steady_clock::now() + 1h);
    ioc.poll();
    CHECK_FALSE(ioc.stopped()); // the wait is outstanding work
    q->remove(e);
    ioc.poll();
    CHECK(ioc.stopped());
    CHECK(fired == 0);
    // A due entry runs.
    ioc.restart();
    q->schedule(e, std::chrono::steady_clock::now(), std::chrono::steady_clock::now());
    ioc.run();
    CHECK(fired == 1);
}

TEST_CASE("one queue per executor: the same executor shares it, another strand has its own") {
    asio::io_context ioc;
    using queues = baton::detail::timer_queues<std::chrono::steady_clock>;
    auto q1 = queues::of(ioc.get_executor());
    auto q2 = queues::of(asio::any_io_executor(ioc.get_executor()));
    CHECK(q1 == q2);
    auto s1 = asio::make_strand(ioc);
    auto s2 = asio::make_strand(ioc);
    auto qs1 = queues::of(s1);
    CHECK(qs1 != q1);
    CHECK(queues::of(s1) == qs1);
    CHECK(queues::of(s2) != qs1);
    // Released with its last holder: a later request makes a new one.
    auto const* before = qs1.get();
    qs1.reset();
    CHECK(queues::of(s2) != nullptr);
    (void)before;
}

TEST_CASE("entries scheduled and removed from several threads while the queue fires on two" *
          doctest::test_suite("concurrency")) {
    asio::io_context ioc(2);
    using clock = std::chrono::steady_clock;
    using squeue = baton::detail::timer_queue<clock>;
    auto q = baton::detail::timer_queues<clock>::of(ioc.get_executor());
    struct counter : std::enable_shared_from_this<counter> {
        std::atomic<int> fired{0};
        squeue::entry e;
    };
    constexpr int per_thread = 64;
    std::vector<std::shared_ptr<counter>> owners;
    for (int i = 0; i < 2 * per_thread; ++i) {
        auto c = std::make_shared<counter>();
        c->e.owner = c.get();
        c->e.lock = [](void* o) -> std::shared_ptr<void> { return static_cast<counter*>(o)->weak_from_this().lock(); };
        c->e.fire = [](void* o, clock::time_point) { static_cast<counter*>(o)->fired.fetch_add(1); };
        owners.push_back(std::move(c));
    }
    auto guard = asio::make_work_guard(ioc);
    std::thread r1([&] { ioc.run(); });
    std::thread r2([&] { ioc.run(); });
    auto work = [&](int first) {
        for (int round = 0; round < 50; ++round)
            for (int i = first; i < first + per_thread; ++i) {
                auto& c = *owners[static_cast<std::size_t>(i)];
                auto const t = clock::now() + std::chrono::microseconds((i * 7 + round) % 200);
                if ((i + round) % 3 == 0) q->remove(c.e);
                else q->schedule(c.e, t - std::chrono::microseconds(50), t);
            }
        for (int i = first; i < first + per_thread; ++i)
            q->schedule(owners[static_cast<std::size_t>(i)]->e, clock::now(), clock::now());
    };
    std::thread w1(work, 0);
    std::thread w2(work, per_thread);
    w1.join();
    w2.join();
    // Every entry was last scheduled to run now: each runs once more, and the queue empties.
    for (int spins = 0; q->size() != 0 && spins < 10000; ++spins) std::this_thread::sleep_for(1ms);
    guard.reset();
    r1.join();
    r2.join();
    CHECK(q->size() == 0);
    for (auto& c : owners) CHECK(c->fired.load() >= 1);
}

}
