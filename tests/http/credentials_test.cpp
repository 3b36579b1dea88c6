// Credential providers that speak HTTP, against small responders this process starts on 127.0.0.1:
// a container credentials endpoint, an EC2 instance metadata service (it refuses requests that come
// without the session token it handed out, so token-first ordering is checked by the server itself), and
// an STS endpoint that decodes the AssumeRoleWithWebIdentity form it receives. Providers are pointed at
// them through the documented variables (AWS_CONTAINER_CREDENTIALS_FULL_URI, AWS_EC2_METADATA_SERVICE_ENDPOINT,
// AWS_ENDPOINT_URL_STS) in an injected environment. Every wait is bounded; nothing sleeps.
#include <baton/aws/credentials.hpp>
#include <baton/backend/dynamodb.hpp>
#include <baton/backend/s3.hpp>
#include <test_common/credentials.hpp>
#include <test_common/fixtures.hpp>
#include <test_common/http_server.hpp>
#include <test_common/refused_port.hpp>
#include <test_common/run_op.hpp>

#include <doctest/doctest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

// A namespace of its own: a unity build (-Dunity_tests=true) puts several test files in one TU.
namespace credentials_tests {

namespace aws = baton::aws;
namespace net = boost::asio;
namespace bhttp = boost::beast::http;
namespace fs = std::filesystem;
using tcp = net::ip::tcp;
using baton::errc;
using baton::error_code;
using namespace std::chrono_literals;

namespace {

// ---- a scripted HTTP responder ---------------------------------------------------------------------

using test_common::reply;
using test_common::server_request;

reply respond(unsigned status, std::string body, std::string content_type = "application/json") {
    return test_common::answer(status, std::move(body), {{"Content-Type", std::move(content_type)}});
}

reply hang() { return test_common::reply_of(reply::hang); }

// Answers each request as `behave` says (the server is shared with the other suites).
class responder : public test_common::http_server {
public:
    responder(net::io_context& ioc, std::function<reply(server_request const&)> behave)
        : http_server(ioc, [b = std::move(behave)](server_request const& r, int) { return b(r); }) {}
};

// ---- helpers ----------------------------------------------------------------------------------------

using test_common::run_until;

using test_common::got;
using test_common::start_get;

using test_common::test_env;

struct creds_dir : test_common::temp_dir {
    creds_dir() : test_common::temp_dir("baton-creds") {}
};

got get(net::io_context& ioc, aws::credentials_provider& p) {
    auto g = start_get(p);
    REQUIRE(run_until(ioc, [&] { return g->done; }));
    return *g;
}



struct test_clock {
    std::shared_ptr<std::atomic<std::int64_t>> ticks = std::make_shared<std::atomic<std::int64_t>>(
        std::chrono::system_clock::time_point(std::chrono::sys_days{std::chrono::year{2026} / 5 / 1})
            .time_since_epoch()
            .count());
    std::chrono::system_clock::time_point now() const {
        return std::chrono::system_clock::time_point(std::chrono::system_clock::duration(ticks->load()));
    }
    std::function<std::chrono::system_clock::time_point()> fn() const {
        return [t = ticks] { return std::chrono::system_clock::time_point(std::chrono::system_clock::duration(t->load())); };
    }
    void advance(std::chrono::system_clock::duration d) const { *ticks += d.count(); }
};

std::string iso(std::chrono::system_clock::time_point t) {
    auto const secs = std::chrono::time_point_cast<std::chrono::seconds>(t);
    auto const day = std::chrono::floor<std::chrono::days>(secs);
    std::chrono::year_month_day const ymd{day};
    std::chrono::hh_mm_ss const hms{secs - day};
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02ld:%02ld:%02lldZ", int(ymd.year()), unsigned(ymd.month()),
                  unsigned(ymd.day()), long(hms.hours().count()), long(hms.minutes().count()),
                  static_cast<long long>(hms.seconds().count()));
    return buf;
}

std::string creds_json(std::string const& id, std::chrono::system_clock::time_point exp) {
    return R"({"Code":"Success","LastUpdated":"2026-05-01T00:00:00Z","Type":"AWS-HMAC","AccessKeyId":")" + id +
           R"(","SecretAccessKey":"secret-)" + id + R"(","Token":"token-)" + id + R"(","Expiration":")" + iso(exp) +
           R"("})";
}

std::string header(server_request const& r, std::string_view name) {
    auto const it = r.find(name);
    return it == r.end() ? std::string("<none>") : std::string(it->value());
}

using test_common::contains;

// Decodes an application/x-www-form-urlencoded body.
std::map<std::string, std::string> form(std::string_view body) {
    auto decode = [](std::string_view s) {
        std::string out;
        for (std::size_t i = 0; i < s.size(); ++i) {
            if (s[i] == '+') {
                out += ' ';
            } else if (s[i] == '%' && i + 2 < s.size()) {
                out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
                i += 2;
            } else {
                out += s[i];
            }
        }
        return out;
    };
    std::map<std::string, std::string> out;
    std::size_t pos = 0;
    while (pos <= body.size()) {
        auto const amp = body.find('&', pos);
        auto const pair = body.substr(pos, amp == std::string_view::npos ? std::string_view::npos : amp - pos);
        auto const eq = pair.find('=');
        out[decode(pair.substr(0, eq))] = eq == std::string_view::npos ? "" : decode(pair.substr(eq + 1));
        if (amp == std::string_view::npos) break;
        pos = amp + 1;
    }
    return out;
}

std::string sts_ok(std::string const& id, std::chrono::system_clock::time_point exp) {
    return R"(<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>system:serviceaccount:ns:sa</SubjectFromWebIdentityToken>
    <Audience>sts.amazonaws.com</Audience>
    <Credentials>
      <SessionToken>token-)" + id + R"(</SessionToken>
      <SecretAccessKey>secret-)" + id + R"(</SecretAccessKey>
      <Expiration>)" + iso(exp) + R"(</Expiration>
      <AccessKeyId>)" + id + R"(</AccessKeyId>
    </Credentials>
    <AssumedRoleUser><Arn>arn:aws:sts::1:assumed-role/r/s</Arn><AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>req-ok</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>
)";
}

std::string assume_role_ok(std::string const& id, std::chrono::system_clock::time_point exp) {
    return R"(<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <AssumedRoleUser><Arn>arn:aws:sts::1:assumed-role/r/s</Arn><AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser>
    <Credentials>
      <AccessKeyId>)" + id + R"(</AccessKeyId>
      <SecretAccessKey>secret-)" + id + R"(</SecretAccessKey>
      <SessionToken>token-)" + id + R"(</SessionToken>
      <Expiration>)" + iso(exp) + R"(</Expiration>
    </Credentials>
    <PackedPolicySize>6</PackedPolicySize>
  </AssumeRoleResult>
  <ResponseMetadata><RequestId>req-ok</RequestId></ResponseMetadata>
</AssumeRoleResponse>
)";
}

// The key id an AWS4-HMAC-SHA256 Authorization names, and its scope (`date/region/service/aws4_request`).
std::pair<std::string, std::string> signed_by(server_request const& r) {
    auto const auth = header(r, "Authorization");
    auto const at = auth.find("Credential=");
    if (!auth.starts_with("AWS4-HMAC-SHA256 ") || at == std::string::npos) return {"<unsigned>", ""};
    auto const cred = auth.substr(at + 11, auth.find(',', at) - at - 11);
    auto const slash = cred.find('/');
    auto scope = cred.substr(slash + 1);
    return {cred.substr(0, slash), scope.substr(scope.find('/') + 1)};
}

std::string sts_error(std::string const& code, std::string const& message) {
    return R"(<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>)" + code + "</Code><Message>" + message + R"(</Message></Error>
  <RequestId>req-err</RequestId>
</ErrorResponse>
)";
}

// An instance metadata service: hands out a token on PUT and answers GETs only when they carry it.
struct imds_script {
    unsigned token_status = 200; // for the PUT
    bool token_hangs = false;
    std::string role = "baton-role";
    unsigned role_status = 200;
    std::string creds_body;
    bool expect_token = true; // false: IMDSv1, GETs come without a token
};

std::function<reply(server_request const&)> imds(std::shared_ptr<imds_script> s) {
    return [s](server_request const& r) -> reply {
        std::string const token = "imds-session-token-1";
        if (r.method() == bhttp::verb::put && r.target() == "/latest/api/token") {
            if (header(r, "X-aws-ec2-metadata-token-ttl-seconds") != "21600") return respond(400, "bad ttl", "text/plain");
            if (s->token_hangs) return hang();
            return respond(s->token_status, s->token_status == 200 ? token : "", "text/plain");
        }
        if (r.method() != bhttp::verb::get) return respond(405, "", "text/plain");
        auto const got_token = header(r, "X-aws-ec2-metadata-token");
        if (s->expect_token ? got_token != token : got_token != "<none>") return respond(401, "", "text/plain");
        if (r.target() == "/latest/meta-data/iam/security-credentials/")
            return respond(s->role_status, s->role + "\n", "text/plain");
        if (r.target() == "/latest/meta-data/iam/security-credentials/" + s->role) return respond(200, s->creds_body);
        return respond(404, "", "text/plain");
    };
}

} // namespace

TEST_SUITE("credentials over HTTP") {

// ---- container ------------------------------------------------------------------------------------------

TEST_CASE("container: FULL_URI on loopback, the token file is read again at every fetch") {
    net::io_context ioc;
    creds_dir dir;
    auto const exp = std::chrono::system_clock::now() + 6h;
    responder server(ioc, [&](server_request const&) { return respond(200, creds_json("ASIACONTAINER", exp)); });
    test_env env;
    env.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", server.url("/v2/credentials/abc?x=1"));
    auto const token_file = dir.write("token", "pod-identity-token-1\n");
    env.set("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token_file);
    env.set("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ignored-when-the-file-is-set");
    auto p = aws::container_credentials(ioc.get_executor(), env.lookup());
    CHECK(p.name() == "container");
    auto g = get(ioc, p);
    REQUIRE_MESSAGE(!g.ec, g.fc.diag.message);
    CHECK(g.fc.value->access_key_id == "ASIACONTAINER");
    CHECK(g.fc.value->secret_access_key == "secret-ASIACONTAINER");
    CHECK(g.fc.value->session_token == "token-ASIACONTAINER");
    CHECK(*g.fc.value->expiration == std::chrono::time_point_cast<std::chrono::seconds>(exp));
    CHECK(g.fc.source == "container");
    auto seen = server.seen();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].method() == bhttp::verb::get);
    CHECK(seen[0].target() == "/v2/credentials/abc?x=1");
    CHECK(header(seen[0], "Authorization") == "pod-identity-token-1");
    CHECK(header(seen[0], "Accept") == "application/json");

    dir.write("token", "pod-identity-token-2");
    p.invalidate();
    REQUIRE_FALSE(get(ioc, p).ec);
    seen = server.seen();
    REQUIRE(seen.size() == 2);
    CHECK(header(seen[1], "Authorization") == "pod-identity-token-2");

    // Without a file, the variable; without either, no header.
    env.unset("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    p.invalidate();
    REQUIRE_FALSE(get(ioc, p).ec);
    CHECK(header(server.seen().back(), "Authorization") == "ignored-when-the-file-is-set");
    env.unset("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    p.invalidate();
    REQUIRE_FALSE(get(ioc, p).ec);
    CHECK(header(server.seen().back(), "Authorization") == "<none>");
}

TEST_CASE("container: refusals name the status and never echo the token") {
    net::io_context ioc;
    responder server(ioc, [](server_request const& r) {
        return respond(403, R"({"code":"AccessDenied","message":"token )" + header(r, "Authorization") +
                                R"( is not valid"})");
    });
    test_env env;
    env.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", server.url("/creds"));
    env.set("AWS_CONTAINER_AUTHORIZATION_TOKEN", "very-secret-container-token");
    auto p = aws::container_credentials(ioc.get_executor(), env.lookup());
    auto g = get(ioc, p);
    CHECK(g.ec == errc::auth_failed);
    CHECK(g.fc.diag.http_status == 403);
    CHECK(g.fc.diag.service_code == "AccessDenied");
    CHECK(g.fc.diag.message ==
          "container: GET " + server.url() + " answered HTTP 403 AccessDenied: token *** is not valid (check AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE "
              "/ AWS_CONTAINER_AUTHORIZATION_TOKEN)");
    CHECK_FALSE(contains(g.fc.diag.message, "very-secret-container-token"));
}

TEST_CASE("container: hosts, URIs and tokens that are refused before any request") {
    net::io_context ioc;
    test_env env;
    auto p = aws::container_credentials(ioc.get_executor(), env.lookup());
    auto g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message ==
          "no AWS credentials found; tried: container (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI not set)");

    env.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://example.com/creds");
    g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message == "container: AWS_CONTAINER_CREDENTIALS_FULL_URI names host 'example.com' over plain "
                               "http; use https, or a loopback, 169.254.170.2, 169.254.170.23 or fd00:ec2::23 address");
    env.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.0.0.1/creds");
    CHECK(get(ioc, p).ec == errc::no_credentials);
    env.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", "ftp://127.0.0.1/creds");
    g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    CHECK(contains(g.fc.diag.message, "AWS_CONTAINER_CREDENTIALS_FULL_URI: invalid endpoint URL: unsupported scheme"));

    // RELATIVE_URI wins over FULL_URI (shown by its own error).
    env.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:1/creds");
    env.set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "no-leading-slash");
    g = get(ioc, p);
    CHECK(g.fc.diag.message == "container: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI must be a path starting with '/'");
    env.unset("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");

    // A token that would split the request is refused, and not echoed.
    env.set("AWS_CONTAINER_AUTHORIZATION_TOKEN", "abc\r\nX-Evil: 1");
    g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message ==
          "container: AWS_CONTAINER_AUTHORIZATION_TOKEN holds line breaks or control characters");
    creds_dir dir;
    env.set("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", (dir.path / "missing").string());
    g = get(ioc, p);
    CHECK(g.fc.diag.message == "container: AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE '" + (dir.path / "missing").string() +
                                   "': no such file");
}

TEST_CASE("container: malformed, incomplete and oversized responses are invalid_response naming the field") {
    net::io_context ioc;
    auto const exp = iso(std::chrono::system_clock::now() + 1h);
    std::string body;
    unsigned status = 200;
    responder server(ioc, [&](server_request const&) { return respond(status, body); });
    test_env env;
    env.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", server.url("/creds"));
    auto p = aws::container_credentials(ioc.get_executor(), env.lookup());
    std::string const origin = "container: GET " + server.url() + ": ";
    struct bad_case {
        std::string body;
        std::string expected;
    };
    std::vector<bad_case> const cases{
        {"{not json", "the response is not valid JSON ("},
        {"[1,2]", "the response is not a JSON object"},
        {R"({"AccessKeyId":"A","SecretAccessKey":"S","Expiration":")" + exp + R"("})",
         "the response has no 'Token' string"},
        {R"({"AccessKeyId":"","SecretAccessKey":"S","Token":"T","Expiration":")" + exp + R"("})",
         "the response has no 'AccessKeyId' string"},
        {R"({"AccessKeyId":"A","SecretAccessKey":7,"Token":"T","Expiration":")" + exp + R"("})",
         "the response has no 'SecretAccessKey' string"},
        {R"({"AccessKeyId":"A","SecretAccessKey":"S","Token":"T","Expiration":"soon"})",
         "the response's 'Expiration' ('soon') is not an ISO 8601 time"},
        {R"({"AccessKeyId":"A B","SecretAccessKey":"S","Token":"T","Expiration":")" + exp + R"("})",
         "the response's credentials are unusable: the access key id contains white space or control characters"},
        {std::string(70 * 1024, ' '), "the response body from"},
    };
    for (auto const& c : cases) {
        body = c.body;
        p.invalidate();
        auto g = get(ioc, p);
        CHECK_MESSAGE(g.ec == errc::invalid_response, c.expected);
        CHECK_MESSAGE(contains(g.fc.diag.message, c.expected), g.fc.diag.message);
        CHECK(g.fc.diag.message.starts_with("container: GET "));
        CHECK_FALSE(contains(g.fc.diag.message, "\"S\""));
    }
    CHECK(contains(get(ioc, p).fc.diag.message, "exceeds client_options::max_response_body_bytes (65536 bytes)"));
    body = "{}";
    for (auto [st, ec] : std::vector<std::pair<unsigned, baton::errc>>{
             {500, errc::service_unavailable}, {503, errc::service_unavailable}, {429, errc::throttled},
             {401, errc::auth_failed}, {404, errc::invalid_response}}) {
        status = st;
        p.invalidate();
        auto g = get(ioc, p);
        CHECK(g.ec == ec);
        CHECK(g.fc.diag.message == origin.substr(0, origin.size() - 2) + " answered HTTP " + std::to_string(st) +
                                       (st == 401 ? " (check AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE / "
                                                    "AWS_CONTAINER_AUTHORIZATION_TOKEN)"
                                                  : ""));
    }
    CHECK(baton::is_retryable(get(ioc, p).ec) == false); // 404: not transient
}

// ---- instance metadata ------------------------------------------------------------------------------

TEST_CASE("IMDSv2: token first, then the role name, then its credentials, each with the token") {
    net::io_context ioc;
    auto script = std::make_shared<imds_script>();
    auto const exp = std::chrono::system_clock::now() + 6h;
    script->creds_body = creds_json("ASIAINSTANCE", exp);
    responder server(ioc, imds(script));
    test_env env;
    env.set("AWS_EC2_METADATA_SERVICE_ENDPOINT", server.url("/"));
    auto p = aws::instance_credentials(ioc.get_executor(), env.lookup());
    CHECK(p.name() == "instance metadata");
    auto g = get(ioc, p);
    REQUIRE_MESSAGE(!g.ec, g.fc.diag.message);
    CHECK(g.fc.value->access_key_id == "ASIAINSTANCE");
    CHECK(g.fc.value->session_token == "token-ASIAINSTANCE");
    CHECK(g.fc.source == "instance metadata");
    auto const seen = server.seen();
    REQUIRE(seen.size() == 3);
    CHECK(seen[0].method() == bhttp::verb::put);
    CHECK(seen[0].target() == "/latest/api/token");
    CHECK(seen[1].target() == "/latest/meta-data/iam/security-credentials/");
    CHECK(seen[2].target() == "/latest/meta-data/iam/security-credentials/baton-role");
    for (std::size_t i = 1; i < 3; ++i) CHECK(header(seen[i], "X-aws-ec2-metadata-token") == "imds-session-token-1");
}

TEST_CASE("IMDS: 403/404/405 on the token request fall back to IMDSv1, unless IMDSv1 is disabled") {
    for (unsigned status : {403u, 404u, 405u}) {
        CAPTURE(status);
        net::io_context ioc;
        auto script = std::make_shared<imds_script>();
        script->token_status = status;
        script->expect_token = false;
        script->creds_body = creds_json("ASIAV1", std::chrono::system_clock::now() + 1h);
        responder server(ioc, imds(script));
        test_env env;
        env.set("AWS_EC2_METADATA_SERVICE_ENDPOINT", server.url());
        auto p = aws::instance_credentials(ioc.get_executor(), env.lookup());
        auto g = get(ioc, p);
        REQUIRE_MESSAGE(!g.ec, g.fc.diag.message);
        CHECK(g.fc.value->access_key_id == "ASIAV1");
        auto const seen = server.seen();
        REQUIRE(seen.size() == 3);
        CHECK(header(seen[2], "X-aws-ec2-metadata-token") == "<none>");

        env.set("AWS_EC2_METADATA_V1_DISABLED", "true");
        p.invalidate();
        g = get(ioc, p);
        CHECK(g.ec == errc::auth_failed);
        CHECK(g.fc.diag.message == "instance metadata: the IMDSv2 token request was refused with HTTP " +
                                       std::to_string(status) +
                                       " and AWS_EC2_METADATA_V1_DISABLED forbids the IMDSv1 fallback");
        CHECK(server.requests() == 4); // only the PUT
    }
}

TEST_CASE("IMDS: an unanswered token request falls back to IMDSv1 (hop limit), a 400 does not") {
    net::io_context ioc;
    auto script = std::make_shared<imds_script>();
    script->token_hangs = true;
    script->expect_token = false;
    script->creds_body = creds_json("ASIAHOP", std::chrono::system_clock::now() + 1h);
    responder server(ioc, imds(script));
    test_env env;
    env.set("AWS_EC2_METADATA_SERVICE_ENDPOINT", server.url());
    aws::provider_options opts;
    opts.metadata_timeout = 300ms;
    auto p = aws::instance_credentials(ioc.get_executor(), env.lookup(), opts);
    auto g = get(ioc, p);
    REQUIRE_MESSAGE(!g.ec, g.fc.diag.message);
    CHECK(g.fc.value->access_key_id == "ASIAHOP");

    env.set("AWS_EC2_METADATA_V1_DISABLED", "TRUE");
    p.invalidate();
    g = get(ioc, p);
    CHECK(g.ec == errc::timeout);
    CHECK(g.fc.diag.message.starts_with("instance metadata: IMDSv2 token request: no complete response from "));
    CHECK(g.fc.diag.message.ends_with("; IMDSv1 is disabled by AWS_EC2_METADATA_V1_DISABLED"));

    script->token_hangs = false;
    script->token_status = 400;
    env.unset("AWS_EC2_METADATA_V1_DISABLED");
    auto const before = server.requests();
    p.invalidate();
    g = get(ioc, p);
    CHECK(g.ec == errc::invalid_argument);
    CHECK(g.fc.diag.message == "instance metadata: the IMDSv2 token request was refused with HTTP 400 (bad TTL "
                               "header?); not falling back to IMDSv1");
    CHECK(server.requests() == before + 1);
}

TEST_CASE("IMDS: a 200 carrying an error document, no role, malformed answers") {
    net::io_context ioc;
    auto script = std::make_shared<imds_script>();
    script->creds_body = R"({"Code":"AssumeRoleUnauthorizedAccess","Message":"EC2 cannot assume the role baton-role.",)"
                         R"("LastUpdated":"2026-05-01T00:00:00Z"})";
    responder server(ioc, imds(script));
    test_env env;
    env.set("AWS_EC2_METADATA_SERVICE_ENDPOINT", server.url());
    auto p = aws::instance_credentials(ioc.get_executor(), env.lookup());
    auto g = get(ioc, p);
    CHECK(g.ec == errc::auth_failed);
    CHECK(g.fc.diag.service_code == "AssumeRoleUnauthorizedAccess");
    CHECK(g.fc.diag.message == "instance metadata: IMDSv2 credentials of role 'baton-role': the endpoint answered "
                               "with Code 'AssumeRoleUnauthorizedAccess': EC2 cannot assume the role baton-role.");

    script->creds_body = R"({"Code":"Success","AccessKeyId":"A","SecretAccessKey":"S","Token":"T"})";
    p.invalidate();
    g = get(ioc, p);
    CHECK(g.ec == errc::invalid_response);
    CHECK(g.fc.diag.message ==
          "instance metadata: IMDSv2 credentials of role 'baton-role': the response has no 'Expiration' string");

    script->role_status = 404;
    p.invalidate();
    g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message == "no AWS credentials found; tried: instance metadata (no IAM role is attached to this "
                               "instance (HTTP 404 from IMDSv2))");

    env.set("AWS_EC2_METADATA_DISABLED", "true");
    p.invalidate();
    auto const before = server.requests();
    g = get(ioc, p);
    CHECK(g.fc.diag.message == "no AWS credentials found; tried: instance metadata (AWS_EC2_METADATA_DISABLED is true)");
    CHECK(server.requests() == before);
}

// ---- web identity ------------------------------------------------------------------------------------

TEST_CASE("web identity: the STS form, the token file read again at each refresh") {
    net::io_context ioc;
    creds_dir dir;
    test_clock clock;
    int issued = 0;
    responder sts(ioc, [&](server_request const&) {
        ++issued;
        return respond(200, sts_ok("ASIAWEB" + std::to_string(issued), clock.now() + 1h), "text/xml");
    });
    test_env env;
    auto const token_file = dir.write("token", "eyJhbGciOi.first-token.sig\n");
    env.set("AWS_WEB_IDENTITY_TOKEN_FILE", token_file);
    env.set("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/baton role");
    env.set("AWS_ROLE_SESSION_NAME", "baton-test");
    env.set("AWS_ENDPOINT_URL_STS", sts.url());
    env.set("AWS_ENDPOINT_URL", "http://127.0.0.1:1"); // the service-specific variable wins
    aws::provider_options opts;
    opts.now = clock.fn();
    opts.web_identity_duration = 3600s;
    auto p = aws::web_identity_credentials(ioc.get_executor(), env.lookup(), opts);
    auto g = get(ioc, p);
    REQUIRE_MESSAGE(!g.ec, g.fc.diag.message);
    CHECK(g.fc.value->access_key_id == "ASIAWEB1");
    CHECK(g.fc.value->secret_access_key == "secret-ASIAWEB1");
    CHECK(g.fc.value->session_token == "token-ASIAWEB1");
    CHECK(*g.fc.value->expiration == std::chrono::time_point_cast<std::chrono::seconds>(clock.now() + 1h));
    auto seen = sts.seen();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].method() == bhttp::verb::post);
    CHECK(seen[0].target() == "/");
    CHECK(header(seen[0], "Content-Type") == "application/x-www-form-urlencoded; charset=utf-8");
    CHECK(header(seen[0], "Authorization") == "<none>"); // not signed
    auto f = form(seen[0].body());
    CHECK(f["Action"] == "AssumeRoleWithWebIdentity");
    CHECK(f["Version"] == "2011-06-15");
    CHECK(f["RoleArn"] == "arn:aws:iam::123456789012:role/baton role");
    CHECK(contains(seen[0].body(), "RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fbaton%20role"));
    CHECK(f["RoleSessionName"] == "baton-test");
    CHECK(f["WebIdentityToken"] == "eyJhbGciOi.first-token.sig");
    CHECK(f["DurationSeconds"] == "3600");
    CHECK(f.size() == 6);

    // The token rotates; the refresh (mandatory window) sends the new one.
    dir.write("token", "eyJhbGciOi.second-token.sig");
    clock.advance(51min);
    CHECK(p.usable_now() == nullptr);
    g = get(ioc, p);
    REQUIRE_FALSE(g.ec);
    CHECK(g.fc.value->access_key_id == "ASIAWEB2");
    seen = sts.seen();
    REQUIRE(seen.size() == 2);
    CHECK(form(seen[1].body())["WebIdentityToken"] == "eyJhbGciOi.second-token.sig");

    // Without a session name one is made up; AWS_ENDPOINT_URL serves when the STS-specific one is unset.
    env.unset("AWS_ROLE_SESSION_NAME");
    env.unset("AWS_ENDPOINT_URL_STS");
    env.set("AWS_ENDPOINT_URL", sts.url("/"));
    p.invalidate();
    REQUIRE_FALSE(get(ioc, p).ec);
    seen = sts.seen();
    REQUIRE(seen.size() == 3);
    CHECK(seen[2].target() == "/");
    CHECK(form(seen[2].body())["RoleSessionName"].starts_with("baton-session-"));
}

TEST_CASE("web identity: STS errors are classified and never echo the token") {
    net::io_context ioc;
    creds_dir dir;
    unsigned status = 400;
    std::string body;
    responder sts(ioc, [&](server_request const&) { return respond(status, body, "text/xml"); });
    test_env env;
    env.set("AWS_WEB_IDENTITY_TOKEN_FILE", dir.write("token", "super-secret-jwt-token"));
    env.set("AWS_ROLE_ARN", "arn:aws:iam::1:role/r");
    env.set("AWS_ENDPOINT_URL_STS", sts.url());
    auto p = aws::web_identity_credentials(ioc.get_executor(), env.lookup());
    std::string const where = "web identity: STS AssumeRoleWithWebIdentity at " + sts.url();

    body = sts_error("InvalidIdentityToken", "Token super-secret-jwt-token has expired or is malformed");
    auto g = get(ioc, p);
    CHECK(g.ec == errc::auth_failed);
    CHECK(g.fc.diag.http_status == 400);
    CHECK(g.fc.diag.service_code == "InvalidIdentityToken");
    CHECK(g.fc.diag.request_id == "req-err");
    CHECK(g.fc.diag.message == where + " refused: HTTP 400 InvalidIdentityToken: Token *** has expired or is "
                                       "malformed (check the token file AWS_WEB_IDENTITY_TOKEN_FILE and the role's "
                                       "OIDC provider)");
    CHECK_FALSE(contains(g.fc.diag.message, "super-secret-jwt-token"));

    for (auto const& row : std::vector<std::tuple<unsigned, std::string, baton::errc>>{
             {400, "Throttling", errc::throttled},
             {400, "IDPCommunicationError", errc::service_unavailable},
             {403, "AccessDenied", errc::auth_failed},
             {400, "ValidationError", errc::invalid_argument},
             {503, "", errc::service_unavailable}}) {
        auto const& st = std::get<0>(row);
        auto const& code = std::get<1>(row);
        auto const& ec = std::get<2>(row);
        status = st;
        body = code.empty() ? std::string("<html>unavailable</html>") : sts_error(code, "m");
        p.invalidate();
        g = get(ioc, p);
        CHECK_MESSAGE(g.ec == ec, code);
    }

    status = 200;
    std::string const exp = iso(std::chrono::system_clock::now() + 1h);
    struct bad_case {
        std::string body;
        std::string expected;
    };
    for (auto const& c : std::vector<bad_case>{
             {"<oops", where + ": malformed XML at byte "},
             {sts_error("InvalidIdentityToken", "x"), where + " refused: HTTP 200 InvalidIdentityToken: x"},
             {"<Other/>", where + ": unexpected root element 'Other'"},
             {"<AssumeRoleWithWebIdentityResponse/>", where + ": the response has no AssumeRoleWithWebIdentityResult/Credentials"},
             {"<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>A</AccessKeyId>"
              "<SecretAccessKey>S</SecretAccessKey><Expiration>" + exp + "</Expiration></Credentials>"
              "</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>",
              where + ": the response has no Credentials/SessionToken"},
             {"<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>A</AccessKeyId>"
              "<SecretAccessKey>S</SecretAccessKey><SessionToken>T</SessionToken><Expiration>later</Expiration>"
              "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>",
              where + ": Credentials/Expiration ('later') is not an ISO 8601 time"},
         }) {
        body = c.body;
        p.invalidate();
        g = get(ioc, p);
        CHECK_MESSAGE(g.ec != error_code{}, c.expected);
        CHECK_MESSAGE(g.fc.diag.message.starts_with(c.expected), g.fc.diag.message);
    }
}

TEST_CASE("web identity: configuration problems") {
    net::io_context ioc;
    creds_dir dir;
    test_env env;
    auto p = aws::web_identity_credentials(ioc.get_executor(), env.lookup());
    auto g = get(ioc, p);
    CHECK(g.fc.diag.message == "no AWS credentials found; tried: web identity (AWS_WEB_IDENTITY_TOKEN_FILE not set)");
    env.set("AWS_WEB_IDENTITY_TOKEN_FILE", (dir.path / "token").string());
    g = get(ioc, p);
    CHECK(g.fc.diag.message == "no AWS credentials found; tried: web identity (AWS_WEB_IDENTITY_TOKEN_FILE is set but "
                               "AWS_ROLE_ARN is not)");
    env.set("AWS_ROLE_ARN", "arn:aws:iam::1:role/r");
    test_common::refused_port const sts;
    env.set("AWS_ENDPOINT_URL_STS", sts.url());
    g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message == "web identity: the web identity token file '" + (dir.path / "token").string() +
                                   "' (AWS_WEB_IDENTITY_TOKEN_FILE) does not exist");
    dir.write("token", "\n");
    g = get(ioc, p);
    CHECK(g.fc.diag.message == "web identity: the web identity token file '" + (dir.path / "token").string() +
                                   "' is empty");
    dir.write("token", "jwt");
    env.set("AWS_ENDPOINT_URL_STS", "http://user:pw@127.0.0.1:1/");
    g = get(ioc, p);
    CHECK(g.ec == errc::invalid_argument);
    CHECK(g.fc.diag.message == "web identity: cannot build the STS endpoint: AWS_ENDPOINT_URL_STS: invalid endpoint "
                               "URL: it must not carry user information (credentials come from the signer) (fix or "
                               "unset AWS_ENDPOINT_URL_STS)");
    CHECK_FALSE(contains(g.fc.diag.message, "pw"));
}

TEST_CASE("profile with role_arn and web_identity_token_file assumes the role through STS") {
    net::io_context ioc;
    creds_dir dir;
    responder sts(ioc, [&](server_request const&) {
        return respond(200, sts_ok("ASIAPROFILE", std::chrono::system_clock::now() + 1h), "text/xml");
    });
    test_env env;
    env.set("HOME", dir.path.string());
    dir.write("jwt", "profile-jwt");
    dir.write(".aws/config", "[profile irsa]\nrole_arn = arn:aws:iam::1:role/from-profile\n"
                             "web_identity_token_file = ~/jwt\nrole_session_name = from-profile\n");
    env.set("AWS_PROFILE", "irsa");
    env.set("AWS_ENDPOINT_URL_STS", sts.url());
    auto p = aws::profile_credentials(ioc.get_executor(), {}, env.lookup());
    auto g = get(ioc, p);
    REQUIRE_MESSAGE(!g.ec, g.fc.diag.message);
    CHECK(g.fc.value->access_key_id == "ASIAPROFILE");
    CHECK(g.fc.source == "profile 'irsa'");
    auto const f = form(sts.seen().at(0).body());
    CHECK(f.at("RoleArn") == "arn:aws:iam::1:role/from-profile");
    CHECK(f.at("RoleSessionName") == "from-profile");
    CHECK(f.at("WebIdentityToken") == "profile-jwt");
}

TEST_CASE("profile: a chain of roles, each assumed through STS with the credentials before it, refreshed whole") {
    net::io_context ioc;
    creds_dir dir;
    test_clock clock;
    int issued = 0;
    responder sts(ioc, [&](server_request const&) {
        ++issued;
        return respond(200, assume_role_ok("ASIAROLE" + std::to_string(issued), clock.now() + 1h), "text/xml");
    });
    test_env env;
    env.set("HOME", dir.path.string());
    dir.write(".aws/credentials", "[base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = secret-base\n");
    dir.write(".aws/config", "[profile deploy]\nrole_arn = arn:aws:iam::1:role/deploy\nsource_profile = middle\n"
                             "role_session_name = nightly\nexternal_id = ext-42\nduration_seconds = 3600\n"
                             "region = eu-central-1\nservices = local\n"
                             "[profile middle]\nrole_arn = arn:aws:iam::1:role/middle\nsource_profile = base\n"
                             "[services local]\nsts =\n  endpoint_url = " + sts.url() + "\n");
    // The environment's keys are not used for a profile chosen in code, even to sign.
    env.set("AWS_ACCESS_KEY_ID", "AKIDENV");
    env.set("AWS_SECRET_ACCESS_KEY", "secret-env");
    aws::provider_options opts;
    opts.now = clock.fn();
    auto p = aws::default_chain(ioc.get_executor(), env.lookup(), opts, "deploy");
    auto g = get(ioc, p);
    REQUIRE_MESSAGE(!g.ec, g.fc.diag.message);
    CHECK(g.fc.source == "profile 'deploy'");
    CHECK(g.fc.value->access_key_id == "ASIAROLE2");
    CHECK(g.fc.value->session_token == "token-ASIAROLE2");
    CHECK(*g.fc.value->expiration == std::chrono::time_point_cast<std::chrono::seconds>(clock.now() + 1h));
    auto seen = sts.seen();
    REQUIRE(seen.size() == 2);
    // The inner role first, signed with the base profile's keys for STS in the profile's region.
    auto f = form(seen[0].body());
    CHECK(f["Action"] == "AssumeRole");
    CHECK(f["Version"] == "2011-06-15");
    CHECK(f["RoleArn"] == "arn:aws:iam::1:role/middle");
    CHECK(f["RoleSessionName"].starts_with("baton-session-"));
    CHECK(f.size() == 4);
    CHECK(signed_by(seen[0]) == std::pair<std::string, std::string>("AKIDBASE", "eu-central-1/sts/aws4_request"));
    CHECK(header(seen[0], "X-Amz-Security-Token") == "<none>");
    CHECK(header(seen[0], "Content-Type") == "application/x-www-form-urlencoded; charset=utf-8");
    // Then the outer one, signed with what the first gave, with the profile's settings.
    f = form(seen[1].body());
    CHECK(f["RoleArn"] == "arn:aws:iam::1:role/deploy");
    CHECK(f["RoleSessionName"] == "nightly");
    CHECK(f["ExternalId"] == "ext-42");
    CHECK(f["DurationSeconds"] == "3600");
    CHECK(signed_by(seen[1]).first == "ASIAROLE1");
    CHECK(header(seen[1], "X-Amz-Security-Token") == "token-ASIAROLE1");

    // Inside the mandatory window the whole chain runs again.
    clock.advance(51min);
    CHECK(p.usable_now() == nullptr);
    g = get(ioc, p);
    REQUIRE_FALSE(g.ec);
    CHECK(g.fc.value->access_key_id == "ASIAROLE4");
    CHECK(sts.requests() == 4);
}

TEST_CASE("profile: credential_source takes the first credentials from the environment or the container") {
    net::io_context ioc;
    creds_dir dir;
    responder sts(ioc, [&](server_request const&) {
        return respond(200, assume_role_ok("ASIAROLE", std::chrono::system_clock::now() + 1h), "text/xml");
    });
    responder container(ioc, [](server_request const&) {
        return respond(200, creds_json("ASIACONTAINER", std::chrono::system_clock::now() + 6h));
    });
    test_env env;
    env.set("HOME", dir.path.string());
    env.set("AWS_ENDPOINT_URL_STS", sts.url());
    auto const cfg = dir.write(".aws/config", "[profile env]\nrole_arn = arn:aws:iam::1:role/e\ncredential_source = Environment\n"
                             "[profile ecs]\nrole_arn = arn:aws:iam::1:role/c\ncredential_source = EcsContainer\n");
    auto p = aws::profile_credentials(ioc.get_executor(), "env", env.lookup());
    auto g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message == "profile 'env': credential_source Environment (" + cfg +
                                   " line 3) gave no credentials: AWS_ACCESS_KEY_ID not set");
    env.set("AWS_ACCESS_KEY_ID", "AKIDENV");
    env.set("AWS_SECRET_ACCESS_KEY", "secret-env");
    p.invalidate();
    g = get(ioc, p);
    REQUIRE_MESSAGE(!g.ec, g.fc.diag.message);
    CHECK(g.fc.value->access_key_id == "ASIAROLE");
    CHECK(signed_by(sts.seen().at(0)).first == "AKIDENV");
    CHECK(signed_by(sts.seen().at(0)).second == "us-east-1/sts/aws4_request"); // no region anywhere: us-east-1

    env.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", container.url("/c"));
    p = aws::profile_credentials(ioc.get_executor(), "ecs", env.lookup());
    g = get(ioc, p);
    REQUIRE_MESSAGE(!g.ec, g.fc.diag.message);
    CHECK(signed_by(sts.seen().at(1)).first == "ASIACONTAINER");
    CHECK(header(sts.seen().at(1), "X-Amz-Security-Token") == "token-ASIACONTAINER");
}

TEST_CASE("profile: STS refusing a role is one clear error that never shows a secret") {
    net::io_context ioc;
    creds_dir dir;
    unsigned status = 403;
    std::string body = sts_error("AccessDenied", "User: arn:aws:iam::1:user/me is not authorized to perform: "
                                                 "sts:AssumeRole on resource: arn:aws:iam::1:role/deploy");
    responder sts(ioc, [&](server_request const&) { return respond(status, body, "text/xml"); });
    test_env env;
    env.set("HOME", dir.path.string());
    env.set("AWS_ENDPOINT_URL_STS", sts.url());
    auto const cfg = dir.write(".aws/config", "[profile deploy]\nrole_arn = arn:aws:iam::1:role/deploy\n"
                                              "source_profile = base\n[profile base]\n"
                                              "aws_access_key_id = AKIDBASE\naws_secret_access_key = secret-base\n"
                                              "aws_session_token = token-base\n");
    env.set("AWS_PROFILE", "deploy");
    auto p = aws::default_chain(ioc.get_executor(), env.lookup());
    auto g = get(ioc, p);
    CHECK(g.ec == errc::auth_failed);
    CHECK(g.fc.diag.http_status == 403);
    CHECK(g.fc.diag.service_code == "AccessDenied");
    CHECK(g.fc.diag.message ==
          "profile 'deploy': STS AssumeRole of arn:aws:iam::1:role/deploy (" + cfg + " line 2) at " +
              sts.url() + " refused: HTTP 403 AccessDenied: User: arn:aws:iam::1:user/me is not authorized to perform: "
              "sts:AssumeRole on resource: arn:aws:iam::1:role/deploy (check the role's trust policy and that the "
              "source identity may call sts:AssumeRole on it)");
    // A service that echoes what it was sent must not carry a secret into the message.
    status = 400;
    body = sts_error("InvalidClientTokenId", "The security token token-base secret-base is invalid");
    p.invalidate();
    g = get(ioc, p);
    CHECK(g.ec == errc::auth_failed);
    CHECK_FALSE(contains(g.fc.diag.message, "token-base"));
    CHECK_FALSE(contains(g.fc.diag.message, "secret-base"));
    CHECK(contains(g.fc.diag.message, "(the source credentials were refused: check the source profile's keys)"));
    for (auto const& row : std::vector<std::tuple<unsigned, std::string, baton::errc>>{
             {400, "Throttling", errc::throttled}, {503, "", errc::service_unavailable},
             {400, "RegionDisabledException", errc::auth_failed}}) {
        std::string const code = std::get<1>(row); // a copy: clang 14 lambdas cannot capture bindings
        status = std::get<0>(row);
        body = code.empty() ? std::string("unavailable") : sts_error(code, "m");
        p.invalidate();
        CHECK_MESSAGE(get(ioc, p).ec == std::get<2>(row), code);
    }
    status = 200;
    body = "<AssumeRoleResponse><AssumeRoleResult/></AssumeRoleResponse>";
    p.invalidate();
    g = get(ioc, p);
    CHECK(g.ec == errc::invalid_response);
    CHECK(g.fc.diag.message.ends_with(" at " + sts.url() + ": the response has no AssumeRoleResult/Credentials"));
}

TEST_CASE("default chain: keys in the environment win under AWS_PROFILE, not under a profile chosen in code") {
    net::io_context ioc;
    creds_dir dir;
    responder sts(ioc, [&](server_request const&) {
        return respond(200, assume_role_ok("ASIAROLE", std::chrono::system_clock::now() + 1h), "text/xml");
    });
    test_env env;
    env.set("HOME", dir.path.string());
    env.set("AWS_ENDPOINT_URL_STS", sts.url());
    env.set("AWS_EC2_METADATA_DISABLED", "true");
    dir.write(".aws/config", "[profile deploy]\nrole_arn = arn:aws:iam::1:role/deploy\nsource_profile = base\n"
                             "[profile base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = s\n");
    env.set("AWS_ACCESS_KEY_ID", "AKIDENV");
    env.set("AWS_SECRET_ACCESS_KEY", "secret-env");
    env.set("AWS_PROFILE", "deploy");
    auto p = aws::default_chain(ioc.get_executor(), env.lookup());
    CHECK(get(ioc, p).fc.source == "environment");
    p = aws::default_chain(ioc.get_executor(), env.lookup(), {}, "deploy");
    auto g = get(ioc, p);
    CHECK(g.fc.source == "profile 'deploy'");
    CHECK(g.fc.value->access_key_id == "ASIAROLE");
    // A profile chosen in code that is not there is an error, not a fall-through to the environment.
    p = aws::default_chain(ioc.get_executor(), env.lookup(), {}, "ghost");
    g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message.starts_with("profile 'ghost': it is not in the shared files ("));
}

// ---- the default chain -------------------------------------------------------------------------------

TEST_CASE("default chain: the first configured source answers, later ones are not contacted") {
    net::io_context ioc;
    creds_dir dir;
    auto imds_script_ptr = std::make_shared<imds_script>();
    imds_script_ptr->creds_body = creds_json("ASIAINSTANCE", std::chrono::system_clock::now() + 6h);
    responder imds_server(ioc, imds(imds_script_ptr));
    responder container(ioc, [](server_request const&) {
        return respond(200, creds_json("ASIACONTAINER", std::chrono::system_clock::now() + 6h));
    });
    responder sts(ioc, [](server_request const&) {
        return respond(200, sts_ok("ASIAWEB", std::chrono::system_clock::now() + 1h), "text/xml");
    });
    test_env env;
    env.set("HOME", dir.path.string());
    env.set("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds_server.url());

    auto p = aws::default_chain(ioc.get_executor(), env.lookup());
    auto g = get(ioc, p);
    REQUIRE_MESSAGE(!g.ec, g.fc.diag.message);
    CHECK(g.fc.source == "instance metadata");

    env.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", container.url("/c"));
    p = aws::default_chain(ioc.get_executor(), env.lookup());
    g = get(ioc, p);
    REQUIRE_MESSAGE(!g.ec, g.fc.diag.message);
    CHECK(g.fc.source == "container");
    CHECK(g.fc.value->access_key_id == "ASIACONTAINER");

    dir.write(".aws/credentials", "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = s\n");
    p = aws::default_chain(ioc.get_executor(), env.lookup());
    CHECK(get(ioc, p).fc.source == "profile 'default'");

    env.set("AWS_WEB_IDENTITY_TOKEN_FILE", dir.write("jwt", "jwt"));
    env.set("AWS_ROLE_ARN", "arn:aws:iam::1:role/r");
    env.set("AWS_ENDPOINT_URL_STS", sts.url());
    p = aws::default_chain(ioc.get_executor(), env.lookup());
    CHECK(get(ioc, p).fc.source == "web identity");

    env.set("AWS_ACCESS_KEY_ID", "AKIDENV");
    env.set("AWS_SECRET_ACCESS_KEY", "s");
    p = aws::default_chain(ioc.get_executor(), env.lookup());
    CHECK(get(ioc, p).fc.source == "environment");

    CHECK(imds_server.requests() == 3);
    CHECK(container.requests() == 1);
    CHECK(sts.requests() == 1);
}

TEST_CASE("default chain: a configured source that fails stops the chain") {
    net::io_context ioc;
    creds_dir dir;
    auto script = std::make_shared<imds_script>();
    script->creds_body = creds_json("ASIAINSTANCE", std::chrono::system_clock::now() + 6h);
    responder imds_server(ioc, imds(script));
    responder container(ioc, [](server_request const&) { return respond(500, "{}"); });
    test_env env;
    env.set("HOME", dir.path.string());
    env.set("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds_server.url());
    env.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", container.url("/c"));
    auto p = aws::default_chain(ioc.get_executor(), env.lookup());
    auto g = get(ioc, p);
    CHECK(g.ec == errc::service_unavailable);
    CHECK(baton::is_retryable(g.ec));
    CHECK(g.fc.diag.message == "container: GET " + container.url() + " answered HTTP 500");
    CHECK(imds_server.requests() == 0);
}

TEST_CASE("default chain: nothing anywhere gives one error naming every source and why") {
    net::io_context ioc;
    creds_dir dir;
    test_env env;
    env.set("HOME", dir.path.string());
    test_common::refused_port const dead_port;
    auto const dead = dead_port.url();
    env.set("AWS_EC2_METADATA_SERVICE_ENDPOINT", dead);
    auto p = aws::default_chain(ioc.get_executor(), env.lookup());
    auto g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    auto const home = dir.path.string();
    std::string const expected_prefix =
        "no AWS credentials found; tried: environment (AWS_ACCESS_KEY_ID not set); web identity "
        "(AWS_WEB_IDENTITY_TOKEN_FILE not set); profile 'default' (" +
        home + "/.aws/credentials: no such file; " + home +
        "/.aws/config: no such file); container (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI not set); "
        "instance metadata (IMDSv2 token request: cannot connect to " +
        dead + ": ";
    CHECK_MESSAGE(g.fc.diag.message.starts_with(expected_prefix), g.fc.diag.message);
    CHECK(g.fc.diag.message.ends_with(")"));

    // A metadata service that never answers: the chain gives up after the short timeout.
    responder silent(ioc, [](server_request const&) { return hang(); });
    env.set("AWS_EC2_METADATA_SERVICE_ENDPOINT", silent.url());
    env.set("AWS_EC2_METADATA_V1_DISABLED", "true");
    aws::provider_options opts;
    opts.metadata_timeout = 200ms;
    p = aws::default_chain(ioc.get_executor(), env.lookup(), opts);
    auto const t0 = std::chrono::steady_clock::now();
    g = get(ioc, p);
    auto const took = std::chrono::steady_clock::now() - t0;
    CHECK(g.ec == errc::no_credentials);
    CHECK(contains(g.fc.diag.message, "instance metadata (IMDSv2 token request: no complete response from " +
                                          silent.url() + " in time (attempt timeout, 200 ms)"));
    CHECK(took >= 200ms);
    CHECK(took < 2s);
}

// ---- sharing and refreshing ---------------------------------------------------------------------------

TEST_CASE("concurrent callers share one fetch" * doctest::test_suite("concurrency")) {
    net::io_context ioc;
    responder server(ioc, [](server_request const&) {
        return respond(200, creds_json("ASIASHARED", std::chrono::system_clock::now() + 6h));
    });
    test_env env;
    env.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", server.url("/c"));
    auto p = aws::container_credentials(ioc.get_executor(), env.lookup());
    std::vector<std::shared_ptr<got>> all;
    for (int i = 0; i < 16; ++i) all.push_back(start_get(p));
    auto copy = p; // copies share the cache and the fetch
    all.push_back(start_get(copy));
    REQUIRE(run_until(ioc, [&] { return std::all_of(all.begin(), all.end(), [](auto const& g) { return g->done; }); }));
    CHECK(server.requests() == 1);
    CHECK(p.fetch_count() == 1);
    for (auto const& g : all) {
        CHECK_FALSE(g->ec);
        CHECK(g->fc.value == all.front()->fc.value);
    }
}

TEST_CASE("advisory window: one background refresh while usable_now keeps returning the current credentials" *
          doctest::test_suite("concurrency")) {
    net::io_context ioc;
    test_clock clock;
    int issued = 0;
    responder server(ioc, [&](server_request const&) {
        ++issued;
        return respond(200, creds_json("ASIAGEN" + std::to_string(issued), clock.now() + 60min));
    });
    test_env env;
    env.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", server.url("/c"));
    aws::provider_options opts;
    opts.now = clock.fn();
    auto p = aws::container_credentials(ioc.get_executor(), env.lookup(), opts);
    auto const first = get(ioc, p).fc.value;
    REQUIRE(first != nullptr);
    CHECK(first->access_key_id == "ASIAGEN1");

    clock.advance(46min); // 14 min left
    for (int i = 0; i < 50; ++i) CHECK(p.usable_now() == first);
    CHECK(p.fetch_count() == 2);
    auto during = start_get(p);
    REQUIRE(run_until(ioc, [&] { return during->done; }));
    CHECK(during->fc.value == first); // served at once, not after the refresh

    REQUIRE(run_until(ioc, [&] { return p.usable_now() != first; }));
    auto const second = p.usable_now();
    REQUIRE(second != nullptr);
    CHECK(second->access_key_id == "ASIAGEN2");
    CHECK(server.requests() == 2);
    CHECK(p.fetch_count() == 2);
}

TEST_CASE("mandatory window with a failing endpoint: the current credentials stay in use until they expire") {
    net::io_context ioc;
    test_clock clock;
    unsigned status = 200;
    responder server(ioc, [&](server_request const&) {
        return respond(status, status == 200 ? creds_json("ASIAONE", clock.now() + 30min) : "{}");
    });
    test_env env;
    env.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", server.url("/c"));
    aws::provider_options opts;
    opts.now = clock.fn();
    auto p = aws::container_credentials(ioc.get_executor(), env.lookup(), opts);
    auto const first = get(ioc, p).fc.value;
    REQUIRE(first != nullptr);
    status = 503;
    clock.advance(25min);
    CHECK(p.usable_now() == nullptr);
    auto g = get(ioc, p);
    REQUIRE_FALSE(g.ec);
    CHECK(g.fc.value == first);
    CHECK(g.fc.diag.message == "refreshing the credentials failed; the current ones (container) stay in use until they "
                               "expire: container: GET " + server.url() + " answered HTTP 503");
    CHECK(server.requests() == 2);
    clock.advance(6min);
    g = get(ioc, p);
    CHECK(g.ec == errc::service_unavailable);
    CHECK(g.fc.value == nullptr);
}

TEST_CASE("threads: usable_now and async_get from many threads during refreshes" * doctest::test_suite("concurrency")) {
    net::io_context server_ioc;
    test_clock clock;
    std::atomic<int> issued{0};
    responder server(server_ioc, [&](server_request const&) {
        int const n = ++issued;
        return respond(200, creds_json("ASIAT" + std::to_string(n), clock.now() + 20min));
    });
    auto const url = server.url("/c"); // before the server's thread touches it
    auto server_work = net::make_work_guard(server_ioc);
    std::thread server_thread([&] { server_ioc.run(); });

    net::io_context ioc;
    auto work = net::make_work_guard(ioc);
    std::vector<std::thread> runners;
    for (int i = 0; i < 2; ++i) runners.emplace_back([&] { ioc.run(); });

    auto env = aws::fixed_environment({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", url}});
    aws::provider_options opts;
    opts.now = clock.fn();
    opts.min_refresh_interval = 0s;
    opts.container_timeout = 60s; // a slow (sanitized, loaded) run must not fail the first fetch
    auto p = aws::container_credentials(ioc.get_executor(), env, opts);

    std::atomic<int> served{0}, failed{0}, nulls{0};
    std::vector<std::thread> users;
    for (int t = 0; t < 4; ++t) {
        users.emplace_back([&, t] {
            for (int i = 0; i < 300; ++i) {
                if (t == 0 && i % 10 == 0) clock.advance(1min); // walk through the windows
                if (auto c = p.usable_now()) {
                    CHECK(!c->access_key_id.empty());
                    ++served;
                    continue;
                }
                ++nulls;
                std::promise<error_code> done;
                p.async_get([&done](error_code ec, aws::fetched_credentials) { done.set_value(ec); });
                if (done.get_future().get())
                    ++failed;
                else
                    ++served;
            }
        });
    }
    for (auto& u : users) u.join();
    work.reset();
    for (auto& r : runners) r.join();
    server_work.reset();
    server_ioc.stop();
    server_thread.join();
    CHECK(failed == 0);
    CHECK(served == 1200);
    // One fetch at a time and only when the windows call for it: far fewer fetches than uses.
    CHECK(p.fetch_count() == static_cast<std::uint64_t>(server.requests()));
    CHECK(server.requests() <= 40);
    MESSAGE("fetches: " << server.requests() << ", waits: " << nulls.load());
}

// ---- secrets, whatever the services and commands echo ---------------------------------------------------

TEST_CASE("property: no message or diagnostic carries a secret baton read, whatever the services echo") {
    // Random profiles (a role from keys, a chain, web identity, IAM Identity Center with a refresh,
    // credential_process, a role from credential_process) meet services and commands that echo what
    // they were sent, or print the secrets they hold, into errors, codes, request ids and malformed
    // answers. Whatever fails, no secret baton read from a file, an answer or a command's output
    // may appear in what it reports.
    net::io_context ioc;
    creds_dir dir;
    // Secrets as long as real ones (session tokens and JWTs run to a kilobyte): a message cut short
    // before its secrets are removed would still show most of one.
    std::mt19937 rng(20261129);
    std::map<std::string, std::string> long_of;
    for (char const* name : {"SECRETbasekey0001", "TOKENbase0001", "JWTwebidentity0001", "SSOaccess0001",
                             "SSOrefresh0001", "SSOclientsecret0001", "PROCsecret0001", "PROCtoken0001",
                             "STSsecret0001", "STStoken0001"}) {
        std::string v = name;
        while (v.size() < 600) v += "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[rng() % 62];
        long_of[name] = v;
    }
    auto expand = [&](std::string text) {
        for (auto const& [name, value] : long_of)
            for (auto at = text.find(name); at != std::string::npos; at = text.find(name, at + value.size()))
                text.replace(at, name.size(), value);
        return text;
    };
    // Any 16 characters of a secret in a text count as a leak.
    auto leaks = [](std::string const& text, std::string const& secret) {
        for (std::size_t i = 0; i + 16 <= secret.size(); i += 4)
            if (text.find(secret.substr(i, 16)) != std::string::npos) return true;
        return false;
    };
    int mode = 0; // what every service does this round
    auto echo = [](server_request const& r) {
        // The body first, then the headers by length (the session token's last): either way a secret
        // starts within the first hundred characters or so.
        std::vector<std::string> fields;
        for (auto const& f : r) fields.push_back(std::string(f.name_string()) + "=" + std::string(f.value()) + " ");
        std::sort(fields.begin(), fields.end(), [](auto const& a, auto const& b) { return a.size() > b.size(); });
        std::string all = std::string(r.body()) + " ";
        for (auto const& f : fields) all += f;
        return all;
    };
    auto creds_xml = [&](std::string const& action) {
        return expand("<" + action + "Response><" + action + "Result><Credentials><AccessKeyId>ASIASTS</AccessKeyId>"
               "<SecretAccessKey>STSsecret0001</SecretAccessKey><SessionToken>STStoken0001</SessionToken>"
               "<Expiration>" + iso(std::chrono::system_clock::now() + 1h) + "</Expiration></Credentials></" +
               action + "Result></" + action + "Response>");
    };
    auto xml_echo = [&](server_request const& r) {
        std::string out;
        for (char c : echo(r)) out += c == '&' ? std::string("&amp;") : c == '<' ? std::string("&lt;") : std::string(1, c);
        return out;
    };
    responder sts(ioc, [&](server_request const& r) {
        auto const action = form(r.body())["Action"];
        switch (mode) {
        case 0: return respond(403, sts_error("AccessDenied", xml_echo(r)), "text/xml");
        case 1: return respond(400, sts_error(xml_echo(r).substr(0, 60), "m"), "text/xml");
        case 2: return respond(200, "<" + action + "Response>" + xml_echo(r) + "</" + action + "Response>", "text/xml");
        case 3: return respond(500, echo(r), "text/plain");
        case 4: return respond(200, creds_xml(action) + "<junk " + echo(r), "text/xml");
        default: return respond(200, creds_xml(action), "text/xml");
        }
    });
    auto json_echo = [&](server_request const& r, unsigned status) {
        return test_common::answer(status, R"({"message":")" + echo(r) + R"(","__type":")" + echo(r).substr(0, 40) + "\"}",
                                   {{"Content-Type", "application/json"}, {"x-amzn-ErrorType", echo(r).substr(0, 50)},
                                    {"x-amzn-RequestId", echo(r).substr(0, 70)}});
    };
    responder portal(ioc, [&](server_request const& r) {
        switch (mode) {
        case 0: return json_echo(r, 401);
        case 1: return json_echo(r, 403);
        case 2: return respond(200, R"({"roleCredentials":{"accessKeyId":")" + echo(r) + "\"}}");
        case 3: return json_echo(r, 500);
        case 4: return respond(200, "{" + echo(r));
        default:
            return respond(200, expand(R"({"roleCredentials":{"accessKeyId":"ASIASSO","secretAccessKey":"STSsecret0001",)"
                                       R"("sessionToken":"STStoken0001","expiration":)" +
                                       std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                          (std::chrono::system_clock::now() + 1h).time_since_epoch())
                                                          .count()) +
                                       "}}"));
        }
    });
    responder oidc(ioc, [&](server_request const& r) {
        if (mode == 5) return respond(200, expand(R"({"accessToken":"SSOaccess0001","expiresIn":3600})"));
        return mode == 2 ? respond(200, R"({"accessToken":")" + echo(r) + "\"}") : json_echo(r, 400);
    });
    test_env env;
    env.set("HOME", dir.path.string());
    env.set("AWS_ENDPOINT_URL_STS", sts.url());
    env.set("AWS_ENDPOINT_URL_SSO", portal.url());
    env.set("AWS_ENDPOINT_URL_SSO_OIDC", oidc.url());
    dir.write("jwt", expand("JWTwebidentity0001"));
    std::string const ok_json = R"({"Version":1,"AccessKeyId":"AKIDPROC","SecretAccessKey":"PROCsecret0001",)"
                                R"("SessionToken":"PROCtoken0001"})";
    auto script = [&](std::string const& name, std::string const& body) {
        auto const path = dir.write(name, expand("#!/bin/sh\n" + body));
        fs::permissions(path, fs::perms::owner_all);
        return path;
    };
    std::vector<std::string> const commands = {
        // prints its credentials, then complains with them and fails
        script("proc-fails", "echo '" + ok_json + "'; echo failed for PROCsecret0001 PROCtoken0001 >&2; exit 1\n"),
        // prints them in a form that is not the JSON asked for
        script("proc-text", "echo AccessKeyId=AKIDPROC SecretAccessKey=PROCsecret0001 Token=PROCtoken0001\n"
                            "echo PROCsecret0001 >&2; exit 2\n"),
        // leaves a field out
        script("proc-partial", "echo '{\"Version\":1,\"SecretAccessKey\":\"PROCsecret0001\"}'; echo PROCsecret0001 >&2\n"),
        script("proc-ok", "echo '" + ok_json + "'\n"),
    };
    std::string const base = "[profile base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = SECRETbasekey0001\n"
                             "aws_session_token = TOKENbase0001\n"
                             "[sso-session s]\nsso_start_url = https://d-1.awsapps.com/start\nsso_region = us-east-1\n";
    aws::detail::sso_settings sso;
    sso.session_name = "s";
    auto const cache = ".aws/sso/cache/" + aws::detail::sso_cache_file_name(sso);
    int rounds = 0, failed = 0;
    for (; rounds < 120; ++rounds) {
        mode = static_cast<int>(rng() % 6);
        auto const kind = rng() % 6;
        auto const& command = commands[rng() % commands.size()];
        std::string profile;
        switch (kind) {
        case 0: profile = "role_arn = arn:aws:iam::1:role/r\nsource_profile = base\n"; break;
        case 1: profile = "role_arn = arn:aws:iam::1:role/r\nsource_profile = mid\n[profile mid]\n"
                          "role_arn = arn:aws:iam::1:role/m\nsource_profile = base\n"; break;
        case 2: profile = "role_arn = arn:aws:iam::1:role/w\nweb_identity_token_file = ~/jwt\n"; break;
        case 3: profile = "sso_session = s\nsso_account_id = 1\nsso_role_name = r\n"; break;
        case 4: profile = "credential_process = " + command + "\n"; break;
        default: profile = "role_arn = arn:aws:iam::1:role/r\nsource_profile = proc\n[profile proc]\n"
                           "credential_process = " + command + "\n"; break;
        }
        dir.write(".aws/config", expand("[profile p]\n" + profile + base));
        // A login inside its refresh window: the refresh is tried, the old token still serves.
        dir.write(cache, expand(R"({"startUrl":"https://d-1.awsapps.com/start","region":"us-east-1",)"
                         R"("accessToken":"SSOaccess0001","expiresAt":")" + iso(std::chrono::system_clock::now() + 5min) +
                             R"(","clientId":"c","clientSecret":"SSOclientsecret0001","registrationExpiresAt":")" +
                             iso(std::chrono::system_clock::now() + 24h) + R"(","refreshToken":"SSOrefresh0001"})"));
        auto p = aws::profile_credentials(ioc.get_executor(), "p", env.lookup());
        auto const g = get(ioc, p);
        if (g.ec) ++failed;
        for (auto const& [name, secret] : long_of)
            for (auto const* text : {&g.fc.diag.message, &g.fc.diag.service_code, &g.fc.diag.request_id, &g.fc.source})
                if (leaks(*text, secret))
                    FAIL_CHECK("round " << rounds << " (profile kind " << kind << ", mode " << mode << ") shows part of "
                                        << name << ": " << *text);
    }
    CHECK(failed > rounds / 2); // most rounds meet a hostile service: the property was exercised on errors
    CHECK(failed < rounds);     // and some succeed, so the profiles themselves work
}

} // TEST_SUITE

// ---- the signed request path of the AWS backends -------------------------------------------------

namespace {

// An environment whose key id the test changes: each fetch of the provider reads it again.
struct rotating_env {
    std::shared_ptr<std::string> key_id = std::make_shared<std::string>("AKIDFIRST");
    aws::env_lookup lookup() const {
        return [k = key_id](std::string_view name) -> std::optional<std::string> {
            if (name == "AWS_ACCESS_KEY_ID") return *k;
            if (name == "AWS_SECRET_ACCESS_KEY") return std::string("secret");
            if (name == "AWS_SESSION_TOKEN") return std::string("token-of-") + *k;
            return std::nullopt;
        };
    }
};

bool signed_with(server_request const& req, std::string_view key_id) {
    auto const it = req.find(bhttp::field::authorization);
    return it != req.end() && std::string_view(it->value()).find("Credential=" + std::string(key_id) + "/") !=
                                  std::string_view::npos;
}

reply s3_expired() {
    return respond(400, "<?xml version=\"1.0\"?><Error><Code>ExpiredToken</Code>"
                        "<Message>The provided token has expired.</Message></Error>",
                   "application/xml");
}

reply s3_found() {
    auto r = respond(200, "hello", "application/octet-stream");
    r.msg.set(bhttp::field::etag, "\"v1\"");
    return r;
}

reply dynamodb_expired() {
    return respond(400, R"({"__type":"com.amazon.coral.service#ExpiredTokenException","message":"expired"})",
                   "application/x-amz-json-1.0");
}

reply dynamodb_found() {
    return respond(200, R"({"Item":{"pk":{"S":"k"},"ver":{"S":"v1"},"body":{"S":"hello"}}})",
                   "application/x-amz-json-1.0");
}

baton::s3_backend_params s3_params_for(responder const& server) {
    baton::s3_backend_params p;
    p.endpoint = server.url();
    p.bucket = "baton-test";
    p.preconditions = baton::s3_precondition_check::trust;
    return p;
}

baton::dynamodb_backend_params dynamodb_params_for(responder const& server) {
    baton::dynamodb_backend_params p;
    p.endpoint = server.url();
    p.region = "us-east-1";
    p.table = "baton";
    return p;
}

template <class Backend>
std::pair<error_code, baton::get_result> get_once(net::io_context& ioc, Backend& b) {
    std::optional<std::pair<error_code, baton::get_result>> out;
    b.async_get("k", [&](error_code ec, baton::get_result r) { out.emplace(ec, std::move(r)); });
    REQUIRE(run_until(ioc, [&] { return out.has_value(); }));
    return std::move(*out);
}

} // namespace

TEST_CASE("S3 and DynamoDB: an expired session token gets fresh credentials and the request is sent again") {
    net::io_context ioc;
    rotating_env env;
    // The service refuses the first key id as expired and accepts the one the provider reads next.
    auto behave = [&](reply (*expired)(), reply (*found)()) {
        return [&env, expired, found](server_request const& req) {
            if (signed_with(req, "AKIDFIRST")) {
                *env.key_id = "AKIDSECOND"; // the session was renewed meanwhile
                return expired();
            }
            return signed_with(req, "AKIDSECOND") ? found() : respond(403, "unexpected signature");
        };
    };
    // One get through `Backend` made from `params`: one refusal, one re-send that succeeds.
    auto resent_get = [&](auto params, reply (*expired)(), reply (*found)(), auto make_backend) {
        responder server(ioc, behave(expired, found));
        auto p = params(server);
        p.credentials_provider = aws::environment_credentials(ioc.get_executor(), env.lookup());
        auto b = make_backend(p);
        auto r_result = get_once(ioc, b);
        auto& ec = std::get<0>(r_result);
        auto& r = std::get<1>(r_result);
        CHECK_MESSAGE(!ec, r.diag.message);
        REQUIRE(r.found);
        CHECK(r.found->body == "hello");
        CHECK(server.requests() == 2);
        CHECK(p.credentials_provider->fetch_count() == 2);
    };
    SUBCASE("S3") {
        resent_get(&s3_params_for, &s3_expired, &s3_found,
                   [&](auto const& p) { return baton::s3_backend(ioc.get_executor(), p); });
    }
    SUBCASE("DynamoDB") {
        resent_get(&dynamodb_params_for, &dynamodb_expired, &dynamodb_found,
                   [&](auto const& p) { return baton::dynamodb_backend(ioc.get_executor(), p); });
    }
}

TEST_CASE("S3 and DynamoDB: an expired token is re-sent once only, and never with static credentials") {
    net::io_context ioc;
    rotating_env env;
    SUBCASE("a provider whose fresh credentials are refused too: one re-send, then the service's answer") {
        responder server(ioc, [](server_request const&) { return s3_expired(); });
        auto p = s3_params_for(server);
        p.credentials_provider = aws::environment_credentials(ioc.get_executor(), env.lookup());
        baton::s3_backend b(ioc.get_executor(), p);
        auto [ec, r] = get_once(ioc, b);
        CHECK(ec == baton::errc::auth_failed);
        CHECK(r.diag.service_code == "ExpiredToken");
        CHECK(server.requests() == 2);
    }
    SUBCASE("static credentials cannot be renewed: the answer comes back as it is") {
        responder server(ioc, [](server_request const&) { return dynamodb_expired(); });
        auto p = dynamodb_params_for(server);
        p.credentials.access_key_id = "AKIDSTATIC";
        p.credentials.secret_access_key = "secret";
        baton::dynamodb_backend b(ioc.get_executor(), p);
        auto [ec, r] = get_once(ioc, b);
        CHECK(ec == baton::errc::auth_failed);
        CHECK(r.diag.service_code == "ExpiredTokenException");
        CHECK(server.requests() == 1);
    }
}

TEST_CASE("S3 and DynamoDB: every operation reaches the service and reports its refusal") {
    // Every kind of request each store sends, against a service that refuses them all: each
    // completes once, with an error. Built separately compiled (CI's TSan build), this also checks
    // that <baton/src.hpp> instantiates every operation the store headers declare extern.
    net::io_context ioc;
    std::size_t completions = 0;
    std::vector<std::string> unexpected; // operations that reported success
    auto note = [&](char const* what) {
        return [&, what](error_code ec, auto const&...) {
            ++completions;
            if (!ec) unexpected.emplace_back(what);
        };
    };
    auto with_static_keys = [](auto p) {
        p.credentials.access_key_id = "AKIDSTATIC";
        p.credentials.secret_access_key = "secret";
        return p;
    };
    SUBCASE("S3") {
        responder server(ioc, [](server_request const&) {
            return respond(403, "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>no</Message></Error>",
                           "application/xml");
        });
        baton::s3_backend b(ioc.get_executor(), with_static_keys(s3_params_for(server)));
        b.async_get("k", note("get"));
        b.async_put("k", "v", baton::precondition::none(), note("put"));
        b.async_put("k", "v", baton::precondition::absent(), note("put if absent"));
        b.async_copy_object("k", "k2", note("copy"));
        b.async_erase("k", baton::precondition::matches("\"v1\""), note("erase"));
        b.async_list("", "", 10, note("list"));
        b.async_probe(note("probe"));
        b.async_create_bucket(note("create bucket"));
        REQUIRE(run_until(ioc, [&] { return completions == 8; }));
    }
    SUBCASE("DynamoDB") {
        responder server(ioc, [](server_request const&) {
            return respond(400, R"({"__type":"com.amazonaws.dynamodb.v20120810#AccessDeniedException","message":"no"})",
                           "application/x-amz-json-1.0");
        });
        baton::dynamodb_backend b(ioc.get_executor(), with_static_keys(dynamodb_params_for(server)));
        b.async_get("k", note("get"));
        b.async_put("k", "v", baton::precondition::none(), note("put"));
        b.async_put_fenced("k", "v", 7, std::nullopt, note("fenced put"));
        b.async_erase("k", baton::precondition::matches("v1"), note("erase"));
        b.async_list("", "", 10, note("list"));
        b.async_probe(note("probe"));
        b.async_create_table(note("create table"));
        b.async_check_table(note("check table"));
        b.async_call("DescribeTable", R"({"TableName":"baton"})", note("call"));
        REQUIRE(run_until(ioc, [&] { return completions == 9; }));
    }
    CHECK_MESSAGE(unexpected.empty(), "reported success: " << (unexpected.empty() ? "" : unexpected.front()));
}

} // namespace credentials_tests
