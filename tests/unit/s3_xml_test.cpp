// The S3 XML subset parser (baton/aws/detail/xml.hpp) on documents shaped like the ones S3 and
// RGW send, and on malformed, truncated, hostile and random inputs: those must give
// errc::invalid_response with a message, never a crash. Also the s3_backend_params rules.
#include <baton/backend/s3.hpp>
#include <baton/aws/detail/xml.hpp>

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace {

namespace xml = baton::detail::s3_xml;
using baton::errc;
using baton::error_code;

constexpr std::string_view error_412 =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold"
    "</Message><Condition>If-Match</Condition><RequestId>tx00000a1b2c3d4e5f-0066d8e1c2-1014-default</RequestId>"
    "<HostId>1014-default-default</HostId></Error>";

constexpr std::string_view listing_truncated =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
    "  <Name>bucket</Name><Prefix>locks%2F</Prefix><Delimiter>%2F</Delimiter>\n"
    "  <MaxKeys>2</MaxKeys><KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>\n"
    "  <EncodingType>url</EncodingType>\n"
    "  <ContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</ContinuationToken>\n"
    "  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>\n"
    "  <StartAfter>locks%2Fa</StartAfter>\n"
    "  <Contents><Key>locks%2Fa+b%2B%C3%A9</Key><LastModified>2024-09-01T12:00:00.000Z</LastModified>\n"
    "    <ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>28</Size>"
    "<StorageClass>STANDARD</StorageClass></Contents>\n"
    "  <Contents><Key>locks%2F%3C%26%3E</Key><LastModified>2024-09-01T12:00:01.000Z</LastModified>\n"
    "    <ETag>&quot;6654c734ccab8f440ff0825eb443dc7f-2&quot;</ETag><Size>5</Size>"
    "<StorageClass>STANDARD</StorageClass></Contents>\n"
    "  <CommonPrefixes><Prefix>locks%2Fsub%2F</Prefix></CommonPrefixes>\n"
    "</ListBucketResult>";

constexpr std::string_view listing_last =
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>bucket</Name><Prefix></Prefix>"
    "<KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>"
    "<Contents><Key>plain/key</Key><ETag>\"0123\"</ETag></Contents></ListBucketResult>";

// Every check the parser makes ends in invalid_response with a message, or in success.
void check_never_crashes(std::string_view doc) {
    xml::element root;
    baton::diagnostics d;
    auto const ec = xml::parse_xml(doc, root, d);
    if (ec) {
        CHECK(ec == errc::invalid_response);
        CHECK(!d.message.empty());
    }
    xml::s3_error e;
    baton::diagnostics d2;
    auto const ec2 = xml::parse_s3_error(doc, e, d2);
    if (ec2) CHECK(ec2 == errc::invalid_response);
    xml::s3_listing l;
    baton::diagnostics d3;
    auto const ec3 = xml::parse_list_objects_v2(doc, l, d3);
    if (ec3) CHECK(ec3 == errc::invalid_response);
}

} // namespace

TEST_SUITE("s3_xml") {

TEST_CASE("an S3 error document gives code, message and request id") {
    xml::s3_error e;
    baton::diagnostics d;
    REQUIRE(!xml::parse_s3_error(error_412, e, d));
    CHECK(e.code == "PreconditionFailed");
    CHECK(e.message == "At least one of the pre-conditions you specified did not hold");
    CHECK(e.request_id == "tx00000a1b2c3d4e5f-0066d8e1c2-1014-default");
    CHECK(e.host_id == "1014-default-default");

    // AWS's shape with Key/Resource, entities in the message, and no XML declaration.
    constexpr std::string_view aws =
        "<Error><Code>NoSuchKey</Code><Message>The key &lt;a&amp;b&gt; &#x27;x&#39; &#233;</Message>"
        "<Key>a&amp;b</Key><RequestId>4442587FB7D0A2F9</RequestId><HostId>abc=</HostId></Error>";
    REQUIRE(!xml::parse_s3_error(aws, e, d));
    CHECK(e.code == "NoSuchKey");
    CHECK(e.message == "The key <a&b> 'x' \xC3\xA9");
    CHECK(e.resource == "a&b");

    // A document that is XML but not an error, and an error without a code, are refused.
    CHECK(xml::parse_s3_error(listing_last, e, d) == errc::invalid_response);
    CHECK(d.message.find("Error") != std::string::npos);
    CHECK(xml::parse_s3_error("<Error><Message>x</Message></Error>", e, d) == errc::invalid_response);
    CHECK(d.message.find("Code") != std::string::npos);
}

TEST_CASE("a truncated ListObjectsV2 page: &quot; ETags, url-encoded keys, continuation token") {
    xml::s3_listing l;
    baton::diagnostics d;
    REQUIRE(!xml::parse_list_objects_v2(listing_truncated, l, d));
    CHECK(l.url_encoded);
    CHECK(l.is_truncated);
    CHECK(l.next_continuation_token == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
    CHECK(l.prefix == "locks/");
    REQUIRE(l.key_count);
    CHECK(*l.key_count == 2);
    REQUIRE(l.contents.size() == 2);
    CHECK(l.contents[0].key == "locks/a b+\xC3\xA9"); // '+' is a space, %2B a plus
    CHECK(l.contents[0].etag == "\"9b2cf535f27731c974343645a3985328\"");
    CHECK(l.contents[1].key == "locks/<&>");
    CHECK(l.contents[1].etag == "\"6654c734ccab8f440ff0825eb443dc7f-2\"");
    REQUIRE(l.common_prefixes.size() == 1);
    CHECK(l.common_prefixes[0] == "locks/sub/");

    REQUIRE(!xml::parse_list_objects_v2(listing_last, l, d));
    CHECK(!l.url_encoded);
    CHECK(!l.is_truncated);
    REQUIRE(l.contents.size() == 1);
    CHECK(l.contents[0].key == "plain/key");
    CHECK(l.contents[0].etag == "\"0123\"");

    // An empty bucket.
    REQUIRE(!xml::parse_list_objects_v2("<ListBucketResult><IsTruncated>false</IsTruncated><KeyCount>0</KeyCount>"
                                        "<EncodingType>url</EncodingType></ListBucketResult>",
                                        l, d));
    CHECK(l.contents.empty());
}

TEST_CASE("listing rules: truncation needs a token, keys and ETags are required, encodings are checked") {
    xml::s3_listing l;
    baton::diagnostics d;
    auto bad = [&](std::string_view doc, std::string_view words) {
        CAPTURE(doc);
        CHECK(xml::parse_list_objects_v2(doc, l, d) == errc::invalid_response);
        CHECK(d.message.find(words) != std::string::npos);
    };
    bad("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", "NextContinuationToken");
    bad("<ListBucketResult></ListBucketResult>", "IsTruncated");
    bad("<ListBucketResult><IsTruncated>yes</IsTruncated></ListBucketResult>", "IsTruncated");
    bad("<ListBucketResult><IsTruncated>false</IsTruncated><Contents><ETag>x</ETag></Contents></ListBucketResult>",
        "Key");
    bad("<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key></Contents></ListBucketResult>",
        "ETag");
    bad("<ListBucketResult><IsTruncated>false</IsTruncated><EncodingType>url</EncodingType>"
        "<Contents><Key>a%2</Key><ETag>x</ETag></Contents></ListBucketResult>",
        "URL encoding");
    bad("<ListBucketResult><IsTruncated>false</IsTruncated><EncodingType>base64</EncodingType></ListBucketResult>",
        "EncodingType");
    bad("<ListBucketResult><IsTruncated>false</IsTruncated><KeyCount>-1</KeyCount></ListBucketResult>", "KeyCount");
    bad(error_412, "ListBucketResult");
}

TEST_CASE("the XML subset: declarations, comments, CDATA, attributes, self-closing tags, prefixes") {
    xml::element root;
    baton::diagnostics d;
    constexpr std::string_view doc = "\xEF\xBB\xBF<?xml version='1.0'?><!-- hi --><?pi x?>\n"
                                     "<s3:Root xmlns:s3='urn:x' a=\"1&amp;2\" b = 'q\"'>"
                                     "t1<!-- c --><A/><B x='y'>b<![CDATA[<not&markup>]]>c</B>t2"
                                     "<s3:C>&#65;&#x42;</s3:C></s3:Root>\n<!-- tail -->\n";
    REQUIRE(!xml::parse_xml(doc, root, d));
    CHECK(root.name == "s3:Root");
    CHECK(root.local_name() == "Root");
    CHECK(root.text == "t1t2");
    REQUIRE(root.children.size() == 3);
    CHECK(root.children[0].name == "A");
    CHECK(root.children[0].text.empty());
    CHECK(root.child_text("B") == "b<not&markup>c");
    CHECK(root.child_text("C") == "AB");
    CHECK(root.child("D") == nullptr);
    CHECK(root.child_text("D").empty());
}

TEST_CASE("malformed documents are refused with the byte offset and the rule") {
    auto bad = [](std::string_view doc, std::string_view words) {
        CAPTURE(doc);
        xml::element root;
        baton::diagnostics d;
        CHECK(xml::parse_xml(doc, root, d) == errc::invalid_response);
        CHECK(d.message.find("malformed XML at byte") == 0);
        CHECK(d.message.find(words) != std::string::npos);
    };
    bad("", "no root element");
    bad("   ", "no root element");
    bad("text", "text before the root element");
    bad("<a>", "unterminated element");
    bad("<a></b>", "</b> closes <a>");
    bad("<a><b></a></b>", "</a> closes <b>");
    bad("<a></a><b></b>", "content after the root element");
    bad("<a></a>junk", "content after the root element");
    bad("<a>&bogus;</a>", "unknown entity");
    bad("<a>&amp</a>", "unterminated entity");
    bad("<a>&#0;</a>", "does not allow");
    bad("<a>&#xD800;</a>", "does not allow");
    bad("<a>&#x110000;</a>", "out of range");
    bad("<a>&#12a;</a>", "invalid character reference");
    bad("<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>", "DOCTYPE");
    bad("<a><!DOCTYPE x></a>", "declarations");
    bad("<a b></a>", "'='");
    bad("<a b=c></a>", "quoted attribute value");
    bad("<a b='<'></a>", "'<' in an attribute value");
    bad("<a b='1'c='2'></a>", "white space");
    bad("<1a></1a>", "expected a name");
    bad("<a><!-- x </a>", "unterminated comment");
    bad("<a><![CDATA[x</a>", "unterminated CDATA");
    bad("<?xml version='1.0'", "unterminated processing instruction");
    bad(std::string_view("<a>\0</a>", 8), "control character");
    bad("<a>\x01</a>", "control character");
    bad("<a>\xC3</a>", "UTF-8");
    bad("<a>\xC0\x80</a>", "overlong");
    bad("<a>\xED\xA0\x80</a>", "code point");
    bad("<a>\xFF</a>", "UTF-8");
}

TEST_CASE("limits: size, depth, element count and name length") {
    xml::element root;
    baton::diagnostics d;
    xml::xml_limits lim;
    lim.max_bytes = 64;
    CHECK(xml::parse_xml(std::string(65, ' '), root, d, lim) == errc::invalid_response);
    CHECK(d.message.find("limit") != std::string::npos);

    std::string deep;
    for (int i = 0; i < 100000; ++i) deep += "<a>";
    CHECK(xml::parse_xml(deep, root, d) == errc::invalid_response);
    CHECK(d.message.find("nested deeper") != std::string::npos);

    std::string ok_depth;
    for (int i = 0; i < 32; ++i) ok_depth += "<a>";
    for (int i = 0; i < 32; ++i) ok_depth += "</a>";
    CHECK(!xml::parse_xml(ok_depth, root, d));
    CHECK(xml::parse_xml("<x>" + ok_depth + "</x>", root, d) == errc::invalid_response);

    std::string many = "<r>";
    for (int i = 0; i < 200000; ++i) many += "<a/>";
    many += "</r>";
    CHECK(xml::parse_xml(many, root, d) == errc::invalid_response);
    CHECK(d.message.find("more than 200000 elements") != std::string::npos);

    std::string long_name = "<" + std::string(300, 'n') + "/>";
    CHECK(xml::parse_xml(long_name, root, d) == errc::invalid_response);
    CHECK(d.message.find("name longer") != std::string::npos);
}

TEST_CASE("every prefix of real documents is refused or parsed, never a crash") {
    for (auto doc : {error_412, listing_truncated, listing_last}) {
        for (std::size_t n = 0; n < doc.size(); ++n) {
            auto const prefix = doc.substr(0, n);
            xml::element root;
            baton::diagnostics d;
            auto const ec = xml::parse_xml(prefix, root, d);
            CAPTURE(n);
            CHECK(ec == errc::invalid_response); // a proper prefix of one root element is never complete
            check_never_crashes(prefix);
        }
        xml::element root;
        baton::diagnostics d;
        CHECK(!xml::parse_xml(doc, root, d));
    }
}

TEST_CASE("byte flips, insertions and random garbage are refused or parsed, never a crash") {
    std::mt19937_64 rng(20261121);
    auto byte = [&] { return static_cast<char>(rng() & 0xFF); };
    for (auto doc : {error_412, listing_truncated}) {
        for (int i = 0; i < 3000; ++i) {
            std::string s(doc);
            int const edits = 1 + static_cast<int>(rng() % 4);
            for (int k = 0; k < edits; ++k) {
                auto const at = static_cast<std::size_t>(rng() % s.size());
                switch (rng() % 3) {
                case 0: s[at] = byte(); break;
                case 1: s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), "<>&;/\"'!?[]-"[rng() % 12]); break;
                default: s.erase(at, 1 + rng() % 8); break;
                }
                if (s.empty()) s = "<";
            }
            check_never_crashes(s);
        }
    }
    static constexpr char alphabet[] = "<>/&;#x!-[]?='\" abcAB01\n";
    for (int i = 0; i < 5000; ++i) {
        std::string s;
        auto const n = rng() % 64;
        for (std::size_t k = 0; k < n; ++k) s += (rng() % 4 == 0) ? byte() : alphabet[rng() % (sizeof alphabet - 1)];
        check_never_crashes(s);
    }
    // A huge document over the default limit is refused before parsing.
    std::string huge(17u * 1024u * 1024u, 'x');
    huge.front() = '<';
    check_never_crashes(huge);
}

TEST_CASE("url_decode: form-style, strict percent escapes") {
    CHECK(xml::url_decode("a%2Fb+c%2b%25") == std::optional<std::string>("a/b c+%"));
    CHECK(xml::url_decode("%E2%82%AC") == std::optional<std::string>("\xE2\x82\xAC"));
    CHECK(!xml::url_decode("%"));
    CHECK(!xml::url_decode("%4"));
    CHECK(!xml::url_decode("%zz"));
    CHECK(xml::url_decode("") == std::optional<std::string>(""));
}

} // TEST_SUITE s3_xml

TEST_SUITE("s3_backend_params") {

TEST_CASE("validate names the broken rule and never echoes the secret") {
    auto good = [] {
        baton::s3_backend_params p;
        p.endpoint = "http://127.0.0.1:7480";
        p.bucket = "baton-test";
        p.credentials.access_key_id = "AKIDEXAMPLE";
        p.credentials.secret_access_key = "sekrit-do-not-print";
        return p;
    };
    CHECK_NOTHROW(good().validate());
    auto fails = [](baton::s3_backend_params const& p, std::string_view words) {
        try {
            p.validate();
            FAIL("accepted");
        } catch (baton::config_error const& e) {
            std::string const what = e.what();
            CAPTURE(what);
            CHECK(what.find("s3_backend_params") == 0);
            CHECK(what.find(words) != std::string::npos);
            CHECK(what.find("sekrit") == std::string::npos);
        }
    };
    auto p = good();
    p.bucket = "ab";
    fails(p, "bucket must be 3 to 63");
    p.bucket = "Upper";
    fails(p, "lower-case");
    p.bucket = "-dash";
    fails(p, "start and end");
    p = good();
    p.region = "";
    fails(p, "region");
    p = good();
    p.endpoint = "http://127.0.0.1:7480/bucket";
    fails(p, "endpoint");
    p = good();
    p.credentials.access_key_id.clear();
    fails(p, "access_key_id");
    p = good();
    p.credentials.secret_access_key.clear();
    fails(p, "secret_access_key");
    p = good();
    p.key_prefix = std::string(1000, 'k');
    fails(p, "key_prefix");
    p = good();
    p.max_body_bytes = p.http.max_response_body_bytes + 1;
    fails(p, "max_body_bytes");
    p = good();
    p.http.attempt_timeout = std::chrono::milliseconds(0);
    fails(p, "attempt_timeout");
}

TEST_CASE("addressing: path-style for custom endpoints, virtual-hosted for AWS unless the bucket has a dot") {
    boost::asio::io_context ioc;
    baton::s3_backend_params p;
    p.bucket = "baton-test";
    p.credentials.access_key_id = "AKIDEXAMPLE";
    p.credentials.secret_access_key = "secret";
    p.endpoint = "http://127.0.0.1:7480";
    CHECK(baton::s3_backend(ioc.get_executor(), p).path_style());
    p.endpoint.clear();
    CHECK(!baton::s3_backend(ioc.get_executor(), p).path_style());
    p.bucket = "baton.test";
    CHECK(baton::s3_backend(ioc.get_executor(), p).path_style());
    p.path_style = false;
    CHECK(!baton::s3_backend(ioc.get_executor(), p).path_style());
    static_assert(baton::record_store<baton::s3_backend>);
}

} // TEST_SUITE s3_backend_params
