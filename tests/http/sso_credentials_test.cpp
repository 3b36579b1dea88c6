// IAM Identity Center (SSO) role credentials: the fetch that reads the token `aws sso login` cached,
// refreshes it through SSO OIDC CreateToken, and exchanges it at the portal's GetRoleCredentials. The
// portal and OIDC are scripted servers on 127.0.0.1; the token cache is a temporary directory; time is a
// fake clock, so "expires in 10 minutes" is exact. Every wait is bounded; nothing sleeps.
#include <baton/aws/detail/sso_source.hpp>
#include <test_common/fixtures.hpp>
#include <test_common/http_server.hpp>
#include <test_common/run_op.hpp>

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

// A namespace of its own: a unity build (-Dunity_tests=true) puts several test files in one TU.
namespace sso_credentials_tests {

namespace aws = baton::aws;
namespace ad = baton::aws::detail;
namespace net = boost::asio;
namespace bhttp = boost::beast::http;
namespace fs = std::filesystem;
namespace json = boost::json;
namespace chr = std::chrono;
using baton::errc;
using baton::error_code;
using test_common::answer;
using test_common::reply;
using test_common::server_request;

namespace {

// Every secret the tests hand out; no message or diagnostic may contain one.
constexpr char old_access[] = "sso-access-token-OLD-0123456789";
constexpr char old_refresh[] = "sso-refresh-token-OLD-abcdef";
constexpr char client_secret[] = "sso-client-secret-xyz-4242";
constexpr char new_access[] = "sso-access-token-NEW-9876543210";
constexpr char new_refresh[] = "sso-refresh-token-NEW-fedcba";
constexpr char role_secret[] = "role-secret-key-ABCDEFGHIJ";
constexpr char role_session[] = "role-session-token-KLMNOPQRS";
char const* const all_secrets[] = {old_access, old_refresh, client_secret, new_access, new_refresh, role_secret,
                                   role_session};

constexpr char start_url[] = "https://d-1234567890.awsapps.com/start";
// Computed outside baton: printf %s my-sso | sha1sum; printf %s <start_url> | sha1sum.
constexpr char session_cache_name[] = "0ad374308c5a4e22f723adf10145eafad7c4031c.json";
constexpr char legacy_cache_name[] = "7487b5b67d5fa1132cf33fa93ae51ef38cc37752.json";

struct test_clock {
    std::shared_ptr<std::atomic<std::int64_t>> ticks = std::make_shared<std::atomic<std::int64_t>>(
        chr::system_clock::time_point(chr::sys_days{chr::year{2026} / 5 / 1}).time_since_epoch().count());
    chr::system_clock::time_point now() const {
        return chr::system_clock::time_point(chr::system_clock::duration(ticks->load()));
    }
    std::function<chr::system_clock::time_point()> fn() const {
        return [t = ticks] { return chr::system_clock::time_point(chr::system_clock::duration(t->load())); };
    }
};

std::int64_t epoch_ms(chr::system_clock::time_point t) {
    return chr::duration_cast<chr::milliseconds>(t.time_since_epoch()).count();
}

std::string role_answer(std::int64_t expiration_ms) {
    return std::string(R"({"roleCredentials":{"accessKeyId":"ASIAEXAMPLEROLE","secretAccessKey":")") + role_secret +
           R"(","sessionToken":")" + role_session + R"(","expiration":)" + std::to_string(expiration_ms) + "}}";
}

reply json_answer(unsigned status, std::string body,
                  std::vector<std::pair<std::string, std::string>> headers = {}) {
    headers.emplace_back("Content-Type", "application/json");
    return answer(status, std::move(body), headers);
}

// What one fetch delivered.
struct fetched {
    int calls = 0;
    bool inline_call = false; // done ran before start_sso_fetch returned
    bool on_strand = false;   // done ran through the client's executor
    ad::source_outcome o;

    std::string text() const {
        return o.reason + " | " + o.diag.service_code + " | " + o.diag.message + " | " + o.diag.request_id;
    }
};

// A portal and an OIDC service that play the replies queued with `then`, and a token cache directory.
struct fixture {
    net::io_context ioc;
    test_clock clock;
    aws::provider_options opts;
    test_common::temp_dir home{"baton-sso"};
    test_common::http_server portal{ioc, json_answer(500, R"({"message":"no reply scripted"})")};
    test_common::http_server oidc{ioc, json_answer(500, R"({"message":"no reply scripted"})")};

    fixture() { opts.now = clock.fn(); }

    fs::path cache_dir() const { return home.path / "sso" / "cache"; }

    ad::sso_settings settings(bool legacy = false) const {
        ad::sso_settings s;
        s.profile_name = "dev";
        s.session_name = legacy ? "" : "my-sso";
        s.start_url = start_url;
        s.sso_region = "us-east-1";
        s.account_id = "111122223333";
        s.role_name = "ReadOnly";
        s.portal_url = portal.url();
        s.oidc_url = oidc.url();
        s.cache_dir = cache_dir().string();
        s.configured_by = "profile 'dev' (/home/me/.aws/config line 3)";
        return s;
    }

    // A cache entry as `aws sso login` writes it, expiring `left` from now; the registration lasts 90 days.
    json::object token(chr::system_clock::duration left) const {
        json::object o;
        o["startUrl"] = start_url;
        o["region"] = "us-east-1";
        o["accessToken"] = old_access;
        o["expiresAt"] = ad::sso_time_text(clock.now() + left);
        o["clientId"] = "client-id-public";
        o["clientSecret"] = client_secret;
        o["registrationExpiresAt"] = ad::sso_time_text(clock.now() + chr::hours(24 * 90));
        o["refreshToken"] = old_refresh;
        return o;
    }

    std::string write_cache(std::string const& name, std::string const& text) const {
        return home.write((fs::path("sso") / "cache" / name).string(), text);
    }
    std::string write_cache(std::string const& name, json::object const& o) const {
        return write_cache(name, json::serialize(o));
    }

    fetched fetch(ad::sso_settings s) {
        auto strand = net::make_strand(ioc);
        baton::http::client_options co;
        co.max_response_body_bytes = opts.max_response_bytes; // as the provider's clients cap it
        baton::http::client client(strand, co);
        auto r = std::make_shared<fetched>();
        auto returned = std::make_shared<bool>(false);
        // Started on the strand, as the provider starts a fetch: completing there inline would be allowed
        // by a dispatch, so only a real post passes.
        net::post(strand, [&, client, r, strand, returned, s = std::move(s)]() mutable {
            ad::start_sso_fetch(client, opts, "profile 'dev'", std::move(s),
                                [r, strand, returned](ad::source_outcome o) {
                                    ++r->calls;
                                    r->inline_call = !*returned;
                                    r->on_strand = strand.running_in_this_thread();
                                    r->o = std::move(o);
                                });
            *returned = true;
        });
        REQUIRE(test_common::run_until(ioc, [&] { return r->calls > 0; }, chr::seconds(20)));
        ioc.restart();
        ioc.poll(); // anything still queued: a second call would show here
        CHECK(r->calls == 1);
        CHECK_FALSE(r->inline_call);
        CHECK(r->on_strand);
        auto const text = r->text();
        for (char const* secret : all_secrets) {
            INFO("secret: " << secret);
            CHECK(text.find(secret) == std::string::npos);
        }
        return *r;
    }
};

json::object read_json(fs::path const& p) {
    std::ifstream in(p, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return json::parse(text).as_object();
}

std::string str(json::object const& o, char const* key) {
    auto const* v = o.if_contains(key);
    return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string("<absent>");
}

std::string header(server_request const& r, std::string_view name) {
    auto it = r.find(name);
    return it == r.end() ? std::string("<absent>") : std::string(it->value());
}

std::vector<std::string> files_in(fs::path const& dir) {
    std::vector<std::string> out;
    for (auto const& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    return out;
}

} // namespace

TEST_SUITE("SSO credentials") {

TEST_CASE("SSO: the cache file is named by the SHA-1 of the session name, or of the start URL") {
    ad::sso_settings s;
    s.start_url = start_url;
    s.session_name = "my-sso";
    CHECK(ad::sso_cache_file_name(s) == session_cache_name);
    s.session_name.clear();
    CHECK(ad::sso_cache_file_name(s) == legacy_cache_name);
}

TEST_CASE("SSO: a valid sso-session token is exchanged for role credentials, unsigned") {
    fixture f;
    f.write_cache(session_cache_name, f.token(chr::hours(4)));
    auto const expires = f.clock.now() + chr::hours(1) + chr::milliseconds(123);
    f.portal.then(json_answer(200, role_answer(epoch_ms(expires))));

    auto const r = f.fetch(f.settings());
    REQUIRE_MESSAGE(r.o.what == ad::source_outcome::kind::found, r.text());
    CHECK(r.o.label == "profile 'dev'");
    CHECK(r.o.creds->access_key_id == "ASIAEXAMPLEROLE");
    CHECK(r.o.creds->secret_access_key == role_secret);
    CHECK(r.o.creds->session_token == role_session);
    REQUIRE(r.o.creds->expiration);
    CHECK(*r.o.creds->expiration == expires);

    CHECK(f.oidc.requests() == 0); // hours left: no refresh
    auto const seen = f.portal.seen();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].method() == bhttp::verb::get);
    CHECK(seen[0].target() == "/federation/credentials?account_id=111122223333&role_name=ReadOnly");
    CHECK(header(seen[0], "x-amz-sso_bearer_token") == old_access);
    CHECK(seen[0].count(bhttp::field::authorization) == 0);
    CHECK(seen[0].count("X-Amz-Security-Token") == 0);
}

TEST_CASE("SSO: a legacy-form token (no sso-session) is read from the start URL's cache file") {
    fixture f;
    f.write_cache(legacy_cache_name, f.token(chr::hours(2)));
    f.portal.then(json_answer(200, role_answer(epoch_ms(f.clock.now() + chr::hours(1)))));
    auto const r = f.fetch(f.settings(true));
    REQUIRE_MESSAGE(r.o.what == ad::source_outcome::kind::found, r.text());
    auto const seen = f.portal.seen();
    REQUIRE(seen.size() == 1);
    CHECK(header(seen[0], "x-amz-sso_bearer_token") == old_access);
}

TEST_CASE("SSO: a portal URL with a path prefix, and query values that need percent-encoding") {
    fixture f;
    f.write_cache(session_cache_name, f.token(chr::hours(4)));
    f.portal.then(json_answer(200, role_answer(epoch_ms(f.clock.now() + chr::hours(1)))));
    auto s = f.settings();
    s.portal_url = f.portal.url("/gateway/");
    s.role_name = "Ops+Admin@x,y=z";
    auto const r = f.fetch(s);
    REQUIRE_MESSAGE(r.o.what == ad::source_outcome::kind::found, r.text());
    auto const seen = f.portal.seen();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].target() ==
          "/gateway/federation/credentials?account_id=111122223333&role_name=Ops%2BAdmin%40x%2Cy%3Dz");
}

TEST_CASE("SSO: inside 15 minutes of expiry the token is refreshed and written back in place") {
    fixture f;
    auto original = f.token(chr::minutes(10));
    original["someFieldTheCliAdds"] = 42; // any other field survives the rewrite
    auto const path = f.write_cache(session_cache_name, original);
    bool returns_refresh_token = true;
    SUBCASE("a new refresh token comes back") { returns_refresh_token = true; }
    SUBCASE("no refresh token comes back: the old one stays") { returns_refresh_token = false; }
    std::string answer_body = std::string(R"({"accessToken":")") + new_access +
                              R"(","tokenType":"Bearer","expiresIn":28800,"idToken":"id-token-value")";
    if (returns_refresh_token) answer_body += std::string(R"(,"refreshToken":")") + new_refresh + "\"";
    answer_body += "}";
    f.oidc.then(json_answer(200, answer_body));
    f.portal.then(json_answer(200, role_answer(epoch_ms(f.clock.now() + chr::hours(1)))));

    auto const r = f.fetch(f.settings());
    REQUIRE_MESSAGE(r.o.what == ad::source_outcome::kind::found, r.text());

    auto const oidc_seen = f.oidc.seen();
    REQUIRE(oidc_seen.size() == 1);
    CHECK(oidc_seen[0].method() == bhttp::verb::post);
    CHECK(oidc_seen[0].target() == "/token");
    CHECK(header(oidc_seen[0], "Content-Type") == "application/json");
    CHECK(oidc_seen[0].count(bhttp::field::authorization) == 0);
    auto const sent = json::parse(oidc_seen[0].body()).as_object();
    CHECK(sent.size() == 4);
    CHECK(str(sent, "clientId") == "client-id-public");
    CHECK(str(sent, "clientSecret") == client_secret);
    CHECK(str(sent, "grantType") == "refresh_token");
    CHECK(str(sent, "refreshToken") == old_refresh);

    auto const portal_seen = f.portal.seen();
    REQUIRE(portal_seen.size() == 1);
    CHECK(header(portal_seen[0], "x-amz-sso_bearer_token") == new_access);

    auto const written = read_json(path);
    CHECK(str(written, "accessToken") == new_access);
    CHECK(str(written, "expiresAt") == ad::sso_time_text(f.clock.now() + chr::hours(8)));
    CHECK(str(written, "expiresAt") == "2026-05-01T08:00:00Z");
    CHECK(str(written, "refreshToken") == (returns_refresh_token ? new_refresh : old_refresh));
    for (char const* kept : {"startUrl", "region", "clientId", "clientSecret", "registrationExpiresAt"})
        CHECK(str(written, kept) == str(original, kept));
    REQUIRE(written.if_contains("someFieldTheCliAdds") != nullptr);
    CHECK(written.at("someFieldTheCliAdds") == json::value(42));
    CHECK(written.size() == original.size());
    CHECK(fs::status(path).permissions() == (fs::perms::owner_read | fs::perms::owner_write));
    CHECK(files_in(f.cache_dir()) == std::vector<std::string>{session_cache_name}); // no temporary left
}

TEST_CASE("SSO: an expired token is refreshed when its registration still holds") {
    fixture f;
    f.write_cache(session_cache_name, f.token(-chr::hours(1)));
    f.oidc.then(json_answer(200, std::string(R"({"accessToken":")") + new_access +
                                     R"(","tokenType":"Bearer","expiresIn":3600})"));
    f.portal.then(json_answer(200, role_answer(epoch_ms(f.clock.now() + chr::hours(1)))));
    auto const r = f.fetch(f.settings());
    REQUIRE_MESSAGE(r.o.what == ad::source_outcome::kind::found, r.text());
    auto const seen = f.portal.seen();
    REQUIRE(seen.size() == 1);
    CHECK(header(seen[0], "x-amz-sso_bearer_token") == new_access);
}

TEST_CASE("SSO: when the refresh fails, a token that has not expired yet is used as it is") {
    fixture f;
    auto const original = json::serialize(f.token(chr::minutes(5)));
    auto const path = f.write_cache(session_cache_name, original);
    SUBCASE("refused") {
        f.oidc.then(json_answer(400, R"({"error":"invalid_grant","error_description":"expired refresh token"})",
                                {{"x-amzn-ErrorType", "InvalidGrantException"}}));
    }
    SUBCASE("not JSON") { f.oidc.then(json_answer(200, "<html>proxy login</html>")); }
    SUBCASE("no expiresIn") {
        f.oidc.then(json_answer(200, std::string(R"({"accessToken":")") + new_access + R"("})"));
    }
    f.portal.then(json_answer(200, role_answer(epoch_ms(f.clock.now() + chr::hours(1)))));
    auto const r = f.fetch(f.settings());
    REQUIRE_MESSAGE(r.o.what == ad::source_outcome::kind::found, r.text());
    CHECK(f.oidc.requests() == 1);
    auto const seen = f.portal.seen();
    REQUIRE(seen.size() == 1);
    CHECK(header(seen[0], "x-amz-sso_bearer_token") == old_access);
    std::ifstream in(path, std::ios::binary);
    CHECK(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()) == original);
}

TEST_CASE("SSO: an expired token whose refresh fails asks for aws sso login, and the portal is not called") {
    fixture f;
    f.write_cache(session_cache_name, f.token(-chr::minutes(1)));
    error_code expected;
    SUBCASE("refused refresh") {
        f.oidc.then(json_answer(400, R"({"error":"invalid_grant"})", {{"x-amzn-ErrorType", "InvalidGrantException"}}));
        expected = errc::auth_failed;
    }
    SUBCASE("OIDC unavailable: retryable") {
        f.oidc.then(json_answer(503, R"({"message":"try later"})"));
        expected = errc::service_unavailable;
    }
    auto const r = f.fetch(f.settings());
    REQUIRE(r.o.what == ad::source_outcome::kind::failed);
    CHECK(r.o.ec == expected);
    CHECK_MESSAGE(r.o.reason.find("the IAM Identity Center (SSO) login for profile 'dev' expired at "
                                  "2026-04-30T23:59:00Z") == 0,
                  r.o.reason);
    CHECK_MESSAGE(r.o.reason.find("refreshing it failed") != std::string::npos, r.o.reason);
    CHECK_MESSAGE(r.o.reason.find("; run: aws sso login --profile dev") != std::string::npos, r.o.reason);
    CHECK(f.oidc.requests() == 1);
    CHECK(f.portal.requests() == 0);
}

TEST_CASE("SSO: an expired token that cannot be refreshed fails before any network call") {
    fixture f;
    auto tok = f.token(-chr::minutes(1));
    std::string why;
    SUBCASE("legacy form, even with refresh fields") {
        f.write_cache(legacy_cache_name, tok);
        auto const r = f.fetch(f.settings(true));
        REQUIRE(r.o.what == ad::source_outcome::kind::failed);
        CHECK(r.o.ec == errc::auth_failed);
        CHECK_MESSAGE(r.o.reason ==
                          "the IAM Identity Center (SSO) login for profile 'dev' expired at 2026-04-30T23:59:00Z; "
                          "run: aws sso login --profile dev",
                      r.o.reason);
    }
    SUBCASE("registration expired") {
        tok["registrationExpiresAt"] = "2026-04-01T00:00:00Z";
        f.write_cache(session_cache_name, tok);
        auto const r = f.fetch(f.settings());
        REQUIRE(r.o.what == ad::source_outcome::kind::failed);
        CHECK(r.o.ec == errc::auth_failed);
        CHECK_MESSAGE(r.o.reason.find("registration expired at 2026-04-01T00:00:00Z") != std::string::npos,
                      r.o.reason);
        CHECK_MESSAGE(r.o.reason.find("run: aws sso login --profile dev") != std::string::npos, r.o.reason);
    }
    SUBCASE("no refresh token") {
        tok.erase("refreshToken");
        f.write_cache(session_cache_name, tok);
        auto const r = f.fetch(f.settings());
        REQUIRE(r.o.what == ad::source_outcome::kind::failed);
        CHECK(r.o.ec == errc::auth_failed);
        CHECK_MESSAGE(r.o.reason.find("no 'refreshToken'") != std::string::npos, r.o.reason);
    }
    CHECK(f.oidc.requests() == 0);
    CHECK(f.portal.requests() == 0);
}

TEST_CASE("SSO: no cache file means no login, with the command that makes one") {
    fixture f;
    auto s = f.settings();
    s.profile_name = "my team";
    auto const r = f.fetch(s);
    REQUIRE(r.o.what == ad::source_outcome::kind::failed);
    CHECK(r.o.ec == errc::no_credentials);
    CHECK_MESSAGE(r.o.reason.find("no IAM Identity Center (SSO) login found for profile 'my team'") == 0, r.o.reason);
    CHECK_MESSAGE(r.o.reason.find(session_cache_name) != std::string::npos, r.o.reason);
    CHECK_MESSAGE(r.o.reason.find("run: aws sso login --profile 'my team'") != std::string::npos, r.o.reason);
    CHECK(f.oidc.requests() == 0);
    CHECK(f.portal.requests() == 0);
}

TEST_CASE("SSO: a cache file without the required fields is named as such") {
    fixture f;
    auto tok = f.token(chr::hours(1));
    std::string expected;
    SUBCASE("no accessToken") {
        tok.erase("accessToken");
        expected = "has no 'accessToken' string";
        f.write_cache(session_cache_name, tok);
    }
    SUBCASE("no expiresAt") {
        tok.erase("expiresAt");
        expected = "has no 'expiresAt' string";
        f.write_cache(session_cache_name, tok);
    }
    SUBCASE("expiresAt not a time") {
        tok["expiresAt"] = "tomorrow";
        expected = "'expiresAt' ('tomorrow') that is not an ISO 8601 time";
        f.write_cache(session_cache_name, tok);
    }
    SUBCASE("not JSON") {
        expected = "is not valid JSON";
        f.write_cache(session_cache_name, std::string(R"({"accessToken":")") + old_access + "\",");
    }
    auto const r = f.fetch(f.settings());
    REQUIRE(r.o.what == ad::source_outcome::kind::failed);
    CHECK(r.o.ec == errc::no_credentials);
    CHECK_MESSAGE(r.o.reason.find(expected) != std::string::npos, r.o.reason);
    CHECK(f.portal.requests() == 0);
}

TEST_CASE("SSO: the portal's refusals are classified, with status, code and request id") {
    fixture f;
    f.write_cache(session_cache_name, f.token(chr::hours(4)));
    struct row {
        unsigned status;
        char const* type;
        char const* message;
        errc expected;
        char const* says;
    };
    row const rows[] = {
        {401, "UnauthorizedException:http://internal.amazon.com/coral/com.amazon.switchboard.portal/",
         "Session token not found or invalid", errc::auth_failed, "run: aws sso login --profile dev"},
        {403, "ForbiddenException", "No access", errc::auth_failed, "is not assigned to the user of this login"},
        {429, "TooManyRequestsException", "Rate exceeded", errc::throttled, "HTTP 429"},
        {500, "InternalServerException", "oops", errc::service_unavailable, "HTTP 500"},
        {400, "InvalidRequestException", "Invalid account id", errc::invalid_argument, "Invalid account id"},
        {404, "ResourceNotFoundException", "No such role", errc::invalid_argument, "No such role"},
    };
    for (auto const& row : rows) {
        CAPTURE(row.status);
        f.portal.then(json_answer(row.status, std::string(R"({"message":")") + row.message + "\"}",
                                  {{"x-amzn-ErrorType", row.type}, {"x-amzn-RequestId", "req-1234"}}));
        auto const r = f.fetch(f.settings());
        REQUIRE(r.o.what == ad::source_outcome::kind::failed);
        CHECK(r.o.ec == row.expected);
        CHECK(r.o.diag.http_status == row.status);
        CHECK(r.o.diag.request_id == "req-1234");
        CHECK(r.o.diag.service_code == std::string_view(row.type).substr(0, std::string_view(row.type).find(':')));
        CHECK_MESSAGE(r.o.reason.find(row.says) != std::string::npos, r.o.reason);
        CHECK_MESSAGE(r.o.reason.find(row.message) != std::string::npos, r.o.reason);
    }
    SUBCASE("the status alone, when no code comes") {
        std::pair<unsigned, errc> const by_status[] = {{401, errc::auth_failed},      {403, errc::auth_failed},
                                                       {429, errc::throttled},        {503, errc::service_unavailable},
                                                       {400, errc::invalid_argument}, {404, errc::invalid_argument},
                                                       {409, errc::invalid_response}};
        for (auto const& one : by_status) {
            unsigned const status = one.first; // not a structured binding: clang 14 cannot capture those
            CAPTURE(status);
            f.portal.then(answer(status, "not json"));
            auto const r = f.fetch(f.settings());
            REQUIRE(r.o.what == ad::source_outcome::kind::failed);
            CHECK(r.o.ec == one.second);
            CHECK(r.o.diag.service_code.empty());
        }
    }
    SUBCASE("a code in the body only") {
        f.portal.then(json_answer(401, R"({"__type":"com.amazon.switchboard#UnauthorizedException","message":"x"})"));
        auto const r = f.fetch(f.settings());
        REQUIRE(r.o.what == ad::source_outcome::kind::failed);
        CHECK(r.o.ec == errc::auth_failed);
        CHECK(r.o.diag.service_code == "UnauthorizedException");
    }
}

TEST_CASE("SSO: a malformed GetRoleCredentials answer is invalid_response naming the field") {
    fixture f;
    f.opts.max_response_bytes = 2048;
    f.write_cache(session_cache_name, f.token(chr::hours(4)));
    auto const ms = std::to_string(epoch_ms(f.clock.now() + chr::hours(1)));
    std::string body, expected;
    SUBCASE("not JSON") {
        body = "<html>captive portal</html>";
        expected = "is not valid JSON";
    }
    SUBCASE("no roleCredentials") {
        body = "{}";
        expected = "'roleCredentials'";
    }
    SUBCASE("no accessKeyId") {
        body = R"({"roleCredentials":{"secretAccessKey":"s3cr3t-value","sessionToken":"t0ken-value","expiration":)" +
               ms + "}}";
        expected = "'roleCredentials.accessKeyId'";
    }
    SUBCASE("no secretAccessKey") {
        body = R"({"roleCredentials":{"accessKeyId":"ASIA1","sessionToken":"t0ken-value","expiration":)" + ms + "}}";
        expected = "'roleCredentials.secretAccessKey'";
    }
    SUBCASE("no sessionToken") {
        body = R"({"roleCredentials":{"accessKeyId":"ASIA1","secretAccessKey":"s3cr3t-value","expiration":)" + ms +
               "}}";
        expected = "'roleCredentials.sessionToken'";
    }
    SUBCASE("expiration as a string") {
        body = R"({"roleCredentials":{"accessKeyId":"ASIA1","secretAccessKey":"s3cr3t-value",)"
               R"("sessionToken":"t0ken-value","expiration":"2026-05-01T01:00:00Z"}})";
        expected = "'roleCredentials.expiration'";
    }
    SUBCASE("expiration past the year 2200") {
        body = R"({"roleCredentials":{"accessKeyId":"ASIA1","secretAccessKey":"s3cr3t-value",)"
               R"("sessionToken":"t0ken-value","expiration":99999999999999}})";
        expected = "'roleCredentials.expiration'";
    }
    SUBCASE("larger than max_response_bytes") {
        body = role_answer(epoch_ms(f.clock.now() + chr::hours(1)));
        body.insert(1, R"("padding":")" + std::string(4000, 'x') + "\",");
        expected = "";
    }
    f.portal.then(json_answer(200, body));
    auto const r = f.fetch(f.settings());
    REQUIRE(r.o.what == ad::source_outcome::kind::failed);
    CHECK(r.o.ec == errc::invalid_response);
    CHECK_MESSAGE(r.o.reason.find(expected) != std::string::npos, r.o.reason);
}

TEST_CASE("SSO: secrets the services echo back never reach a message") {
    fixture f;
    f.write_cache(session_cache_name, f.token(-chr::minutes(1)));
    // The OIDC refusal quotes the refresh token and the client secret; the reason passes its message on.
    f.oidc.then(json_answer(400, std::string(R"({"error":"invalid_grant","error_description":"bad )") + old_refresh +
                                     " for " + client_secret + " with " + old_access + "\"}",
                            {{"x-amzn-ErrorType", std::string("InvalidGrantException:") + old_refresh}}));
    auto const r = f.fetch(f.settings()); // fetch() checks that no secret appears
    REQUIRE(r.o.what == ad::source_outcome::kind::failed);
    CHECK_MESSAGE(r.o.reason.find("bad *** for *** with ***") != std::string::npos, r.o.reason);

    fixture g;
    g.write_cache(session_cache_name, g.token(chr::hours(4)));
    g.portal.then(json_answer(401, std::string(R"({"message":"token )") + old_access + " is not valid\"}",
                              {{"x-amzn-ErrorType", "UnauthorizedException"}}));
    auto const r2 = g.fetch(g.settings());
    REQUIRE(r2.o.what == ad::source_outcome::kind::failed);
    CHECK_MESSAGE(r2.o.reason.find("token *** is not valid") != std::string::npos, r2.o.reason);
}

TEST_CASE("SSO: writing a file atomically leaves mode 0600 and no temporary behind") {
    test_common::temp_dir d("baton-sso-write");
    auto const path = (d.path / "token.json").string();
    std::string problem;
    REQUIRE(ad::replace_file_atomically(path, "first", problem));
    REQUIRE(ad::replace_file_atomically(path, "second", problem));
    std::ifstream in(path, std::ios::binary);
    CHECK(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()) == "second");
    CHECK(fs::status(path).permissions() == (fs::perms::owner_read | fs::perms::owner_write));
    CHECK(files_in(d.path) == std::vector<std::string>{"token.json"});
    CHECK_FALSE(ad::replace_file_atomically((d.path / "missing-dir" / "x.json").string(), "x", problem));
    CHECK_MESSAGE(problem.find("cannot create a temporary file") == 0, problem);
}

} // TEST_SUITE

} // namespace sso_credentials_tests
