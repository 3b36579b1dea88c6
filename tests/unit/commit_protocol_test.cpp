// basic_commit_protocol on memory stores, in virtual time: the pointer format, the operations,
// and each adversarial interleaving of the safety argument written as a deterministic test
// (an object PUT landing late, a commit landing late, a frozen writer, garbage collection racing
// a commit still in flight, objects changed behind baton's back). Then the recipes on top.
#include <baton/backend/memory.hpp>
#include <baton/recipe/election.hpp>
#include <baton/recipe/kv.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/sim.hpp>
#include <baton/store/commit_protocol.hpp>

#include <doctest/doctest.h>
#include <test_common/commit_stores.hpp>
#include <test_common/kv_scenarios.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <optional>
#include <tuple>
#include <vector>
#include <string>
#include <utility>

namespace {

namespace asio = boost::asio;
namespace sim = baton::sim;
using namespace std::chrono_literals;
using baton::errc;
using baton::error_code;
using baton::precondition;
using test_common::holding_store;

using commit_t = baton::basic_commit_protocol<holding_store, holding_store>;

struct rig {
    sim::scheduler sched{7};
    holding_store objects{baton::memory_backend(sched.get_executor())};
    holding_store locks{baton::memory_backend(sched.get_executor())};
    commit_t store{objects, locks, {}, 42};

    template <class R, class Start>
    std::pair<error_code, R> await(Start start) {
        std::optional<std::pair<error_code, R>> out;
        start([&](error_code ec, R r) { out.emplace(ec, std::move(r)); });
        sched.run_for(100ms);
        REQUIRE(out.has_value());
        return std::move(*out);
    }
    std::pair<error_code, baton::put_result> put(commit_t& s, std::string key, std::string body, precondition pc) {
        return await<baton::put_result>([&](auto h) { s.async_put(key, body, pc, std::move(h)); });
    }
    std::pair<error_code, baton::put_result> put(std::string key, std::string body, precondition pc) {
        return put(store, std::move(key), std::move(body), std::move(pc));
    }
    std::pair<error_code, baton::get_result> get(std::string key) {
        return await<baton::get_result>([&](auto h) { store.async_get(key, std::move(h)); });
    }
    std::pair<error_code, baton::erase_result> erase(std::string key, precondition pc) {
        return await<baton::erase_result>([&](auto h) { store.async_erase(key, pc, std::move(h)); });
    }
    std::pair<error_code, baton::list_page> list(std::string prefix, std::string after, std::size_t limit) {
        return await<baton::list_page>([&](auto h) { store.async_list(prefix, after, limit, std::move(h)); });
    }
    baton::collect_result collect(std::string prefix = "") {
        auto r_result = await<baton::collect_result>([&](auto h) { store.async_collect(prefix, std::move(h)); });
        auto& ec = std::get<0>(r_result);
        auto& r = std::get<1>(r_result);
        REQUIRE_MESSAGE(!ec, r.diag.to_string());
        return r;
    }
    std::optional<std::string> body_of(std::string key) {
        auto r_result = get(std::move(key));
        auto& ec = std::get<0>(r_result);
        auto& r = std::get<1>(r_result);
        REQUIRE_MESSAGE(!ec, r.diag.to_string());
        if (!r.found) return std::nullopt;
        return r.found->body;
    }
    // Commit objects in the object store.
    std::size_t objects_stored() { return objects.inner().size(); }
    error_code land_held(holding_store& s) {
        std::optional<error_code> out;
        s.land_held([&](error_code ec) { out = ec; });
        sched.run_for(10ms);
        REQUIRE(out.has_value());
        return *out;
    }
};

} // namespace

TEST_SUITE("commit protocol") {

TEST_CASE("the pointer: strict JSON; object names carry the base they commit on; the unreachability rule") {
    using namespace baton::detail;
    commit_pointer p{false, "_baton/doc.baton-" + std::string(16, 'a') + "-" + std::string(32, 'b'), 5,
                     commit_sha256("hello"), {}};
    std::string const text = encode_commit_pointer(p);
    commit_pointer back;
    baton::diagnostics d;
    REQUIRE_FALSE(decode_commit_pointer(text, back, d));
    CHECK(back.object == p.object);
    CHECK(back.size == 5);
    CHECK(back.sha256 == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    CHECK_FALSE(back.erased);
    REQUIRE_FALSE(decode_commit_pointer(encode_commit_pointer(commit_pointer{true, {}, 0, {}, "n1"}), back, d));
    CHECK(back.erased);
    for (std::string bad : std::vector<std::string>{"", "{}", "[1]", R"({"baton":"lease/1"})", R"({"baton":"commit/1","object":"x","size":-1,"sha256":"00"})",
                            R"({"baton":"commit/1","object":"","size":1,"sha256":")" + std::string(64, '0') + "\"}",
                            R"({"baton":"commit/1","erased":7})", std::string(20000, ' ')}) {
        CAPTURE(bad);
        CHECK(decode_commit_pointer(bad, back, d) == errc::foreign_record);
    }

    std::string const tag = commit_base_tag(std::string_view("v1"));
    CHECK(tag.size() == 16);
    CHECK(tag != absent_base_tag);
    CHECK(commit_base_tag(std::nullopt) == absent_base_tag);
    std::string const name = commit_object_name("_baton/", "a/b.json", tag, std::string(32, 'c'));
    auto parts = parse_commit_object_name("_baton/", name);
    REQUIRE(parts);
    CHECK(parts->key == "a/b.json");
    CHECK(parts->base_tag == tag);
    CHECK_FALSE(parse_commit_object_name("_baton/", "_baton/a/b.json"));
    CHECK_FALSE(parse_commit_object_name("other/", name));
    CHECK_FALSE(parse_commit_object_name("_baton/", name.substr(0, name.size() - 1) + "X"));

    // Unreachable only when the pointer exists, names another object, and is not at the object's base.
    commit_pointer live{false, "other", 1, commit_sha256("x"), {}};
    CHECK_FALSE(commit_object_unreachable(name, tag, std::nullopt, ""));               // key absent: an absent-based commit may land
    CHECK_FALSE(commit_object_unreachable(name, tag, live, "v1"));                      // at its base: its commit may land
    CHECK(commit_object_unreachable(name, tag, live, "v2"));                            // moved on: never again v1
    CHECK_FALSE(commit_object_unreachable(name, tag, commit_pointer{false, name, 1, {}, {}}, "v2")); // committed
    CHECK(commit_object_unreachable(name, absent_base_tag, live, "v2"));                // the key exists: never absent again
}

TEST_CASE("put, get, erase, list and copy with their preconditions; versions are the pointer's") {
    rig r;
    auto p1_result = r.put("doc", "one", precondition::absent());
    auto& e1 = std::get<0>(p1_result);
    auto& p1 = std::get<1>(p1_result);
    REQUIRE_MESSAGE(!e1, p1.diag.to_string());
    CHECK(r.body_of("doc") == "one");
    CHECK(r.objects_stored() == 1);
    CHECK(r.put("doc", "again", precondition::absent()).first == errc::precondition_failed);
    auto [e2, p2] = r.put("doc", "two", precondition::matches(p1.version));
    REQUIRE(!e2);
    CHECK(p2.version != p1.version);
    CHECK(r.put("doc", "stale", precondition::matches(p1.version)).first == errc::precondition_failed);
    CHECK(r.body_of("doc") == "two");
    r.sched.run_for(10ms);
    CHECK(r.objects_stored() == 1); // the replaced object and the refused ones are deleted
    auto [g, got] = r.get("doc");
    REQUIRE(got.found);
    CHECK(got.found->version == p2.version);
    CHECK(got.found->key == "doc");

    // Unconditional: a read of the pointer, then a commit on what it saw.
    auto [e3, p3] = r.put("doc", "three", precondition::none());
    REQUIRE(!e3);
    CHECK(r.body_of("doc") == "three");
    auto [e4, p4] = r.put("fresh", "x", precondition::none());
    REQUIRE(!e4);

    // Erase: a tombstone; the key reads absent, a stale erase is refused, an erase of nothing is not_found.
    CHECK(r.erase("doc", precondition::matches(p1.version)).first == errc::precondition_failed);
    CHECK(r.erase("doc", precondition::absent()).first == errc::precondition_failed);
    REQUIRE_FALSE(r.erase("doc", precondition::matches(p3.version)).first);
    CHECK_FALSE(r.body_of("doc").has_value());
    CHECK(r.erase("doc", precondition::matches(p3.version)).first == errc::not_found);
    CHECK(r.erase("never", precondition::matches("x")).first == errc::not_found);
    CHECK_FALSE(r.erase("doc", precondition::none()).first);   // nothing to erase: done
    CHECK_FALSE(r.erase("doc", precondition::absent()).first); // it is absent
    // A writer that read the key before the erase cannot bring it back; `absent` can, over the tombstone.
    CHECK(r.put("doc", "zombie", precondition::matches(p3.version)).first == errc::precondition_failed);
    auto p5_result = r.put("doc", "reborn", precondition::absent());
    auto& e5 = std::get<0>(p5_result);
    auto& p5 = std::get<1>(p5_result);
    REQUIRE_MESSAGE(!e5, p5.diag.to_string());
    CHECK(r.body_of("doc") == "reborn");
    CHECK(p5.version != p3.version);

    // List: live keys only, in order, with the versions get returns; tombstones skipped even across pages.
    for (int i = 0; i < 5; ++i) REQUIRE_FALSE(r.put("l/" + std::to_string(i), "v", precondition::absent()).first);
    auto [le, page] = r.list("l/", "", 10);
    REQUIRE(!le);
    REQUIRE(page.entries.size() == 5);
    CHECK(page.entries[0].key == "l/0");
    for (int i = 0; i < 3; ++i) REQUIRE_FALSE(r.erase("l/" + std::to_string(i), precondition::none()).first);
    auto [le2, page2] = r.list("l/", "", 2); // the first page of the lock store holds only tombstones
    REQUIRE(!le2);
    REQUIRE_FALSE(page2.entries.empty());
    CHECK(page2.entries[0].key == "l/3");

    // Copy if absent: the bytes of the committed version, in an object of its own, copied by the
    // object store (no read of the bytes through this process).
    static_assert(baton::basic_commit_protocol<holding_store, holding_store>::copies_in_store);
    auto const gets_before = r.objects.inner().counts().gets;
    auto cp_result = r.await<baton::put_result>([&](auto h) { r.store.async_copy("doc", "copy", precondition::absent(), std::move(h)); });
    auto& ce = std::get<0>(cp_result);
    auto& cp = std::get<1>(cp_result);
    REQUIRE_MESSAGE(!ce, cp.diag.to_string());
    CHECK(r.objects.inner().counts().gets == gets_before);
    CHECK(r.body_of("copy") == "reborn");
    // Without the store's copy: read, then written again.
    using plain_commit = baton::basic_commit_protocol<baton::memory_backend, holding_store>;
    static_assert(!plain_commit::copies_in_store);
    plain_commit plain(r.objects.inner(), r.locks, {}, 3);
    auto pcp_result = r.await<baton::put_result>([&](auto h) { plain.async_copy("doc", "copy-2", precondition::absent(), std::move(h)); });
    auto& pce = std::get<0>(pcp_result);
    auto& pcp = std::get<1>(pcp_result);
    REQUIRE_MESSAGE(!pce, pcp.diag.to_string());
    CHECK(r.body_of("copy-2") == "reborn");
    CHECK(r.objects.inner().counts().gets > gets_before);
    auto [ce2, cp2] = r.await<baton::put_result>([&](auto h) { r.store.async_copy("doc", "copy", precondition::absent(), std::move(h)); });
    CHECK(ce2 == errc::precondition_failed);
    auto [ce3, cp3] = r.await<baton::put_result>([&](auto h) { r.store.async_copy("gone", "copy2", precondition::absent(), std::move(h)); });
    CHECK(ce3 == errc::not_found);

    // Bad input: keys too long for the object names, bodies over the limit.
    CHECK(r.put(std::string(r.store.max_key_bytes() + 1, 'k'), "x", precondition::none()).first == errc::invalid_argument);
    CHECK(r.get("").first == errc::invalid_argument);
    baton::commit_protocol_params small;
    small.max_body_bytes = 4;
    commit_t tight(r.objects, r.locks, small, 1);
    CHECK(r.put(tight, "big", "12345", precondition::none()).first == errc::invalid_argument);
    baton::commit_protocol_params wrong;
    wrong.max_read_rounds = 0;
    CHECK_THROWS_AS(commit_t(r.objects, r.locks, wrong), baton::config_error);
}

TEST_CASE("an object PUT that lands after its writer gave up writes a name nobody points to") {
    rig r;
    auto [e0, v0] = r.put("doc", "base", precondition::absent());
    REQUIRE(!e0);
    commit_t a(r.objects, r.locks, {}, 1), b(r.objects, r.locks, {}, 2);
    r.objects.hold_next("_baton/doc");
    auto [ea, pa] = r.put(a, "doc", "from-a", precondition::matches(v0.version));
    CHECK(ea == errc::timeout); // the object write timed out: nothing was committed, the caller may retry
    auto [eb, pb] = r.put(b, "doc", "from-b", precondition::matches(v0.version));
    REQUIRE(!eb);
    REQUIRE(r.objects.held() == 1);
    REQUIRE_FALSE(r.land_held(r.objects)); // a's bytes arrive now, at their own fresh name
    CHECK(r.body_of("doc") == "from-b");    // b's acknowledged write stands
    auto c = r.collect();
    // a's object can never be committed (the pointer moved past its base); nor can "base", which
    // b replaced without knowing its object's name (a fresh handle).
    CHECK(c.collected == 2);
    CHECK(c.kept == 1);
    CHECK(r.body_of("doc") == "from-b");
}

TEST_CASE("a commit that lands late is decided by the lock store: refused over a newer write, complete when it holds") {
    rig r;
    auto [e0, v0] = r.put("doc", "base", precondition::absent());
    REQUIRE(!e0);
    commit_t a(r.objects, r.locks, {}, 1), b(r.objects, r.locks, {}, 2);
    r.locks.hold_next("doc");
    CHECK(r.put(a, "doc", "from-a", precondition::matches(v0.version)).first == errc::timeout);
    auto [eb, pb] = r.put(b, "doc", "from-b", precondition::matches(v0.version));
    REQUIRE(!eb);
    CHECK(r.land_held(r.locks) == errc::precondition_failed);
    CHECK(r.body_of("doc") == "from-b");

    // A writer frozen between its object and its commit: the commit lands later, while it still holds.
    auto [g, cur] = r.get("doc");
    r.locks.hold_next("doc");
    CHECK(r.put(a, "doc", "frozen-a", precondition::matches(cur.found->version)).first == errc::timeout);
    auto c = r.collect();
    CHECK(c.kept == 2); // b's, and the frozen writer's: its commit may still land
    REQUIRE_FALSE(r.land_held(r.locks));
    CHECK(r.body_of("doc") == "frozen-a"); // whole: the bytes were written before the commit
}

TEST_CASE("a refusal that answers a duplicate of our own landed commit is a success, and nothing is deleted") {
    rig r;
    auto [e0, v0] = r.put("doc", "base", precondition::absent());
    REQUIRE(!e0);
    r.locks.duplicate_next("doc");
    auto p1_result = r.put("doc", "mine", precondition::matches(v0.version));
    auto& e1 = std::get<0>(p1_result);
    auto& p1 = std::get<1>(p1_result);
    REQUIRE_MESSAGE(!e1, p1.diag.to_string());
    CHECK(r.body_of("doc") == "mine");
    auto [g, cur] = r.get("doc");
    CHECK(cur.found->version == p1.version);
    r.locks.duplicate_next("fresh");
    REQUIRE_FALSE(r.put("fresh", "created", precondition::absent()).first);
    CHECK(r.body_of("fresh") == "created");
    r.locks.duplicate_next("fresh");
    REQUIRE_FALSE(r.put("fresh", "again", precondition::none()).first);
    CHECK(r.body_of("fresh") == "again");
    r.locks.duplicate_next("doc");
    REQUIRE_FALSE(r.erase("doc", precondition::matches(p1.version)).first);
    CHECK_FALSE(r.body_of("doc").has_value());
}

TEST_CASE("a commit answered with an error after it was applied keeps its object: the key stays readable") {
    rig r;
    auto [e0, v0] = r.put("doc", "base", precondition::absent());
    REQUIRE(!e0);
    for (auto ec : {error_code(errc::invalid_response), error_code(asio::error::operation_aborted), error_code(errc::timeout)}) {
        CAPTURE(ec.message());
        auto [g, cur] = r.get("doc");
        REQUIRE(cur.found);
        r.locks.fail_after_applying_next("doc", ec);
        CHECK(r.put("doc", "applied-" + ec.message(), precondition::matches(cur.found->version)).first == ec);
        r.sched.run_for(10ms);
        CHECK(r.body_of("doc") == "applied-" + ec.message());
    }
}

TEST_CASE("collection never takes what a commit in flight may name; once it cannot, it goes") {
    rig r;
    commit_t a(r.objects, r.locks, {}, 1), b(r.objects, r.locks, {}, 2);
    // a's create is in flight (held), the key is absent: its object must stay.
    r.locks.hold_next("k");
    CHECK(r.put(a, "k", "from-a", precondition::absent()).first == errc::timeout);
    CHECK(r.collect().kept == 1);
    // b creates the key: a's absent-based commit can never land now.
    REQUIRE_FALSE(r.put(b, "k", "from-b", precondition::absent()).first);
    auto c = r.collect();
    CHECK(c.collected == 1);
    CHECK(c.kept == 1);
    CHECK(r.land_held(r.locks) == errc::precondition_failed);
    CHECK(r.body_of("k") == "from-b");
    // A writer crashed after its object: garbage, collected once the key moves on.
    auto [g, cur] = r.get("k");
    r.locks.hold_next("k"); // its commit never arrives
    CHECK(r.put(a, "k", "crashed", precondition::matches(cur.found->version)).first == errc::timeout);
    CHECK(r.collect().collected == 0);
    REQUIRE_FALSE(r.put(b, "k", "next", precondition::matches(cur.found->version)).first);
    CHECK(r.collect().collected == 1);
    // The replaced objects another handle left behind are collected too.
    REQUIRE_FALSE(r.put(a, "k", "by-a", precondition::none()).first);
    REQUIRE_FALSE(r.put(b, "k", "by-b", precondition::none()).first);
    r.sched.run_for(10ms);
    r.collect();
    CHECK(r.objects_stored() == 1);
    CHECK(r.body_of("k") == "by-b");
}

TEST_CASE("objects changed or deleted behind baton's back are reported, never returned") {
    rig r;
    auto [e0, v0] = r.put("doc", "committed", precondition::absent());
    REQUIRE(!e0);
    auto entries = r.await<baton::list_page>([&](auto h) { r.objects.async_list("_baton/", "", 10, std::move(h)); }).second.entries;
    REQUIRE(entries.size() == 1);
    std::string const object = entries[0].key;
    REQUIRE_FALSE(r.await<baton::put_result>([&](auto h) { r.objects.async_put(object, "tampered", precondition::none(), std::move(h)); }).first);
    auto [e1, g1] = r.get("doc");
    CHECK(e1 == errc::invalid_response);
    CHECK(g1.diag.message.find("changed outside baton") != std::string::npos);
    REQUIRE_FALSE(r.await<baton::erase_result>([&](auto h) { r.objects.async_erase(object, precondition::none(), std::move(h)); }).first);
    auto [e2, g2] = r.get("doc");
    CHECK(e2 == errc::invalid_response);
    CHECK(g2.diag.message.find("missing") != std::string::npos);
    // A record in the lock store that is not a pointer.
    REQUIRE_FALSE(r.await<baton::put_result>([&](auto h) { r.locks.async_put("alien", "{\"hello\":1}", precondition::none(), std::move(h)); }).first);
    CHECK(r.get("alien").first == errc::foreign_record);
    CHECK(r.put("alien", "x", precondition::none()).first == errc::foreign_record);
}

TEST_CASE("probe: conditional writes as the lock store honours them; a lock store that ignores them is refused for leases") {
    rig r;
    auto caps_result = r.await<baton::capabilities>([&](auto h) { r.store.async_probe(std::move(h)); });
    auto& ec = std::get<0>(caps_result);
    auto& caps = std::get<1>(caps_result);
    REQUIRE_MESSAGE(!ec, caps.diag.to_string());
    CHECK(caps.supports_leases());
    CHECK(caps.conditional_erase);
    CHECK(caps.findings.size() >= 4);

    using blind_commit = baton::basic_commit_protocol<baton::memory_backend, test_common::ignores_preconditions<baton::memory_backend>>;
    blind_commit blind(baton::memory_backend(r.sched.get_executor()),
                       test_common::ignores_preconditions<baton::memory_backend>(baton::memory_backend(r.sched.get_executor())));
    auto [ec2, caps2] = r.await<baton::capabilities>([&](auto h) { blind.async_probe(std::move(h)); });
    REQUIRE(!ec2);
    CHECK_FALSE(caps2.supports_leases());
    baton::lease_options o;
    o.key = "jobs/nightly";
    o.owner = "a";
    baton::basic_lease<blind_commit, sim::manual_clock> lease(r.sched.get_executor(), blind, o);
    std::optional<error_code> got;
    lease.async_acquire([&](error_code e, baton::lease_grant) { got = e; });
    r.sched.run_for(1s);
    REQUIRE(got.has_value());
    CHECK(*got == errc::capability_missing);
    // Every write, not only the first.
    for (int i = 0; i < 2; ++i) {
        std::optional<error_code> w;
        blind.async_put("k", "v", precondition::absent(), [&](error_code e, baton::put_result) { w = e; });
        r.sched.run_for(10ms);
        REQUIRE(w.has_value());
        CHECK(*w == errc::capability_missing);
    }
}

TEST_CASE("the recipes run unchanged on it: a lease with rising tokens, an election, kv updates applied once") {
    rig r;
    using lease_t = baton::basic_lease<commit_t, sim::manual_clock>;
    auto opts = [](std::string owner) {
        baton::lease_options o;
        o.key = "jobs/nightly";
        o.owner = std::move(owner);
        o.ttl = 3s;
        o.poll_interval = 200ms;
        return o;
    };
    lease_t a(r.sched.get_executor(), r.store, opts("a")), b(r.sched.get_executor(), commit_t(r.objects, r.locks, {}, 9), opts("b"));
    std::optional<std::pair<error_code, baton::lease_grant>> ga, gb;
    a.async_acquire([&](error_code e, baton::lease_grant g) { ga.emplace(e, g); });
    r.sched.run_for(100ms);
    REQUIRE(ga.has_value());
    REQUIRE_FALSE(ga->first);
    CHECK(ga->second.fencing_token == 1);
    b.async_acquire([&](error_code e, baton::lease_grant g) { gb.emplace(e, g); });
    r.sched.run_for(10s); // a renews throughout; b waits
    CHECK_FALSE(gb.has_value());
    CHECK(a.is_held());
    std::optional<error_code> released;
    a.async_release([&](error_code e) { released = e; });
    r.sched.run_for(1s);
    REQUIRE(released.has_value());
    CHECK_FALSE(*released);
    REQUIRE(gb.has_value());
    REQUIRE_FALSE(gb->first);
    CHECK(gb->second.fencing_token == 2);
    r.sched.run_for(10ms);
    r.collect();
    CHECK(r.objects_stored() == 1); // renewals left no garbage behind

    // Election: a second candidate sees the leader, then leads after it resigns, with the next token.
    using election_t = baton::basic_election<commit_t, sim::manual_clock>;
    auto eopts = [&](std::string owner) {
        auto o = opts(std::move(owner));
        o.key = "leader/db";
        o.value = "addr-of-" + o.owner;
        return o;
    };
    election_t x(r.sched.get_executor(), r.store, eopts("x")), y(r.sched.get_executor(), commit_t(r.objects, r.locks, {}, 11), eopts("y"));
    std::optional<std::pair<error_code, baton::lease_grant>> gx, gy;
    x.async_campaign([&](error_code e, baton::lease_grant g) { gx.emplace(e, g); });
    r.sched.run_for(100ms);
    REQUIRE(gx.has_value());
    REQUIRE_FALSE(gx->first);
    std::optional<baton::lease_info> seen;
    y.async_leader([&](error_code e, std::optional<baton::lease_info> i) {
        CHECK_FALSE(e);
        seen = std::move(i);
    });
    y.async_campaign([&](error_code e, baton::lease_grant g) { gy.emplace(e, g); });
    r.sched.run_for(5s);
    REQUIRE(seen.has_value());
    CHECK(seen->value == "addr-of-x");
    CHECK_FALSE(gy.has_value());
    std::optional<error_code> resigned;
    x.async_resign([&](error_code e) { resigned = e; });
    r.sched.run_for(1s);
    REQUIRE(resigned.has_value());
    CHECK_FALSE(*resigned);
    REQUIRE(gy.has_value());
    REQUIRE_FALSE(gy->first);
    CHECK(gy->second.fencing_token == gx->second.fencing_token + 1);

    // kv: concurrent read-modify-writes through several handles on one composition.
    asio::io_context ioc;
    baton::memory_backend objects(ioc.get_executor()), locks(ioc.get_executor());
    using mem_commit = baton::basic_commit_protocol<baton::memory_backend, baton::memory_backend>;
    test_common::check_concurrent_updates_apply_once<mem_commit>(
        [&](asio::io_context::executor_type ex) { return mem_commit(objects.rebind(ex), locks.rebind(ex)); }, "counter", 4, 60);
    test_common::check_erase_and_recreate<mem_commit>(
        [&](asio::io_context::executor_type ex) { return mem_commit(objects.rebind(ex), locks.rebind(ex)); }, "kv/");
}


TEST_CASE("a key that is not UTF-8 is refused before anything is written, by every store and by the composition") {
    rig r;
    std::string const bad = std::string("doc/\xff\xfe-") + "x";
    auto [ec, res] = r.put(bad, "bytes", precondition::absent());
    CHECK(ec == errc::invalid_argument);
    CHECK(res.diag.message.find("UTF-8") != std::string::npos);
    CHECK(r.objects_stored() == 0); // no object either
    auto [gec, g] = r.get(bad);
    CHECK(gec == errc::invalid_argument);
    auto [eec, e] = r.erase(bad, precondition::none());
    CHECK(eec == errc::invalid_argument);
    // The stores themselves, as every store refuses it (S3 keys and DynamoDB strings are UTF-8).
    baton::memory_backend mem(r.sched.get_executor());
    std::optional<error_code> got;
    mem.async_put(bad, "v", precondition::none(), [&](error_code e2, baton::put_result) { got = e2; });
    r.sched.run_for(10ms);
    REQUIRE(got);
    CHECK(*got == errc::invalid_argument);
    baton::diagnostics d;
    CHECK(baton::store_limits::check_key(bad, d) == errc::invalid_argument);
    CHECK(baton::store_limits::check_key("doc/\xc3\xa9t\xc3\xa9", d) == error_code{}); // "été": valid UTF-8
    // kv on the composition: refused too, so no pointer that cannot be parsed is ever committed.
    baton::basic_kv<commit_t, sim::manual_clock> kv(r.sched.get_executor(), r.store);
    std::optional<error_code> kec;
    kv.async_put(bad, "v", baton::kv_condition::none(), [&](error_code e2, baton::kv_write_result) { kec = e2; });
    r.sched.run_for(1s);
    REQUIRE(kec);
    CHECK(*kec == errc::invalid_argument);
}

TEST_CASE("two handles built with the same explicit seed never write the same object name") {
    rig r;
    commit_t twin{r.objects, r.locks, {}, 42}; // the rig's store has seed 42 as well
    auto [ec1, p1] = r.put(r.store, "doc", "from the first handle", precondition::absent());
    REQUIRE_FALSE(ec1);
    // The twin's put of the same key on the same base is refused; its object must not have
    // replaced, or deleted, the first handle's committed one.
    auto [ec2, p2] = r.put(twin, "doc", "from the twin", precondition::absent());
    CHECK(ec2 == errc::precondition_failed);
    auto body = r.body_of("doc");
    REQUIRE(body);
    CHECK(*body == "from the first handle");
}
}
