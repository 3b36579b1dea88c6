// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
// The history checkers bite and do not cry wolf: small hand-written
// histories, each either broken in one known way (the checker must flag it)
// or tricky but valid (it must pass), and the parser's refusals.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <robustness/history.hpp>
#include <robustness/kv_check.hpp>
#include <robustness/lease_check.hpp>
#include <robustness/linearizability.hpp>

#include <boost/json/src.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace {

using namespace robustness;
using namespace std::chrono_literals;

// The one key's verdict of a kv history (every test history uses key "k").
search_result check_key(std::string const& lines, std::chrono::milliseconds limit = 10s) {
    history const h = parse_history(lines, "test");
    kv_report const r = check_kv(h, limit);
    REQUIRE(r.keys.size() == 1);
    return r.keys[0].search;
}

lease_report check_lease_text(std::string const& lines) { return check_lease(parse_history(lines, "test")); }

// A history written in milliseconds, as the nanoseconds the format records: the stop grace is a real second.
std::string in_ms(std::string const& lines) {
    std::string out;
    for (std::size_t at = 0; at < lines.size();) {
        std::size_t const end = std::min(lines.find('\n', at), lines.size());
        std::string const line = lines.substr(at, end - at);
        at = end + 1;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        boost::json::object o = boost::json::parse(line).as_object();
        for (char const* field : {"t", "t0", "t1"})
            if (auto* v = o.if_contains(field)) *v = v->to_number<std::int64_t>() * 1'000'000;
        out += boost::json::serialize(o) + "\n";
    }
    return out;
}

bool mentions(std::vector<std::string> const& lines, std::string const& what) {
    for (auto const& l : lines)
        if (l.find(what) != std::string::npos) return true;
    return false;
}

// The parser's message for a bad text.
std::string parse_error(std::string const& lines) {
    try {
        parse_history(lines, "bad.jsonl");
    } catch (history_error const& e) {
        return e.what();
    }
    return "(parsed)";
}

}  // namespace

TEST_SUITE("kv check") {

TEST_CASE("bites: a stale read after a later write completed") {
    auto const r = check_key(R"(
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"a","cond":"none","t0":0,"t1":10,"res":"ok","version":1}
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"b","cond":"none","t0":20,"t1":30,"res":"ok","version":2}
{"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":40,"t1":50,"res":"ok","found":true,"value":"a","version":1}
)");
    CHECK(r.result == verdict::violation);
    CHECK(r.explanation.find("impossible here") != std::string::npos);
    CHECK(r.explanation.find("stale read: 'a', read by kv-2#0 get k [ok] (test:4)") != std::string::npos);
    SUBCASE("of a counter, which only the search sees") {
        auto const counter = check_key(R"(
{"p":"kv-1","i":0,"w":"kv","op":"incr","key":"k","t0":0,"t1":10,"res":"ok","value":"1","version":1}
{"p":"kv-1","i":0,"w":"kv","op":"incr","key":"k","t0":20,"t1":30,"res":"ok","value":"2","version":2}
{"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":40,"t1":50,"res":"ok","found":true,"value":"1","version":1}
)");
        CHECK(counter.result == verdict::violation);
        CHECK(counter.explanation.find("plainly") == std::string::npos);
        CHECK(counter.explanation.find("it read '1' where the key has another value") != std::string::npos);
    }
}

TEST_CASE("bites: a lost update (two increments both from 1 to 2)") {
    auto const r = check_key(R"(
{"p":"kv-1","i":0,"w":"kv","op":"incr","key":"k","t0":0,"t1":10,"res":"ok","value":"1","version":1}
{"p":"kv-1","i":0,"w":"kv","op":"incr","key":"k","t0":20,"t1":40,"res":"ok","value":"2","version":2}
{"p":"kv-2","i":0,"w":"kv","op":"incr","key":"k","t0":25,"t1":45,"res":"ok","value":"2","version":2}
)");
    CHECK(r.result == verdict::violation);
}

TEST_CASE("bites: a put reported failed whose value is read later") {
    history const h = parse_history(R"(
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"a","cond":"none","t0":0,"t1":10,"res":"ok","version":1}
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"b","cond":"none","t0":20,"t1":30,"res":"failed"}
{"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":40,"t1":50,"res":"ok","found":true,"value":"b","version":2}
)");
    auto const r = check_kv(h);
    REQUIRE(r.keys.size() == 1);
    CHECK(r.keys[0].search.result == verdict::violation);
    CHECK(r.keys[0].left_out == 1);
    CHECK(r.keys[0].search.explanation.find("reported failed: that write landed") != std::string::npos);
}

TEST_CASE("a put of unknown outcome whose value is read, and one never read") {
    CHECK(check_key(R"(
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"a","cond":"none","t0":0,"t1":10,"res":"unknown"}
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"b","cond":"none","t0":20,"t1":30,"res":"unknown"}
{"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":40,"t1":50,"res":"ok","found":true,"value":"a","version":1}
{"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":60,"t1":70,"res":"ok","found":true,"value":"a","version":1}
)").result == verdict::ok);
    SUBCASE("an unknown put can land long after its call reported the doubt") {
        CHECK(check_key(R"(
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"a","cond":"none","t0":0,"t1":10,"res":"unknown"}
{"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":40,"t1":50,"res":"ok","found":false}
{"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":60,"t1":70,"res":"ok","found":true,"value":"a","version":1}
)").result == verdict::ok);
    }
    SUBCASE("but it takes effect once: it cannot come back after being overwritten") {
        CHECK(check_key(R"(
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"a","cond":"none","t0":0,"t1":10,"res":"unknown"}
{"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":20,"t1":30,"res":"ok","found":true,"value":"a","version":1}
{"p":"kv-2","i":0,"w":"kv","op":"put","key":"k","value":"b","cond":"none","t0":40,"t1":50,"res":"ok","version":2}
{"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":60,"t1":70,"res":"ok","found":true,"value":"a","version":1}
)").result == verdict::violation);
    }
}

TEST_CASE("bites: a refused version put whose condition held") {
    std::string const base = R"(
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"a","cond":"none","t0":0,"t1":10,"res":"ok","version":1}
)";
    CHECK(check_key(base + R"({"p":"kv-2","i":0,"w":"kv","op":"put","key":"k","value":"b","cond":"version","cond_version":1,"t0":20,"t1":30,"res":"refused","current":1})").result ==
          verdict::violation);
    // Without `current` the refusal still claims the condition failed at some point of its interval.
    CHECK(check_key(base + R"({"p":"kv-2","i":0,"w":"kv","op":"put","key":"k","value":"b","cond":"version","cond_version":1,"t0":20,"t1":30,"res":"refused"})").result ==
          verdict::violation);
    // A refusal with the wrong current version is a wrong observation.
    CHECK(check_key(base + R"({"p":"kv-2","i":0,"w":"kv","op":"put","key":"k","value":"b","cond":"version","cond_version":3,"t0":20,"t1":30,"res":"refused","current":2})").result ==
          verdict::violation);
    // Refused rightly: the key is at version 1, not 3; and `absent` does not hold.
    CHECK(check_key(base + R"({"p":"kv-2","i":0,"w":"kv","op":"put","key":"k","value":"b","cond":"version","cond_version":3,"t0":20,"t1":30,"res":"refused","current":1}
{"p":"kv-2","i":0,"w":"kv","op":"put","key":"k","value":"c","cond":"absent","t0":40,"t1":50,"res":"refused","current":1})").result ==
          verdict::ok);
    // With no condition a refusal is contention and says nothing.
    CHECK(check_key(base + R"({"p":"kv-2","i":0,"w":"kv","op":"put","key":"k","value":"b","cond":"none","t0":20,"t1":30,"res":"refused"})").result ==
          verdict::ok);
}

TEST_CASE("concurrent overlapping operations with a valid order") {
    // Only b, get, a, get works: b is linearized before the first get, a after it.
    CHECK(check_key(R"(
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"a","cond":"none","t0":0,"t1":100,"res":"ok","version":2}
{"p":"kv-2","i":0,"w":"kv","op":"put","key":"k","value":"b","cond":"none","t0":10,"t1":90,"res":"ok","version":1}
{"p":"kv-3","i":0,"w":"kv","op":"get","key":"k","t0":50,"t1":60,"res":"ok","found":true,"value":"b","version":1}
{"p":"kv-3","i":0,"w":"kv","op":"get","key":"k","t0":110,"t1":120,"res":"ok","found":true,"value":"a","version":2}
)").result == verdict::ok);
    SUBCASE("operations sharing an endpoint are concurrent") {
        CHECK(check_key(R"(
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"a","cond":"none","t0":0,"t1":50,"res":"ok","version":1}
{"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":50,"t1":60,"res":"ok","found":false}
)").result == verdict::ok);
    }
}

TEST_CASE("a compare-and-set chain") {
    std::string const chain = R"(
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"a","cond":"absent","t0":0,"t1":10,"res":"ok","version":1}
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"b","cond":"version","cond_version":1,"t0":20,"t1":40,"res":"ok","version":2}
{"p":"kv-2","i":0,"w":"kv","op":"put","key":"k","value":"x","cond":"version","cond_version":1,"t0":25,"t1":45,"res":"refused","current":2}
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"c","cond":"version","cond_version":2,"t0":50,"t1":60,"res":"ok","version":3}
{"p":"kv-2","i":0,"w":"kv","op":"put","key":"k","value":"y","cond":"absent","t0":55,"t1":65,"res":"refused","current":3}
)";
    CHECK(check_key(chain + R"({"p":"kv-3","i":0,"w":"kv","op":"get","key":"k","t0":70,"t1":80,"res":"ok","found":true,"value":"c","version":3})").result ==
          verdict::ok);
    SUBCASE("bites: two writers both succeed from version 1") {
        CHECK(check_key(chain + R"({"p":"kv-3","i":0,"w":"kv","op":"put","key":"k","value":"z","cond":"version","cond_version":1,"t0":22,"t1":42,"res":"ok","version":2})").result ==
              verdict::violation);
    }
}

TEST_CASE("erase: version + 1, and an erase of a missing key changes nothing") {
    std::string const h = R"(
{"p":"kv-1","i":0,"w":"kv","op":"erase","key":"k","cond":"none","t0":0,"t1":10,"res":"ok","written":false,"version":0}
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"a","cond":"absent","t0":20,"t1":30,"res":"ok","version":1}
{"p":"kv-1","i":0,"w":"kv","op":"erase","key":"k","cond":"version","cond_version":1,"t0":40,"t1":50,"res":"ok","written":true,"version":2}
{"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":60,"t1":70,"res":"ok","found":false}
{"p":"kv-2","i":0,"w":"kv","op":"erase","key":"k","cond":"none","t0":80,"t1":90,"res":"ok","written":false}
{"p":"kv-2","i":0,"w":"kv","op":"erase","key":"k","cond":"version","cond_version":2,"t0":95,"t1":98,"res":"refused","current":0}
)";
    CHECK(check_key(h + R"({"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"b","cond":"absent","t0":100,"t1":110,"res":"ok","version":3})").result ==
          verdict::ok);
    SUBCASE("bites: a re-create that restarts the version") {
        CHECK(check_key(h + R"({"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"b","cond":"absent","t0":100,"t1":110,"res":"ok","version":2})").result ==
              verdict::violation);
    }
    SUBCASE("bites: an erase of a missing key that counts a version") {
        CHECK(check_key(R"(
{"p":"kv-1","i":0,"w":"kv","op":"erase","key":"k","cond":"none","t0":0,"t1":10,"res":"ok","written":false}
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"a","cond":"none","t0":20,"t1":30,"res":"ok","version":2}
)").result == verdict::violation);
    }
    SUBCASE("bites: an erase that says it wrote, of a key without value") {
        CHECK(check_key(R"(
{"p":"kv-1","i":0,"w":"kv","op":"erase","key":"k","cond":"none","t0":0,"t1":10,"res":"ok","written":true,"version":1}
)").result == verdict::violation);
    }
}

TEST_CASE("an invoke without return that took effect") {
    CHECK(check_key(R"(
{"p":"kv-1","i":0,"w":"kv","op":"invoke","of":"put","id":7,"key":"k","value":"a","cond":"absent","t0":0}
{"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":50,"t1":60,"res":"ok","found":true,"value":"a","version":1}
{"p":"kv-2","i":0,"w":"kv","op":"invoke","of":"incr","id":1,"key":"k","t0":70}
)").result == verdict::ok);
    SUBCASE("but not before it was invoked") {
        CHECK(check_key(R"(
{"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":0,"t1":10,"res":"ok","found":true,"value":"a","version":1}
{"p":"kv-1","i":0,"w":"kv","op":"invoke","of":"put","id":7,"key":"k","value":"a","cond":"absent","t0":20}
)").result == verdict::violation);
    }
}

TEST_CASE("increments of unknown outcome: any number of them may have landed, no more") {
    std::string h;
    for (int i = 0; i < 16; ++i)
        h += R"({"p":"kv-)" + std::to_string(i) + R"(","i":0,"w":"kv","op":"invoke","of":"incr","id":1,"key":"k","t0":)" +
             std::to_string(i) + "}\n";
    std::string const read = R"({"p":"kv-99","i":0,"w":"kv","op":"get","key":"k","t0":100,"t1":110,"res":"ok","found":true,"value":"V","version":V})";
    auto reading = [&](int n) {
        std::string r = read;
        r.replace(r.find("\"V\""), 3, "\"" + std::to_string(n) + "\"");
        r.replace(r.find(":V}"), 3, ":" + std::to_string(n) + "}");
        return h + r + "\n";
    };
    CHECK(check_key(reading(7)).result == verdict::ok);
    CHECK(check_key(reading(16)).result == verdict::ok);
    CHECK(check_key(reading(17)).result == verdict::violation);
}

TEST_CASE("unknown puts nobody reads: any number of them may have landed, as the versions tell") {
    std::string h;
    for (int i = 0; i < 12; ++i)
        h += R"({"p":"kv-)" + std::to_string(i) + R"(","i":0,"w":"kv","op":"put","key":"k","value":"u)" +
             std::to_string(i) + R"(","cond":"none","t0":)" + std::to_string(i) + R"(,"t1":50,"res":"unknown"})" + "\n";
    auto then = [&](int version) {
        return h + R"({"p":"kv-99","i":0,"w":"kv","op":"put","key":"k","value":"last","cond":"none","t0":100,"t1":110,"res":"ok","version":)" +
               std::to_string(version) + "}\n" +
               R"({"p":"kv-99","i":0,"w":"kv","op":"get","key":"k","t0":120,"t1":130,"res":"ok","found":true,"value":"last"})";
    };
    CHECK(check_key(then(1)).result == verdict::ok);
    CHECK(check_key(then(5)).result == verdict::ok);
    CHECK(check_key(then(13)).result == verdict::ok);
    CHECK(check_key(then(14)).result == verdict::violation);
}

TEST_CASE("every read of a value comes before the next write") {
    std::string const h = R"(
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"a","cond":"none","t0":0,"t1":10,"res":"ok","version":1}
{"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":20,"t1":40,"res":"ok","found":true,"value":"a","version":1}
{"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"b","cond":"none","t0":15,"t1":50,"res":"ok","version":2}
{"p":"kv-3","i":0,"w":"kv","op":"get","key":"k","t0":30,"t1":45,"res":"ok","found":true,"value":"b","version":2}
)";
    CHECK(check_key(h + R"({"p":"kv-4","i":0,"w":"kv","op":"get","key":"k","t0":35,"t1":60,"res":"ok","found":true,"value":"b","version":2})").result ==
          verdict::ok);
    // A read of a concurrent with the write of b may come before it; one called after b was read may not.
    CHECK(check_key(h + R"({"p":"kv-4","i":0,"w":"kv","op":"get","key":"k","t0":35,"t1":60,"res":"ok","found":true,"value":"a","version":1})").result ==
          verdict::ok);
    CHECK(check_key(h + R"({"p":"kv-4","i":0,"w":"kv","op":"get","key":"k","t0":46,"t1":60,"res":"ok","found":true,"value":"a","version":1})").result ==
          verdict::violation);
}

TEST_CASE("a big concurrent history: passes given time, inconclusive (never ok) without") {
    // 2000 increments by 8 clients, each overlapping 7 others; the values follow one valid order.
    std::string h;
    for (int k = 0; k < 2000; ++k) {
        std::string const n = std::to_string(k + 1);
        h += R"({"p":"kv-)" + std::to_string(k % 8) + R"(","i":0,"w":"kv","op":"incr","key":"k","t0":)" +
             std::to_string(10 * k) + R"(,"t1":)" + std::to_string(10 * k + 75) + R"(,"res":"ok","value":")" + n +
             R"(","version":)" + n + "}\n";
    }
    CHECK(check_key(h).result == verdict::ok);
    auto const r = check_key(h, 0ms);
    CHECK(r.result == verdict::inconclusive);
    CHECK(r.explanation.find("time limit") != std::string::npos);
}

}  // TEST_SUITE

TEST_SUITE("lease check") {

// lease-1 holds token 1 from 10 to its release at 50; lease-2 acquires token 2 at 30.
std::string const overlapping = R"(
{"p":"lease-1","i":0,"w":"lease","op":"acquire","t0":0,"t1":10,"res":"ok","token":1}
{"p":"lease-2","i":0,"w":"lease","op":"acquire","t0":20,"t1":30,"res":"ok","token":2}
{"p":"lease-1","i":0,"w":"lease","op":"release","t0":50,"t1":60,"res":"ok","token":1}
{"p":"lease-2","i":0,"w":"lease","op":"release","t0":100,"t1":110,"res":"ok","token":2}
)";

TEST_CASE("bites: overlapping holds of two processes") {
    auto const r = check_lease_text(overlapping);
    CHECK(r.violations.size() == 1);
    CHECK(mentions(r.violations, "two holders at once"));
    CHECK(r.intervals.size() == 2);
    CHECK(r.frozen() == 0);
}

// In milliseconds (see in_ms): lease-1 holds token 1 from 0 to its release at 20000; lease-2 holds token 2 from
// 8000 to 12000. Each test adds lease-1's stops.
std::string const long_hold = R"(
{"p":"lease-1","i":0,"w":"lease","op":"acquire","t0":0,"t1":0,"res":"ok","token":1}
{"p":"lease-2","i":0,"w":"lease","op":"acquire","t0":7000,"t1":8000,"res":"ok","token":2}
{"p":"lease-2","i":0,"w":"lease","op":"release","t0":12000,"t1":12100,"res":"ok","token":2}
{"p":"lease-1","i":0,"w":"lease","op":"release","t0":20000,"t1":20100,"res":"ok","token":1}
)";

TEST_CASE("an overlap while the holder was stopped is left to fencing") {
    auto const r = check_lease_text(in_ms(long_hold + R"(
{"p":"lease-1","w":"proc","op":"sigstop","t":1000}
{"p":"lease-1","w":"proc","op":"sigcont","t":15000}
)"));
    CHECK(r.violations.empty());
    CHECK(r.frozen() == 1);
    CHECK(r.frozen_overlaps == 1);
    SUBCASE("and within a second of its resuming, the time it needs to deliver the loss") {
        auto const resumed = check_lease_text(in_ms(long_hold + R"(
{"p":"lease-1","w":"proc","op":"sigstop","t":1000}
{"p":"lease-1","w":"proc","op":"sigcont","t":11500}
)"));
        CHECK(resumed.violations.empty());
        CHECK(resumed.frozen_overlaps == 1);
    }
    SUBCASE("a stop without a cont lasts until the kill") {
        auto const killed = check_lease_text(in_ms(R"(
{"p":"lease-1","i":0,"w":"lease","op":"acquire","t0":0,"t1":0,"res":"ok","token":1}
{"p":"lease-2","i":0,"w":"lease","op":"acquire","t0":7000,"t1":8000,"res":"ok","token":2}
{"p":"lease-2","i":0,"w":"lease","op":"release","t0":12000,"t1":12100,"res":"ok","token":2}
{"p":"lease-1","w":"proc","op":"sigstop","t":1000}
{"p":"lease-1","w":"proc","op":"sigkill","t":15000}
)"));
        CHECK(killed.violations.empty());
        CHECK(killed.frozen_overlaps == 1);
    }
    SUBCASE("by stops back to back, the second holder's") {
        // lease-2 stopped 7500..9000 and 9800..13000: with the grace, its windows join over the whole overlap.
        auto const joined = check_lease_text(in_ms(long_hold + R"(
{"p":"lease-2","w":"proc","op":"sigstop","t":7500}
{"p":"lease-2","w":"proc","op":"sigcont","t":9000}
{"p":"lease-2","w":"proc","op":"sigstop","t":9800}
{"p":"lease-2","w":"proc","op":"sigcont","t":13000}
)"));
        CHECK(joined.violations.empty());
        CHECK(joined.frozen() == 1);
        CHECK(joined.frozen_overlaps == 1);
    }
}

TEST_CASE("bites: an overlap outside the holder's stop") {
    SUBCASE("before the stop") {
        auto const r = check_lease_text(in_ms(R"(
{"p":"lease-1","i":0,"w":"lease","op":"acquire","t0":0,"t1":1000,"res":"ok","token":1}
{"p":"lease-2","i":0,"w":"lease","op":"acquire","t0":1500,"t1":2000,"res":"ok","token":2}
{"p":"lease-2","i":0,"w":"lease","op":"release","t0":5000,"t1":5100,"res":"ok","token":2}
{"p":"lease-1","w":"proc","op":"sigstop","t":8000}
{"p":"lease-1","w":"proc","op":"sigcont","t":12000}
{"p":"lease-1","i":0,"w":"lease","op":"release","t0":20000,"t1":20100,"res":"ok","token":1}
)"));
        CHECK(r.violations.size() == 1);
        CHECK(mentions(r.violations, "two holders at once"));
        CHECK(r.frozen() == 0);
        CHECK(r.frozen_overlaps == 0);
    }
    SUBCASE("by a process stopped only while it was acquiring") {
        auto const r = check_lease_text(in_ms(R"(
{"p":"lease-1","i":0,"w":"lease","op":"acquire","t0":0,"t1":5000,"res":"ok","token":1}
{"p":"lease-1","w":"proc","op":"sigstop","t":100}
{"p":"lease-1","w":"proc","op":"sigcont","t":200}
{"p":"lease-2","i":0,"w":"lease","op":"acquire","t0":5500,"t1":6000,"res":"ok","token":2}
{"p":"lease-2","i":0,"w":"lease","op":"release","t0":7000,"t1":7100,"res":"ok","token":2}
{"p":"lease-1","i":0,"w":"lease","op":"release","t0":9000,"t1":9100,"res":"ok","token":1}
)"));
        CHECK(r.violations.size() == 1);
        CHECK(mentions(r.violations, "two holders at once"));
    }
    SUBCASE("well after the resume") {
        auto const r = check_lease_text(in_ms(long_hold + R"(
{"p":"lease-1","w":"proc","op":"sigstop","t":1000}
{"p":"lease-1","w":"proc","op":"sigcont","t":2000}
)"));
        CHECK(r.violations.size() == 1);
        CHECK(r.frozen_overlaps == 0);
    }
    SUBCASE("more than a second after the resume") {
        auto const r = check_lease_text(in_ms(long_hold + R"(
{"p":"lease-1","w":"proc","op":"sigstop","t":1000}
{"p":"lease-1","w":"proc","op":"sigcont","t":10900}
)"));
        CHECK(r.violations.size() == 1);
        CHECK(mentions(r.violations, "stopped"));
    }
    SUBCASE("partly stopped, each holder for a part") {
        // lease-1 stopped 7000..9000, lease-2 10500..13000: together they cover the overlap, neither alone.
        auto const r = check_lease_text(in_ms(long_hold + R"(
{"p":"lease-1","w":"proc","op":"sigstop","t":7000}
{"p":"lease-1","w":"proc","op":"sigcont","t":9000}
{"p":"lease-2","w":"proc","op":"sigstop","t":10500}
{"p":"lease-2","w":"proc","op":"sigcont","t":13000}
)"));
        CHECK(r.violations.size() == 1);
    }
    SUBCASE("by a stop after its hold ended") {
        auto const late = check_lease_text(overlapping + R"({"p":"lease-1","w":"proc","op":"sigstop","t":55})");
        CHECK(late.violations.size() == 1);
    }
}

TEST_CASE("bites: a token going down in real-time order") {
    auto const r = check_lease_text(R"(
{"p":"lease-1","i":0,"w":"lease","op":"acquire","t0":0,"t1":10,"res":"ok","token":5}
{"p":"lease-1","i":0,"w":"lease","op":"release","t0":12,"t1":15,"res":"ok","token":5}
{"p":"lease-2","i":0,"w":"lease","op":"acquire","t0":20,"t1":30,"res":"ok","token":3}
{"p":"lease-2","i":0,"w":"lease","op":"release","t0":32,"t1":35,"res":"ok","token":3}
)");
    CHECK(r.violations.size() == 1);
    CHECK(mentions(r.violations, "token went down"));
    SUBCASE("and a token given twice") {
        auto const twice = check_lease_text(R"(
{"p":"lease-1","i":0,"w":"lease","op":"acquire","t0":0,"t1":10,"res":"ok","token":5}
{"p":"lease-1","i":0,"w":"lease","op":"release","t0":12,"t1":15,"res":"ok","token":5}
{"p":"lease-2","i":0,"w":"lease","op":"acquire","t0":20,"t1":30,"res":"ok","token":5}
{"p":"lease-2","i":0,"w":"lease","op":"release","t0":32,"t1":35,"res":"ok","token":5}
)");
        CHECK(twice.violations.size() == 1);
        CHECK(mentions(twice.violations, "acquired twice"));
    }
}

TEST_CASE("bites: fenced writes accepted out of token order") {
    auto const r = check_lease_text(R"(
{"p":"lease-2","i":0,"w":"lease","op":"fenced","t0":0,"t1":10,"res":"ok","token":2,"value":"w2"}
{"p":"lease-1","i":0,"w":"lease","op":"fenced","t0":20,"t1":30,"res":"ok","token":1,"value":"w1"}
)");
    CHECK(r.violations.size() == 1);
    CHECK(mentions(r.violations, "was accepted after"));
    SUBCASE("concurrent ones may land in either order") {
        auto const concurrent = check_lease_text(R"(
{"p":"lease-2","i":0,"w":"lease","op":"fenced","t0":0,"t1":30,"res":"ok","token":2,"value":"w2"}
{"p":"lease-1","i":0,"w":"lease","op":"fenced","t0":20,"t1":40,"res":"ok","token":1,"value":"w1"}
)");
        CHECK(concurrent.violations.empty());
    }
    SUBCASE("a refusal names a higher winning token") {
        auto const refused = check_lease_text(R"(
{"p":"lease-1","i":0,"w":"lease","op":"fenced","t0":20,"t1":30,"res":"refused","token":3,"value":"w1","winning":3}
)");
        CHECK(mentions(refused.violations, "which is not higher"));
    }
}

// lease-4 holds token 4 and loses it; lease-1 acquires token 5 and its write A of token 5 has an unknown outcome.
// lease-4's write B of token 4 is refused for token 5, returning at 90: A had landed by then.
std::string const landed_unknown = R"(
{"p":"lease-4","i":0,"w":"lease","op":"acquire","t0":0,"t1":10,"res":"ok","token":4}
{"p":"lease-4","i":0,"w":"lease","op":"lost","t":40,"token":4}
{"p":"lease-1","i":0,"w":"lease","op":"acquire","t0":45,"t1":60,"res":"ok","token":5}
{"p":"lease-1","i":0,"w":"lease","op":"fenced","t0":62,"t1":80,"res":"unknown","token":5,"value":"A"}
{"p":"lease-1","i":0,"w":"lease","op":"release","t0":150,"t1":160,"res":"ok","token":5}
{"p":"lease-4","i":0,"w":"lease","op":"fenced","t0":70,"t1":90,"res":"refused","token":4,"value":"B","winning":5}
)";

TEST_CASE("bites: a write accepted below a token a refusal proved") {
    auto const r = check_lease_text(landed_unknown + R"(
{"p":"lease-4","i":0,"w":"lease","op":"fenced","t0":95,"t1":100,"res":"ok","token":4,"value":"C"}
{"p":"reader","i":0,"w":"lease","op":"fenced_read","t0":200,"t1":210,"res":"ok","found":true,"value":"C","token":4}
)");
    CHECK(r.violations.size() == 2);
    CHECK(mentions(r.violations, "was accepted after a refusal for token 5"));
    CHECK(mentions(r.violations, "below token 5, which a refusal before the read proved written"));
    CHECK(r.warnings.empty());
    SUBCASE("but one called before the refusal returned may have landed before the winner") {
        auto const concurrent = check_lease_text(landed_unknown + R"(
{"p":"lease-4","i":0,"w":"lease","op":"fenced","t0":85,"t1":100,"res":"ok","token":4,"value":"C"}
{"p":"reader","i":0,"w":"lease","op":"fenced_read","t0":200,"t1":210,"res":"ok","found":true,"value":"A","token":5}
)");
        CHECK(concurrent.violations.empty());
        CHECK(concurrent.warnings.empty());
    }
    SUBCASE("and the final read finds no record after a refusal") {
        auto const missing = check_lease_text(landed_unknown + R"(
{"p":"reader","i":0,"w":"lease","op":"fenced_read","t0":200,"t1":210,"res":"ok","found":false}
)");
        CHECK(missing.violations.size() == 1);
        CHECK(mentions(missing.violations, "found no record"));
    }
}

TEST_CASE("a refusal for a token no acquire returned is a warning") {
    // An acquire of unknown outcome may have got token 7, so it is no violation.
    auto const r = check_lease_text(R"(
{"p":"lease-1","i":0,"w":"lease","op":"acquire","t0":0,"t1":10,"res":"ok","token":4}
{"p":"lease-1","i":0,"w":"lease","op":"fenced","t0":20,"t1":30,"res":"refused","token":4,"value":"a","winning":7}
{"p":"lease-2","i":0,"w":"lease","op":"acquire","t0":5,"t1":40,"res":"unknown"}
{"p":"lease-1","i":0,"w":"lease","op":"release","t0":50,"t1":60,"res":"ok","token":4}
)");
    CHECK(r.violations.empty());
    CHECK(mentions(r.warnings, "no acquire returned token 7"));
}

TEST_CASE("bites: the final read shows a refused write's value") {
    auto const r = check_lease_text(R"(
{"p":"lease-1","i":0,"w":"lease","op":"fenced","t0":0,"t1":10,"res":"ok","token":2,"value":"w2"}
{"p":"lease-2","i":0,"w":"lease","op":"fenced","t0":20,"t1":30,"res":"refused","token":1,"value":"w1","winning":2}
{"p":"reader","i":0,"w":"lease","op":"fenced_read","t0":100,"t1":110,"res":"ok","found":true,"value":"w1","token":1}
)");
    CHECK(r.violations.size() == 1);
    CHECK(mentions(r.violations, "reported refused: that write landed"));
    SUBCASE("or an older accepted one") {
        auto const old = check_lease_text(R"(
{"p":"lease-1","i":0,"w":"lease","op":"fenced","t0":0,"t1":10,"res":"ok","token":2,"value":"a"}
{"p":"lease-1","i":0,"w":"lease","op":"fenced","t0":20,"t1":30,"res":"ok","token":2,"value":"b"}
{"p":"reader","i":0,"w":"lease","op":"fenced_read","t0":100,"t1":110,"res":"ok","found":true,"value":"a","token":2}
)");
        CHECK(mentions(old.violations, "was accepted after it"));
    }
}

TEST_CASE("a clean history with a kill and a restart") {
    auto const r = check_lease_text(R"(
{"p":"lease-1","i":0,"w":"proc","op":"start","t":0}
{"p":"lease-2","i":0,"w":"proc","op":"start","t":0}
{"p":"reader","i":0,"w":"proc","op":"start","t":0}
{"p":"lease-1","i":0,"w":"lease","op":"acquire","t0":10,"t1":20,"res":"ok","token":1}
{"p":"lease-1","i":0,"w":"lease","op":"fenced","t0":30,"t1":40,"res":"ok","token":1,"value":"a"}
{"p":"lease-1","i":0,"w":"lease","op":"invoke","of":"fenced","id":3,"t0":45,"token":1,"value":"b"}
{"p":"lease-1","w":"proc","op":"sigkill","t":50}
{"p":"lease-2","i":0,"w":"lease","op":"acquire","t0":30,"t1":80,"res":"ok","token":2}
{"p":"lease-1","i":1,"w":"proc","op":"start","t":90}
{"p":"lease-2","i":0,"w":"lease","op":"fenced","t0":90,"t1":100,"res":"ok","token":2,"value":"c"}
{"p":"lease-1","i":1,"w":"lease","op":"acquire","t0":95,"t1":300,"res":"ok","token":3}
{"p":"lease-2","i":0,"w":"lease","op":"lost","t":150,"token":2}
{"p":"lease-2","i":0,"w":"lease","op":"fenced","t0":155,"t1":170,"res":"refused","token":2,"value":"d","winning":3}
{"p":"lease-1","i":1,"w":"lease","op":"fenced","t0":310,"t1":320,"res":"unknown","token":3,"value":"e"}
{"p":"lease-1","i":1,"w":"lease","op":"release","t0":330,"t1":340,"res":"ok","token":3}
{"p":"reader","i":0,"w":"lease","op":"fenced_read","t0":400,"t1":410,"res":"ok","found":true,"value":"e","token":3}
)");
    CHECK(r.violations.empty());
    CHECK(r.warnings.empty());
    REQUIRE(r.intervals.size() == 3);
    CHECK(r.intervals[0].ended_by == hold_end::sigkill);
    CHECK(r.intervals[1].ended_by == hold_end::lost);
    CHECK(r.intervals[2].ended_by == hold_end::release);
    CHECK(r.final_reads_checked == 1);
}

TEST_CASE("a hold without an end is taken to the last event, with a warning") {
    auto const r = check_lease_text(R"(
{"p":"lease-1","i":0,"w":"lease","op":"acquire","t0":0,"t1":10,"res":"ok","token":1}
{"p":"lease-1","i":0,"w":"lease","op":"fenced","t0":20,"t1":30,"res":"ok","token":1,"value":"a"}
)");
    CHECK(r.violations.empty());
    REQUIRE(r.intervals.size() == 1);
    CHECK(r.intervals[0].end == 30);
    CHECK(r.warnings.size() == 2);  // the hold's end, and no final read
}

}  // TEST_SUITE

TEST_SUITE("history parser") {

TEST_CASE("invokes pair with their returns; an invoke without one is unknown and never returns") {
    history const h = parse_history(R"(
{"p":"kv-1","i":0,"w":"kv","op":"invoke","of":"put","id":1,"key":"k","value":"a","cond":"none","t0":5}
{"p":"kv-1","i":1,"w":"kv","op":"invoke","of":"put","id":1,"key":"k","value":"b","cond":"none","t0":7}
{"p":"kv-1","i":0,"w":"kv","op":"put","id":1,"key":"k","value":"a","cond":"none","t0":5,"t1":9,"res":"ok","version":1}
)");
    REQUIRE(h.ops.size() == 2);
    CHECK(h.ops[0].returned);
    CHECK(h.ops[0].t1 == 9);
    CHECK(h.ops[0].res == outcome::ok);
    CHECK(h.ops[0].where == "<text>:4");
    CHECK_FALSE(h.ops[1].returned);
    CHECK(h.ops[1].incarnation == 1);
    CHECK(h.ops[1].t1 == unbounded);
    CHECK(h.ops[1].res == outcome::unknown);
    CHECK(h.ops[1].text("value") == "b");
}

TEST_CASE("lines from several texts merge, in time order") {
    history_reader r;
    r.add_text(R"({"p":"kv-1","i":0,"w":"kv","op":"get","key":"k","t0":20,"t1":30,"res":"ok","found":false})", "a");
    r.add_text(R"({"p":"kv-2","i":0,"w":"kv","op":"get","key":"k","t0":10,"t1":40,"res":"ok","found":false})"
               "\n\n",
               "b");
    history const h = std::move(r).finish();
    REQUIRE(h.ops.size() == 2);
    CHECK(h.ops[0].where == "b:1");
    CHECK(h.ops[1].where == "a:1");
}

TEST_CASE("a process event without an incarnation belongs to the one running then") {
    history const h = parse_history(R"(
{"p":"lease-1","i":0,"w":"proc","op":"start","t":0}
{"p":"lease-1","w":"proc","op":"sigkill","t":50}
{"p":"lease-1","i":1,"w":"proc","op":"start","t":60}
{"p":"lease-1","w":"proc","op":"sigstop","t":70}
)");
    REQUIRE(h.ops.size() == 4);
    CHECK(h.ops[1].incarnation == 0);
    CHECK(h.ops[1].incarnation_inferred);
    CHECK(h.ops[3].incarnation == 1);
}

TEST_CASE("bad lines are refused with file and line, never skipped") {
    CHECK(parse_error("\n{\"p\":\"kv-1\"").starts_with("bad.jsonl:2: not JSON ("));
    CHECK(parse_error("[1,2]").starts_with("bad.jsonl:1: not a JSON object"));
    CHECK(parse_error(R"({"p":"kv-1","i":0,"w":"kv","op":"get","t0":1,"t1":2,"res":"ok","found":false})") ==
          "bad.jsonl:1: no field 'key'");
    CHECK(parse_error(R"({"p":"kv-1","i":0,"w":"kv","op":"get","key":"k","t0":"1","t1":2,"res":"ok","found":false})") ==
          "bad.jsonl:1: field 't0' is not an integer");
    CHECK(parse_error(R"({"p":"kv-1","i":0,"w":"kv","op":"get","key":"k","t0":1,"t1":2,"res":"maybe"})") ==
          "bad.jsonl:1: bad res 'maybe'");
    CHECK(parse_error(R"({"p":"kv-1","i":0,"w":"kv","op":"get","key":"k","t0":1,"t1":2,"res":"ok"})") ==
          "bad.jsonl:1: no field 'found'");
    CHECK(parse_error(R"({"p":"kv-1","i":0,"w":"kv","op":"frobnicate","key":"k","t0":1,"t1":2,"res":"ok"})") ==
          "bad.jsonl:1: unknown operation 'frobnicate'");
    CHECK(parse_error(R"({"p":"kv-1","i":0,"w":"lease","op":"get","key":"k","t0":1,"t1":2,"res":"ok","found":false})") ==
          "bad.jsonl:1: operation 'get' in workload 'lease'");
    CHECK(parse_error(R"({"p":"kv-1","i":0,"w":"kv","op":"put","key":"k","value":"a","cond":"maybe","t0":1,"t1":2,"res":"ok"})") ==
          "bad.jsonl:1: bad cond 'maybe' for put");
    CHECK(parse_error(R"({"p":"kv-1","i":0,"w":"kv","op":"get","key":"k","t0":3,"t1":2,"res":"ok","found":false})") ==
          "bad.jsonl:1: t1 before t0");
    CHECK(parse_error(R"({"p":"kv-1","i":0,"w":"kv","op":"invoke","of":"get","key":"k","t0":1})") ==
          "bad.jsonl:1: an invoke without 'id'");
    CHECK(parse_error(R"({"p":"l-1","i":0,"w":"lease","op":"fenced","t0":1,"t1":2,"res":"refused","token":1,"value":"a"})") ==
          "bad.jsonl:1: no field 'winning'");
    CHECK(parse_error(R"({"p":"kv-1","i":0,"w":"kv","op":"invoke","of":"get","id":1,"key":"k","t0":1}
{"p":"kv-1","i":0,"w":"kv","op":"invoke","of":"get","id":1,"key":"k","t0":2})") ==
          "bad.jsonl:2: a second invoke with id 1 in kv-1#0");
    CHECK(parse_error(R"({"p":"kv-1","i":0,"w":"kv","op":"invoke","of":"get","id":1,"key":"k","t0":1}
{"p":"kv-1","i":0,"w":"kv","op":"incr","id":1,"key":"k","t0":1,"t1":2,"res":"failed"})")
              .starts_with("bad.jsonl:2: the return of incr id 1 follows an invoke of get"));
}

}  // TEST_SUITE
