// Shared AWS config/credentials files, profile and region resolution, and the credential providers that
// need no network (static, environment, profile, the default chain with instance metadata disabled),
// including the refresh windows under a moved clock. Files live in a fresh temporary directory per test;
// the environment is always an injected one, never the process's.
#include <baton/aws/credentials.hpp>
#include <baton/aws/profile.hpp>
#include <test_common/credentials.hpp>
#include <test_common/fixtures.hpp>

#include <doctest/doctest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace aws = baton::aws;
namespace net = boost::asio;
namespace fs = std::filesystem;
using baton::errc;
using baton::error_code;
using namespace std::chrono_literals;

namespace {

using test_common::test_env;

// A directory removed at the end of the test.
struct config_dir : test_common::temp_dir {
    config_dir() : test_common::temp_dir("baton-aws-config") {}
};



// A wall clock the test moves by hand.
struct test_clock {
    std::shared_ptr<std::chrono::system_clock::time_point> now =
        std::make_shared<std::chrono::system_clock::time_point>(std::chrono::sys_days{std::chrono::year{2026} / 3 / 1});
    std::function<std::chrono::system_clock::time_point()> fn() const {
        return [n = now] { return *n; };
    }
    void advance(std::chrono::system_clock::duration d) const { *now += d; }
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

using test_common::got;
using test_common::start_get;

void drain(net::io_context& ioc) {
    ioc.restart();
    ioc.run();
}

got get(net::io_context& ioc, aws::credentials_provider& p) {
    auto g = start_get(p);
    drain(ioc);
    REQUIRE(g->done);
    return *g;
}

aws::profile_map parse_ok(std::string_view text, aws::profile_file_kind kind = aws::profile_file_kind::config) {
    aws::profile_map m;
    baton::diagnostics d;
    auto ec = aws::parse_profile_file(text, kind, "cfg", m, d);
    CHECK_MESSAGE(!ec, d.message);
    return m;
}

std::string parse_error(std::string_view text, aws::profile_file_kind kind = aws::profile_file_kind::config,
                        aws::profile_file_limits lim = {}) {
    aws::profile_map m;
    baton::diagnostics d;
    auto ec = aws::parse_profile_file(text, kind, "cfg", m, d, lim);
    CHECK(ec == errc::invalid_argument);
    return d.message;
}

std::string value(aws::profile_map const& m, std::string const& profile, std::string const& key) {
    auto const it = m.find(profile);
    if (it == m.end()) return "<no profile>";
    auto const* s = it->second.find(key);
    return s == nullptr ? "<unset>" : s->value;
}

} // namespace

TEST_SUITE("aws config") {

TEST_CASE("config file: sections, comments, white space, case, inline comments") {
    auto const m = parse_ok("# leading comment\n"
                            "; another\n"
                            "\n"
                            "[default]\n"
                            "region = us-east-1\n"
                            "  \t\n"
                            "Output=json   # trailing comment\n"
                            "weird = a#b;c\n"
                            "[ profile   dev  ]   ; header comment\n"
                            "region=eu-west-1\n"
                            "aws_access_key_id =   AKIDDEV\n"
                            "[profile default]\n"
                            "max_attempts = 5\n");
    CHECK(value(m, "default", "region") == "us-east-1");
    CHECK(value(m, "default", "output") == "json");
    CHECK(value(m, "default", "weird") == "a#b;c"); // no white space before '#': part of the value
    CHECK(value(m, "default", "max_attempts") == "5"); // [profile default] is the default profile
    CHECK(value(m, "dev", "region") == "eu-west-1");
    CHECK(value(m, "dev", "aws_access_key_id") == "AKIDDEV");
    CHECK(m.at("dev").find("region")->line == 10);
    CHECK(m.at("dev").find("region")->where() == "cfg line 10");
    CHECK(m.size() == 2);
}

TEST_CASE("config file: non-profile sections and nested settings are skipped, continuations join") {
    auto const m = parse_ok("[sso-session corp]\n"
                            "sso_region = us-east-1\n"
                            "[services local]\n"
                            "s3 =\n"
                            "  endpoint_url = http://localhost:9000\n"
                            "[plain]\n"
                            "region = nowhere\n"
                            "[profile a]\n"
                            "s3 =\n"
                            "  max_concurrent_requests = 20\n"
                            "  addressing_style = path\n"
                            "region = ap-south-1\n"
                            "note = first\n"
                            "  second # comment\n"
                            "\tthird\n");
    CHECK(m.count("corp") == 0);
    CHECK(m.count("local") == 0);
    CHECK(m.count("plain") == 0); // the config file names profiles [profile x]
    CHECK(value(m, "a", "region") == "ap-south-1");
    CHECK(value(m, "a", "s3") == "");
    CHECK(value(m, "a", "max_concurrent_requests") == "<unset>");
    CHECK(value(m, "a", "note") == "first\nsecond\nthird");
}

TEST_CASE("credentials file: section names are verbatim; later values win, sections merge") {
    auto const m = parse_ok("[default]\r\n"
                            "aws_access_key_id = AKID1\r\n"
                            "[profile x]\n"
                            "aws_access_key_id = AKIDX\n"
                            "[default]\n"
                            "aws_access_key_id = AKID2\n"
                            "aws_secret_access_key = s\n",
                            aws::profile_file_kind::credentials);
    CHECK(value(m, "default", "aws_access_key_id") == "AKID2");
    CHECK(value(m, "default", "aws_secret_access_key") == "s");
    CHECK(value(m, "profile x", "aws_access_key_id") == "AKIDX");
    // A byte order mark is not part of the first header.
    auto const bom = parse_ok("\xEF\xBB\xBF[default]\nregion = r\n");
    CHECK(value(bom, "default", "region") == "r");
}

TEST_CASE("malformed files give one clear error naming the file and line") {
    CHECK(parse_error("[default\nregion = x\n") == "cfg line 1: a section header without a closing ']'");
    CHECK(parse_error("[default] extra\n") == "cfg line 1: unexpected text after the section header's ']'");
    CHECK(parse_error("region = x\n") == "cfg line 1: a setting before the first [section] header");
    CHECK(parse_error("[default]\nregion x\n") == "cfg line 2: expected 'name = value' or a [section] header");
    CHECK(parse_error("[default]\n = x\n") == "cfg line 2: a setting without a name before '='");
    CHECK(parse_error("[profile ]\n") == "cfg line 1: a profile section without a name");
    CHECK(parse_error("[]\n", aws::profile_file_kind::credentials) == "cfg line 1: a profile section without a name");
    CHECK(parse_error("[default]\ns3 =\n  nonsense\n") ==
          "cfg line 3: expected an indented 'name = value' under the setting above");
    // Binary input: NUL and other control bytes.
    CHECK(parse_error(std::string_view("[default]\nregion = a\0b\n", 22)) ==
          "cfg line 2: control character 0: this is not a text file");
    CHECK(parse_error("\x7f\x45LF\x02\x01") == "cfg line 1: control character 127: this is not a text file");
    // Size limits.
    aws::profile_file_limits lim;
    lim.max_line_bytes = 100;
    CHECK(parse_error("[default]\nkey = " + std::string(200, 'x') + "\n", aws::profile_file_kind::config, lim) ==
          "cfg line 2: the line is 206 bytes, more than the 100-byte limit");
    lim = {};
    lim.max_bytes = 1000;
    CHECK(parse_error(std::string(1001, '#'), aws::profile_file_kind::config, lim).starts_with(
        "cfg: the file is 1001 bytes, more than the 1000-byte limit"));
}

TEST_CASE("garbage never crashes the parser") {
    std::mt19937 rng(7);
    std::string const alphabet = "[]=#; \t\n\rprofiledefault\x01\xff";
    for (int round = 0; round < 2000; ++round) {
        std::string text(rng() % 200, ' ');
        for (char& c : text) c = alphabet[rng() % alphabet.size()];
        aws::profile_map m;
        baton::diagnostics d;
        auto ec = aws::parse_profile_file(text, round % 2 ? aws::profile_file_kind::config
                                                          : aws::profile_file_kind::credentials,
                                          "fuzz", m, d);
        if (ec) CHECK(d.message.starts_with("fuzz"));
    }
}

TEST_CASE("file locations: variables, HOME, '~'") {
    test_env env;
    env.set("HOME", "/home/u");
    auto loc = aws::locate_shared_files(env.lookup());
    CHECK(loc.config == "/home/u/.aws/config");
    CHECK(loc.credentials == "/home/u/.aws/credentials");
    env.set("AWS_CONFIG_FILE", "~/cfg");
    env.set("AWS_SHARED_CREDENTIALS_FILE", "/etc/creds");
    loc = aws::locate_shared_files(env.lookup());
    CHECK(loc.config == "/home/u/cfg");
    CHECK(loc.credentials == "/etc/creds");
    env.unset("HOME");
    loc = aws::locate_shared_files(env.lookup());
    CHECK(loc.config.empty());
    CHECK(loc.problem == "AWS_CONFIG_FILE starts with '~' and HOME is not set");
    CHECK(loc.credentials == "/etc/creds");
    env.unset("AWS_SHARED_CREDENTIALS_FILE");
    loc = aws::locate_shared_files(env.lookup());
    CHECK(loc.credentials.empty());
    CHECK(loc.problem == "HOME is not set and AWS_SHARED_CREDENTIALS_FILE is not set");
}

TEST_CASE("profile selection: AWS_PROFILE, then AWS_DEFAULT_PROFILE, then default") {
    test_env env;
    CHECK(aws::choose_profile(env.lookup()).name == "default");
    CHECK_FALSE(aws::choose_profile(env.lookup()).is_explicit());
    env.set("AWS_DEFAULT_PROFILE", "old");
    CHECK(aws::choose_profile(env.lookup()).name == "old");
    CHECK(aws::choose_profile(env.lookup()).chosen_by == "AWS_DEFAULT_PROFILE");
    env.set("AWS_PROFILE", "new");
    CHECK(aws::choose_profile(env.lookup()).name == "new");
    CHECK(aws::choose_profile(env.lookup()).describe() == "profile 'new' (from AWS_PROFILE)");
    env.set("AWS_PROFILE", "");
    CHECK(aws::choose_profile(env.lookup()).name == "old"); // empty counts as unset
}

TEST_CASE("shared files: credentials file wins, missing files are fine, bad files are errors") {
    config_dir dir;
    test_env env;
    env.set("HOME", dir.path.string());
    aws::shared_config sc;
    baton::diagnostics d;
    REQUIRE_FALSE(aws::load_shared_config(sc, d, env.lookup()));
    CHECK(sc.profiles.empty());
    CHECK(sc.describe_files() == dir.path.string() + "/.aws/credentials: no such file; " + dir.path.string() +
                                     "/.aws/config: no such file");

    dir.write(".aws/config", "[default]\nregion = eu-north-1\naws_access_key_id = FROMCONFIG\n"
                             "[profile dev]\nregion = us-west-2\n");
    dir.write(".aws/credentials", "[default]\naws_access_key_id = FROMCREDS\naws_secret_access_key = s\n");
    REQUIRE_FALSE(aws::load_shared_config(sc, d, env.lookup()));
    CHECK(sc.config_found);
    CHECK(sc.credentials_found);
    CHECK(sc.find("default")->get("aws_access_key_id") == "FROMCREDS");
    CHECK(sc.find("default")->find("aws_access_key_id")->file == dir.path.string() + "/.aws/credentials");
    CHECK(sc.find("default")->get("region") == "eu-north-1");
    CHECK(sc.find("dev")->get("region") == "us-west-2");

    // A directory, a device, an oversized file, a malformed file: errors that name the path.
    env.set("AWS_CONFIG_FILE", dir.path.string());
    CHECK(aws::load_shared_config(sc, d, env.lookup()) == errc::invalid_argument);
    CHECK(d.message == dir.path.string() + ": cannot read the shared AWS config file: is a directory, not a file");
    env.set("AWS_CONFIG_FILE", "/dev/zero");
    CHECK(aws::load_shared_config(sc, d, env.lookup()) == errc::invalid_argument);
    CHECK(d.message == "/dev/zero: cannot read the shared AWS config file: is not a regular file (a device, FIFO or "
                       "socket)");
    auto const big = dir.write("big", "");
    fs::resize_file(big, 5u * 1024u * 1024u);
    env.set("AWS_CONFIG_FILE", big);
    CHECK(aws::load_shared_config(sc, d, env.lookup()) == errc::invalid_argument);
    CHECK(d.message == big + ": cannot read the shared AWS config file: is 5242880 bytes, more than the "
                             "1048576-byte limit");
    env.set("AWS_CONFIG_FILE", dir.write("bad", "[default]\n[profile\n"));
    CHECK(aws::load_shared_config(sc, d, env.lookup()) == errc::invalid_argument);
    CHECK(d.message == (dir.path / "bad").string() + " line 2: a section header without a closing ']'");
}

TEST_CASE("region: AWS_REGION, then AWS_DEFAULT_REGION, then the selected profile") {
    config_dir dir;
    test_env env;
    env.set("HOME", dir.path.string());
    auto const cfg = dir.write(".aws/config", "[default]\nregion = eu-central-1\n[profile dev]\nregion = ap-east-1\n"
                                              "[profile noregion]\noutput = json\n");
    baton::diagnostics d;
    auto r = aws::resolve_region(d, env.lookup());
    REQUIRE(r.has_value());
    CHECK(r->name == "eu-central-1");
    CHECK(r->source == "profile 'default' (" + cfg + " line 2)");
    env.set("AWS_PROFILE", "dev");
    r = aws::resolve_region(d, env.lookup());
    REQUIRE(r.has_value());
    CHECK(r->name == "ap-east-1");
    env.set("AWS_DEFAULT_REGION", "us-west-1");
    r = aws::resolve_region(d, env.lookup());
    REQUIRE(r.has_value());
    CHECK(r->name == "us-west-1");
    CHECK(r->source == "AWS_DEFAULT_REGION");
    env.set("AWS_REGION", "us-east-2");
    r = aws::resolve_region(d, env.lookup());
    REQUIRE(r.has_value());
    CHECK(r->name == "us-east-2");
    CHECK(r->source == "AWS_REGION");

    env.set("AWS_REGION", "us east\n1");
    r = aws::resolve_region(d, env.lookup());
    CHECK(r.error() == errc::invalid_argument);
    CHECK(d.message == "AWS_REGION is 'us east?1', which is not a region name (lower-case letters, digits and '-', "
                       "e.g. us-east-1)");

    env.set("AWS_REGION", "");
    env.unset("AWS_DEFAULT_REGION");
    env.set("AWS_PROFILE", "noregion");
    r = aws::resolve_region(d, env.lookup());
    CHECK(r.error() == errc::invalid_argument);
    CHECK(d.message == "no AWS region: AWS_REGION and AWS_DEFAULT_REGION are not set and profile 'noregion' (from "
                       "AWS_PROFILE) has no region; set AWS_REGION (e.g. us-east-1) or add 'region = ...' to the "
                       "profile");
    env.set("AWS_PROFILE", "ghost");
    r = aws::resolve_region(d, env.lookup());
    CHECK(r.error() == errc::invalid_argument);
    CHECK(d.message.find("profile 'ghost' (from AWS_PROFILE) is not in the shared files (") != std::string::npos);

    // With a variable set, the files are not read at all (so a broken file cannot get in the way).
    dir.write(".aws/config", "garbage\n");
    env.set("AWS_REGION", "sa-east-1");
    r = aws::resolve_region(d, env.lookup());
    REQUIRE(r.has_value());
    CHECK(r->name == "sa-east-1");
    env.unset("AWS_REGION");
    CHECK(aws::resolve_region(d, env.lookup()).error() == errc::invalid_argument);
    CHECK(d.message == cfg + " line 1: a setting before the first [section] header");
}

TEST_CASE("ISO 8601 expirations") {
    using namespace std::chrono;
    auto const base = sys_days{year{2026} / 11 / 21} + 12h;
    CHECK(aws::parse_iso8601("2026-11-21T12:00:00Z") == base);
    CHECK(aws::parse_iso8601("2026-11-21t12:00:00z") == base);
    CHECK(aws::parse_iso8601("2026-11-21T12:00:00.250Z") == base + 250ms);
    CHECK(aws::parse_iso8601("2026-11-21T14:30:00+02:30") == base);
    CHECK(aws::parse_iso8601("2026-11-21T11:00:00-0100") == base);
    for (auto bad : {"", "2026-11-21", "2026-11-21T12:00:00", "2026-02-30T12:00:00Z", "2026-11-21T24:00:00Z",
                     "2026-11-21T12:00:00ZZ", "2026-11-21T12:00:00.Z", "9999-01-01T00:00:00Z",
                     "1969-12-31T23:59:59Z", "2026-11-21 12:00:00Z x", "2026-11-21T12:00:00+25:00"})
        CHECK_MESSAGE(!aws::parse_iso8601(bad), bad);
}

TEST_CASE("STS endpoint: override variables, regional, China and global defaults") {
    test_env env;
    std::string problem;
    auto t = aws::detail::sts_target(env.lookup(), std::nullopt, problem);
    REQUIRE(t.has_value());
    CHECK(t->ep.origin() == "https://sts.amazonaws.com:443");
    CHECK(t->target == "/");
    t = aws::detail::sts_target(env.lookup(), std::string("eu-west-1"), problem);
    REQUIRE(t.has_value());
    CHECK(t->ep.host == "sts.eu-west-1.amazonaws.com");
    t = aws::detail::sts_target(env.lookup(), std::string("cn-north-1"), problem);
    REQUIRE(t.has_value());
    CHECK(t->ep.host == "sts.cn-north-1.amazonaws.com.cn");
    CHECK(aws::detail::sts_target(env.lookup(), std::string("evil.com/x"), problem).error() == errc::invalid_argument);
    CHECK(problem == "the region 'evil.com/x' is not a region name");

    env.set("AWS_ENDPOINT_URL", "http://127.0.0.1:4566");
    t = aws::detail::sts_target(env.lookup(), std::string("eu-west-1"), problem);
    REQUIRE(t.has_value());
    CHECK(t->ep.origin() == "http://127.0.0.1:4566");
    env.set("AWS_ENDPOINT_URL_STS", "https://sts.internal:8443/");
    t = aws::detail::sts_target(env.lookup(), std::string("eu-west-1"), problem);
    REQUIRE(t.has_value());
    CHECK(t->ep.origin() == "https://sts.internal:8443");
    CHECK(t->target == "/");
    env.set("AWS_ENDPOINT_URL_STS", "https://sts.internal:8443/base/");
    CHECK(aws::detail::sts_target(env.lookup(), std::nullopt, problem).error() == errc::invalid_argument);
    CHECK(problem.starts_with("AWS_ENDPOINT_URL_STS: invalid endpoint URL: it must not have a path"));
    env.set("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "True");
    t = aws::detail::sts_target(env.lookup(), std::string("eu-west-1"), problem);
    REQUIRE(t.has_value());
    CHECK(t->ep.host == "sts.eu-west-1.amazonaws.com");
}

TEST_CASE("URL splitting and the container host rule") {
    std::string problem;
    auto t = aws::detail::split_url("http://[::1]:8080/v2/creds?id=1", problem);
    REQUIRE(t.has_value());
    CHECK(t->ep.host == "::1");
    CHECK(t->target == "/v2/creds?id=1");
    CHECK(aws::detail::join_target("/prefix/", "/latest/api/token") == "/prefix/latest/api/token");
    CHECK(aws::detail::join_target("/", "/latest/api/token") == "/latest/api/token");
    CHECK_FALSE(aws::detail::split_url("http://h/#frag", problem).has_value());
    CHECK(problem == "it must not have a fragment");
    CHECK_FALSE(aws::detail::split_url("not a url", problem).has_value());

    auto allowed = [&](std::string const& url) {
        auto r = aws::detail::split_url(url, problem);
        REQUIRE(r.has_value());
        return aws::detail::container_host_allowed(r->ep);
    };
    for (auto ok : {"http://127.0.0.1/c", "http://127.9.9.9:80/c", "http://[::1]/c", "http://localhost:99/c",
                    "http://169.254.170.2/c", "http://169.254.170.23/c", "http://[fd00:ec2::23]/c",
                    "https://anywhere.example/c"})
        CHECK_MESSAGE(allowed(ok), ok);
    for (auto bad : {"http://10.0.0.1/c", "http://169.254.169.254/c", "http://example.com/c", "http://[fd00:ec2::24]/c",
                     "http://localhost.evil.com/c"})
        CHECK_MESSAGE(!allowed(bad), bad);
}

TEST_CASE("static credentials: delivered, never inline, cached; bad ones refused at construction") {
    net::io_context ioc;
    aws::credentials c{"AKIDSTATIC", "secret/static+key", "", std::nullopt};
    auto p = aws::static_credentials(ioc.get_executor(), c);
    CHECK(p.name() == "static");
    CHECK(p.usable_now() == nullptr); // nothing fetched yet
    auto g = get(ioc, p);
    REQUIRE_FALSE(g.ec);
    CHECK(g.fc.value->access_key_id == "AKIDSTATIC");
    CHECK(g.fc.source == "static");
    CHECK(p.usable_now() == g.fc.value);
    auto g2 = get(ioc, p);
    CHECK(g2.fc.value == g.fc.value);
    CHECK(p.fetch_count() == 1);
    CHECK_THROWS_AS(aws::static_credentials(ioc.get_executor(), aws::credentials{"", "x", "", std::nullopt}),
                    baton::config_error);
    CHECK_THROWS_AS(aws::static_credentials(ioc.get_executor(), aws::credentials{"A", "x y", "", std::nullopt}),
                    baton::config_error);
    aws::provider_options bad;
    bad.advisory_refresh = 1min;
    CHECK_THROWS_AS(aws::static_credentials(ioc.get_executor(), c, bad), baton::config_error);
    // Windows and timeouts so large that expiration arithmetic would overflow.
    struct row { void (*edit)(aws::provider_options&); char const* rule; };
    row const rows[] = {
        {[](aws::provider_options& o) { o.advisory_refresh = std::chrono::seconds::max(); }, "advisory_refresh must be at most 7 days"},
        {[](aws::provider_options& o) { o.min_refresh_interval = std::chrono::seconds::max(); }, "min_refresh_interval must be from 0 to 1 day"},
        {[](aws::provider_options& o) { o.metadata_timeout = std::chrono::milliseconds::max(); }, "metadata_timeout must be positive and at most 1 hour"},
        {[](aws::provider_options& o) { o.container_timeout = std::chrono::hours(2); }, "container_timeout must be positive and at most 1 hour"},
        {[](aws::provider_options& o) { o.sts_http.attempt_timeout = std::chrono::hours(25); }, "attempt_timeout must be positive and at most 24 hours"},
    };
    for (auto const& r : rows) {
        aws::provider_options o;
        r.edit(o);
        CAPTURE(r.rule);
        CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains(r.rule), baton::config_error);
    }
    aws::provider_options edge;
    edge.advisory_refresh = std::chrono::hours(24 * 7);
    edge.min_refresh_interval = std::chrono::hours(24);
    edge.metadata_timeout = std::chrono::hours(1);
    edge.container_timeout = std::chrono::hours(1);
    CHECK_NOTHROW(edge.validate());
}

TEST_CASE("environment credentials: keys, session token, partial keys, bad expiration") {
    net::io_context ioc;
    test_env env;
    auto p = aws::environment_credentials(ioc.get_executor(), env.lookup());
    auto g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.ec == baton::condition::auth);
    CHECK(g.fc.value == nullptr);
    CHECK(g.fc.diag.message == "no AWS credentials found; tried: environment (AWS_ACCESS_KEY_ID not set)");

    env.set("AWS_SECRET_ACCESS_KEY", "topsecret-env");
    g = get(ioc, p);
    CHECK(g.fc.diag.message ==
          "no AWS credentials found; tried: environment (AWS_ACCESS_KEY_ID not set, though AWS_SECRET_ACCESS_KEY is)");
    env.unset("AWS_SECRET_ACCESS_KEY");
    env.set("AWS_ACCESS_KEY_ID", "AKIDENV");
    g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message ==
          "environment: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not; set both, or neither");

    env.set("AWS_SECRET_ACCESS_KEY", "topsecret-env");
    env.set("AWS_SESSION_TOKEN", "sessiontoken-env");
    env.set("AWS_CREDENTIAL_EXPIRATION", "tomorrow");
    g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message == "environment: AWS_CREDENTIAL_EXPIRATION ('tomorrow') is not an ISO 8601 time such as "
                               "2026-01-31T12:00:00Z");
    env.unset("AWS_CREDENTIAL_EXPIRATION");
    g = get(ioc, p);
    REQUIRE_FALSE(g.ec);
    CHECK(g.fc.value->access_key_id == "AKIDENV");
    CHECK(g.fc.value->secret_access_key == "topsecret-env");
    CHECK(g.fc.value->session_token == "sessiontoken-env");
    CHECK_FALSE(g.fc.value->expiration);
    CHECK(p.current_source() == "environment");
}

TEST_CASE("profile credentials: static keys, selection, rewritten file after invalidate, errors") {
    config_dir dir;
    test_env env;
    env.set("HOME", dir.path.string());
    net::io_context ioc;
    auto const creds_file = dir.write(".aws/credentials", "[default]\naws_access_key_id = AKIDDEFAULT\n"
                                                          "aws_secret_access_key = secret-default\n"
                                                          "[dev]\naws_access_key_id = AKIDDEV\n"
                                                          "aws_secret_access_key = secret-dev\n"
                                                          "aws_session_token = token-dev\n");
    auto p = aws::profile_credentials(ioc.get_executor(), {}, env.lookup());
    CHECK(p.name() == "profile 'default'");
    auto g = get(ioc, p);
    REQUIRE_FALSE(g.ec);
    CHECK(g.fc.value->access_key_id == "AKIDDEFAULT");
    CHECK(g.fc.source == "profile 'default'");

    env.set("AWS_PROFILE", "dev");
    auto dev = aws::profile_credentials(ioc.get_executor(), {}, env.lookup());
    g = get(ioc, dev);
    REQUIRE_FALSE(g.ec);
    CHECK(g.fc.value->access_key_id == "AKIDDEV");
    CHECK(g.fc.value->session_token == "token-dev");

    // Static keys never expire: the file is read again only after invalidate().
    dir.write(".aws/credentials", "[dev]\naws_access_key_id = AKIDROTATED\naws_secret_access_key = s2\n");
    CHECK(get(ioc, dev).fc.value->access_key_id == "AKIDDEV");
    CHECK(dev.fetch_count() == 1);
    dev.invalidate();
    CHECK(dev.usable_now() == nullptr);
    CHECK(get(ioc, dev).fc.value->access_key_id == "AKIDROTATED");
    CHECK(dev.fetch_count() == 2);

    // A profile named explicitly must exist.
    env.set("AWS_PROFILE", "ghost");
    auto ghost = aws::profile_credentials(ioc.get_executor(), {}, env.lookup());
    g = get(ioc, ghost);
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message.starts_with("profile 'ghost': AWS_PROFILE names it, but it is not in the shared "
                                        "files ("));
    CHECK(g.fc.diag.message.ends_with("); check the name or unset AWS_PROFILE"));
    env.unset("AWS_PROFILE");

    // Partial keys, a continuation line by mistake, unsupported kinds.
    dir.write(".aws/credentials", "[default]\naws_access_key_id = AKIDHALF\n");
    g = get(ioc, p = aws::profile_credentials(ioc.get_executor(), {}, env.lookup()));
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message == "profile 'default': sets aws_access_key_id (" + creds_file +
                                   " line 2) but not aws_secret_access_key; set both");
    dir.write(".aws/credentials", "[default]\naws_access_key_id = AKIDX\n  aws_secret_access_key = s\n");
    g = get(ioc, p = aws::profile_credentials(ioc.get_executor(), {}, env.lookup()));
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message == "profile 'default': aws_access_key_id (" + creds_file +
                                   " line 2) continues on the next line because that line is indented; remove the "
                                   "indentation");
    dir.write(".aws/credentials", "");
    for (auto [cfg, what] : std::vector<std::pair<std::string, std::string>>{
             {"[default]\ncredential_process = /bin/creds\n", "uses credential_process ("},
             {"[default]\nsso_session = corp\n", "uses IAM Identity Center (sso_* settings)"},
             {"[default]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = base\n",
              "uses role_arn with source_profile ("}}) {
        dir.write(".aws/config", cfg);
        g = get(ioc, p = aws::profile_credentials(ioc.get_executor(), {}, env.lookup()));
        CHECK(g.ec == errc::no_credentials);
        CHECK_MESSAGE(g.fc.diag.message.starts_with("profile 'default': " + what), g.fc.diag.message);
        CHECK(g.fc.diag.message.ends_with("which baton does not support; put its credentials in the environment (eval "
                                          "\"$(aws configure export-credentials --profile default --format env)\") or "
                                          "use static keys"));
    }
    dir.write(".aws/config", "[default]\nregion = x\n");
    g = get(ioc, p = aws::profile_credentials(ioc.get_executor(), {}, env.lookup()));
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message == "no AWS credentials found; tried: profile 'default' (has no aws_access_key_id, "
                               "role_arn or other credentials)");
    // No secret ever appears in a message.
    for (auto const* secret : {"secret-default", "secret-dev", "token-dev", "s2"})
        CHECK(g.fc.diag.message.find(secret) == std::string::npos);
}

TEST_CASE("refresh windows: advisory in the background, mandatory waits, one fetch at a time") {
    net::io_context ioc;
    test_env env;
    test_clock clock;
    auto const t0 = *clock.now;
    env.set("AWS_ACCESS_KEY_ID", "AKID1");
    env.set("AWS_SECRET_ACCESS_KEY", "s1");
    env.set("AWS_SESSION_TOKEN", "t1");
    env.set("AWS_CREDENTIAL_EXPIRATION", iso(t0 + 60min));
    aws::provider_options opts;
    opts.now = clock.fn();
    auto p = aws::environment_credentials(ioc.get_executor(), env.lookup(), opts);
    auto fetches = [&] { return env.reads_of("AWS_ACCESS_KEY_ID"); };

    auto g = get(ioc, p);
    REQUIRE_FALSE(g.ec);
    auto const first = g.fc.value;
    CHECK(*first->expiration == t0 + 60min);
    CHECK(fetches() == 1);

    // Well before the windows: the cache serves, nothing is fetched.
    clock.advance(44min);
    CHECK(p.usable_now() == first);
    CHECK(get(ioc, p).fc.value == first);
    CHECK(fetches() == 1);

    // Advisory window (14 min left): usable_now keeps the old ones and starts exactly one background fetch.
    env.set("AWS_ACCESS_KEY_ID", "AKID2");
    env.set("AWS_CREDENTIAL_EXPIRATION", iso(t0 + 120min));
    clock.advance(2min);
    CHECK(p.usable_now() == first);
    CHECK(p.usable_now() == first);
    auto during = start_get(p); // completes with the current ones, without waiting
    CHECK(p.fetch_count() == 2);
    drain(ioc);
    CHECK(fetches() == 2);
    REQUIRE(during->done);
    CHECK(during->fc.value == first);
    auto const second = p.usable_now();
    REQUIRE(second != nullptr);
    CHECK(second->access_key_id == "AKID2");

    // Mandatory window (9 min left): usable_now says no, async_get waits for a fetch.
    env.set("AWS_ACCESS_KEY_ID", "AKID3");
    env.set("AWS_CREDENTIAL_EXPIRATION", iso(t0 + 240min));
    clock.advance(120min - 46min - 9min);
    CHECK(p.usable_now() == nullptr);
    CHECK(p.fetch_count() == 2);
    g = get(ioc, p);
    REQUIRE_FALSE(g.ec);
    CHECK(g.fc.value->access_key_id == "AKID3");
    CHECK(fetches() == 3);

    // invalidate() forces the next use to fetch.
    p.invalidate();
    CHECK(p.current_source().empty());
    CHECK(get(ioc, p).fc.value->access_key_id == "AKID3");
    CHECK(fetches() == 4);
}

TEST_CASE("refresh windows: credentials handed out already inside the windows are not refetched on every use") {
    net::io_context ioc;
    test_env env;
    test_clock clock;
    aws::provider_options opts;
    opts.now = clock.fn();
    env.set("AWS_ACCESS_KEY_ID", "AKID");
    env.set("AWS_SECRET_ACCESS_KEY", "s");
    env.set("AWS_CREDENTIAL_EXPIRATION", iso(*clock.now + 7min)); // inside both windows from the start
    auto p = aws::environment_credentials(ioc.get_executor(), env.lookup(), opts);
    REQUIRE_FALSE(get(ioc, p).ec);
    for (int i = 0; i < 5; ++i) {
        CHECK(p.usable_now() != nullptr);
        CHECK_FALSE(get(ioc, p).ec);
    }
    CHECK(p.fetch_count() == 1);
    clock.advance(opts.min_refresh_interval);
    CHECK(p.usable_now() == nullptr); // the pause is over: wait for a new fetch
    CHECK_FALSE(get(ioc, p).ec);
    CHECK(p.fetch_count() == 2);
}

TEST_CASE("refresh failure: the current credentials stay in use until they expire, then the error shows") {
    net::io_context ioc;
    test_env env;
    test_clock clock;
    aws::provider_options opts;
    opts.now = clock.fn();
    env.set("AWS_ACCESS_KEY_ID", "AKID");
    env.set("AWS_SECRET_ACCESS_KEY", "s");
    env.set("AWS_CREDENTIAL_EXPIRATION", iso(*clock.now + 30min));
    auto p = aws::environment_credentials(ioc.get_executor(), env.lookup(), opts);
    auto const first = get(ioc, p).fc.value;
    REQUIRE(first != nullptr);
    env.unset("AWS_ACCESS_KEY_ID");

    clock.advance(25min); // mandatory window, not expired
    auto g = get(ioc, p);
    REQUIRE_FALSE(g.ec);
    CHECK(g.fc.value == first);
    CHECK(g.fc.diag.message == "refreshing the credentials failed; the current ones (environment) stay in use until "
                               "they expire: no AWS credentials found; tried: environment (AWS_ACCESS_KEY_ID not set, "
                               "though AWS_SECRET_ACCESS_KEY is)");
    // The failed refresh is not retried on every use within the pause.
    CHECK(p.usable_now() == first);
    CHECK(p.fetch_count() == 2);
    clock.advance(opts.min_refresh_interval);
    CHECK(p.usable_now() == nullptr);

    clock.advance(5min); // expired
    g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.value == nullptr);
}

TEST_CASE("concurrent callers share one fetch; a cancelled caller leaves the others served") {
    net::io_context ioc;
    test_env env;
    env.set("AWS_ACCESS_KEY_ID", "AKID");
    env.set("AWS_SECRET_ACCESS_KEY", "s");
    auto p = aws::environment_credentials(ioc.get_executor(), env.lookup());
    std::vector<std::shared_ptr<got>> all;
    for (int i = 0; i < 8; ++i) all.push_back(start_get(p));
    net::cancellation_signal cancel;
    auto cancelled = std::make_shared<got>();
    p.async_get(net::bind_cancellation_slot(cancel.slot(), [cancelled](error_code ec, aws::fetched_credentials fc) {
        cancelled->done = true;
        cancelled->ec = ec;
        cancelled->fc = std::move(fc);
    }));
    cancel.emit(net::cancellation_type::terminal);
    drain(ioc);
    CHECK(p.fetch_count() == 1);
    CHECK(env.reads_of("AWS_ACCESS_KEY_ID") == 1);
    for (auto const& g : all) {
        REQUIRE(g->done);
        CHECK_FALSE(g->ec);
        CHECK(g->fc.value == all.front()->fc.value);
    }
    REQUIRE(cancelled->done);
    CHECK(cancelled->ec == net::error::operation_aborted);
}

TEST_CASE("default chain without network: one error listing every source") {
    config_dir dir;
    test_env env;
    env.set("HOME", dir.path.string());
    env.set("AWS_EC2_METADATA_DISABLED", "true");
    net::io_context ioc;
    auto p = aws::default_chain(ioc.get_executor(), env.lookup());
    CHECK(p.name() == "default chain");
    auto g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    auto const home = dir.path.string();
    CHECK(g.fc.diag.message ==
          "no AWS credentials found; tried: environment (AWS_ACCESS_KEY_ID not set); web identity "
          "(AWS_WEB_IDENTITY_TOKEN_FILE not set); profile 'default' (" +
              home + "/.aws/credentials: no such file; " + home +
              "/.aws/config: no such file); container (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI not set); "
              "instance metadata (AWS_EC2_METADATA_DISABLED is true)");

    // A profile named by AWS_PROFILE must exist.
    env.set("AWS_PROFILE", "work");
    g = get(ioc, p);
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message.starts_with("profile 'work': AWS_PROFILE names it, but it is not in the shared files"));
    dir.write(".aws/credentials", "[work]\naws_access_key_id = AKIDWORK\naws_secret_access_key = secret-work\n");
    g = get(ioc, p);
    REQUIRE_FALSE(g.ec);
    CHECK(g.fc.value->access_key_id == "AKIDWORK");
    CHECK(g.fc.source == "profile 'work'");
    CHECK(p.current_source() == "profile 'work'");

    // Keys in the environment still come first with AWS_PROFILE set, as in botocore (only a
    // profile chosen in code skips them): `aws configure export-credentials` output works.
    env.set("AWS_ACCESS_KEY_ID", "AKIDENV");
    env.set("AWS_SECRET_ACCESS_KEY", "secret-env");
    auto fresh = aws::default_chain(ioc.get_executor(), env.lookup());
    g = get(ioc, fresh);
    REQUIRE_FALSE(g.ec);
    CHECK(g.fc.value->access_key_id == "AKIDENV");
    CHECK(g.fc.source == "environment");
}

TEST_CASE("default chain: picks the first configured source and remembers it") {
    config_dir dir;
    test_env env;
    env.set("HOME", dir.path.string());
    env.set("AWS_EC2_METADATA_DISABLED", "true");
    dir.write(".aws/credentials", "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = secret-file\n");
    net::io_context ioc;
    auto p = aws::default_chain(ioc.get_executor(), env.lookup());
    auto g = get(ioc, p);
    REQUIRE_FALSE(g.ec);
    CHECK(g.fc.source == "profile 'default'");

    // Environment keys appear later: the chain keeps asking the source that worked.
    env.set("AWS_ACCESS_KEY_ID", "AKIDENV");
    env.set("AWS_SECRET_ACCESS_KEY", "secret-env");
    p.invalidate();
    g = get(ioc, p);
    CHECK(g.fc.value->access_key_id == "AKIDFILE");
    CHECK(env.reads_of("AWS_ACCESS_KEY_ID") == 1); // only the first search looked at the environment

    // The remembered source stops being configured: the chain searches again and finds the environment.
    dir.write(".aws/credentials", "");
    p.invalidate();
    g = get(ioc, p);
    REQUIRE_FALSE(g.ec);
    CHECK(g.fc.value->access_key_id == "AKIDENV");
    CHECK(g.fc.source == "environment");

    // A fresh chain with environment keys takes them first.
    auto q = aws::default_chain(ioc.get_executor(), env.lookup());
    CHECK(get(ioc, q).fc.source == "environment");
}

} // TEST_SUITE
