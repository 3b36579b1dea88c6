// dynamodb_backend against a real DynamoDB-compatible server (dynalite, started by
// tests/servers/with-servers.sh dynalite, which exports BATON_DYNAMODB_*), and against
// a scripted in-process server for what dynalite cannot show (checksum mismatches,
// 5xx, timeouts after the request was sent, ALL_OLD items, malformed answers).
//
//   tests/servers/with-servers.sh dynalite -- build/tests/baton_integration -ts='dynamodb*'
//
// Without BATON_DYNAMODB_ENDPOINT the real-server cases print that they skipped and pass.
// Every test creates its own table (async_create_table) and deletes it afterwards. Every
// wait is bounded.
#include <baton/baton.hpp>
#include <test_common/commit_scenarios.hpp>
#include <test_common/fenced_scenarios.hpp>
#include <test_common/fixtures.hpp>
#include <test_common/http_server.hpp>
#include <test_common/kv_scenarios.hpp>
#include <test_common/run_op.hpp>

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
namespace json = boost::json;
using baton::errc;
using baton::error_code;
using baton::precondition;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

using test_common::contains;

// ---- running the io_context with a bound ------------------------------------------

using test_common::run_until;

void run_for(asio::io_context& ioc, std::chrono::milliseconds d) {
    run_until(ioc, [] { return false; }, d);
}

// Starts an operation taking a completion handler `void(error_code, R)` and waits for it.
template <class R, class Start>
std::pair<error_code, R> await(asio::io_context& ioc, Start&& start, std::chrono::milliseconds limit = 15s) {
    std::optional<std::pair<error_code, R>> out;
    start([&out](error_code ec, R r) { out.emplace(ec, std::move(r)); });
    REQUIRE(run_until(ioc, [&] { return out.has_value(); }, limit));
    return std::move(*out);
}

error_code await_void(asio::io_context& ioc, std::function<void(std::function<void(error_code)>)> start,
                      std::chrono::milliseconds limit = 15s) {
    std::optional<error_code> out;
    start([&out](error_code ec) { out = ec; });
    REQUIRE(run_until(ioc, [&] { return out.has_value(); }, limit));
    return *out;
}

// ---- the server under test ---------------------------------------------------------

struct server_env {
    std::string endpoint, access_key, secret_key, region;
};

std::optional<server_env> dynamodb_env() {
    auto get = [](char const* n) -> std::string {
        char const* v = std::getenv(n);
        return v ? v : "";
    };
    server_env e{get("BATON_DYNAMODB_ENDPOINT"), get("BATON_DYNAMODB_ACCESS_KEY"), get("BATON_DYNAMODB_SECRET_KEY"),
                 get("BATON_DYNAMODB_REGION")};
    if (e.endpoint.empty()) return std::nullopt;
    if (e.region.empty()) e.region = "us-east-1";
    if (e.access_key.empty()) e.access_key = "baton";
    if (e.secret_key.empty()) e.secret_key = "baton";
    return e;
}

#define REQUIRE_DYNAMODB(var)                                                                                     \
    auto var##_opt = dynamodb_env();                                                                              \
    if (!var##_opt) {                                                                                             \
        MESSAGE("skipped: BATON_DYNAMODB_ENDPOINT is not set (run under tests/servers/with-servers.sh dynalite)"); \
        return;                                                                                                   \
    }                                                                                                             \
    server_env const& var = *var##_opt

std::string unique_name(std::string_view what) {
    static std::mt19937_64 rng{std::random_device{}()};
    static int counter = 0;
    return "baton-it-" + std::string(what) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + "-" +
           std::to_string(rng() % 1000000);
}

baton::dynamodb_backend_params params_for(server_env const& e, std::string table) {
    baton::dynamodb_backend_params p;
    p.endpoint = e.endpoint;
    p.region = e.region;
    p.table = std::move(table);
    p.credentials.access_key_id = e.access_key;
    p.credentials.secret_access_key = e.secret_key;
    p.table_wait_timeout = 20s;
    return p;
}

// One table per test, created with the helper and deleted at the end.
struct table_fixture {
    asio::io_context ioc;
    server_env env;
    std::string table;
    baton::dynamodb_backend backend;

    explicit table_fixture(server_env e, std::string_view what = "t")
        : env(std::move(e)), table(unique_name(what)), backend(ioc.get_executor(), params_for(env, table)) {
        auto info_result = await<baton::dynamodb_table_info>(
            ioc, [&](auto h) { backend.async_create_table(std::move(h)); }, 30s);
        auto& ec = std::get<0>(info_result);
        auto& info = std::get<1>(info_result);
        INFO(info.diag.to_string());
        REQUIRE(!ec);
        CHECK(info.created);
        CHECK(info.status == "ACTIVE");
        CHECK(info.key_schema == "pk (S, HASH)");
    }

    ~table_fixture() {
        std::optional<error_code> done;
        backend.async_call("DeleteTable", R"({"TableName":")" + table + R"("})",
                           [&](error_code ec, baton::dynamodb_response) { done = ec; });
        run_until(ioc, [&] { return done.has_value(); }, 5s);
    }

    std::pair<error_code, baton::get_result> get(std::string key) {
        return await<baton::get_result>(ioc, [&](auto h) { backend.async_get(key, std::move(h)); });
    }
    std::pair<error_code, baton::put_result> put(std::string key, std::string body, precondition pc) {
        return await<baton::put_result>(ioc, [&](auto h) { backend.async_put(key, body, pc, std::move(h)); });
    }
    // Whether the server returns the item with a failed condition (ReturnValuesOnConditionCheckFailure
    // ALL_OLD): DynamoDB does, dynalite does not. Writes `key` if absent, then fails a second create.
    bool returns_item_with_failure(std::string const& key) {
        std::string const req = R"({"TableName":")" + table + R"(","Item":{"pk":{"S":")" + key +
                                R"j("}},"ConditionExpression":"attribute_not_exists(pk)","ReturnValuesOnConditionCheckFailure":"ALL_OLD"})j";
        auto call = [&] {
            return await<baton::dynamodb_response>(ioc, [&](auto h) { backend.async_call("PutItem", req, std::move(h)); });
        };
        (void)call();
        auto [ec, raw] = call();
        CHECK(ec == errc::precondition_failed);
        return contains(raw.body, "\"Item\"");
    }
    std::pair<error_code, baton::erase_result> erase(std::string key, precondition pc) {
        return await<baton::erase_result>(ioc, [&](auto h) { backend.async_erase(key, pc, std::move(h)); });
    }
    std::pair<error_code, baton::list_page> list(std::string prefix, std::string after, std::size_t limit) {
        return await<baton::list_page>(
            ioc, [&](auto h) { backend.async_list(prefix, after, limit, std::move(h)); });
    }
    // The whole item as DynamoDB stores it (a raw, consistent GetItem).
    json::object raw_item(std::string const& key) {
        auto [ec, res] = await<baton::dynamodb_response>(ioc, [&](auto h) {
            backend.async_call("GetItem",
                               R"({"TableName":")" + table + R"(","Key":{"pk":{"S":")" + key +
                                   R"("}},"ConsistentRead":true})",
                               std::move(h));
        });
        REQUIRE(!ec);
        auto v = json::parse(res.body);
        REQUIRE(v.is_object());
        auto const* item = v.get_object().if_contains("Item");
        REQUIRE(item != nullptr);
        return item->get_object();
    }
};

std::string attr(json::object const& item, std::string_view name, std::string_view type) {
    auto const* a = item.if_contains(name);
    if (a == nullptr || !a->is_object()) return "<missing>";
    auto const* v = a->get_object().if_contains(type);
    if (v == nullptr || !v->is_string()) return "<not " + std::string(type) + ">";
    return std::string(v->get_string().data(), v->get_string().size());
}

// ---- s3rver, for the commit protocol's object store ---------------------------------------

std::optional<server_env> s3rver_env() {
    char const* e = std::getenv("BATON_S3RVER_ENDPOINT");
    if (e == nullptr || *e == '\0') return std::nullopt;
    auto get = [](char const* n, char const* d) -> std::string {
        char const* v = std::getenv(n);
        return v && *v ? v : d;
    };
    return server_env{e, get("BATON_S3RVER_ACCESS_KEY", "S3RVER"), get("BATON_S3RVER_SECRET_KEY", "S3RVER"),
                      get("BATON_S3RVER_REGION", "us-east-1")};
}

#define REQUIRE_S3RVER(var)                                                                                   \
    auto var##_opt = s3rver_env();                                                                            \
    if (!var##_opt) {                                                                                         \
        MESSAGE("skipped: BATON_S3RVER_ENDPOINT is not set (run under tests/servers/with-servers.sh s3rver)"); \
        return;                                                                                               \
    }                                                                                                         \
    server_env const& var = *var##_opt

// A bucket of its own per run (created on first use), and a prefix per test.
baton::s3_backend_params s3rver_params(server_env const& e, std::string prefix) {
    static std::string bucket;
    baton::s3_backend_params p;
    p.endpoint = e.endpoint;
    p.region = e.region;
    p.credentials.access_key_id = e.access_key;
    p.credentials.secret_access_key = e.secret_key;
    p.http.attempt_timeout = 5s;
    if (bucket.empty()) {
        std::string name = unique_name("commit");
        p.bucket = name;
        asio::io_context ioc;
        baton::s3_backend b(ioc.get_executor(), p);
        auto diag_result = await<baton::diagnostics>(ioc, [&](auto h) { b.async_create_bucket(std::move(h)); });
        auto& ec = std::get<0>(diag_result);
        auto& diag = std::get<1>(diag_result);
        INFO(diag.to_string());
        REQUIRE(!ec);
        bucket = name;
    }
    p.bucket = bucket;
    p.key_prefix = std::move(prefix);
    return p;
}

baton::lease_options lease_opts(std::string key, std::string owner, std::chrono::milliseconds ttl = 1000ms) {
    baton::lease_options o;
    o.key = std::move(key);
    o.owner = std::move(owner);
    o.value = "value-of-" + o.owner;
    o.ttl = ttl;
    o.poll_interval = 100ms;
    return o;
}

std::pair<error_code, baton::lease_grant> acquire(asio::io_context& ioc, baton::dynamodb_lease& l,
                                                  baton::acquire_options o = {},
                                                  std::chrono::milliseconds limit = 15s) {
    return await<baton::lease_grant>(ioc, [&](auto h) { l.async_acquire(o, std::move(h)); }, limit);
}

error_code release(asio::io_context& ioc, baton::dynamodb_lease& l) {
    return await_void(ioc, [&](auto h) { l.async_release(std::move(h)); });
}

} // namespace

TEST_SUITE("dynamodb.server") {

TEST_CASE("record store: get, conditional put and erase, fresh versions, bodies of any bytes") {
    REQUIRE_DYNAMODB(env);
    table_fixture f(env);

    auto [ec0, absent] = f.get("jobs/a");
    REQUIRE(!ec0);
    CHECK(!absent.found);

    auto [ec1, p1] = f.put("jobs/a", "one", precondition::absent());
    REQUIRE(!ec1);
    CHECK(p1.version.size() == 32);
    auto [ec2, g1] = f.get("jobs/a");
    REQUIRE(!ec2);
    REQUIRE(g1.found);
    CHECK(g1.found->key == "jobs/a");
    CHECK(g1.found->body == "one");
    CHECK(g1.found->version == p1.version);

    // The same bytes again under `matches`: a new version all the same.
    auto [ec3, p2] = f.put("jobs/a", "one", precondition::matches(p1.version));
    REQUIRE(!ec3);
    CHECK(p2.version != p1.version);

    // Stale version and existing key are refused, with the current record when the service
    // returns it (DynamoDB does; dynalite does not, and then nothing is read in its place).
    auto [ec4, stale] = f.put("jobs/a", "two", precondition::matches(p1.version));
    CHECK(ec4 == errc::precondition_failed);
    if (stale.current) {
        CHECK(stale.current->version == p2.version);
        CHECK(stale.current->body == "one");
    }
    CHECK(stale.diag.service_code == "ConditionalCheckFailedException");
    auto [ec5, exists] = f.put("jobs/a", "two", precondition::absent());
    CHECK(ec5 == errc::precondition_failed);
    if (exists.current) CHECK(exists.current->version == p2.version);
    auto [ec5b, unchanged] = f.get("jobs/a");
    REQUIRE(!ec5b);
    REQUIRE(unchanged.found);
    CHECK(unchanged.found->version == p2.version);
    // `matches` on a missing key: refused, nothing current.
    auto [ec6, missing] = f.put("jobs/none", "x", precondition::matches(p2.version));
    CHECK(ec6 == errc::precondition_failed);
    CHECK(!missing.current);

    // Unconditional put.
    auto [ec7, p3] = f.put("jobs/a", "three", precondition::none());
    REQUIRE(!ec7);

    // Erase: stale refused, current accepted, then `matches` finds nothing.
    auto [ec8, e1] = f.erase("jobs/a", precondition::matches(p2.version));
    CHECK(ec8 == errc::precondition_failed);
    auto [ec9, e2] = f.erase("jobs/a", precondition::absent());
    CHECK(ec9 == errc::precondition_failed);
    auto [ec10, e3] = f.erase("jobs/a", precondition::matches(p3.version));
    CHECK(!ec10);
    auto [ec11, gone] = f.get("jobs/a");
    REQUIRE(!ec11);
    CHECK(!gone.found);
    auto [ec12, e4] = f.erase("jobs/a", precondition::matches(p3.version));
    CHECK(ec12 == errc::not_found);
    auto [ec13, e5] = f.erase("jobs/a", precondition::none());
    CHECK(!ec13);

    // Bodies: empty, binary (stored as B), JSON with typed copies, large.
    std::string const binary("\x00\xff\x80 bytes\n", 9);
    for (std::string const& body : {std::string(), binary, std::string(R"({"n":1,"s":"x"})"), std::string(100000, 'z')}) {
        auto [pe, pr] = f.put("bodies/k", body, precondition::none());
        REQUIRE(!pe);
        auto [ge, gr] = f.get("bodies/k");
        REQUIRE(!ge);
        REQUIRE(gr.found);
        CHECK(gr.found->body == body);
        CHECK(gr.found->version == pr.version);
    }

    // Arguments the store refuses before sending anything.
    CHECK(f.get("").first == errc::invalid_argument);
    CHECK(f.get(std::string(1025, 'k')).first == errc::invalid_argument);
    CHECK(f.get("\xff").first == errc::invalid_argument);
    auto [big_ec, big] = f.put("k", std::string(f.backend.params().max_body_bytes + 1, 'b'), precondition::none());
    CHECK(big_ec == errc::invalid_argument);
    CHECK(contains(big.diag.message, "max_body_bytes"));
}

TEST_CASE("list: prefix, after and limit in key order over a paginated Scan") {
    REQUIRE_DYNAMODB(env);
    table_fixture f(env);
    for (std::string k : {"a/3", "a/1", "b/1", "a/5", "a/2", "a/4", "ab", "0"})
        REQUIRE(!f.put(k, "v", precondition::absent()).first);

    auto keys = [](baton::list_page const& p) {
        std::string s;
        for (auto const& e : p.entries) s += (s.empty() ? "" : ",") + e.key;
        return s;
    };
    auto [e1, all] = f.list("", "", 100);
    REQUIRE(!e1);
    CHECK(keys(all) == "0,a/1,a/2,a/3,a/4,a/5,ab,b/1");
    CHECK(!all.truncated);
    for (auto const& e : all.entries) CHECK(e.version.size() == 32);
    auto [e2, first] = f.list("a/", "", 2);
    REQUIRE(!e2);
    CHECK(keys(first) == "a/1,a/2");
    CHECK(first.truncated);
    auto [e3, rest] = f.list("a/", "a/2", 10);
    REQUIRE(!e3);
    CHECK(keys(rest) == "a/3,a/4,a/5");
    CHECK(!rest.truncated);
    auto [e4, exact] = f.list("a/", "a/2", 3);
    REQUIRE(!e4);
    CHECK(keys(exact) == "a/3,a/4,a/5");
    CHECK(!exact.truncated);
    auto [e5, before] = f.list("b", "a/9", 10); // `after` sorts before the prefix
    REQUIRE(!e5);
    CHECK(keys(before) == "b/1");
    auto [e6, none] = f.list("zz", "", 10);
    REQUIRE(!e6);
    CHECK(none.entries.empty());
    CHECK(f.list("", "", 0).first == errc::invalid_argument);

    // Many pages: items big enough that a Scan page (1 MB) holds only a few of them.
    std::string const fat(120000, 'f');
    for (int i = 0; i < 20; ++i) REQUIRE(!f.put("fat/" + std::to_string(100 + i), fat, precondition::none()).first);
    auto [e7, fats] = f.list("fat/", "", 100);
    REQUIRE(!e7);
    CHECK(fats.entries.size() == 20);
    CHECK(std::is_sorted(fats.entries.begin(), fats.entries.end(),
                         [](auto const& a, auto const& b) { return a.key < b.key; }));
}

TEST_CASE("after ConditionalCheckFailed the current item is the one the service returned, and nothing else is sent") {
    REQUIRE_DYNAMODB(env);
    table_fixture f(env);
    auto [ec1, p1] = f.put("k", "first", precondition::absent());
    REQUIRE(!ec1);

    // What the server does with ReturnValuesOnConditionCheckFailure (dynalite ignores it).
    bool const server_returns_item = f.returns_item_with_failure("probe");
    std::string const note = std::string("server returns the item with a failed condition: ") +
                             (server_returns_item ? "yes" : "no (the refusal then carries no record)");
    MESSAGE(note);

    auto [ec3, r] = f.put("k", "second", precondition::absent());
    CHECK(ec3 == errc::precondition_failed);
    CHECK(r.current.has_value() == server_returns_item);
    if (r.current) {
        CHECK(r.current->body == "first");
        CHECK(r.current->version == p1.version);
    }
    CHECK(r.diag.service_code == "ConditionalCheckFailedException");
    CHECK(r.diag.http_status == 400);
    CHECK(!r.diag.request_id.empty());

    // A later refusal is about the item as it is then.
    auto [ec4, p2] = f.put("k", "third", precondition::matches(p1.version));
    REQUIRE(!ec4);
    auto [ec5, r2] = f.put("k", "fourth", precondition::matches(p1.version));
    CHECK(ec5 == errc::precondition_failed);
    CHECK(r2.current.has_value() == server_returns_item);
    if (r2.current) {
        CHECK(r2.current->version == p2.version);
        CHECK(r2.current->body == "third");
    }
}

TEST_CASE("a missing table is a clear not_found that says how to create it") {
    REQUIRE_DYNAMODB(env);
    asio::io_context ioc;
    auto const table = unique_name("missing");
    baton::dynamodb_backend b(ioc.get_executor(), params_for(env, table));

    auto g_result = await<baton::get_result>(ioc, [&](auto h) { b.async_get("k", std::move(h)); });
    auto& ec1 = std::get<0>(g_result);
    auto& g = std::get<1>(g_result);
    CHECK(ec1 == errc::not_found);
    INFO(g.diag.message);
    CHECK(g.diag.service_code == "ResourceNotFoundException");
    CHECK(contains(g.diag.message, "table '" + table + "' does not exist"));
    CHECK(contains(g.diag.message, "async_create_table"));
    CHECK(contains(g.diag.message, "aws dynamodb create-table --table-name " + table));
    CHECK(contains(g.diag.message, "AttributeName=pk,KeyType=HASH"));

    auto [ec2, p] = await<baton::put_result>(
        ioc, [&](auto h) { b.async_put("k", "v", precondition::absent(), std::move(h)); });
    CHECK(ec2 == errc::not_found);
    CHECK(contains(p.diag.message, "does not exist"));
    auto [ec3, l] = await<baton::list_page>(ioc, [&](auto h) { b.async_list("", "", 10, std::move(h)); });
    CHECK(ec3 == errc::not_found);
    auto [ec4, t] = await<baton::dynamodb_table_info>(ioc, [&](auto h) { b.async_check_table(std::move(h)); });
    CHECK(ec4 == errc::not_found);
    CHECK(contains(t.diag.message, "does not exist"));

    // A lease that tries once reports it too.
    baton::dynamodb_lease lease(ioc.get_executor(), b, lease_opts("k", "solo"));
    baton::acquire_options once;
    once.wait = false;
    auto [ec5, grant] = acquire(ioc, lease, once);
    CHECK(ec5 == errc::not_found);
    CHECK(contains(lease.last_diagnostics().message, "does not exist"));
}

TEST_CASE("a table with another key schema is a clear error naming the expected one") {
    REQUIRE_DYNAMODB(env);
    asio::io_context ioc;
    auto const table = unique_name("schema");
    baton::dynamodb_backend b(ioc.get_executor(), params_for(env, table));
    auto [ec0, created] = await<baton::dynamodb_response>(ioc, [&](auto h) {
        b.async_call("CreateTable",
                     R"({"TableName":")" + table +
                         R"(","AttributeDefinitions":[{"AttributeName":"id","AttributeType":"S"}],)"
                         R"("KeySchema":[{"AttributeName":"id","KeyType":"HASH"}],"BillingMode":"PAY_PER_REQUEST"})",
                     std::move(h));
    });
    REQUIRE(!ec0);

    // async_create_table waits for ACTIVE, then refuses the schema.
    auto info_result = await<baton::dynamodb_table_info>(ioc, [&](auto h) { b.async_create_table(std::move(h)); }, 30s);
    auto& ec1 = std::get<0>(info_result);
    auto& info = std::get<1>(info_result);
    CHECK(ec1 == errc::invalid_argument);
    CHECK(!info.created);
    CHECK(info.key_schema == "id (S, HASH)");
    INFO(info.diag.message);
    CHECK(contains(info.diag.message, "has the key schema [id (S, HASH)]"));
    CHECK(contains(info.diag.message, "exactly one HASH key named 'pk' of type S"));
    auto [ec2, check] = await<baton::dynamodb_table_info>(ioc, [&](auto h) { b.async_check_table(std::move(h)); });
    CHECK(ec2 == errc::invalid_argument);
    CHECK(contains(check.diag.message, "exactly one HASH key named 'pk'"));

    auto [ec3, g] = await<baton::get_result>(ioc, [&](auto h) { b.async_get("k", std::move(h)); });
    CHECK(ec3 == errc::invalid_argument);
    CHECK(g.diag.service_code == "ValidationException");
    CHECK(contains(g.diag.message, "does not have the key schema dynamodb_backend expects"));
    CHECK(contains(g.diag.message, "exactly one HASH key named 'pk' of type S"));
    auto [ec4, p] = await<baton::put_result>(
        ioc, [&](auto h) { b.async_put("k", "v", precondition::absent(), std::move(h)); });
    CHECK(ec4 == errc::invalid_argument);
    CHECK(contains(p.diag.message, "does not have the key schema"));

    // An item keyed by `id`: listing finds rows without `pk`.
    auto [ec5, raw] = await<baton::dynamodb_response>(ioc, [&](auto h) {
        b.async_call("PutItem", R"({"TableName":")" + table + R"(","Item":{"id":{"S":"x"}}})", std::move(h));
    });
    REQUIRE(!ec5);
    auto [ec6, l] = await<baton::list_page>(ioc, [&](auto h) { b.async_list("", "", 10, std::move(h)); });
    CHECK(ec6 == errc::invalid_argument);
    CHECK(contains(l.diag.message, "key schema"));

    std::optional<error_code> deleted;
    b.async_call("DeleteTable", R"({"TableName":")" + table + R"("})",
                 [&](error_code ec, baton::dynamodb_response) { deleted = ec; });
    run_until(ioc, [&] { return deleted.has_value(); }, 5s);
}

TEST_CASE("probe: conditional create, replace and erase are honoured; the scratch item is removed") {
    REQUIRE_DYNAMODB(env);
    table_fixture f(env);
    auto [ec, caps] = await<baton::capabilities>(f.ioc, [&](auto h) { f.backend.async_probe(std::move(h)); });
    REQUIRE(!ec);
    for (auto const& line : caps.findings) MESSAGE(line);
    CHECK(caps.conditional_create);
    CHECK(caps.conditional_replace);
    CHECK(caps.conditional_erase);
    CHECK(caps.supports_leases());
    auto [le, left] = f.list("baton-probe/", "", 10);
    REQUIRE(!le);
    CHECK(left.entries.empty());
}

TEST_CASE("leases: acquire, renew, release; the next contender gets in promptly with a larger token") {
    REQUIRE_DYNAMODB(env);
    table_fixture f(env);
    // A 3 s ttl: a renewal has ~1 s to land before the 2 s deadline, enough for dynalite on a loaded machine.
    constexpr auto ttl = 3000ms;
    baton::dynamodb_lease a(f.ioc.get_executor(), f.backend, lease_opts("jobs/nightly", "a", ttl));
    auto [ec1, g1] = acquire(f.ioc, a);
    REQUIRE(!ec1);
    CHECK(g1.fencing_token == 1);
    CHECK(!g1.took_over);
    auto const v1 = f.get("jobs/nightly").second.found->version;

    // Renewals (every ~1 s) keep it held and rewrite the record: held a ttl later, past the
    // acquisition's 2 s deadline, only through a renewal.
    run_for(f.ioc, ttl);
    CHECK(a.is_held());
    auto [gec, now] = f.get("jobs/nightly");
    REQUIRE(!gec);
    REQUIRE(now.found);
    CHECK(now.found->version != v1);

    // A contender waits while the holder renews.
    baton::dynamodb_lease b(f.ioc.get_executor(), f.backend, lease_opts("jobs/nightly", "b", ttl));
    std::optional<std::pair<error_code, baton::lease_grant>> got_b;
    b.async_acquire(baton::acquire_options{}, [&](error_code ec, baton::lease_grant g) { got_b.emplace(ec, g); });
    run_for(f.ioc, 1500ms);
    CHECK(!got_b);
    CHECK(a.is_held());

    // Release: b takes over at once (within a poll interval or two).
    REQUIRE(!release(f.ioc, a));
    CHECK(a.state() == baton::lease_state::released);
    auto const t0 = clock_type::now();
    REQUIRE(run_until(f.ioc, [&] { return got_b.has_value(); }, 20s));
    auto const waited = clock_type::now() - t0;
    REQUIRE(!got_b->first);
    // Through the released marker (not took_over), not by waiting out a takeover (6 s); the bound is generous.
    CHECK(!got_b->second.took_over);
    CHECK(waited < 2s);
    CHECK(got_b->second.fencing_token == 2);
    CHECK(b.is_held());
    REQUIRE(!release(f.ioc, b));

    // a comes back: token 3.
    auto [ec3, g3] = acquire(f.ioc, a);
    REQUIRE(!ec3);
    CHECK(g3.fencing_token == 3);
    REQUIRE(!release(f.ioc, a));
}

TEST_CASE("leases: a destroyed holder's lease is taken over after ttl x max_clock_rate_skew") {
    REQUIRE_DYNAMODB(env);
    table_fixture f(env);
    {
        baton::dynamodb_lease a(f.ioc.get_executor(), f.backend, lease_opts("jobs/x", "a"));
        auto [ec, g] = acquire(f.ioc, a);
        REQUIRE(!ec);
        CHECK(g.fencing_token == 1);
    } // abandoned: no release, no more renewals
    baton::dynamodb_lease b(f.ioc.get_executor(), f.backend, lease_opts("jobs/x", "b"));
    auto const t0 = clock_type::now();
    auto [ec, g] = acquire(f.ioc, b, {}, 30s);
    auto const waited = clock_type::now() - t0;
    REQUIRE(!ec);
    CHECK(g.took_over);
    CHECK(g.fencing_token == 2);
    CHECK(waited >= 1900ms); // ttl 1 s x skew 2, counted from b's first read
    CHECK(waited < 12s);     // generous: b polls every 100 ms
    REQUIRE(!release(f.ioc, b));
}

TEST_CASE("leases: a holder whose record was taken over learns lease_lost on its next renewal") {
    REQUIRE_DYNAMODB(env);
    table_fixture f(env);
    baton::dynamodb_lease a(f.ioc.get_executor(), f.backend, lease_opts("jobs/y", "a", 3000ms));
    auto [ec, g] = acquire(f.ioc, a);
    REQUIRE(!ec);
    std::optional<error_code> lost;
    a.async_wait_lost([&](error_code e) { lost = e; });

    // Another holder's takeover, as a contender writes it after seeing `a` frozen. A renewal of
    // `a` can land between the read and the write: then read again and write again.
    std::string const intruder = R"({"baton":"lease/1","owner":"intruder#1","token":2,"nonce":"n","state":"held",)"
                                 R"("ttl_ms":3000,"value":""})";
    bool landed = false;
    for (int attempt = 0; attempt < 10 && !landed; ++attempt) {
        auto [gec, cur] = f.get("jobs/y");
        REQUIRE(!gec);
        REQUIRE(cur.found);
        auto pr_result = f.put("jobs/y", intruder, precondition::matches(cur.found->version));
        auto& pec = std::get<0>(pr_result);
        auto& pr = std::get<1>(pr_result);
        INFO(pr.diag.to_string());
        if (pec != errc::precondition_failed) {
            REQUIRE(!pec);
            landed = true;
        }
    }
    REQUIRE(landed);
    auto const t0 = clock_type::now(); // the intruder has landed

    REQUIRE(run_until(f.ioc, [&] { return lost.has_value(); }, 30s));
    CHECK(*lost == errc::lease_lost);
    CHECK(a.state() == baton::lease_state::lost);
    // The renewal found out (refused by its condition), not the renew deadline; the time is a
    // generous bound (a renewal is due within a renew interval, ~1 s).
    CHECK(a.last_diagnostics().service_code == "ConditionalCheckFailedException");
    CHECK(clock_type::now() - t0 < 3s);
    CHECK(!a.is_held());
    // Its release cannot undo the takeover.
    CHECK(release(f.ioc, a) == errc::lease_lost);
    CHECK(contains(f.get("jobs/y").second.found->body, "intruder#1"));
}

TEST_CASE("leases: 32 contenders race for one key; exactly one holder per term, tokens strictly increase" *
          doctest::test_suite("concurrency")) {
    REQUIRE_DYNAMODB(env);
    table_fixture f(env);
    constexpr int n = 32;
    std::vector<std::unique_ptr<baton::dynamodb_lease>> leases;
    struct event {
        int who;
        error_code ec;
        baton::lease_grant grant;
    };
    std::vector<event> events;
    // A 3 s ttl, and 31 waiters polling every 150-300 ms rather than 50-100 ms: on one dynalite
    // process on a loaded machine the holder's renewal must not queue behind the polls past its deadline.
    auto opts = [](int i) {
        auto o = lease_opts("race", "c" + std::to_string(i), 3000ms);
        o.poll_interval = 300ms;
        return o;
    };
    for (int i = 0; i < n; ++i) {
        leases.push_back(std::make_unique<baton::dynamodb_lease>(f.ioc.get_executor(), f.backend, opts(i)));
        leases.back()->async_acquire(baton::acquire_options{}, [&events, i](error_code ec, baton::lease_grant g) {
            events.push_back({i, ec, g});
        });
    }
    std::uint64_t last_token = 0;
    std::vector<bool> served(n, false);
    for (std::size_t term = 0; term < static_cast<std::size_t>(n); ++term) {
        INFO("term " << term);
        REQUIRE(run_until(f.ioc, [&] { return events.size() > term; }, 20s));
        auto const e = events[term];
        REQUIRE(!e.ec);
        CHECK(!served[static_cast<std::size_t>(e.who)]);
        served[static_cast<std::size_t>(e.who)] = true;
        CHECK(e.grant.fencing_token > last_token);
        last_token = e.grant.fencing_token;
        int held = 0;
        for (auto const& l : leases) held += l->is_held() ? 1 : 0;
        CHECK(held == 1);
        // Hold a moment: nobody else may get in meanwhile.
        run_for(f.ioc, 30ms);
        CHECK(events.size() == term + 1);
        held = 0;
        for (auto const& l : leases) held += l->is_held() ? 1 : 0;
        CHECK(held == 1);
        REQUIRE(!release(f.ioc, *leases[static_cast<std::size_t>(e.who)]));
    }
    CHECK(last_token == static_cast<std::uint64_t>(n));
    CHECK(std::all_of(served.begin(), served.end(), [](bool b) { return b; }));
}

TEST_CASE("an item written by a lease is readable in the console: owner, token, state as typed attributes") {
    REQUIRE_DYNAMODB(env);
    table_fixture f(env);
    baton::dynamodb_lease a(f.ioc.get_executor(), f.backend, lease_opts("jobs/console", "reporter"));
    auto [ec, g] = acquire(f.ioc, a);
    REQUIRE(!ec);

    auto item = f.raw_item("jobs/console");
    INFO(json::serialize(item));
    CHECK(attr(item, "pk", "S") == "jobs/console");
    CHECK(attr(item, "owner", "S") == a.owner());
    CHECK(attr(item, "token", "N") == "1");
    CHECK(attr(item, "state", "S") == "held");
    CHECK(attr(item, "ttl_ms", "N") == "1000");
    CHECK(attr(item, "value", "S") == "value-of-reporter");
    CHECK(attr(item, "baton", "S") == "lease/1");
    CHECK(attr(item, "nonce", "S").size() >= 16);
    CHECK(attr(item, "ver", "S").size() == 32);
    auto const body = json::parse(attr(item, "body", "S"));
    REQUIRE(body.is_object());
    CHECK(body.get_object().at("owner").as_string() == a.owner());
    CHECK(body.get_object().at("nonce").as_string() == attr(item, "nonce", "S"));

    REQUIRE(!release(f.ioc, a));
    auto after = f.raw_item("jobs/console");
    CHECK(attr(after, "state", "S") == "released");
    CHECK(attr(after, "token", "N") == "1");
}

TEST_CASE("fenced writes on dynalite: a paused holder taken over is refused by the store; one token, many writers") {
    REQUIRE_DYNAMODB(env);
    table_fixture f(env, "fenced");
    auto make = [&](asio::io_context::executor_type ex) { return baton::dynamodb_backend(ex, params_for(env, f.table)); };
    test_common::check_paused_holder_is_fenced<baton::dynamodb_backend>(make, "shard/7", 3000ms);
    test_common::check_same_token_writers_all_land<baton::dynamodb_backend>(make, "counter", 16, 2);
}

TEST_CASE("fenced writes on dynalite take one request: the table checks the token itself") {
    REQUIRE_DYNAMODB(env);
    table_fixture f(env, "fenced1");
    asio::io_context ioc;
    static_assert(baton::fenced_put_hook<baton::dynamodb_backend>);
    auto write = [&](std::uint64_t token, std::string value) {
        baton::basic_fenced<baton::dynamodb_backend> fresh(ioc.get_executor(), baton::dynamodb_backend(ioc.get_executor(), params_for(env, f.table)));
        std::optional<baton::error_code> ec;
        baton::fenced_write_result r;
        fresh.async_write("shard/9", std::move(value), token, [&](baton::error_code e, baton::fenced_write_result res) { ec = e; r = std::move(res); });
        ioc.restart();
        while (!ec) ioc.run_one();
        INFO(r.diag.to_string());
        return std::make_pair(*ec, r);
    };
    auto [e1, r1] = write(3, "first holder");
    REQUIRE_FALSE(e1);
    CHECK(r1.requests == 1); // a new key: no read first
    auto [e2, r2] = write(5, "next holder");
    REQUIRE_FALSE(e2);
    CHECK(r2.requests == 1); // a higher token: no read first
    auto [e3, r3] = write(4, "stale holder");
    CHECK(e3 == baton::errc::fenced);
    CHECK(r3.winning_token == 5);
    // Refused by the table; the refusal carries the current item where the service returns it
    // (DynamoDB), else the recipe reads it (dynalite).
    int const read_after_refusal = f.returns_item_with_failure("probe") ? 0 : 1;
    CHECK(r3.requests == 1 + read_after_refusal);
    auto [e4, r4] = write(5, "same holder, another process");
    REQUIRE_FALSE(e4);
    CHECK(r4.requests == 2 + read_after_refusal); // an equal token needs the version: refused, then written on the version
    baton::basic_fenced<baton::dynamodb_backend> reader(ioc.get_executor(), baton::dynamodb_backend(ioc.get_executor(), params_for(env, f.table)));
    std::optional<baton::error_code> rec;
    std::optional<baton::fenced_value> v;
    reader.async_read("shard/9", [&](baton::error_code e, std::optional<baton::fenced_value> got) { rec = e; v = std::move(got); });
    ioc.restart();
    while (!rec) ioc.run_one();
    REQUIRE(v);
    CHECK(v->value == "same holder, another process");
    CHECK(v->token == 5);
}

TEST_CASE("kv on dynalite: 200 concurrent updates of one key each applied once; erase, re-create, fences") {
    REQUIRE_DYNAMODB(env);
    table_fixture f(env, "kv");
    auto make = [&](asio::io_context::executor_type ex) { return baton::dynamodb_backend(ex, params_for(env, f.table)); };
    test_common::check_erase_and_recreate<baton::dynamodb_backend>(make, "kv/");
    test_common::check_concurrent_updates_apply_once<baton::dynamodb_backend>(make, "counter", 8, 200);
}

// ---- the commit protocol: objects in s3rver (which ignores preconditions), commits in dynalite ----

TEST_CASE("commit protocol on s3rver + dynalite: probe, conditional put and erase, copy, collect, tampering") {
    REQUIRE_DYNAMODB(env);
    REQUIRE_S3RVER(s3);
    table_fixture f(env, "commit");
    auto const s3p = s3rver_params(s3, "commit-" + unique_name("p") + "/");
    baton::s3_dynamodb_commit store(baton::s3_backend(f.ioc.get_executor(), s3p), f.backend);

    // s3rver alone is refused for conditional writes; the composition passes its probe.
    baton::s3_backend plain(f.ioc.get_executor(), s3p);
    static_assert(baton::s3_dynamodb_commit::copies_in_store);
    // CopyObject on s3rver: the bytes copied inside the store; a missing source is not_found.
    REQUIRE(!await<baton::put_result>(f.ioc, [&](auto h) { plain.async_put("copy-src", "copied bytes", precondition::none(), std::move(h)); }).first);
    auto cpr_result = await<baton::put_result>(f.ioc, [&](auto h) { plain.async_copy_object("copy-src", "copy-dst", std::move(h)); });
    auto& cpe = std::get<0>(cpr_result);
    auto& cpr = std::get<1>(cpr_result);
    INFO(cpr.diag.to_string());
    REQUIRE(!cpe);
    auto [cge, cgr] = await<baton::get_result>(f.ioc, [&](auto h) { plain.async_get("copy-dst", std::move(h)); });
    REQUIRE(!cge);
    REQUIRE(cgr.found);
    CHECK(cgr.found->body == "copied bytes");
    CHECK(await<baton::put_result>(f.ioc, [&](auto h) { plain.async_copy_object("no-such-key", "copy-dst2", std::move(h)); }).first ==
          errc::not_found);
    auto [pec, pcaps] = await<baton::capabilities>(f.ioc, [&](auto h) { plain.async_probe(std::move(h)); });
    CHECK_FALSE(pcaps.supports_leases());
    auto caps_result = await<baton::capabilities>(f.ioc, [&](auto h) { store.async_probe(std::move(h)); });
    auto& cec = std::get<0>(caps_result);
    auto& caps = std::get<1>(caps_result);
    INFO(caps.diag.to_string());
    REQUIRE(!cec);
    CHECK(caps.supports_leases());
    CHECK(caps.conditional_erase);

    auto put = [&](std::string key, std::string body, precondition pc) {
        return await<baton::put_result>(f.ioc, [&](auto h) { store.async_put(key, body, pc, std::move(h)); });
    };
    auto get = [&](std::string key) {
        return await<baton::get_result>(f.ioc, [&](auto h) { store.async_get(key, std::move(h)); });
    };
    auto erase = [&](std::string key, precondition pc) {
        return await<baton::erase_result>(f.ioc, [&](auto h) { store.async_erase(key, pc, std::move(h)); });
    };
    std::string const bytes("binary\0\xff\x01 body", 17);
    auto p1_result = put("_log/00000.json", bytes, precondition::absent());
    auto& e1 = std::get<0>(p1_result);
    auto& p1 = std::get<1>(p1_result);
    INFO(p1.diag.to_string());
    REQUIRE(!e1);
    CHECK(put("_log/00000.json", "second writer", precondition::absent()).first == errc::precondition_failed);
    auto [g1e, g1] = get("_log/00000.json");
    REQUIRE(!g1e);
    REQUIRE(g1.found);
    CHECK(g1.found->body == bytes);
    CHECK(g1.found->version == p1.version);
    auto [e2, p2] = put("_log/00000.json", "replaced", precondition::matches(p1.version));
    REQUIRE(!e2);
    CHECK(put("_log/00000.json", "stale", precondition::matches(p1.version)).first == errc::precondition_failed);
    CHECK(erase("_log/00000.json", precondition::matches(p1.version)).first == errc::precondition_failed);
    REQUIRE(!erase("_log/00000.json", precondition::matches(p2.version)).first);
    CHECK_FALSE(get("_log/00000.json").second.found);
    auto p3_result = put("_log/00000.json", "re-created", precondition::absent());
    auto& e3 = std::get<0>(p3_result);
    auto& p3 = std::get<1>(p3_result);
    INFO(p3.diag.to_string());
    REQUIRE(!e3);
    auto [ce, cp] = await<baton::put_result>(f.ioc, [&](auto h) {
        store.async_copy("_log/00000.json", "_log/00001.json", precondition::absent(), std::move(h));
    });
    REQUIRE(!ce);
    CHECK(get("_log/00001.json").second.found->body == "re-created");
    auto [le, page] = await<baton::list_page>(f.ioc, [&](auto h) { store.async_list("_log/", "", 10, std::move(h)); });
    REQUIRE(!le);
    REQUIRE(page.entries.size() == 2);
    CHECK(page.entries[1].key == "_log/00001.json");

    // Garbage: an object whose commit lost, left by a writer through a fresh handle; collected.
    baton::s3_dynamodb_commit other(baton::s3_backend(f.ioc.get_executor(), s3p), f.backend);
    CHECK(await<baton::put_result>(f.ioc, [&](auto h) { other.async_put("_log/00001.json", "late", precondition::absent(), std::move(h)); }).first ==
          errc::precondition_failed);
    run_for(f.ioc, 300ms);
    auto gc_result = await<baton::collect_result>(f.ioc, [&](auto h) { store.async_collect("", std::move(h)); });
    auto& ge = std::get<0>(gc_result);
    auto& gc = std::get<1>(gc_result);
    INFO(gc.diag.to_string());
    REQUIRE(!ge);
    CHECK(gc.kept == 2); // the two committed objects
    auto objects_result = await<baton::list_page>(f.ioc, [&](auto h) { plain.async_list("_baton/", "", 100, std::move(h)); });
    auto& le2 = std::get<0>(objects_result);
    auto& objects = std::get<1>(objects_result);
    REQUIRE(!le2);
    CHECK(objects.entries.size() == 2);

    // A plain writer that overwrites a committed object behind baton's back is caught on read.
    REQUIRE(!objects.entries.empty());
    REQUIRE(!await<baton::put_result>(f.ioc, [&](auto h) { plain.async_put(objects.entries[0].key, "tampered", precondition::none(), std::move(h)); }).first);
    auto [te, tg] = await<baton::get_result>(f.ioc, [&](auto h) { store.async_get("_log/00000.json", std::move(h)); });
    auto [te2, tg2] = await<baton::get_result>(f.ioc, [&](auto h) { store.async_get("_log/00001.json", std::move(h)); });
    CHECK((te == errc::invalid_response) != (te2 == errc::invalid_response)); // exactly the tampered one
}

TEST_CASE("commit protocol on s3rver + dynalite: leases, kv and fenced writes run unchanged") {
    REQUIRE_DYNAMODB(env);
    REQUIRE_S3RVER(s3);
    table_fixture f(env, "commitr");
    auto const s3p = s3rver_params(s3, "recipes-" + unique_name("p") + "/");
    auto make = [&](asio::io_context::executor_type ex) {
        return baton::s3_dynamodb_commit(baton::s3_backend(ex, s3p), baton::dynamodb_backend(ex, params_for(env, f.table)));
    };
    {
        constexpr auto ttl = 3000ms;
        auto store = make(f.ioc.get_executor());
        baton::s3_dynamodb_lease a(f.ioc.get_executor(), store, lease_opts("jobs/nightly", "a", ttl));
        baton::s3_dynamodb_lease b(f.ioc.get_executor(), make(f.ioc.get_executor()), lease_opts("jobs/nightly", "b", ttl));
        auto [ec1, g1] = await<baton::lease_grant>(f.ioc, [&](auto h) { a.async_acquire(baton::acquire_options{}, std::move(h)); });
        REQUIRE(!ec1);
        CHECK(g1.fencing_token == 1);
        std::optional<std::pair<error_code, baton::lease_grant>> got_b;
        b.async_acquire(baton::acquire_options{}, [&](error_code ec, baton::lease_grant g) { got_b.emplace(ec, g); });
        run_for(f.ioc, ttl); // a renews through its deadline; b waits
        CHECK(a.is_held());
        CHECK_FALSE(got_b.has_value());
        REQUIRE(!await_void(f.ioc, [&](auto h) { a.async_release(std::move(h)); }));
        REQUIRE(run_until(f.ioc, [&] { return got_b.has_value(); }, 20s));
        REQUIRE(!got_b->first);
        CHECK(got_b->second.fencing_token == 2);
        CHECK_FALSE(got_b->second.took_over);
        REQUIRE(!await_void(f.ioc, [&](auto h) { b.async_release(std::move(h)); }));
    }
    test_common::check_erase_and_recreate<baton::s3_dynamodb_commit>(make, "kv/");
    test_common::check_concurrent_updates_apply_once<baton::s3_dynamodb_commit>(make, "counter", 4, 40);
    test_common::check_paused_holder_is_fenced<baton::s3_dynamodb_commit>(make, "shard/7", 3000ms);
}

TEST_CASE("commit protocol on s3rver + dynalite and s3rver + a file lock store: 32 racers, a Delta-style log") {
    REQUIRE_DYNAMODB(env);
    REQUIRE_S3RVER(s3);
    table_fixture f(env, "commitlog");
    auto const s3p = s3rver_params(s3, "log-" + unique_name("p") + "/");
    auto on_dynamodb = [&](asio::io_context::executor_type ex) {
        return baton::s3_dynamodb_commit(baton::s3_backend(ex, s3p), baton::dynamodb_backend(ex, params_for(env, f.table)));
    };
    test_common::check_racers_one_wins<baton::s3_dynamodb_commit>(on_dynamodb, "_delta_log/00000000000000000000.json", 32);
    test_common::check_log_appends<baton::s3_dynamodb_commit>(on_dynamodb, "table/_delta_log/", 4, 24);

    test_common::temp_dir dir("baton-commit-locks");
    baton::file_backend_params fp;
    fp.root = dir.path;
    auto const s3f = s3rver_params(s3, "file-" + unique_name("p") + "/");
    auto on_file = [&](asio::io_context::executor_type ex) {
        return baton::s3_file_commit(baton::s3_backend(ex, s3f), baton::file_backend(ex, fp));
    };
    test_common::check_racers_one_wins<baton::s3_file_commit>(on_file, "_delta_log/00000000000000000000.json", 32);
    test_common::check_log_appends<baton::s3_file_commit>(on_file, "table/_delta_log/", 4, 24);
    test_common::check_concurrent_updates_apply_once<baton::s3_file_commit>(on_file, "counter", 4, 40);
}

TEST_CASE("commit protocol: a writer killed between its object and its commit is repaired by the next writer and the collector") {
    REQUIRE_DYNAMODB(env);
    REQUIRE_S3RVER(s3);
    table_fixture f(env, "commitkill");
    auto const s3p = s3rver_params(s3, "kill-" + unique_name("p") + "/");
    baton::s3_backend plain(f.ioc.get_executor(), s3p);
    auto objects = [&] {
        auto [ec, page] = await<baton::list_page>(f.ioc, [&](auto h) { plain.async_list("_baton/", "", 100, std::move(h)); });
        REQUIRE(!ec);
        return page.entries.size();
    };
    {
        // The writer runs until its object is in the store, then its process dies: its io_context
        // and everything in flight are destroyed (the commit may or may not have been sent).
        asio::io_context dying;
        baton::s3_dynamodb_commit a(baton::s3_backend(dying.get_executor(), s3p),
                                    baton::dynamodb_backend(dying.get_executor(), params_for(env, f.table)));
        a.async_put("_log/00000.json", "from the writer that died", precondition::absent(), [](error_code, baton::put_result) {});
        auto const end = clock_type::now() + 10s;
        while (objects() == 0 && clock_type::now() < end) dying.run_one_for(2ms);
        REQUIRE(objects() == 1);
    }
    baton::s3_dynamodb_commit b(baton::s3_backend(f.ioc.get_executor(), s3p), f.backend);
    auto [ec, r] = await<baton::put_result>(f.ioc, [&](auto h) { b.async_put("_log/00000.json", "from the next writer", precondition::absent(), std::move(h)); });
    CHECK((!ec || ec == errc::precondition_failed));
    auto [gec, got] = await<baton::get_result>(f.ioc, [&](auto h) { b.async_get("_log/00000.json", std::move(h)); });
    REQUIRE(!gec);
    REQUIRE(got.found); // committed by one of them, whole
    CHECK(got.found->body == (ec ? "from the writer that died" : "from the next writer"));
    MESSAGE("the dead writer's commit " << std::string(ec ? "had landed" : "had not landed") << "; the key holds " << got.found->body);
    auto [cec, c] = await<baton::collect_result>(f.ioc, [&](auto h) { b.async_collect("", std::move(h)); });
    REQUIRE(!cec);
    CHECK(c.kept == 1);
    CHECK(objects() == 1); // the dead writer's object, if it lost, is gone
    CHECK(got.found->body == await<baton::get_result>(f.ioc, [&](auto h) { b.async_get("_log/00000.json", std::move(h)); }).second.found->body);
}

} // TEST_SUITE

// ---- a scripted server: what dynalite cannot show ---------------------------------------

namespace {

struct canned {
    unsigned status = 200;
    std::string body = "{}";
    enum { good, bad, none } crc = good;
    bool hang = false;           // read the request, never answer
    std::string error_type;      // x-amzn-ErrorType header
};

canned reply(unsigned status, std::string body, decltype(canned::crc) crc = canned::good, std::string error_type = {}) {
    canned c;
    c.status = status;
    c.body = std::move(body);
    c.crc = crc;
    c.error_type = std::move(error_type);
    return c;
}

// Plays `script` in order (a 500 once it runs out), with DynamoDB's headers: a request id
// per request, the body's CRC32 as `canned` says, the error type.
class scripted_server {
public:
    explicit scripted_server(asio::io_context& ioc)
        : server_(ioc, [this](test_common::server_request const&, int) { return next(); }) {}

    std::string url() const { return server_.url(); }

    std::deque<canned> script;

private:
    test_common::http_server server_;

public:
    std::vector<test_common::server_request> const& received = server_.stats().seen;

private:
    test_common::reply next() {
        canned k;
        if (!script.empty()) {
            k = script.front();
            script.pop_front();
        } else {
            k.status = 500;
            k.body = R"({"__type":"x#InternalServerError","message":"script exhausted"})";
        }
        if (k.hang) return test_common::reply_of(test_common::reply::hang);
        std::vector<std::pair<std::string, std::string>> headers{{"x-amzn-RequestId", "REQ" + std::to_string(received.size())}};
        if (k.crc != canned::none)
            headers.emplace_back("x-amz-crc32", std::to_string(baton::detail::dynamodb::crc32(k.body) + (k.crc == canned::bad ? 1u : 0u)));
        if (!k.error_type.empty()) headers.emplace_back("x-amzn-ErrorType", k.error_type);
        return test_common::answer(k.status, k.body, headers);
    }
};

struct scripted_fixture {
    asio::io_context ioc;
    scripted_server server{ioc};
    baton::dynamodb_backend backend{ioc.get_executor(), make_params()};

    baton::dynamodb_backend_params make_params() {
        baton::dynamodb_backend_params p;
        p.endpoint = server.url();
        p.region = "eu-west-1";
        p.table = "locks";
        p.credentials.access_key_id = "AKIDEXAMPLE";
        p.credentials.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
        // Scripted answers come at once, but a loaded machine may serve them late: 5 s. A test
        // whose subject is a server that never answers uses a short timeout of its own.
        p.http.attempt_timeout = 5s;
        return p;
    }

    std::pair<error_code, baton::get_result> get(std::string key) {
        return await<baton::get_result>(ioc, [&](auto h) { backend.async_get(key, std::move(h)); });
    }
    std::pair<error_code, baton::put_result> put(std::string key, std::string body, precondition pc) {
        return await<baton::put_result>(ioc, [&](auto h) { backend.async_put(key, body, pc, std::move(h)); });
    }
    error_code erase(std::string key, precondition pc) {
        return await<baton::erase_result>(ioc, [&](auto h) { backend.async_erase(key, pc, std::move(h)); }).first;
    }
};

std::string const ccf = R"({"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",)"
                        R"("message":"The conditional request failed")";

} // namespace

TEST_SUITE("dynamodb.scripted") {

TEST_CASE("requests: JSON 1.0 headers, SigV4 for dynamodb, the exact body") {
    scripted_fixture f;
    f.server.script.push_back(reply(200, R"({"Item":{"ver":{"S":"v1"},"body":{"S":"hello"}}})"));
    auto [ec, r] = f.get("jobs/a");
    REQUIRE(!ec);
    REQUIRE(r.found);
    CHECK(r.found->body == "hello");
    REQUIRE(f.server.received.size() == 1);
    auto const& req = f.server.received[0];
    CHECK(req.method() == bhttp::verb::post);
    CHECK(req.target() == "/");
    CHECK(req["X-Amz-Target"] == "DynamoDB_20120810.GetItem");
    CHECK(req[bhttp::field::content_type] == "application/x-amz-json-1.0");
    CHECK(req[bhttp::field::accept_encoding] == "identity");
    CHECK(req[bhttp::field::authorization].starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"));
    CHECK(contains(std::string(req[bhttp::field::authorization]), "/eu-west-1/dynamodb/aws4_request"));
    CHECK(!req["X-Amz-Date"].empty());
    CHECK(req.body() == baton::detail::dynamodb::get_item_request({"locks", "pk"}, "jobs/a"));
}

TEST_CASE("credentials from a provider; ExpiredTokenException: fetched afresh and the refused request sent again") {
    asio::io_context ioc;
    scripted_server server{ioc};
    test_common::test_env env;
    env.set("AWS_ACCESS_KEY_ID", "AKIDONE");
    env.set("AWS_SECRET_ACCESS_KEY", "secret-one");
    env.set("AWS_SESSION_TOKEN", "token-one");
    auto provider = baton::aws::environment_credentials(ioc.get_executor(), env.lookup());
    baton::dynamodb_backend_params p;
    p.endpoint = server.url();
    p.region = "eu-west-1";
    p.table = "locks";
    p.http.attempt_timeout = 5s; // nothing here hangs: only a loaded machine could make an answer late
    p.credentials_provider = provider;
    baton::dynamodb_backend backend{ioc.get_executor(), p};
    auto get = [&] { return await<baton::get_result>(ioc, [&](auto h) { backend.async_get("k", std::move(h)); }); };

    server.script.push_back(reply(200, R"({})"));
    auto [ec1, r1] = get();
    CHECK_FALSE(ec1);
    REQUIRE(server.received.size() == 1);
    CHECK(server.received[0][bhttp::field::authorization].starts_with("AWS4-HMAC-SHA256 Credential=AKIDONE/"));
    CHECK(server.received[0]["X-Amz-Security-Token"] == "token-one");

    env.set("AWS_ACCESS_KEY_ID", "AKIDTWO");
    env.set("AWS_SESSION_TOKEN", "token-two");
    // The service refuses the request unprocessed: the provider fetches afresh and the same
    // request goes out again, within the one call.
    server.script.push_back(reply(400, R"({"__type":"com.amazon.coral.service#ExpiredTokenException",)"
                                       R"("message":"The security token included in the request is expired"})"));
    server.script.push_back(reply(200, R"({})"));
    auto [ec2, r2] = get();
    CHECK_FALSE(ec2);
    REQUIRE(server.received.size() == 3);
    CHECK(server.received[1][bhttp::field::authorization].starts_with("AWS4-HMAC-SHA256 Credential=AKIDONE/"));
    CHECK(server.received[2][bhttp::field::authorization].starts_with("AWS4-HMAC-SHA256 Credential=AKIDTWO/"));
    CHECK(server.received[2]["X-Amz-Security-Token"] == "token-two");
    CHECK(server.received[2].body() == server.received[1].body());
    CHECK(provider.fetch_count() == 2);

    // The fresh credentials are cached.
    server.script.push_back(reply(200, R"({})"));
    auto [ec3, r3] = get();
    CHECK_FALSE(ec3);
    REQUIRE(server.received.size() == 4);
    CHECK(server.received[3][bhttp::field::authorization].starts_with("AWS4-HMAC-SHA256 Credential=AKIDTWO/"));
    CHECK(provider.fetch_count() == 2);
}

TEST_CASE("x-amz-crc32: a mismatch is a transient service_unavailable; a missing header is accepted") {
    scripted_fixture f;
    f.server.script.push_back(reply(200, R"({"Item":{"ver":{"S":"v1"},"body":{"S":"x"}}})", canned::bad));
    f.server.script.push_back(reply(200, R"({"Item":{"ver":{"S":"v1"},"body":{"S":"x"}}})", canned::none));
    auto [ec1, r1] = f.get("k");
    CHECK(ec1 == errc::service_unavailable);
    CHECK(baton::is_retryable(ec1));
    CHECK(contains(r1.diag.message, "x-amz-crc32"));
    CHECK(!r1.found);
    auto [ec2, r2] = f.get("k");
    CHECK(!ec2);
    CHECK(r2.found);
}

TEST_CASE("ambiguous write outcomes: 500, 503, and a timeout after sending are reported, never retried") {
    scripted_fixture f;
    f.server.script.push_back(reply(500, R"({"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"x"})"));
    f.server.script.push_back(reply(503, "<html>unavailable</html>", canned::none));
    canned hang;
    hang.hang = true;
    f.server.script.push_back(hang);

    auto [ec1, r1] = f.put("k", "v", precondition::matches("v0"));
    CHECK(ec1 == errc::service_unavailable);
    CHECK(r1.diag.service_code == "InternalServerError");
    auto [ec2, r2] = f.put("k", "v", precondition::matches("v0"));
    CHECK(ec2 == errc::service_unavailable);
    CHECK(r2.diag.http_status == 503);
    // The hang on a backend with a short attempt timeout (its own connection).
    auto quick_params = f.make_params();
    quick_params.http.attempt_timeout = 400ms;
    baton::dynamodb_backend quick{f.ioc.get_executor(), quick_params};
    auto const t0 = clock_type::now();
    auto [ec3, r3] = await<baton::put_result>(
        f.ioc, [&](auto h) { quick.async_put("k", "v", precondition::matches("v0"), std::move(h)); });
    CHECK(ec3 == errc::timeout);
    CHECK(clock_type::now() - t0 < 3s);
    CHECK(contains(r3.diag.message, "outcome is unknown"));
    // One request each: the backend never retries.
    CHECK(f.server.received.size() == 3);
}

TEST_CASE("throttling, validation and malformed answers") {
    scripted_fixture f;
    f.server.script.push_back(reply(400, R"({"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"slow"})"));
    f.server.script.push_back(
        reply(400, R"({"message":"Rate exceeded"})", canned::good, "ThrottlingException:http://internal.amazon.com/coral/"));
    f.server.script.push_back(reply(200, "this is not JSON"));
    f.server.script.push_back(reply(200, R"({"Item":{"ver":{"S":"v1"}}})"));
    f.server.script.push_back(reply(400, R"({"__type":"com.amazon.coral.validate#ValidationException","message":"The provided key element does not match the schema"})"));

    auto [ec1, r1] = f.get("k");
    CHECK(ec1 == errc::throttled);
    CHECK(r1.diag.request_id == "REQ1");
    auto [ec2, r2] = f.get("k");
    CHECK(ec2 == errc::throttled);
    CHECK(r2.diag.service_code == "ThrottlingException");
    auto [ec3, r3] = f.get("k");
    CHECK(ec3 == errc::invalid_response);
    CHECK(contains(r3.diag.message, "malformed DynamoDB response"));
    auto [ec4, r4] = f.get("k");
    CHECK(ec4 == errc::foreign_record);
    auto [ec5, r5] = f.get("k");
    CHECK(ec5 == errc::invalid_argument);
    CHECK(contains(r5.diag.message, "exactly one HASH key named 'pk' of type S"));
}

TEST_CASE("ConditionalCheckFailed: ALL_OLD items are used, a put sends nothing more, and an erase reads only until the service is known to send them") {
    scripted_fixture f;
    // 1: a put refused without Item: no record, and no GetItem.
    f.server.script.push_back(reply(400, ccf + "}"));
    // 2: an erase refused without Item, nothing known yet: a GetItem tells a stale version from a gone key.
    f.server.script.push_back(reply(400, ccf + "}"));
    f.server.script.push_back(reply(200, R"({"Item":{"ver":{"S":"v9"},"body":{"S":"now"}}})"));
    // 3: the service returns the item.
    f.server.script.push_back(reply(400, ccf + R"(,"Item":{"pk":{"S":"k"},"ver":{"S":"v10"},"body":{"S":"old"}}})"));
    // 4: now an erase refused without Item means the key is absent.
    f.server.script.push_back(reply(400, ccf + "}"));

    auto [ec1, r1] = f.put("k", "x", precondition::absent());
    CHECK(ec1 == errc::precondition_failed);
    CHECK(!r1.current);
    CHECK(r1.diag.service_code == "ConditionalCheckFailedException");
    CHECK(f.server.received.size() == 1);

    auto ec2 = f.erase("k", precondition::matches("v8"));
    CHECK(ec2 == errc::precondition_failed);
    REQUIRE(f.server.received.size() == 3);
    CHECK(f.server.received[2]["X-Amz-Target"] == "DynamoDB_20120810.GetItem");

    auto [ec3, r3] = f.put("k", "x", precondition::absent());
    CHECK(ec3 == errc::precondition_failed);
    REQUIRE(r3.current);
    CHECK(r3.current->version == "v10");
    CHECK(r3.current->body == "old");
    CHECK(f.server.received.size() == 4);

    auto ec4 = f.erase("k", precondition::matches("v10"));
    CHECK(ec4 == errc::not_found);
    CHECK(f.server.received.size() == 5);
}

} // TEST_SUITE
