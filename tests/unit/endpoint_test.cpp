// Endpoint resolution (<baton/aws/endpoint.hpp>): endpoint URLs from the
// environment (precedence, the ignore flag, service-id mangling, bad URLs),
// the default AWS endpoints, and the S3 addressing decision, including how
// s3_backend and dynamodb_backend use them.
#include <test_common/fixtures.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/backend/dynamodb.hpp>
#include <baton/backend/s3.hpp>

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The AWS backends model the record store (checked here, not in their headers: a check there made
// every unit that includes them compile their request code).
static_assert(baton::record_store<baton::s3_backend>);
static_assert(baton::record_store<baton::dynamodb_backend>);

namespace {

using baton::errc;
using baton::aws::configured_endpoint;

using test_common::contains;

// A fake environment that also records which variables were asked for.
struct fake_env {
    std::map<std::string, std::string, std::less<>> vars;
    std::vector<std::string> asked;

    baton::aws::env_lookup lookup() {
        return [this](std::string_view name) -> std::optional<std::string> {
            asked.emplace_back(name);
            auto it = vars.find(name);
            if (it == vars.end()) return std::nullopt;
            return it->second;
        };
    }
};

std::optional<configured_endpoint> resolved(std::string_view service, fake_env& env) {
    baton::diagnostics d;
    auto r = baton::aws::resolve_endpoint_url(service, d, env.lookup());
    REQUIRE_MESSAGE(r.has_value(), d.message);
    CHECK(d.message.empty());
    return *r;
}

std::string resolve_error(std::string_view service, fake_env& env) {
    baton::diagnostics d;
    auto r = baton::aws::resolve_endpoint_url(service, d, env.lookup());
    REQUIRE(!r.has_value());
    CHECK(r.error() == errc::invalid_argument);
    CHECK(!d.message.empty());
    CHECK(d.message.find('\n') == std::string::npos);
    return d.message;
}

} // namespace

TEST_SUITE("aws endpoint resolution") {

TEST_CASE("service ids become variable names: upper case, spaces as underscores") {
    CHECK(baton::aws::endpoint_url_variable("S3") == "AWS_ENDPOINT_URL_S3");
    CHECK(baton::aws::endpoint_url_variable("DynamoDB") == "AWS_ENDPOINT_URL_DYNAMODB");
    CHECK(baton::aws::endpoint_url_variable("sts") == "AWS_ENDPOINT_URL_STS");
    CHECK(baton::aws::endpoint_url_variable("Elastic Beanstalk") == "AWS_ENDPOINT_URL_ELASTIC_BEANSTALK");
    CHECK(baton::aws::endpoint_url_variable("api gateway v2") == "AWS_ENDPOINT_URL_API_GATEWAY_V2");

    fake_env env;
    env.vars["AWS_ENDPOINT_URL_DYNAMODB"] = "http://127.0.0.1:8000";
    auto r = resolved("DynamoDB", env);
    REQUIRE(r);
    CHECK(r->source == "AWS_ENDPOINT_URL_DYNAMODB");
}

TEST_CASE("the service's own variable wins over AWS_ENDPOINT_URL, which serves the rest") {
    fake_env env;
    env.vars["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9000";
    env.vars["AWS_ENDPOINT_URL_S3"] = "http://127.0.0.1:7480";

    auto s3 = resolved("S3", env);
    REQUIRE(s3);
    CHECK(s3->url == "http://127.0.0.1:7480");
    CHECK(s3->source == "AWS_ENDPOINT_URL_S3");

    // DynamoDB has no variable of its own here: the general one applies.
    auto ddb = resolved("DynamoDB", env);
    REQUIRE(ddb);
    CHECK(ddb->url == "http://127.0.0.1:9000");
    CHECK(ddb->source == "AWS_ENDPOINT_URL");

    // Another service's variable is never taken.
    env.vars.erase("AWS_ENDPOINT_URL");
    CHECK(!resolved("DynamoDB", env));
    CHECK(resolved("S3", env)->source == "AWS_ENDPOINT_URL_S3");
}

TEST_CASE("nothing configured means the AWS default; empty variables count as unset") {
    fake_env env;
    CHECK(!resolved("S3", env));
    // Only the documented variables are consulted, ignore flag first.
    CHECK(env.asked == std::vector<std::string>{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_ENDPOINT_URL_S3",
                                                "AWS_ENDPOINT_URL"});

    env.vars["AWS_ENDPOINT_URL_S3"] = "";
    env.vars["AWS_ENDPOINT_URL"] = "https://s3.example.com";
    auto r = resolved("S3", env);
    REQUIRE(r);
    CHECK(r->source == "AWS_ENDPOINT_URL");
    CHECK(r->url == "https://s3.example.com");

    env.vars["AWS_ENDPOINT_URL"] = "";
    env.vars["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] = "";
    CHECK(!resolved("S3", env));
}

TEST_CASE("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true disables both variables, in any case") {
    fake_env env;
    env.vars["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9000";
    env.vars["AWS_ENDPOINT_URL_S3"] = "http://127.0.0.1:7480";
    for (char const* yes : {"true", "TRUE", "True"}) {
        CAPTURE(yes);
        env.vars["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] = yes;
        CHECK(!resolved("S3", env));
        CHECK(!resolved("DynamoDB", env));
    }
    // Ignored variables are not even checked.
    env.vars["AWS_ENDPOINT_URL_S3"] = "not a url";
    CHECK(!resolved("S3", env));

    env.vars["AWS_ENDPOINT_URL_S3"] = "http://127.0.0.1:7480";
    for (char const* no : {"false", "FALSE"}) {
        CAPTURE(no);
        env.vars["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] = no;
        auto r = resolved("S3", env);
        REQUIRE(r);
        CHECK(r->url == "http://127.0.0.1:7480");
    }
}

TEST_CASE("an ignore flag that is neither true nor false is refused, not read as false") {
    fake_env env;
    env.vars["AWS_ENDPOINT_URL_S3"] = "http://127.0.0.1:7480";
    for (char const* odd : {"1", "yes", "on", "ture"}) {
        CAPTURE(odd);
        env.vars["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] = odd;
        auto const m = resolve_error("S3", env);
        CHECK(contains(m, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS must be 'true' or 'false'"));
    }
}

TEST_CASE("a bad URL names its variable and what is wrong, never the URL itself") {
    struct bad {
        char const* url;
        char const* why;
    };
    bad const cases[] = {
        {"127.0.0.1:7480", "needs a scheme"},
        {"ftp://127.0.0.1:7480", "unsupported scheme 'ftp'"},
        {"http://127.0.0.1:7480/bucket", "must not have a path"},
        {"http://127.0.0.1:7480?x=1", "must not have a query"},
        {"http://127.0.0.1:7480#top", "must not have a fragment"},
        {"http://127.0.0.1:0", "port must be a number from 1 to 65535"},
        {"http://127.0.0.1:65536", "port must be a number from 1 to 65535"},
        {"http://", "no host"},
        {"http://host name", "not a valid URI"},
    };
    for (auto const& c : cases) {
        CAPTURE(c.url);
        fake_env env;
        env.vars["AWS_ENDPOINT_URL_S3"] = c.url;
        auto const m = resolve_error("S3", env);
        CHECK(contains(m, "AWS_ENDPOINT_URL_S3: invalid endpoint URL"));
        CHECK_MESSAGE(contains(m, c.why), m);
        CHECK(contains(m, "fix or unset AWS_ENDPOINT_URL_S3"));
    }

    // A secret in the user-info part stays out of the message.
    fake_env env;
    env.vars["AWS_ENDPOINT_URL"] = "https://AKID:TopSecretValue@s3.example.com";
    auto const m = resolve_error("DynamoDB", env);
    CHECK(contains(m, "AWS_ENDPOINT_URL: invalid endpoint URL: it must not carry user information"));
    CHECK(!contains(m, "TopSecretValue"));
    CHECK(!contains(m, "AKID"));
}

TEST_CASE("the first variable set decides: a bad service URL does not fall back to AWS_ENDPOINT_URL") {
    fake_env env;
    env.vars["AWS_ENDPOINT_URL_S3"] = "http://127.0.0.1:7480/path";
    env.vars["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9000";
    CHECK(contains(resolve_error("S3", env), "AWS_ENDPOINT_URL_S3:"));
    // DynamoDB is unaffected by S3's bad variable.
    CHECK(resolved("DynamoDB", env)->url == "http://127.0.0.1:9000");
}

TEST_CASE("an empty service id is refused") {
    fake_env env;
    CHECK(contains(resolve_error("", env), "service id must not be empty"));
    CHECK(env.asked.empty());
}

TEST_CASE("without a lookup, the process environment is read") {
    ::setenv("AWS_ENDPOINT_URL_BATONTESTSERVICE", "http://127.0.0.1:4321", 1);
    baton::diagnostics d;
    auto r = baton::aws::resolve_endpoint_url("batontestservice", d);
    ::unsetenv("AWS_ENDPOINT_URL_BATONTESTSERVICE");
    REQUIRE(r.has_value());
    REQUIRE(r->has_value());
    CHECK((*r)->url == "http://127.0.0.1:4321");
    CHECK((*r)->source == "AWS_ENDPOINT_URL_BATONTESTSERVICE");
}

TEST_CASE("default AWS endpoints per service and region; China uses amazonaws.com.cn") {
    using baton::aws::default_endpoint_url;
    CHECK(default_endpoint_url("s3", "us-east-1") == "https://s3.us-east-1.amazonaws.com");
    CHECK(default_endpoint_url("s3", "eu-west-1") == "https://s3.eu-west-1.amazonaws.com");
    CHECK(default_endpoint_url("s3", "cn-north-1") == "https://s3.cn-north-1.amazonaws.com.cn");
    CHECK(default_endpoint_url("s3", "us-gov-west-1") == "https://s3.us-gov-west-1.amazonaws.com");
    CHECK(default_endpoint_url("dynamodb", "ap-southeast-2") == "https://dynamodb.ap-southeast-2.amazonaws.com");
    CHECK(default_endpoint_url("dynamodb", "cn-northwest-1") == "https://dynamodb.cn-northwest-1.amazonaws.com.cn");
    CHECK(default_endpoint_url("sts", "eu-central-1") == "https://sts.eu-central-1.amazonaws.com");
    // A region that merely contains "cn-" is not in China.
    CHECK(default_endpoint_url("s3", "ap-cn-1") == "https://s3.ap-cn-1.amazonaws.com");

    baton::dynamodb_backend_params p;
    p.region = "cn-north-1";
    CHECK(p.effective_endpoint() == "https://dynamodb.cn-north-1.amazonaws.com.cn");
    p.region = "eu-west-1";
    CHECK(p.effective_endpoint() == "https://dynamodb.eu-west-1.amazonaws.com");
    p.endpoint = "http://127.0.0.1:8000";
    CHECK(p.effective_endpoint() == "http://127.0.0.1:8000");
}

} // TEST_SUITE aws endpoint resolution

TEST_SUITE("s3 addressing") {

TEST_CASE("addressing matrix: AWS vs custom endpoints, dotted buckets, overrides, China, IPv6") {
    struct row {
        char const* endpoint;
        char const* region;
        char const* bucket;
        std::optional<bool> path_style;
        bool expect_path_style;
        char const* host;
        unsigned port;
        bool tls;
        char const* host_header;
        char const* prefix;
    };
    std::optional<bool> const automatic, path = true, hosted = false;
    row const rows[] = {
        // AWS: virtual-hosted unless the bucket has a dot (wildcard certificates cover one label).
        {"", "us-east-1", "baton-test", automatic, false, "baton-test.s3.us-east-1.amazonaws.com", 443, true,
         "baton-test.s3.us-east-1.amazonaws.com", ""},
        {"", "eu-west-1", "baton.test", automatic, true, "s3.eu-west-1.amazonaws.com", 443, true,
         "s3.eu-west-1.amazonaws.com", "/baton.test"},
        {"", "us-east-1", "baton-test", path, true, "s3.us-east-1.amazonaws.com", 443, true,
         "s3.us-east-1.amazonaws.com", "/baton-test"},
        {"", "us-east-1", "baton.test", hosted, false, "baton.test.s3.us-east-1.amazonaws.com", 443, true,
         "baton.test.s3.us-east-1.amazonaws.com", ""},
        {"", "cn-north-1", "baton-test", automatic, false, "baton-test.s3.cn-north-1.amazonaws.com.cn", 443, true,
         "baton-test.s3.cn-north-1.amazonaws.com.cn", ""},
        {"", "cn-north-1", "a.b.c", automatic, true, "s3.cn-north-1.amazonaws.com.cn", 443, true,
         "s3.cn-north-1.amazonaws.com.cn", "/a.b.c"},
        // Buckets that cannot be host names go path-style by themselves (legacy names).
        {"", "us-east-1", "Baton_Test", automatic, true, "s3.us-east-1.amazonaws.com", 443, true,
         "s3.us-east-1.amazonaws.com", "/Baton_Test"},
        {"", "us-east-1", "a b+c", automatic, true, "s3.us-east-1.amazonaws.com", 443, true,
         "s3.us-east-1.amazonaws.com", "/a%20b%2Bc"},
        // Custom endpoints: path-style unless asked otherwise.
        {"http://127.0.0.1:7480", "us-east-1", "baton-test", automatic, true, "127.0.0.1", 7480, false,
         "127.0.0.1:7480", "/baton-test"},
        {"https://minio.example.com", "us-east-1", "baton-test", automatic, true, "minio.example.com", 443, true,
         "minio.example.com", "/baton-test"},
        {"https://minio.example.com/", "auto", "baton-test", hosted, false, "baton-test.minio.example.com", 443, true,
         "baton-test.minio.example.com", ""},
        {"http://Minio.Example.com:9000", "us-east-1", "baton-test", hosted, false, "baton-test.minio.example.com",
         9000, false, "baton-test.minio.example.com:9000", ""},
        {"http://localhost:9000", "us-east-1", "b.c.d", hosted, false, "b.c.d.localhost", 9000, false,
         "b.c.d.localhost:9000", ""},
        {"http://[::1]:7480", "us-east-1", "baton-test", automatic, true, "::1", 7480, false, "[::1]:7480",
         "/baton-test"},
        {"https://[2001:db8::5]", "us-east-1", "baton.test", path, true, "2001:db8::5", 443, true, "[2001:db8::5]",
         "/baton.test"},
        // The region does not matter for a custom endpoint (it only scopes the signature).
        {"http://127.0.0.1:7480", "", "baton-test", automatic, true, "127.0.0.1", 7480, false, "127.0.0.1:7480",
         "/baton-test"},
    };
    for (auto const& r : rows) {
        CAPTURE(r.endpoint);
        CAPTURE(r.region);
        CAPTURE(r.bucket);
        CAPTURE(r.path_style.has_value());
        baton::diagnostics d;
        auto a = baton::aws::resolve_s3_address(r.endpoint, r.region, r.bucket, r.path_style, d);
        REQUIRE_MESSAGE(a.has_value(), d.message);
        CHECK(a->path_style == r.expect_path_style);
        CHECK(a->aws_default == std::string_view(r.endpoint).empty());
        CHECK(a->endpoint.host == r.host);
        CHECK(a->endpoint.port == r.port);
        CHECK(a->endpoint.is_tls() == r.tls);
        CHECK(a->endpoint.host_header() == r.host_header);
        CHECK(a->path_prefix == r.prefix);
    }
}

TEST_CASE("addressing that cannot work is refused with a line saying what to change") {
    struct row {
        char const* endpoint;
        char const* region;
        char const* bucket;
        std::optional<bool> path_style;
        char const* why;
    };
    std::optional<bool> const automatic, hosted = false;
    row const rows[] = {
        {"http://127.0.0.1:7480", "us-east-1", "baton-test", hosted, "the endpoint is an IP address; use path-style"},
        {"http://[::1]:7480", "us-east-1", "baton-test", hosted, "the endpoint is an IP address; use path-style"},
        {"", "us-east-1", "a..b", hosted, "'a..b' is not a valid DNS name"},
        {"", "us-east-1", "-ab", hosted, "'-ab' is not a valid DNS name"},
        {"", "us-east-1", "Baton", hosted, "'Baton' is not a valid DNS name"},
        {"", "us-east-1", "", automatic, "bucket name must not be empty"},
        {"", "", "baton-test", automatic, "region must be set"},
        {"", "us east 1", "baton-test", automatic, "region may contain only a-z, 0-9 and '-'"},
        {"", "x/y", "baton-test", automatic, "region may contain only a-z, 0-9 and '-'"},
        {"http://127.0.0.1:7480/bucket", "us-east-1", "baton-test", automatic, "must not have a path"},
        {"s3://bucket", "us-east-1", "baton-test", automatic, "unsupported scheme 's3'"},
    };
    for (auto const& r : rows) {
        CAPTURE(r.endpoint);
        CAPTURE(r.region);
        CAPTURE(r.bucket);
        baton::diagnostics d;
        auto a = baton::aws::resolve_s3_address(r.endpoint, r.region, r.bucket, r.path_style, d);
        REQUIRE(!a.has_value());
        CHECK(a.error() == errc::invalid_argument);
        CHECK_MESSAGE(contains(d.message, r.why), d.message);
    }
}

TEST_CASE("s3_backend addresses requests as the resolver decides") {
    boost::asio::io_context ioc;
    baton::s3_backend_params p;
    p.bucket = "baton-test";
    p.credentials.access_key_id = "AKIDEXAMPLE";
    p.credentials.secret_access_key = "secret";
    p.region = "cn-north-1";
    CHECK(!baton::s3_backend(ioc.get_executor(), p).path_style());
    p.endpoint = "http://[::1]:7480";
    CHECK(baton::s3_backend(ioc.get_executor(), p).path_style());
    p.path_style = false;
    try {
        baton::s3_backend b(ioc.get_executor(), p);
        FAIL("virtual-hosted addressing on an IP endpoint was accepted");
    } catch (baton::config_error const& e) {
        CHECK(contains(e.what(), "s3_backend_params: virtual-hosted addressing needs a host name"));
    }
}

} // TEST_SUITE s3 addressing
