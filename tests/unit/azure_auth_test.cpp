// The Azure wire layer (baton/azure/): Shared Key signatures against vectors that the Azure SDK
// for JavaScript computed (tests/unit/data/azure/, see make_vectors.js), the rules where the
// SDKs, Azurite and the service disagree, SAS and anonymous requests, connection strings and
// the environment (and that secrets never leak into messages), the error mapping, and the List
// Blobs reader on good, hostile and random documents.
#include <baton/azure/account.hpp>
#include <baton/azure/detail/list_blobs.hpp>
#include <baton/azure/errors.hpp>
#include <baton/azure/shared_key.hpp>

#include <doctest/doctest.h>

#include <boost/beast/http/field.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace azure = baton::azure;
namespace bhttp = boost::beast::http;
namespace fs = std::filesystem;
using baton::diagnostics;
using baton::errc;
using baton::error_code;

constexpr std::string_view dev_key = azure::development_account_key;
// The key must never appear in a message; nor a piece of it long enough to matter.
constexpr std::string_view dev_key_piece = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50u";
constexpr std::string_view sas_sig = "sig=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789%2B%2F%3D";
constexpr std::string_view sas = "sv=2021-12-02&ss=b&srt=sco&sp=rwdlac&se=2030-01-01T00%3A00%3A00Z&spr=https%2Chttp"
                                 "&sig=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789%2B%2F%3D";

// The vectors: BATON_AZURE_VECTORS, else tests/unit/data/azure beside this file or above the
// working directory (the build directory, or the source tree when run by hand).
std::optional<fs::path> vectors_dir() {
    if (char const* env = std::getenv("BATON_AZURE_VECTORS"); env != nullptr && *env != '\0')
        return fs::path(env);
    std::error_code probe; // a missing candidate is not an error
    fs::path const beside = fs::path(__FILE__).parent_path() / "data" / "azure";
    if (fs::is_directory(beside, probe)) return beside;
    std::error_code ec;
    for (fs::path dir = fs::current_path(ec); !ec && !dir.empty(); dir = dir.parent_path()) {
        fs::path const candidate = dir / "tests" / "unit" / "data" / "azure";
        if (fs::is_directory(candidate, probe)) return candidate;
        if (dir == dir.parent_path()) break;
    }
    return std::nullopt;
}

std::string read_file(fs::path const& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::chrono::system_clock::time_point vector_time() {
    auto const t = baton::http::parse_http_date("Tue, 14 Jul 2026 09:41:07 GMT");
    REQUIRE(t);
    return *t;
}

azure::account dev_account() {
    return {std::string(azure::development_account_name), std::string(azure::development_blob_endpoint),
            std::string(dev_key), ""};
}

baton::http::request make_request(bhttp::verb method, std::string_view target) {
    baton::http::request req{method, target, 11};
    req.set(bhttp::field::host, "127.0.0.1:10000");
    return req;
}

std::string header(baton::http::request const& req, std::string_view name) {
    auto const it = req.find(name);
    return it == req.end() ? std::string() : std::string(it->value());
}

// The parser either accepts `doc` or refuses it with invalid_response and a message.
void check_list_never_crashes(std::string_view doc) {
    azure::detail::blob_listing l;
    diagnostics d;
    auto const ec = azure::detail::parse_list_blobs(doc, l, d);
    if (ec) {
        CHECK(ec == errc::invalid_response);
        CHECK(!d.message.empty());
    }
    azure::blob_error e;
    diagnostics d2;
    auto const ec2 = azure::parse_blob_error(doc, e, d2);
    if (ec2) CHECK(ec2 == errc::invalid_response);
}

constexpr std::string_view listing =
    "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?>"
    "<EnumerationResults ServiceEndpoint=\"http://127.0.0.1:10000/devstoreaccount1\" ContainerName=\"locks\">"
    "<Prefix>leases/</Prefix><Marker /><MaxResults>3</MaxResults><Blobs>"
    "<Blob><Name>leases/a</Name><Properties><Creation-Time>Tue, 14 Jul 2026 09:41:07 GMT</Creation-Time>"
    "<Last-Modified>Tue, 14 Jul 2026 09:41:07 GMT</Last-Modified><Etag>0x8DE2F6A1B2C3D4E</Etag>"
    "<Content-Length>14</Content-Length><BlobType>BlockBlob</BlobType></Properties><OrMetadata /></Blob>"
    "<Blob><Name>leases/b &amp; c</Name><Properties><Etag>\"0x8DE2F6A1B2C3D4F\"</Etag></Properties></Blob>"
    "<Blob><Name>leases/caf\xC3\xA9</Name><Properties><Etag>0x8DE2F6A1B2C3D50</Etag></Properties></Blob>"
    "</Blobs><NextMarker>2!96!MDAwMDEzIWxlYXNlcy9jYWbDqSEwMDAwMjgh</NextMarker></EnumerationResults>";

std::string one_blob_listing(std::string_view name_element, std::string_view etag = "0x1") {
    return "<EnumerationResults><Prefix/><Blobs><Blob>" + std::string(name_element) + "<Properties><Etag>" +
           std::string(etag) + "</Etag></Properties></Blob></Blobs><NextMarker/></EnumerationResults>";
}

} // namespace

TEST_SUITE("azure.shared_key") {

TEST_CASE("vectors of the Azure SDK for JavaScript: string to sign and Authorization, byte for byte") {
    auto const dir = vectors_dir();
    REQUIRE_MESSAGE(dir, "tests/unit/data/azure not found: run from the build or source tree, or set "
                         "BATON_AZURE_VECTORS");
    auto const doc = boost::json::parse(read_file(*dir / "shared_key_vectors.json"));
    auto const& keys = doc.at("accounts").as_object();
    auto const& cases = doc.at("cases").as_array();
    CHECK(cases.size() >= 8);
    for (auto const& cv : cases) {
        auto const& c = cv.as_object();
        std::string const name(c.at("name").as_string());
        CAPTURE(name);
        std::string const account_name(c.at("account").as_string());
        azure::account acct{account_name, "https://unused", std::string(keys.at(account_name).as_string()), ""};
        baton::http::request req{bhttp::string_to_verb(std::string(c.at("method").as_string())),
                                 std::string(c.at("target").as_string()), 11};
        for (auto const& h : c.at("headers").as_array())
            req.insert(std::string(h.as_array().at(0).as_string()), std::string(h.as_array().at(1).as_string()));
        req.body() = std::string(c.at("body").as_string());
        // The API version the vectors were made with is the one baton sends.
        CHECK(header(req, "x-ms-version") == azure::api_version);

        diagnostics d;
        REQUIRE(!azure::sign(req, acct, vector_time(), d));
        CHECK(header(req, "x-ms-date") == std::string(c.at("x_ms_date").as_string()));
        CHECK(azure::string_to_sign(req, account_name) == std::string(c.at("string_to_sign").as_string()));
        CHECK(header(req, "authorization") == std::string(c.at("authorization").as_string()));
    }
}

TEST_CASE("the emulator's path-style resource names the account twice") {
    auto req = make_request(bhttp::verb::get, "/devstoreaccount1/c/b");
    REQUIRE(!azure::sign(req, dev_account(), vector_time()));
    auto const sts = azure::string_to_sign(req, "devstoreaccount1");
    CHECK(sts.ends_with("\n/devstoreaccount1/devstoreaccount1/c/b"));
}

TEST_CASE("sign sets x-ms-date and x-ms-version, keeps a given version, drops Date, and re-signs in place") {
    auto req = make_request(bhttp::verb::put, "/devstoreaccount1/c/b");
    req.set(bhttp::field::date, "Mon, 01 Jan 2001 00:00:00 GMT");
    req.body() = "x";
    req.prepare_payload();
    REQUIRE(!azure::sign(req, dev_account(), vector_time()));
    CHECK(header(req, "x-ms-date") == "Tue, 14 Jul 2026 09:41:07 GMT");
    CHECK(header(req, "x-ms-version") == azure::api_version);
    CHECK(req.find(bhttp::field::date) == req.end());
    auto const first = header(req, "authorization");
    CHECK(first.starts_with("SharedKey devstoreaccount1:"));
    CHECK(first.size() == std::string_view("SharedKey devstoreaccount1:").size() + 44);

    // A retry one minute later: one date, one signature, replaced.
    REQUIRE(!azure::sign(req, dev_account(), vector_time() + std::chrono::minutes(1)));
    CHECK(req.count("x-ms-date") == 1);
    CHECK(req.count(bhttp::field::authorization) == 1);
    CHECK(header(req, "x-ms-date") == "Tue, 14 Jul 2026 09:42:07 GMT");
    CHECK(header(req, "authorization") != first);

    auto older = make_request(bhttp::verb::get, "/devstoreaccount1/c/b");
    older.set("x-ms-version", "2020-10-02");
    REQUIRE(!azure::sign(older, dev_account(), vector_time()));
    CHECK(header(older, "x-ms-version") == "2020-10-02");
}

TEST_CASE("Content-Length 0 signs as an empty line; a Date is left out when x-ms-date is set") {
    auto req = make_request(bhttp::verb::put, "/devstoreaccount1/c?restype=container");
    req.set(bhttp::field::content_length, "0");
    req.set("x-ms-date", "Tue, 14 Jul 2026 09:41:07 GMT");
    req.set("x-ms-version", azure::api_version);
    req.set(bhttp::field::date, "Tue, 14 Jul 2026 09:41:07 GMT");
    CHECK(azure::string_to_sign(req, "devstoreaccount1") ==
          "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Tue, 14 Jul 2026 09:41:07 GMT\nx-ms-version:2021-12-02\n"
          "/devstoreaccount1/devstoreaccount1/c\nrestype:container");
    req.erase("x-ms-date");
    CHECK(azure::string_to_sign(req, "devstoreaccount1").starts_with("PUT\n\n\n\n\n\nTue, 14 Jul 2026 09:41:07 GMT\n"));
}

TEST_CASE("rules the SDK vectors cannot show: trailing white space, order of standard headers") {
    // HTTP drops the white space around a value, so the service signs it without; the JavaScript
    // SDK trims only the left and would fail here.
    auto req = make_request(bhttp::verb::get, "/a/c/b");
    req.set("x-ms-meta-t", "  value  \t");
    req.set(bhttp::field::content_encoding, "gzip");
    req.set(bhttp::field::content_language, "en");
    req.set(bhttp::field::content_md5, "md5");
    req.set(bhttp::field::content_type, "text/plain");
    req.set(bhttp::field::if_modified_since, "ims");
    req.set(bhttp::field::if_unmodified_since, "ius");
    req.set(bhttp::field::if_none_match, "\"inm\"");
    req.set(bhttp::field::if_match, "\"im\"");
    req.set(bhttp::field::range, "bytes=1-2");
    // Encoding before Language, as Azurite, the C++ SDK and the REST page order them (the
    // JavaScript SDK swaps the two).
    CHECK(azure::string_to_sign(req, "a") ==
          "GET\ngzip\nen\n\nmd5\ntext/plain\n\nims\n\"im\"\n\"inm\"\nius\nbytes=1-2\nx-ms-meta-t:value\n/a/a/c/b");
}

TEST_CASE("header names sort as the service sorts them") {
    using azure::detail::header_name_less;
    CHECK(header_name_less("x-ms-date", "x-ms-version"));
    CHECK(header_name_less("x-ms-meta-ab", "x-ms-meta-a-c")); // '-' only breaks ties
    CHECK(!header_name_less("x-ms-meta-a-c", "x-ms-meta-ab"));
    CHECK(header_name_less("x-ms-blobs", "x-ms-blob-type"));
    CHECK(header_name_less("x-ms-meta-ab", "x-ms-meta-a-b"));  // same letters: the letter first
    CHECK(header_name_less("x-ms-meta-a", "x-ms-meta-a-"));    // a prefix first
    CHECK(header_name_less("x-ms-meta-a'b", "x-ms-meta-a-b")); // '\'' before '-'
    CHECK(!header_name_less("x-ms-date", "x-ms-date"));
    CHECK(header_name_less("x-ms-meta-1", "x-ms-meta-a")); // digits before letters
    CHECK(header_name_less("x-ms-meta-_", "x-ms-meta-1")); // punctuation before digits
}

TEST_CASE("query: lower-cased names, decoded values, sorted") {
    auto req = make_request(bhttp::verb::get, "/a/c?Comp=list&restype=container&prefix=a%2Fb%20c&marker=x%3D%2B");
    CHECK(azure::string_to_sign(req, "a").ends_with(
        "\n/a/a/c\ncomp:list\nmarker:x=+\nprefix:a/b c\nrestype:container"));
}

TEST_CASE("requests canonicalised differently by the SDKs, Azurite and the service are refused") {
    auto refused = [](std::string_view target, auto&& extra) {
        auto req = make_request(bhttp::verb::get, target);
        extra(req);
        CHECK(azure::string_to_sign(req, "devstoreaccount1").empty());
        diagnostics d;
        CHECK(azure::sign(req, dev_account(), vector_time(), d) == errc::invalid_argument);
        CHECK(!d.message.empty());
        CHECK(req.find(bhttp::field::authorization) == req.end());
        CHECK(d.message.find(dev_key_piece) == std::string::npos);
    };
    auto none = [](baton::http::request&) {};
    refused("/a/c?comp=list&prefix=", none);            // empty value
    refused("/a/c?comp", none);                         // no '='
    refused("/a/c?=x", none);                           // no name
    refused("/a/c?prefix=a+b", none);                   // raw '+'
    refused("/a/c?marker=a=b", none);                   // raw '=' in a value
    refused("/a/c?prefix=a%2", none);                   // malformed escape
    refused("/a/c?pre%66ix=a", none);                   // encoded name
    refused("/a/c?comp=list&comp=tags", none);          // repeated name
    refused("/a/c?Comp=list&comp=tags", none);          // repeated once lower-cased
    refused("/a/c b", none);                            // raw space
    refused("/a/caf\xC3\xA9", none);                    // raw non-ASCII
    refused("/a/c#frag", none);                         // fragment
    refused("a/c", none);                               // no leading '/'
    refused("/a/c", [](auto& r) { r.insert("x-ms-meta-a", "1"); r.insert("X-MS-META-A", "2"); });
    refused("/a/c", [](auto& r) { r.insert(bhttp::field::if_match, "\"1\""); r.insert(bhttp::field::if_match, "\"2\""); });
    refused("/a/c", [](auto& r) { r.set("x-ms-meta-a", "1\r\nx-ms-evil: 2"); });
}

TEST_CASE("a body needs a matching Content-Length") {
    auto req = make_request(bhttp::verb::put, "/devstoreaccount1/c/b");
    req.body() = "abc";
    diagnostics d;
    CHECK(azure::sign(req, dev_account(), vector_time(), d) == errc::invalid_argument);
    CHECK(d.message.find("prepare_payload") != std::string::npos);
    req.set(bhttp::field::content_length, "2");
    CHECK(azure::sign(req, dev_account(), vector_time()) == errc::invalid_argument);
    req.prepare_payload();
    CHECK(!azure::sign(req, dev_account(), vector_time()));
}

TEST_CASE("SAS: appended to the query once, no Authorization; anonymous: neither") {
    azure::account acct{"acct", "https://acct.blob.core.windows.net", "", "?" + std::string(sas)};
    auto req = make_request(bhttp::verb::get, "/c/b");
    req.set(bhttp::field::authorization, "SharedKey stale:old");
    REQUIRE(!azure::sign(req, acct, vector_time()));
    CHECK(req.target() == "/c/b?" + std::string(sas));
    CHECK(req.find(bhttp::field::authorization) == req.end());
    CHECK(header(req, "x-ms-version") == azure::api_version);
    CHECK(!header(req, "x-ms-date").empty());
    REQUIRE(!azure::sign(req, acct, vector_time())); // a retry does not append it twice
    CHECK(req.target() == "/c/b?" + std::string(sas));

    auto listing_req = make_request(bhttp::verb::get, "/c?restype=container&comp=list");
    REQUIRE(!azure::sign(listing_req, acct, vector_time()));
    CHECK(listing_req.target() == "/c?restype=container&comp=list&" + std::string(sas));
    auto trailing = make_request(bhttp::verb::get, "/c?");
    REQUIRE(!azure::sign(trailing, acct, vector_time()));
    CHECK(trailing.target() == "/c?" + std::string(sas));

    azure::account anonymous{"acct", "https://acct.blob.core.windows.net", "", ""};
    auto anon = make_request(bhttp::verb::get, "/c/b");
    anon.set(bhttp::field::authorization, "SharedKey stale:old");
    REQUIRE(!azure::sign(anon, anonymous, vector_time()));
    CHECK(anon.target() == "/c/b");
    CHECK(anon.find(bhttp::field::authorization) == anon.end());

    // With both, the key signs and the SAS is not sent.
    azure::account both = dev_account();
    both.sas = sas;
    auto keyed = make_request(bhttp::verb::get, "/devstoreaccount1/c/b");
    REQUIRE(!azure::sign(keyed, both, vector_time()));
    CHECK(keyed.target() == "/devstoreaccount1/c/b");
    CHECK(header(keyed, "authorization").starts_with("SharedKey devstoreaccount1:"));
}

TEST_CASE("bad keys, names and SAS tokens are refused without repeating them") {
    auto check_refused = [](azure::account const& acct, std::chrono::system_clock::time_point now,
                            std::string_view secret) {
        auto req = make_request(bhttp::verb::get, "/devstoreaccount1/c/b");
        req.set(bhttp::field::authorization, "SharedKey stale:old");
        diagnostics d;
        CHECK(azure::sign(req, acct, now, d) == errc::invalid_argument);
        CHECK(!d.message.empty());
        CHECK(req.find(bhttp::field::authorization) == req.end());
        if (!secret.empty()) CHECK(d.message.find(secret) == std::string::npos);
    };
    auto acct = dev_account();
    acct.key = "not base64!" + std::string(dev_key_piece);
    check_refused(acct, vector_time(), dev_key_piece);
    acct.key = std::string(dev_key_piece) + "=";
    check_refused(acct, vector_time(), dev_key_piece);
    acct = dev_account();
    acct.name = "";
    check_refused(acct, vector_time(), dev_key_piece);
    acct.name = "Dev:Store";
    check_refused(acct, vector_time(), dev_key_piece);
    azure::account bad_sas{"acct", "https://acct.blob.core.windows.net", "", "sv=2021&sp=r"}; // no sig
    check_refused(bad_sas, vector_time(), "sv=2021&sp=r");
    bad_sas.sas = "sv=2021&" + std::string(sas_sig) + " x";
    check_refused(bad_sas, vector_time(), sas_sig);
}

TEST_CASE("format_http_date: IMF-fixdate, the inverse of parse_http_date") {
    auto const t = vector_time();
    CHECK(baton::http::format_http_date(t) == "Tue, 14 Jul 2026 09:41:07 GMT");
    CHECK(baton::http::format_http_date(t + std::chrono::milliseconds(999)) == "Tue, 14 Jul 2026 09:41:07 GMT");
    CHECK(baton::http::format_http_date(std::chrono::system_clock::time_point{}) == "Thu, 01 Jan 1970 00:00:00 GMT");
    auto const sunday = baton::http::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT");
    REQUIRE(sunday);
    CHECK(baton::http::format_http_date(*sunday) == "Sun, 06 Nov 1994 08:49:37 GMT");
    std::mt19937_64 rng(7);
    for (int i = 0; i < 1000; ++i) {
        auto const s = std::chrono::seconds(static_cast<std::int64_t>(rng() % 8'000'000'000ull));
        std::chrono::system_clock::time_point const p{std::chrono::duration_cast<std::chrono::system_clock::duration>(s)};
        auto const text = baton::http::format_http_date(p);
        auto const back = baton::http::parse_http_date(text);
        REQUIRE_MESSAGE(back, text);
        CHECK(*back == p);
    }
}

} // TEST_SUITE azure.shared_key

TEST_SUITE("azure.account") {

TEST_CASE("connection strings: every setting, any key case, white space and a trailing ';'") {
    azure::account a;
    diagnostics d;
    std::string const key(dev_key);
    REQUIRE(!azure::parse_connection_string(" defaultendpointsprotocol = http ; ACCOUNTNAME=acct;AccountKey=" + key +
                                                ";EndpointSuffix=core.chinacloudapi.cn;",
                                            a, d));
    CHECK(a.name == "acct");
    CHECK(a.key == key);
    CHECK(a.sas.empty());
    CHECK(a.blob_endpoint == "http://acct.blob.core.chinacloudapi.cn");

    REQUIRE(!azure::parse_connection_string("AccountName=acct;AccountKey=" + key, a, d));
    CHECK(a.blob_endpoint == "https://acct.blob.core.windows.net");

    REQUIRE(!azure::parse_connection_string(
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + key +
            ";BlobEndpoint=https://custom.example:8443/;QueueEndpoint=https://q;TableEndpoint=https://t;"
            "FileEndpoint=https://f;BlobSecondaryEndpoint=https://s",
        a, d));
    CHECK(a.blob_endpoint == "https://custom.example:8443");

    // SAS only: the account comes from the endpoint.
    REQUIRE(!azure::parse_connection_string("BlobEndpoint=https://acct.blob.core.windows.net;SharedAccessSignature=" +
                                                std::string(sas),
                                            a, d));
    CHECK(a.name == "acct");
    CHECK(a.key.empty());
    CHECK(a.sas == sas);
    REQUIRE(!azure::parse_connection_string(
        "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1/;SharedAccessSignature=?" + std::string(sas), a, d));
    CHECK(a.name == "devstoreaccount1");
    CHECK(a.sas == sas);
    CHECK(a.blob_endpoint == "http://127.0.0.1:10000/devstoreaccount1");
    // Both: the key is kept, and signs.
    REQUIRE(!azure::parse_connection_string("AccountName=acct;AccountKey=" + key + ";SharedAccessSignature=" +
                                                std::string(sas),
                                            a, d));
    CHECK(a.key == key);
    CHECK(a.sas == sas);
}

TEST_CASE("UseDevelopmentStorage=true is the emulator's account, with or without a proxy") {
    azure::account a;
    diagnostics d;
    REQUIRE(!azure::parse_connection_string("UseDevelopmentStorage=true", a, d));
    CHECK(a.name == "devstoreaccount1");
    CHECK(a.key == dev_key);
    CHECK(a.blob_endpoint == "http://127.0.0.1:10000/devstoreaccount1");
    REQUIRE(!azure::parse_connection_string("usedevelopmentstorage=TRUE;DevelopmentStorageProxyUri=http://emulator:8080",
                                            a, d));
    CHECK(a.blob_endpoint == "http://emulator:10000/devstoreaccount1");
    CHECK(azure::parse_connection_string("UseDevelopmentStorage=true;AccountName=x", a, d) == errc::invalid_argument);
    CHECK(d.message.find("AccountName") != std::string::npos);
    CHECK(azure::parse_connection_string("UseDevelopmentStorage=false", a, d) == errc::invalid_argument);
    CHECK(azure::parse_connection_string("DevelopmentStorageProxyUri=http://x;AccountName=a;AccountKey=" +
                                             std::string(dev_key),
                                         a, d) == errc::invalid_argument);
}

TEST_CASE("bad connection strings name the bad part and never repeat a secret") {
    std::string const key(dev_key);
    struct bad_case {
        std::string cs;
        std::string_view named; // what the message must mention
    };
    std::vector<bad_case> const cases = {
        {"", "neither AccountName nor BlobEndpoint"},
        {"AccountName=acct", "neither AccountKey nor SharedAccessSignature"},
        {"AccountName=acct;" + key, "segment 2"}, // a pasted key without "AccountKey="
        {"AccountName=acct;AccountKey=" + key + ";AccountKey=" + key, "twice"},
        {"AccountName=acct;AcountKey=" + key, "AcountKey"},
        {"AccountName=acct;AccountKey=not*base64" + std::string(dev_key_piece), "AccountKey"},
        {"AccountName=acct;AccountKey=" + key + ";DefaultEndpointsProtocol=ftp", "DefaultEndpointsProtocol"},
        {"AccountName=Acct;AccountKey=" + key, "AccountName"},
        {"AccountKey=" + key + ";BlobEndpoint=https://x.example", "AccountKey needs AccountName"},
        {"AccountName=acct;AccountKey=" + key + ";BlobEndpoint=https://user:" + key + "@x.example", "BlobEndpoint"},
        {"AccountName=acct;AccountKey=" + key + ";BlobEndpoint=https://x.example/?" + std::string(sas),
         "BlobEndpoint"},
        {"AccountName=acct;AccountKey=" + key + ";BlobEndpoint=ftp://x.example", "BlobEndpoint"},
        {"AccountName=acct;AccountKey=" + key + ";EndpointSuffix=a/b", "EndpointSuffix"},
        {"AccountName=acct;SharedAccessSignature=sv=2021&sp=r", "SharedAccessSignature"},
        {"AccountName=acct;SharedAccessSignature=" + std::string(sas) + "#x", "SharedAccessSignature"},
        {"=x;AccountName=acct", "segment 1"},
    };
    for (auto const& c : cases) {
        CAPTURE(c.cs);
        azure::account a;
        diagnostics d;
        CHECK(azure::parse_connection_string(c.cs, a, d) == errc::invalid_argument);
        CHECK(d.message.find(c.named) != std::string::npos);
        CHECK(d.message.find(dev_key_piece) == std::string::npos);
        CHECK(d.message.find(sas_sig) == std::string::npos);
    }
}

TEST_CASE("environment: the connection string first, then account with key or SAS, endpoint override") {
    std::string const key(dev_key);
    azure::account a;
    diagnostics d;
    // The connection string is complete on its own: the other variables are not read.
    REQUIRE(!azure::account_from_environment(a, d,
                                             baton::fixed_environment({{"AZURE_STORAGE_CONNECTION_STRING",
                                                                        "UseDevelopmentStorage=true"},
                                                                       {"AZURE_STORAGE_ACCOUNT", "other"},
                                                                       {"AZURE_STORAGE_KEY", "bad!"}})));
    CHECK(a.name == "devstoreaccount1");
    CHECK(a.key == dev_key);

    REQUIRE(!azure::account_from_environment(
        a, d, baton::fixed_environment({{"AZURE_STORAGE_CONNECTION_STRING", ""}, {"AZURE_STORAGE_ACCOUNT", "acct"},
                                        {"AZURE_STORAGE_KEY", key}})));
    CHECK(a.name == "acct");
    CHECK(a.blob_endpoint == "https://acct.blob.core.windows.net");
    CHECK(a.key == key);

    REQUIRE(!azure::account_from_environment(
        a, d, baton::fixed_environment({{"AZURE_STORAGE_ACCOUNT", "devstoreaccount1"}, {"AZURE_STORAGE_KEY", key},
                                        {"AZURE_STORAGE_SAS_TOKEN", "?" + std::string(sas)},
                                        {"AZURE_STORAGE_SERVICE_ENDPOINT", "http://127.0.0.1:10000/devstoreaccount1/"}})));
    CHECK(a.blob_endpoint == "http://127.0.0.1:10000/devstoreaccount1");
    CHECK(a.key == key);
    CHECK(a.sas == sas);

    REQUIRE(!azure::account_from_environment(
        a, d, baton::fixed_environment({{"AZURE_STORAGE_SAS_TOKEN", std::string(sas)},
                                        {"AZURE_STORAGE_SERVICE_ENDPOINT", "https://acct.blob.core.windows.net"}})));
    CHECK(a.name == "acct");
    CHECK(a.key.empty());
}

TEST_CASE("environment: what is missing or wrong is named, secrets are not") {
    std::string const key(dev_key);
    auto refused = [&](std::map<std::string, std::string, std::less<>> vars, std::string_view named) {
        azure::account a;
        diagnostics d;
        CHECK(azure::account_from_environment(a, d, baton::fixed_environment(std::move(vars))) ==
              errc::invalid_argument);
        CHECK(d.message.find(named) != std::string::npos);
        CHECK(d.message.find(dev_key_piece) == std::string::npos);
        CHECK(d.message.find(sas_sig) == std::string::npos);
        return d.message;
    };
    auto const none = refused({}, "AZURE_STORAGE_CONNECTION_STRING");
    for (std::string_view v : {"AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN",
                               "AZURE_STORAGE_SERVICE_ENDPOINT"})
        CHECK(none.find(v) != std::string::npos);
    refused({{"AZURE_STORAGE_ACCOUNT", "acct"}}, "neither AZURE_STORAGE_KEY nor AZURE_STORAGE_SAS_TOKEN");
    refused({{"AZURE_STORAGE_KEY", key}}, "AZURE_STORAGE_ACCOUNT is not");
    refused({{"AZURE_STORAGE_SAS_TOKEN", std::string(sas)}}, "AZURE_STORAGE_SERVICE_ENDPOINT");
    refused({{"AZURE_STORAGE_ACCOUNT", "acct"}, {"AZURE_STORAGE_KEY", key + "!"}}, "AZURE_STORAGE_KEY");
    refused({{"AZURE_STORAGE_ACCOUNT", "acct"}, {"AZURE_STORAGE_KEY", key},
             {"AZURE_STORAGE_SERVICE_ENDPOINT", "https://acct.blob.core.windows.net?" + std::string(sas)}},
            "AZURE_STORAGE_SERVICE_ENDPOINT");
    refused({{"AZURE_STORAGE_CONNECTION_STRING", "AccountName=acct;AccountKey=" + key + "x"}},
            "AZURE_STORAGE_CONNECTION_STRING: connection string: AccountKey");
}

TEST_CASE("describe() names the account, the endpoint and the kind of authentication, never a secret") {
    auto a = dev_account();
    a.sas = sas;
    auto const text = a.describe();
    CHECK(text == "account devstoreaccount1 at http://127.0.0.1:10000/devstoreaccount1 (Shared Key)");
    CHECK(text.find(dev_key_piece) == std::string::npos);
    a.key.clear();
    CHECK(a.describe().ends_with("(SAS)"));
    CHECK(a.describe().find("sig") == std::string::npos);
    a.sas.clear();
    CHECK(a.describe().ends_with("(anonymous)"));
}

TEST_CASE("parse_blob_address: origin and path prefix") {
    diagnostics d;
    auto const path_style = azure::parse_blob_address("http://127.0.0.1:10000/devstoreaccount1//", d);
    REQUIRE(path_style);
    CHECK(path_style->origin.host == "127.0.0.1");
    CHECK(path_style->origin.port == 10000);
    CHECK(path_style->path_prefix == "/devstoreaccount1");
    auto const production = azure::parse_blob_address("https://acct.blob.core.windows.net", d);
    REQUIRE(production);
    CHECK(production->origin.is_tls());
    CHECK(production->path_prefix.empty());
    for (std::string_view bad : {"acct.blob.core.windows.net", "https://x/a b", "https://x/a%20", "https://x/?a=1",
                                 "https://x#f", "ftp://x", "https://user:secret@x"}) {
        CAPTURE(bad);
        diagnostics e;
        CHECK(!azure::parse_blob_address(bad, e));
        CHECK(!e.message.empty());
        CHECK(e.message.find("secret") == std::string::npos);
    }
}

} // TEST_SUITE azure.account

TEST_SUITE("azure.errors") {

TEST_CASE("classify_blob: the issue's table, codes before statuses") {
    struct row {
        unsigned status;
        std::string_view code;
        error_code expected;
    };
    std::vector<row> const rows = {
        {412, "ConditionNotMet", errc::precondition_failed},
        {304, "ConditionNotMet", errc::precondition_failed},
        {409, "BlobAlreadyExists", errc::precondition_failed},
        {409, "ContainerAlreadyExists", errc::precondition_failed},
        {412, "LeaseIdMissing", errc::foreign_record},
        {412, "LeaseIdMismatchWithBlobOperation", errc::foreign_record},
        {412, "LeaseNotPresentWithBlobOperation", errc::foreign_record},
        {412, "LeaseLost", errc::foreign_record},
        {404, "BlobNotFound", errc::not_found},
        {404, "ContainerNotFound", errc::not_found},
        {404, "ResourceNotFound", errc::not_found},
        {403, "AuthenticationFailed", errc::auth_failed},
        {403, "AuthorizationFailure", errc::auth_failed},
        {403, "AuthorizationPermissionMismatch", errc::auth_failed},
        {403, "AuthorizationSourceIPMismatch", errc::auth_failed},
        {400, "InvalidAuthenticationInfo", errc::auth_failed},
        {503, "ServerBusy", errc::throttled},
        {500, "OperationTimedOut", errc::throttled},
        {500, "InternalError", errc::service_unavailable},
        {502, "", errc::service_unavailable},
        {503, "", errc::service_unavailable},
        {409, "ContainerBeingDeleted", errc::conflict},
        {409, "", errc::conflict},
        {400, "InvalidHeaderValue", errc::invalid_argument},
        {400, "MultipleConditionHeadersNotSupported", errc::invalid_argument},
        {413, "RequestBodyTooLarge", errc::invalid_argument},
        {429, "", errc::throttled},
        {408, "", errc::timeout},
        {412, "", errc::precondition_failed},
        {404, "", errc::not_found},
        {401, "", errc::auth_failed},
        {501, "NotImplemented", errc::capability_missing},
        {200, "", {}},
        {201, "", {}},
        {200, "ServerBusy", errc::throttled},
        {200, "SomethingElse", errc::invalid_response},
        {0, "", errc::invalid_response},
        {302, "", errc::invalid_response},
        {412, " ConditionNotMet ", errc::precondition_failed},
    };
    for (auto const& r : rows) {
        CAPTURE(r.status);
        CAPTURE(r.code);
        CHECK(azure::classify_blob(r.status, r.code) == r.expected);
    }
    // Refusals are contention; lease blocks, auth and setup failures are neither retried nor contention.
    CHECK(azure::classify_blob(409, "BlobAlreadyExists") == baton::condition::contention);
    CHECK(azure::classify_blob(412, "LeaseIdMissing") != baton::condition::contention);
    CHECK(!baton::is_retryable(azure::classify_blob(412, "LeaseIdMissing")));
    CHECK(baton::is_retryable(azure::classify_blob(503, "ServerBusy")));
    CHECK(baton::is_retryable(azure::classify_blob(500, "OperationTimedOut")));
}

TEST_CASE("parse_blob_error: code, first line of the message, request id; strict") {
    azure::blob_error e;
    diagnostics d;
    REQUIRE(!azure::parse_blob_error(
        "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>ConditionNotMet</Code><Message>The "
        "condition specified using HTTP conditional header(s) is not met.\nRequestId:5b1c0f2e-001e-0044-2b1a-"
        "d5b3f6000000\nTime:2026-07-14T09:41:07.1234567Z</Message></Error>",
        e, d));
    CHECK(e.code == "ConditionNotMet");
    CHECK(e.message == "The condition specified using HTTP conditional header(s) is not met.");
    CHECK(e.request_id == "5b1c0f2e-001e-0044-2b1a-d5b3f6000000");

    // Details that may quote the request are left out; a signature in the message is masked.
    REQUIRE(!azure::parse_blob_error(
        "<Error><Code>AuthenticationFailed</Code><Message>Signature did not match for ?sv=1&amp;" + std::string(sas_sig) +
            "&amp;sp=r.</Message><AuthenticationErrorDetail>The MAC signature found in the HTTP request "
            "'c2VjcmV0' is not the same</AuthenticationErrorDetail></Error>",
        e, d));
    CHECK(e.code == "AuthenticationFailed");
    CHECK(e.message.find(sas_sig) == std::string::npos);
    CHECK(e.message.find("sig=***&sp=r.") != std::string::npos);
    CHECK(e.message.find("c2VjcmV0") == std::string::npos);

    for (std::string_view bad :
         {"", "not xml", "<Error></Error>", "<Error><Code>  </Code></Error>", "<EnumerationResults/>",
          "<Error><Code>X</Code>", "<!DOCTYPE x><Error><Code>X</Code></Error>"}) {
        CAPTURE(bad);
        diagnostics bd;
        CHECK(azure::parse_blob_error(bad, e, bd) == errc::invalid_response);
        CHECK(!bd.message.empty());
        CHECK(e.code.empty());
    }
    std::string huge = "<Error><Code>X</Code><Message>" + std::string(1024 * 1024, 'a') + "</Message></Error>";
    CHECK(azure::parse_blob_error(huge, e, d) == errc::invalid_response);
}

} // TEST_SUITE azure.errors

TEST_SUITE("azure.list_blobs") {

TEST_CASE("a page: names, quoted ETags, prefix and marker") {
    azure::detail::blob_listing l;
    diagnostics d;
    REQUIRE(!azure::detail::parse_list_blobs(listing, l, d));
    REQUIRE(l.entries.size() == 3);
    CHECK(l.entries[0].name == "leases/a");
    CHECK(l.entries[0].etag == "\"0x8DE2F6A1B2C3D4E\"");
    CHECK(l.entries[1].name == "leases/b & c");
    CHECK(l.entries[1].etag == "\"0x8DE2F6A1B2C3D4F\""); // already quoted: kept
    CHECK(l.entries[2].name == "leases/caf\xC3\xA9");
    CHECK(l.prefix == "leases/");
    CHECK(l.next_marker == "2!96!MDAwMDEzIWxlYXNlcy9jYWbDqSEwMDAwMjgh");

    REQUIRE(!azure::detail::parse_list_blobs(
        "<EnumerationResults><Prefix/><Blobs><BlobPrefix><Name>a/</Name></BlobPrefix></Blobs><NextMarker/>"
        "</EnumerationResults>",
        l, d));
    CHECK(l.entries.empty());
    CHECK(l.prefixes == std::vector<std::string>{"a/"});
    CHECK(l.next_marker.empty());
    REQUIRE(!azure::detail::parse_list_blobs(one_blob_listing("<Name Encoded=\"false\">x</Name>"), l, d));
    CHECK(l.entries.size() == 1);
}

TEST_CASE("hostile pages are refused, naming the blob and the rule") {
    struct bad_case {
        std::string doc;
        std::string_view named;
    };
    std::string const two_blobs_start = "<EnumerationResults><Prefix>p/</Prefix><Blobs>";
    auto blob = [](std::string_view name, std::string_view etag = "0x1") {
        return "<Blob><Name>" + std::string(name) + "</Name><Properties><Etag>" + std::string(etag) +
               "</Etag></Properties></Blob>";
    };
    std::string const end = "</Blobs><NextMarker/></EnumerationResults>";
    std::vector<bad_case> const cases = {
        {"<ListBucketResult/>", "EnumerationResults"},
        {"<EnumerationResults><Prefix/></EnumerationResults>", "<Blobs>"},
        {two_blobs_start + blob("p/b") + blob("p/a") + end, "blob 2 'p/a' does not sort after 'p/b'"},
        {two_blobs_start + blob("p/a") + blob("p/a") + end, "does not sort after"},
        {two_blobs_start + blob("q/a") + end, "does not start with the listed prefix"},
        {two_blobs_start + "<Blob><Properties><Etag>0x1</Etag></Properties></Blob>" + end, "blob 1 has no <Name>"},
        {two_blobs_start + blob("p/a", "") + end, "no <Etag>"},
        {two_blobs_start + "<Blob><Name>p/a</Name></Blob>" + end, "no <Etag>"},
        {two_blobs_start + blob("p/a", "0x 1") + end, "white space"},
        {two_blobs_start + blob("p/a", "\"0x1") + end, "quotes"},
        {two_blobs_start + blob("p/a", "\"\"") + end, "quotes"},
        {two_blobs_start + blob("p/a", "0x\"1") + end, "quotes"},
        {two_blobs_start + blob("p/a", std::string(300, 'e')) + end, "ETag longer"},
        {two_blobs_start + blob("p/" + std::string(5000, 'n')) + end, "name longer"},
        {one_blob_listing("<Name Encoded=\"true\">a%00b</Name>"), "encoded name"},
        {"<EnumerationResults><Prefix/><MaxResults>1</MaxResults><Blobs>" + blob("a") + blob("b") + end,
         "more than 1 blobs"},
        {"<EnumerationResults><Prefix/><MaxResults>x</MaxResults><Blobs>" + end, "<MaxResults>"},
        {"<EnumerationResults><Prefix/><Blobs></Blobs><NextMarker>" + std::string(5000, 'm') +
             "</NextMarker></EnumerationResults>",
         "<NextMarker>"},
        {"<EnumerationResults><Prefix/><Blobs><Blob><Name>a</Name>", "malformed XML"},
        {"<EnumerationResults a1='' a2='' a3='' a4='' a5='' a6='' a7='' a8='' a9='' a10='' a11='' a12='' a13='' "
         "a14='' a15='' a16='' a17=''/>",
         "attributes"},
    };
    for (auto const& c : cases) {
        CAPTURE(c.doc.substr(0, 200));
        azure::detail::blob_listing l;
        diagnostics d;
        CHECK(azure::detail::parse_list_blobs(c.doc, l, d) == errc::invalid_response);
        CHECK(d.message.find(c.named) != std::string::npos);
    }

    // More blobs than a page may hold.
    std::string many = "<EnumerationResults><Prefix/><Blobs>";
    for (int i = 0; i < 5001; ++i) many += blob("k" + std::to_string(100000 + i));
    many += end;
    azure::detail::blob_listing l;
    diagnostics d;
    CHECK(azure::detail::parse_list_blobs(many, l, d) == errc::invalid_response);
    CHECK(d.message.find("more than 5000 blobs") != std::string::npos);
    // A document above the size limit is refused before it is read.
    azure::detail::xml::xml_limits small;
    small.max_bytes = 100;
    CHECK(azure::detail::parse_list_blobs(listing, l, d, small) == errc::invalid_response);
}

TEST_CASE("blob names sort by UTF-16 code units, as the service compares them") {
    using azure::detail::blob_name_less;
    CHECK(blob_name_less("a", "b"));
    CHECK(blob_name_less("A", "a"));
    CHECK(blob_name_less("a", "ab"));
    CHECK(!blob_name_less("ab", "ab"));
    CHECK(blob_name_less("caf\xC3\xA9", "cafz") == false);          // U+00E9 after 'z'
    CHECK(blob_name_less("\xF0\x9F\x98\x80", "\xEF\xBC\x81"));      // U+1F600 (surrogates) before U+FF01
    CHECK(!blob_name_less("\xEF\xBC\x81", "\xF0\x9F\x98\x80"));
    CHECK(blob_name_less("\xED\x9F\xBF", "\xF0\x9F\x98\x80"));      // U+D7FF before U+1F600
}

TEST_CASE("random and mutated bytes never crash the readers") {
    std::mt19937_64 rng(20260714);
    std::string const seeds[] = {std::string(listing),
                                 "<Error><Code>ConditionNotMet</Code><Message>m\nRequestId:r\nTime:t</Message></Error>",
                                 one_blob_listing("<Name Encoded=\"true\">x</Name>")};
    for (int round = 0; round < 3000; ++round) {
        std::string doc = seeds[static_cast<std::size_t>(round) % 3];
        int const edits = 1 + static_cast<int>(rng() % 8);
        for (int e = 0; e < edits && !doc.empty(); ++e) {
            std::size_t const at = rng() % doc.size();
            switch (rng() % 4) {
            case 0: doc[at] = static_cast<char>(rng() % 256); break;
            case 1: doc.erase(at, 1 + rng() % 16); break;
            case 2: doc.insert(at, doc.substr(rng() % doc.size(), rng() % 32)); break;
            default: doc.resize(at); break;
            }
        }
        check_list_never_crashes(doc);
    }
}

} // TEST_SUITE azure.list_blobs
