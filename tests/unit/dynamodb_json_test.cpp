// The DynamoDB JSON codec of dynamodb_backend (detail/dynamodb_json.hpp): exact
// request bodies, response parsing, and hostile responses (truncated at every
// byte, wrong types, huge) that must give errors, never a crash. Also the
// backend's parameter checks, which need no server.
#include <test_common/fixtures.hpp>
#include <baton/backend/dynamodb.hpp>
#include <baton/backend/detail/dynamodb_json.hpp>

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace ddb = baton::detail::dynamodb;
using baton::errc;
using baton::error_code;
using baton::precondition;

constexpr ddb::table_ref locks{"locks", "pk"};

using test_common::contains;

// Every error a parser may give for hostile input.
bool acceptable_failure(error_code ec) {
    return ec == errc::invalid_response || ec == errc::foreign_record || ec == errc::invalid_argument;
}

// Runs every response parser on `body`; none may crash, throw or report anything but a known error.
void parse_everything(std::string_view body) {
    baton::diagnostics d;
    std::optional<baton::record> found;
    error_code ec = ddb::parse_get_item(body, "k", found, d);
    CHECK((!ec || acceptable_failure(ec)));
    if (ec) CHECK(!found.has_value());
    ec = ddb::parse_condition_failure(body, "k", found, d);
    CHECK((!ec || acceptable_failure(ec)));
    ddb::scan_page page;
    ec = ddb::parse_scan(body, locks, page, d);
    CHECK((!ec || acceptable_failure(ec)));
    ddb::table_description td;
    ec = ddb::parse_table_description(body, locks, td, d);
    CHECK((!ec || acceptable_failure(ec)));
    for (unsigned status : {400u, 500u}) {
        baton::diagnostics e;
        ec = ddb::parse_error(status, body, "", e);
        CHECK(ec);
        CHECK(e.message.size() <= 2048);
    }
}

// A lease record body as the lease writes it (detail/lease_record.hpp).
std::string const lease_body =
    R"({"baton":"lease/1","owner":"node-a#1f","token":7,"nonce":"n0nce","state":"held","ttl_ms":20000,"value":"10.0.0.7:8080"})";

} // namespace

TEST_SUITE("dynamodb.json") {

TEST_CASE("GetItem: consistent, projected to version and body") {
    CHECK(ddb::get_item_request(locks, "job-1") ==
          R"({"TableName":"locks","Key":{"pk":{"S":"job-1"}},"ConsistentRead":true,)"
          R"("ProjectionExpression":"#v,#b","ExpressionAttributeNames":{"#v":"ver","#b":"body"}})");
    // Keys are JSON-escaped, and the partition key name is the table's.
    CHECK(ddb::get_item_request({"t-1", "id"}, "a\"b\\c\n") ==
          R"({"TableName":"t-1","Key":{"id":{"S":"a\"b\\c\n"}},"ConsistentRead":true,)"
          R"("ProjectionExpression":"#v,#b","ExpressionAttributeNames":{"#v":"ver","#b":"body"}})");
}

TEST_CASE("PutItem: absent, matches and none conditions; a fresh version in every item") {
    CHECK(ddb::put_item_request(locks, "job-1", "hello", "v1", precondition::absent()) ==
          R"({"TableName":"locks","Item":{"pk":{"S":"job-1"},"ver":{"S":"v1"},"body":{"S":"hello"}},)"
          R"j("ConditionExpression":"attribute_not_exists(#k)","ExpressionAttributeNames":{"#k":"pk"},)j"
          R"("ReturnValuesOnConditionCheckFailure":"ALL_OLD"})");
    CHECK(ddb::put_item_request(locks, "job-1", "hello", "v2", precondition::matches("v1")) ==
          R"({"TableName":"locks","Item":{"pk":{"S":"job-1"},"ver":{"S":"v2"},"body":{"S":"hello"}},)"
          R"("ConditionExpression":"#v = :v","ExpressionAttributeNames":{"#v":"ver"},)"
          R"("ExpressionAttributeValues":{":v":{"S":"v1"}},"ReturnValuesOnConditionCheckFailure":"ALL_OLD"})");
    CHECK(ddb::put_item_request(locks, "job-1", "", "v3", precondition::none()) ==
          R"({"TableName":"locks","Item":{"pk":{"S":"job-1"},"ver":{"S":"v3"},"body":{"S":""}}})");
    // A numeric version written by another tool is matched as N.
    CHECK(contains(ddb::put_item_request(locks, "k", "x", "v4", precondition::matches("N:12")),
                   R"("ExpressionAttributeValues":{":v":{"N":"12"}})"));
    CHECK(contains(ddb::put_item_request(locks, "k", "x", "v4", precondition::matches("S:N:12")),
                   R"("ExpressionAttributeValues":{":v":{"S":"N:12"}})"));
}

TEST_CASE("PutItem: a lease body gets typed attributes for the console, the raw body stays in 'body'") {
    auto const req = ddb::put_item_request(locks, "jobs/nightly", lease_body, "v9", precondition::matches("v8"));
    std::string escaped_body;
    for (char c : lease_body) {
        if (c == '"') escaped_body += '\\';
        escaped_body += c;
    }
    CHECK(req ==
          R"({"TableName":"locks","Item":{"pk":{"S":"jobs/nightly"},"ver":{"S":"v9"},"body":{"S":")" + escaped_body +
              R"("},"baton":{"S":"lease/1"},"owner":{"S":"node-a#1f"},"token":{"N":"7"},"nonce":{"S":"n0nce"},)"
              R"("state":{"S":"held"},"ttl_ms":{"N":"20000"},"value":{"S":"10.0.0.7:8080"}},)"
              R"("ConditionExpression":"#v = :v","ExpressionAttributeNames":{"#v":"ver"},)"
              R"("ExpressionAttributeValues":{":v":{"S":"v8"}},"ReturnValuesOnConditionCheckFailure":"ALL_OLD"})");
}

TEST_CASE("typed attributes: scalars only, no clashes with the schema, bounded") {
    auto typed = ddb::typed_attributes(
        locks, R"({"pk":"x","ver":"y","body":"z","s":"a","i":-3,"u":18446744073709551615,"b":true,"d":1.5,)"
               R"("n":null,"o":{"a":1},"l":[1],"":"empty-name"})");
    CHECK(boost::json::serialize(typed) == R"({"s":{"S":"a"},"i":{"N":"-3"},"u":{"N":"18446744073709551615"},"b":{"BOOL":true}})");
    // Not an object, not JSON, too large: nothing.
    CHECK(ddb::typed_attributes(locks, "[1,2]").empty());
    CHECK(ddb::typed_attributes(locks, "{not json").empty());
    CHECK(ddb::typed_attributes(locks, "").empty());
    std::string big = R"({"s":")" + std::string(ddb::max_typed_source_bytes, 'a') + R"("})";
    CHECK(ddb::typed_attributes(locks, big).empty());
    // Long strings and long names are skipped; at most 32 fields.
    std::string const long_value(ddb::max_typed_string_bytes + 1, 'v');
    std::string const long_name(ddb::max_typed_name_bytes + 1, 'n');
    CHECK(ddb::typed_attributes(locks, R"({"a":")" + long_value + R"(","b":1})").size() == 1);
    CHECK(ddb::typed_attributes(locks, R"({")" + long_name + R"(":1,"b":1})").size() == 1);
    std::string many = "{";
    for (int i = 0; i < 40; ++i) many += (i ? "," : "") + std::string("\"f") + std::to_string(i) + "\":" + std::to_string(i);
    many += "}";
    CHECK(ddb::typed_attributes(locks, many).size() == ddb::max_typed_attributes);
    // The partition key name is whatever the table uses.
    CHECK(ddb::typed_attributes({"t", "id"}, R"({"id":"x","pk":"y"})").size() == 1);
}

namespace {
// PutItem as a Boost.JSON tree, serialized: what put_item_request writes directly, byte for byte.
std::string put_item_by_tree(ddb::table_ref t, std::string_view key, std::string_view body, std::string_view version,
                             precondition const& pc) {
    boost::json::object item = ddb::record_item(t, key, body, version);
    for (auto& field : ddb::typed_attributes(t, body)) item[field.key()] = std::move(field.value());
    boost::json::object req;
    req["TableName"] = t.table;
    req["Item"] = std::move(item);
    ddb::add_condition(req, t, pc);
    return boost::json::serialize(req);
}

// A body for the writer to get wrong: mostly flat lease-like objects, with every detail that
// sends it down the general path (escapes, whitespace, nesting, floats, null, repeated names,
// leading zeros, -0, 19-digit numbers, bytes that are not UTF-8, control bytes, the schema's names).
std::string random_body(std::mt19937_64& rng) {
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    static char const* const names[] = {"baton", "owner", "token", "a", "pk", "ver", "body", "fence", "", "id",
                                        "\u00e9t\u00e9", "na\"me", "\xc3\xa9t\xc3\xa9", "x"};
    static char const* const values[] = {"\"lease/1\"", "\"node-a#1f\"", "7", "-3", "0", "-0", "007", "1.5", "1e3",
                                         "18446744073709551615", "123456789012345678", "1234567890123456789",
                                         "true", "false", "null", "{\"a\":1}", "[1,2]", "\"a\\\"b\"", "\"tab\\t\"",
                                         "\"\xc3\xa9\"", "\"\xff\"", "\"\x01\"", "\"\"", "\"\\u0001\"", "-", "tru", "9."};
    std::string b = pick(20) == 0 ? " {" : "{";
    std::size_t const n = pick(12);
    for (std::size_t i = 0; i < n; ++i) {
        if (i) b += pick(25) == 0 ? ", " : ",";
        b += '"';
        b += pick(3) == 0 ? names[pick(std::size(names))] : "f" + std::to_string(pick(40));
        b += pick(30) == 0 ? "\": " : "\":";
        if (pick(15) == 0) b += '"' + std::string(ddb::max_typed_string_bytes + pick(2), 'v') + '"';
        else b += values[pick(std::size(values))];
    }
    b += pick(30) == 0 ? "}x" : "}";
    if (pick(40) == 0) b.resize(pick(b.size() + 1)); // truncated
    return b;
}
} // namespace

TEST_CASE("PutItem is written directly, byte for byte what the JSON tree serializes to") {
    std::mt19937_64 rng(20261126);
    constexpr ddb::table_ref odd{"t\"1", "f\u00e9nce"};
    std::string const lease = lease_body;
    std::vector<std::string> bodies{lease, "", "{}", "{\"a\":1}", "[1]", std::string("\xff\x00", 2), "{\"pk\":\"x\",\"a\":true}",
                                    std::string(R"({"s":")") + std::string(ddb::max_typed_source_bytes, 'a') + "\"}"};
    std::string many = "{";
    for (int i = 0; i < 70; ++i) many += (i ? "," : "") + std::string("\"f") + std::to_string(i) + "\":" + std::to_string(i);
    bodies.push_back(many + "}");
    // Flat bodies of 33 to 64 fields (the cap of 32 typed attributes on the direct path), long
    // names, long and negative numbers.
    for (int n : {33, 40, 64}) {
        std::string flat = "{";
        for (int i = 0; i < n; ++i)
            flat += (i ? "," : "") + std::string("\"g") + std::to_string(i) + "\":" +
                    (i % 3 == 0 ? "\"s\"" : i % 3 == 1 ? std::to_string(-i) : "true");
        bodies.push_back(flat + "}");
    }
    bodies.push_back("{\"" + std::string(ddb::max_typed_name_bytes, 'n') + "\":1,\"" +
                     std::string(ddb::max_typed_name_bytes + 1, 'm') + "\":2}");
    bodies.push_back(R"({"a":-123456789012345678,"b":-1234567890123456789,"c":123456789012345678})");
    for (int i = 0; i < 3000; ++i) bodies.push_back(random_body(rng));
    std::vector<precondition> const conditions{precondition::none(), precondition::absent(), precondition::matches("v1"),
                                               precondition::matches("N:12"), precondition::matches("S:N:1\"2")};
    std::size_t n = 0;
    for (auto const& body : bodies) {
        auto const& pc = conditions[n++ % conditions.size()];
        for (auto t : {locks, odd}) {
            INFO("body: " << body);
            CHECK(ddb::put_item_request(t, "k\n\"1", body, n % 2 ? "v9" : "N:5", pc) ==
                  put_item_by_tree(t, "k\n\"1", body, n % 2 ? "v9" : "N:5", pc));
        }
    }
}

TEST_CASE("append_json_quoted escapes as boost::json::serialize does: every byte, and mixed runs") {
    auto by_tree = [](std::string_view s) { return boost::json::serialize(boost::json::string(s)); };
    auto direct = [](std::string_view s) {
        std::string out = "prefix:"; // appends, leaving what was there
        baton::detail::append_json_quoted(out, s);
        return out;
    };
    for (int b = 0; b < 256; ++b) {
        std::string const one(1, static_cast<char>(b));
        INFO("byte " << b);
        CHECK(direct(one) == "prefix:" + by_tree(one));
        CHECK(direct("ab" + one + "cd" + one) == "prefix:" + by_tree("ab" + one + "cd" + one));
    }
    std::mt19937_64 rng(20261127);
    for (int i = 0; i < 2000; ++i) {
        std::string s(static_cast<std::size_t>(rng() % 300), '\0');
        for (auto& c : s) c = static_cast<char>(rng() % 4 == 0 ? rng() % 0x40 : 0x20 + rng() % 0x60);
        CHECK(direct(s) == "prefix:" + by_tree(s));
    }
    CHECK(direct("") == "prefix:\"\"");
}

TEST_CASE("JSON strings and UTF-8 are scanned a word at a time: a byte at every offset of a word") {
    // The scans test eight bytes at once and fall back to bytes where a word has something to
    // escape: every byte value at every offset of three words, among bytes that need no escape
    // (ASCII and UTF-8 high bytes), written and sized as Boost.JSON writes them. Each string is
    // scanned from a heap block of exactly its size, so that a read past its end shows (ASan).
    auto by_tree = [](std::string_view s) { return boost::json::serialize(boost::json::string(s)); };
    auto utf8_bytewise = [](std::string_view s) {
        for (std::size_t i = 0; i < s.size(); i += baton::detail::decode_utf8_at(s, i).length)
            if (baton::detail::decode_utf8_at(s, i).problem != baton::detail::utf8_problem::none) return false;
        return true;
    };
    auto check = [&](std::string const& text) {
        auto exact = std::make_unique<char[]>(text.size());
        std::copy(text.begin(), text.end(), exact.get());
        std::string_view const s(exact.get(), text.size());
        std::string out;
        baton::detail::append_json_quoted(out, s);
        REQUIRE(out == by_tree(s));
        REQUIRE(baton::detail::json_quoted_size(s) == out.size());
        REQUIRE(baton::detail::is_utf8(s) == utf8_bytewise(s));
    };
    std::string const plain = "abcdefgh\xc3\xa9ijklmn\xe2\x82\xacopqrs"; // 24 bytes, none escaped
    for (int b = 0; b < 256; ++b) {
        for (std::size_t at = 0; at < plain.size(); ++at) {
            for (std::size_t len : {at + 1, plain.size()}) {
                std::string s = plain.substr(0, len);
                s[at] = static_cast<char>(b);
                INFO("byte " << b << " at " << at << " of " << len);
                check(s);
                check(s + "\"x\ny"); // and a tail, shorter than a word, with two escapes
            }
        }
    }
    // UTF-8 validation: a bad byte at every offset of long ASCII runs is found, a good
    // sequence at every offset is accepted, one cut short is not.
    std::string const ascii(40, 'a');
    for (std::size_t at = 0; at < ascii.size(); ++at) {
        INFO("offset " << at);
        std::string bad = ascii;
        bad[at] = '\xff';
        CHECK(!baton::detail::is_utf8(bad));
        std::string good = ascii;
        good.insert(at, "\xf0\x9f\x98\x80");
        CHECK(baton::detail::is_utf8(good));
        CHECK(!baton::detail::is_utf8(good.substr(0, at + 3)));
    }
    // In constant evaluation the bytes are decoded one by one.
    static_assert(baton::detail::is_utf8("constant \xc3\xa9valuation"));
    static_assert(!baton::detail::is_utf8("constant \xc3valuation"));
}

TEST_CASE("text_writer: one-pass escapes with room, counted ones without, growth, rewind") {
    auto by_tree = [](std::string_view s) { return boost::json::serialize(boost::json::string(s)); };
    std::mt19937_64 rng(20261128);
    for (int i = 0; i < 2000; ++i) {
        std::string s(static_cast<std::size_t>(rng() % 300), '\0');
        for (auto& c : s) c = static_cast<char>(rng() % 4 == 0 ? rng() % 0x40 : 0x20 + rng() % 0x60);
        // Room for six bytes a byte: the one-pass path. Room for none: counted first, grown once.
        for (std::size_t expected : {std::size_t{0}, 6 * s.size() + 64}) {
            std::string out = "a";
            {
                baton::detail::text_writer w(out, expected);
                w.json_quoted(s);
                w.put(',');
                w.literal("lit");
                w.raw(s.substr(0, s.size() / 2));
            }
            INFO("expected room " << expected);
            CHECK(out == "a" + by_tree(s) + ",lit" + s.substr(0, s.size() / 2));
        }
    }
    std::string out = "x";
    {
        baton::detail::text_writer w(out); // no room: every write grows it
        for (int i = 0; i < 1000; ++i) w.raw("0123456789");
        std::size_t const mark = w.size();
        CHECK(mark == 10001);
        w.literal("dropped");
        w.rewind(mark);
        w.put('!');
    }
    CHECK(out.size() == 10002);
    CHECK(out.substr(0, 11) == "x0123456789");
    CHECK(out.back() == '!');

    // Appends to a long string make room for the append, not for a copy of the string: 2,000 of
    // them onto 1 MiB stay within the capacity one doubling gives (growing by the whole string
    // each time ended at 4 MiB, a hundred times slower).
    std::string big(1 << 20, 'b');
    for (int i = 0; i < 2000; ++i) baton::detail::append_json_quoted(big, "a\nb");
    CHECK(big.size() == (1u << 20) + 2000 * 6);
    CHECK(big.capacity() < 3u << 20);
}

TEST_CASE("PutItem: bytes that are not UTF-8 travel as B (base64)") {
    std::string const bin("\xff\x00\x80z", 4);
    CHECK(ddb::put_item_request(locks, "k", bin, "v1", precondition::none()) ==
          R"({"TableName":"locks","Item":{"pk":{"S":"k"},"ver":{"S":"v1"},"body":{"B":"/wCAeg=="}}})");
}

TEST_CASE("DeleteItem: the same conditions") {
    CHECK(ddb::delete_item_request(locks, "job-1", precondition::matches("v1")) ==
          R"({"TableName":"locks","Key":{"pk":{"S":"job-1"}},"ConditionExpression":"#v = :v",)"
          R"("ExpressionAttributeNames":{"#v":"ver"},"ExpressionAttributeValues":{":v":{"S":"v1"}},)"
          R"("ReturnValuesOnConditionCheckFailure":"ALL_OLD"})");
    CHECK(ddb::delete_item_request(locks, "job-1", precondition::absent()) ==
          R"j({"TableName":"locks","Key":{"pk":{"S":"job-1"}},"ConditionExpression":"attribute_not_exists(#k)",)j"
          R"("ExpressionAttributeNames":{"#k":"pk"},"ReturnValuesOnConditionCheckFailure":"ALL_OLD"})");
    CHECK(ddb::delete_item_request(locks, "job-1", precondition::none()) ==
          R"({"TableName":"locks","Key":{"pk":{"S":"job-1"}}})");
}

TEST_CASE("Scan: consistent, filtered by prefix and after, continued from a key") {
    CHECK(ddb::scan_request(locks, "", "", std::nullopt) ==
          R"({"TableName":"locks","ConsistentRead":true,"ProjectionExpression":"#k,#v",)"
          R"("ExpressionAttributeNames":{"#k":"pk","#v":"ver"}})");
    CHECK(ddb::scan_request(locks, "jobs/", "jobs/a", std::string("jobs/q")) ==
          R"({"TableName":"locks","ConsistentRead":true,"ProjectionExpression":"#k,#v",)"
          R"("FilterExpression":"begins_with(#k, :p) AND #k > :a","ExpressionAttributeNames":{"#k":"pk","#v":"ver"},)"
          R"("ExpressionAttributeValues":{":p":{"S":"jobs/"},":a":{"S":"jobs/a"}},)"
          R"("ExclusiveStartKey":{"pk":{"S":"jobs/q"}}})");
    CHECK(contains(ddb::scan_request(locks, "", "b", std::nullopt), R"("FilterExpression":"#k > :a")"));
}

TEST_CASE("CreateTable and DescribeTable") {
    CHECK(ddb::create_table_request(locks) ==
          R"({"TableName":"locks","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],)"
          R"("KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"BillingMode":"PAY_PER_REQUEST"})");
    CHECK(ddb::describe_table_request("locks") == R"({"TableName":"locks"})");
}

TEST_CASE("GetItem response: absent, present (S and B bodies, S and N versions), foreign items") {
    baton::diagnostics d;
    std::optional<baton::record> r;
    CHECK(!ddb::parse_get_item("{}", "k", r, d));
    CHECK(!r);
    CHECK(!ddb::parse_get_item(R"({"ConsumedCapacity":{"TableName":"locks"}})", "k", r, d));
    CHECK(!r);

    REQUIRE(!ddb::parse_get_item(R"({"Item":{"ver":{"S":"v1"},"body":{"S":"hi \u00e9"},"owner":{"S":"x"}}})", "k", r, d));
    REQUIRE(r);
    CHECK(r->key == "k");
    CHECK(r->version == "v1");
    CHECK(r->body == "hi \xc3\xa9");

    REQUIRE(!ddb::parse_get_item(R"({"Item":{"ver":{"N":"42"},"body":{"B":"/wCAeg=="}}})", "k", r, d));
    CHECK(r->version == "N:42");
    CHECK(r->body == std::string("\xff\x00\x80z", 4));

    // A string version that looks like the N form is escaped, and round-trips into a condition.
    REQUIRE(!ddb::parse_get_item(R"({"Item":{"ver":{"S":"N:1"},"body":{"S":""}}})", "k", r, d));
    CHECK(r->version == "S:N:1");
    CHECK(contains(ddb::put_item_request(locks, "k", "", "v", precondition::matches(r->version)), R"({":v":{"S":"N:1"}})"));

    // Well-formed items this backend did not write.
    CHECK(ddb::parse_get_item(R"({"Item":{"pk":{"S":"k"},"owner":{"S":"x"}}})", "k", r, d) == errc::foreign_record);
    CHECK(contains(d.message, "'ver'"));
    CHECK(ddb::parse_get_item(R"({"Item":{"ver":{"S":"v"}}})", "k", r, d) == errc::foreign_record);
    CHECK(contains(d.message, "'body'"));
    CHECK(ddb::parse_get_item(R"({"Item":{"ver":{"BOOL":true},"body":{"S":""}}})", "k", r, d) == errc::foreign_record);
    CHECK(ddb::parse_get_item(R"({"Item":{"ver":{"S":"v"},"body":{"L":[]}}})", "k", r, d) == errc::foreign_record);
    CHECK(!r);
}

TEST_CASE("responses with wrong types are invalid_response") {
    char const* bodies[] = {
        "",
        "null",
        "[]",
        "\"x\"",
        "42",
        R"({"Item":[]})",
        R"({"Item":"x"})",
        R"({"Item":{"ver":"v1","body":{"S":"x"}}})",
        R"({"Item":{"ver":{"S":5},"body":{"S":"x"}}})",
        R"({"Item":{"ver":{},"body":{"S":"x"}}})",
        R"({"Item":{"ver":{"S":"v"},"body":{"S":null}}})",
        R"({"Item":{"ver":{"S":"v"},"body":{"B":"not base64!"}}})",
        R"({"Item":{"ver":{"S":"v"},"body":{"B":"QQ="}}})",
        R"({"Item":{"ver":{"S":"v"},"body":{"B":"QQ==QQ=="}}})",
    };
    for (auto const* b : bodies) {
        INFO(b);
        baton::diagnostics d;
        std::optional<baton::record> r;
        CHECK(ddb::parse_get_item(b, "k", r, d) == errc::invalid_response);
        CHECK(!r);
        CHECK(contains(d.message, "malformed DynamoDB response"));
    }
    char const* scans[] = {
        R"({"Items":{}})",
        R"({"Items":[1]})",
        R"({"Items":[{"pk":"a"}]})",
        R"({"Items":[{"pk":{"S":1}}]})",
        R"({"Items":[{"pk":{"S":"a"},"ver":{"S":[]}}]})",
        R"({"Items":[],"LastEvaluatedKey":"a"})",
        R"({"Items":[],"LastEvaluatedKey":{"id":{"S":"a"}}})",
    };
    for (auto const* b : scans) {
        INFO(b);
        baton::diagnostics d;
        ddb::scan_page p;
        CHECK(ddb::parse_scan(b, locks, p, d) == errc::invalid_response);
    }
    char const* tables[] = {
        R"({})",
        R"({"Table":[]})",
        R"({"Table":{"KeySchema":[]}})",
        R"({"Table":{"TableStatus":"ACTIVE"}})",
        R"({"Table":{"TableStatus":"ACTIVE","KeySchema":{}}})",
        R"({"Table":{"TableStatus":"ACTIVE","KeySchema":[1]}})",
        R"({"Table":{"TableStatus":"ACTIVE","KeySchema":[{"AttributeName":"pk"}]}})",
    };
    for (auto const* b : tables) {
        INFO(b);
        baton::diagnostics d;
        ddb::table_description t;
        CHECK(ddb::parse_table_description(b, locks, t, d) == errc::invalid_response);
    }
}

TEST_CASE("error bodies: __type with any namespace, message or Message, header fallback") {
    struct row {
        unsigned status;
        std::string_view body;
        std::string_view header;
        errc expected;
        std::string_view code;
        std::string_view message;
    };
    row const rows[] = {
        {400, R"({"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"})",
         "", errc::precondition_failed, "ConditionalCheckFailedException", "The conditional request failed"},
        {400, R"({"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"slow"})",
         "", errc::throttled, "ProvisionedThroughputExceededException", "slow"},
        {400, R"({"__type":"com.amazon.coral.availability#ThrottlingException","Message":"Rate exceeded"})", "",
         errc::throttled, "ThrottlingException", "Rate exceeded"},
        {400, R"({"__type":"com.amazonaws.dynamodb.v20120810#RequestLimitExceeded","message":"quota"})", "",
         errc::throttled, "RequestLimitExceeded", "quota"},
        {400, R"({"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"})",
         "", errc::not_found, "ResourceNotFoundException", "Requested resource not found"},
        {400, R"({"__type":"com.amazon.coral.validate#ValidationException","message":"The provided key element does not match the schema"})",
         "", errc::invalid_argument, "ValidationException", "The provided key element does not match the schema"},
        {400, R"({"__type":"com.amazon.coral.service#UnrecognizedClientException","Message":"bad key"})", "",
         errc::auth_failed, "UnrecognizedClientException", "bad key"},
        {400, R"({"__type":"ResourceInUseException","message":""})", "", errc::precondition_failed,
         "ResourceInUseException", ""},
        {500, R"({"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"oops"})", "",
         errc::service_unavailable, "InternalServerError", "oops"},
        {503, R"({"__type":"com.amazon.coral.availability#ServiceUnavailableException"})", "",
         errc::service_unavailable, "ServiceUnavailableException", ""},
        // No __type in the body: the x-amzn-ErrorType header names it.
        {400, R"({"message":"throttled"})", "ThrottlingException:http://internal.amazon.com/coral/", errc::throttled,
         "ThrottlingException", "throttled"},
        // Unknown names fall back to the status.
        {400, R"({"__type":"x#SomethingNew","message":"m"})", "", errc::invalid_argument, "SomethingNew", "m"},
        {502, "<html>bad gateway</html>", "", errc::service_unavailable, "", ""},
        {503, "", "", errc::service_unavailable, "", ""},
        {400, "<html>bad request</html>", "", errc::invalid_response, "", ""},
        {413, "{\"__type\":", "", errc::invalid_response, "", ""},
        {400, R"({"__type":5,"message":["x"]})", "", errc::invalid_argument, "", ""},
        // An error status never reads as success, whatever the body says.
        {302, "{}", "", errc::invalid_response, "", ""},
    };
    for (auto const& r : rows) {
        INFO(r.status << " " << std::string(r.body));
        baton::diagnostics d;
        CHECK(ddb::parse_error(r.status, r.body, r.header, d) == r.expected);
        CHECK(d.http_status == r.status);
        CHECK(d.service_code == r.code);
        if (!r.message.empty()) CHECK(d.message == r.message);
    }
    // Messages are bounded.
    baton::diagnostics d;
    std::string const huge = R"({"__type":"x#ValidationException","message":")" + std::string(100000, 'm') + "\"}";
    CHECK(ddb::parse_error(400, huge, "", d) == errc::invalid_argument);
    CHECK(d.message.size() < 1100);
}

TEST_CASE("ValidationException messages about the key schema are recognised (dynalite's and AWS's words)") {
    CHECK(ddb::is_key_schema_message("The provided key element does not match the schema"));
    CHECK(ddb::is_key_schema_message("One or more parameter values were invalid: Missing the key id in the item"));
    CHECK(ddb::is_key_schema_message("One or more parameter values were invalid: Type mismatch for key pk expected: N actual: S"));
    CHECK(!ddb::is_key_schema_message("ExpressionAttributeValues contains invalid value"));
    CHECK(!ddb::is_key_schema_message(""));
}

TEST_CASE("ConditionalCheckFailed bodies: the current item when the service returns it (ALL_OLD)") {
    baton::diagnostics d;
    std::optional<baton::record> r;
    CHECK(!ddb::parse_condition_failure(
        R"({"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"})",
        "k", r, d));
    CHECK(!r);
    CHECK(!ddb::parse_condition_failure(R"({"__type":"x#ConditionalCheckFailedException","Item":{}})", "k", r, d));
    CHECK(!r);
    REQUIRE(!ddb::parse_condition_failure(
        R"({"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed",)"
        R"("Item":{"pk":{"S":"k"},"ver":{"S":"v7"},"body":{"S":"b"},"owner":{"S":"node-b"}}})",
        "k", r, d));
    REQUIRE(r);
    CHECK(r->version == "v7");
    CHECK(r->body == "b");
}

TEST_CASE("Scan responses: entries, versions, the continuation key, foreign rows") {
    baton::diagnostics d;
    ddb::scan_page p;
    REQUIRE(!ddb::parse_scan(
        R"({"ScannedCount":3,"Count":3,"Items":[{"pk":{"S":"b"},"ver":{"S":"v2"}},{"pk":{"S":"a"},"ver":{"N":"5"}},)"
        R"({"pk":{"S":"c"}}],"LastEvaluatedKey":{"pk":{"S":"c"}}})",
        locks, p, d));
    REQUIRE(p.entries.size() == 3);
    CHECK(p.entries[0].key == "b");
    CHECK(p.entries[0].version == "v2");
    CHECK(p.entries[1].version == "N:5");
    CHECK(p.entries[2].version.empty());
    CHECK(p.last_key == std::optional<std::string>("c"));
    CHECK(p.scanned == 3);
    REQUIRE(!ddb::parse_scan(R"({"Count":0,"Items":[]})", locks, p, d));
    CHECK(p.entries.empty());
    CHECK(!p.last_key);
    // Rows without the key attribute: the table's key is not the backend's.
    CHECK(ddb::parse_scan(R"({"Items":[{"id":{"S":"a"}}]})", locks, p, d) == errc::invalid_argument);
    CHECK(contains(d.message, "key schema"));
    CHECK(ddb::parse_scan(R"({"Items":[{"pk":{"N":"1"}}]})", locks, p, d) == errc::invalid_argument);
}

TEST_CASE("DescribeTable: status and key schema checked against the backend's") {
    auto describe = [](std::string_view schema, std::string_view defs, std::string_view status = "ACTIVE") {
        return R"({"Table":{"AttributeDefinitions":[)" + std::string(defs) + R"(],"TableName":"locks","KeySchema":[)" +
               std::string(schema) + R"(],"TableStatus":")" + std::string(status) + R"("}})";
    };
    baton::diagnostics d;
    ddb::table_description t;
    REQUIRE(!ddb::parse_table_description(describe(R"({"AttributeName":"pk","KeyType":"HASH"})",
                                                   R"({"AttributeName":"pk","AttributeType":"S"})"),
                                          locks, t, d));
    CHECK(t.status == "ACTIVE");
    CHECK(t.key_schema == "pk (S, HASH)");
    CHECK(t.key_schema_matches);
    // CreateTable's answer has the same shape under TableDescription.
    REQUIRE(!ddb::parse_table_description(
        R"({"TableDescription":{"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"TableStatus":"CREATING"}})",
        locks, t, d));
    CHECK(t.status == "CREATING");
    CHECK(t.key_schema_matches);

    REQUIRE(!ddb::parse_table_description(describe(R"({"AttributeName":"id","KeyType":"HASH"})",
                                                   R"({"AttributeName":"id","AttributeType":"S"})"),
                                          locks, t, d));
    CHECK(!t.key_schema_matches);
    CHECK(t.key_schema == "id (S, HASH)");
    REQUIRE(!ddb::parse_table_description(describe(R"({"AttributeName":"pk","KeyType":"HASH"})",
                                                   R"({"AttributeName":"pk","AttributeType":"N"})"),
                                          locks, t, d));
    CHECK(!t.key_schema_matches);
    REQUIRE(!ddb::parse_table_description(
        describe(R"({"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"})",
                 R"({"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"S"})"),
        locks, t, d));
    CHECK(!t.key_schema_matches);
    CHECK(t.key_schema == "pk (S, HASH), sk (S, RANGE)");
}

TEST_CASE("checksums, base64 and UTF-8") {
    CHECK(ddb::crc32("") == 0u);
    CHECK(ddb::crc32("123456789") == 0xCBF43926u);
    // As dynalite sent it with this body.
    std::string_view const body =
        R"({"__type":"com.amazon.coral.validate#ValidationException","message":"TableName must be at least 3 characters long and at most 255 characters long"})";
    CHECK(ddb::crc32(body) == 2838543961u);
    CHECK(ddb::crc32_matches("2838543961", body));
    CHECK(!ddb::crc32_matches("2838543962", body));
    CHECK(!ddb::crc32_matches("", body));
    CHECK(!ddb::crc32_matches("-1", body));
    CHECK(!ddb::crc32_matches("99999999999", body));
    CHECK(!ddb::crc32_matches("4294967296", ""));
    CHECK(ddb::crc32_matches("0", ""));

    std::pair<std::string_view, std::string_view> const vectors[] = {
        {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"}};
    for (auto const& [plain, coded] : vectors) {
        CHECK(ddb::base64_encode(plain) == coded);
        std::string out;
        CHECK(ddb::base64_decode(coded, out));
        CHECK(out == plain);
    }
    std::string out;
    for (std::string_view bad : {"Zg=", "Zg", "Z===", "=Zg=", "Zg=a", "Zm9v!A==", "Zg==Zg=="}) {
        INFO(std::string(bad));
        CHECK(!ddb::base64_decode(bad, out));
    }
    std::string all;
    for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
    REQUIRE(ddb::base64_decode(ddb::base64_encode(all), out));
    CHECK(out == all);

    CHECK(baton::detail::is_utf8("plain"));
    CHECK(baton::detail::is_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
    CHECK(!baton::detail::is_utf8("\xff"));
    CHECK(!baton::detail::is_utf8("\xc0\xaf"));         // overlong
    CHECK(!baton::detail::is_utf8("\xed\xa0\x80"));     // surrogate
    CHECK(!baton::detail::is_utf8("\xf4\x90\x80\x80")); // above U+10FFFF
    CHECK(!baton::detail::is_utf8("\xe2\x82"));         // truncated
}

TEST_CASE("malformed: every truncation of real responses is an error, never a crash") {
    std::string const responses[] = {
        R"({"Item":{"pk":{"S":"jobs/nightly"},"ver":{"S":"0123456789abcdef0123456789abcdef"},"body":{"S":"{\"baton\":\"lease/1\"}"}}})",
        R"({"ScannedCount":2,"Count":2,"Items":[{"pk":{"S":"a"},"ver":{"S":"v1"}},{"pk":{"S":"b"},"ver":{"S":"v2"}}],"LastEvaluatedKey":{"pk":{"S":"b"}}})",
        R"({"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed","Item":{"pk":{"S":"k"},"ver":{"S":"v"},"body":{"B":"/wCAeg=="}}})",
        R"({"Table":{"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"TableName":"locks","KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"TableStatus":"ACTIVE"}})",
    };
    for (auto const& full : responses) {
        for (std::size_t n = 0; n < full.size(); ++n) {
            std::string_view const cut(full.data(), n);
            INFO(n << ": " << std::string(cut));
            parse_everything(cut);
            // Any strict prefix of a JSON object is not JSON.
            baton::diagnostics d;
            std::optional<baton::record> r;
            CHECK(ddb::parse_get_item(cut, "k", r, d) == errc::invalid_response);
            ddb::scan_page p;
            CHECK(ddb::parse_scan(cut, locks, p, d) == errc::invalid_response);
            ddb::table_description t;
            CHECK(ddb::parse_table_description(cut, locks, t, d) == errc::invalid_response);
            CHECK(ddb::parse_error(400, cut, "", d) == errc::invalid_response);
            CHECK(ddb::parse_error(500, cut, "", d) == errc::service_unavailable);
        }
        parse_everything(full);
    }
}

TEST_CASE("malformed: huge and deeply nested responses") {
    // Nesting beyond the parser's depth limit.
    std::string deep(100000, '[');
    parse_everything(deep);
    std::string deep_object;
    for (int i = 0; i < 10000; ++i) deep_object += R"({"Item":)";
    parse_everything(deep_object);
    // A huge string where an item should be, and a huge valid body.
    std::string const big(4 * 1024 * 1024, 'x');
    parse_everything(R"({"Item":")" + big + R"("})");
    baton::diagnostics d;
    std::optional<baton::record> r;
    REQUIRE(!ddb::parse_get_item(R"({"Item":{"ver":{"S":"v"},"body":{"S":")" + big + R"("}}})", "k", r, d));
    CHECK(r->body.size() == big.size());
    // Numbers out of range, and lots of items.
    parse_everything(R"({"Item":{"ver":{"N":1e999999},"body":{"S":"x"}},"ScannedCount":1e400})");
    std::string many = R"({"Items":[)";
    for (int i = 0; i < 50000; ++i) many += (i ? "," : "") + std::string(R"({"pk":{"S":"k)") + std::to_string(i) + R"("}})";
    many += "]}";
    ddb::scan_page p;
    REQUIRE(!ddb::parse_scan(many, locks, p, d));
    CHECK(p.entries.size() == 50000);
    // Garbage.
    std::string garbage;
    std::mt19937 rng(7);
    for (int i = 0; i < 1 << 20; ++i) garbage += static_cast<char>(rng());
    parse_everything(garbage);
}

TEST_CASE("malformed: random mutations of real responses") {
    std::string const seeds[] = {
        R"({"Item":{"pk":{"S":"k"},"ver":{"S":"v1"},"body":{"S":"x"}}})",
        R"({"Items":[{"pk":{"S":"a"},"ver":{"S":"v1"}}],"LastEvaluatedKey":{"pk":{"S":"a"}}})",
        R"({"__type":"a#ConditionalCheckFailedException","message":"m","Item":{"ver":{"N":"1"},"body":{"B":"eA=="}}})",
        R"({"Table":{"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"TableStatus":"ACTIVE"}})",
    };
    std::mt19937 rng(2026);
    char const alphabet[] = "{}[]\":,SNB0123456789 \\nulltruefalse=/+";
    for (int i = 0; i < 4000; ++i) {
        std::string s = seeds[static_cast<std::size_t>(i) % 4];
        int const edits = 1 + static_cast<int>(rng() % 4);
        for (int e = 0; e < edits && !s.empty(); ++e) {
            std::size_t const at = rng() % s.size();
            switch (rng() % 3) {
            case 0: s[at] = alphabet[rng() % (sizeof alphabet - 1)]; break;
            case 1: s.erase(at, 1); break;
            default: s.insert(at, 1, alphabet[rng() % (sizeof alphabet - 1)]); break;
            }
        }
        INFO(s);
        parse_everything(s);
    }
}

} // TEST_SUITE

TEST_SUITE("dynamodb.params") {

TEST_CASE("dynamodb_backend_params: rules with clear messages, AWS endpoint by default") {
    auto valid = [] {
        baton::dynamodb_backend_params p;
        p.region = "us-east-1";
        p.table = "locks";
        p.credentials.access_key_id = "AKID";
        p.credentials.secret_access_key = "secret-never-printed";
        return p;
    };
    CHECK_NOTHROW(valid().validate());
    CHECK(valid().effective_endpoint() == "https://dynamodb.us-east-1.amazonaws.com");
    auto cn = valid();
    cn.region = "cn-north-1";
    CHECK(cn.effective_endpoint() == "https://dynamodb.cn-north-1.amazonaws.com.cn");

    struct row {
        void (*edit)(baton::dynamodb_backend_params&);
        std::string_view message;
    };
    row const rows[] = {
        {[](auto& p) { p.region.clear(); }, "region must be set"},
        {[](auto& p) { p.region = "US East"; }, "region may contain only"},
        {[](auto& p) { p.table = "ab"; }, "table must be 3 to 255 characters"},
        {[](auto& p) { p.table = "my table"; }, "table may only contain"},
        {[](auto& p) { p.partition_key.clear(); }, "partition_key must be 1 to 255 bytes"},
        {[](auto& p) { p.partition_key = "ver"; }, "partition_key must not be 'ver' or 'body'"},
        {[](auto& p) { p.partition_key = "\xff"; }, "partition_key must be valid UTF-8"},
        {[](auto& p) { p.endpoint = "127.0.0.1:8000"; }, "endpoint: invalid endpoint URL"},
        {[](auto& p) { p.endpoint = "http://127.0.0.1:8000/path"; }, "must not have a path"},
        {[](auto& p) { p.credentials.access_key_id.clear(); }, "credentials.access_key_id must be set"},
        {[](auto& p) { p.credentials.secret_access_key.clear(); }, "credentials.secret_access_key must be set"},
        {[](auto& p) { p.max_body_bytes = 0; }, "max_body_bytes must be 1 to 184320"},
        {[](auto& p) { p.max_body_bytes = 400 * 1024; }, "max_body_bytes must be 1 to 184320"},
        {[](auto& p) { p.table_wait_timeout = std::chrono::milliseconds(0); }, "table_wait_timeout must be positive"},
        {[](auto& p) { p.table_wait_timeout = std::chrono::milliseconds::max(); }, "table_wait_timeout must be positive and at most 24 hours"},
        {[](auto& p) { p.max_scan_pages = 0; }, "max_scan_pages must be at least 1"},
        {[](auto& p) { p.http.attempt_timeout = std::chrono::milliseconds(0); }, "attempt_timeout must be positive"},
        {[](auto& p) { p.http.idle_timeout = std::chrono::milliseconds::max(); }, "idle_timeout must be from 0 to 24 hours"},
    };
    boost::asio::io_context ioc;
    for (auto const& r : rows) {
        auto p = valid();
        r.edit(p);
        INFO(std::string(r.message));
        std::string what;
        try {
            baton::dynamodb_backend b(ioc.get_executor(), p);
        } catch (baton::config_error const& e) {
            what = e.what();
        }
        CHECK(contains(what, r.message));
        CHECK(!contains(what, "secret-never-printed"));
    }
    CHECK_NOTHROW(baton::dynamodb_backend(ioc.get_executor(), valid()));
}

} // TEST_SUITE
