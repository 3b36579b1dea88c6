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

// What the profile planner decides, in a form a table can compare: the first source, then each role.
struct planned {
    error_code ec;
    std::string problem;
    aws::detail::profile_resolution r;

    std::string text() const {
        using aws::detail::base_kind;
        if (ec) return "error: " + problem;
        if (!r.plan) return "absent: " + r.absent;
        auto const& p = *r.plan;
        std::string out;
        switch (p.base) {
        case base_kind::static_keys: out = "keys " + p.keys.access_key_id; break;
        case base_kind::web_identity: out = "web identity " + p.web.role_arn + " " + p.web.token_file; break;
        case base_kind::sso: out = "sso " + p.sso.account_id + "/" + p.sso.role_name; break;
        case base_kind::process: out = "process " + p.process.command; break;
        case base_kind::environment: out = "environment"; break;
        case base_kind::instance_metadata: out = "instance metadata"; break;
        case base_kind::container: out = "container"; break;
        }
        for (auto const& role : p.roles) out += " -> " + role.role_arn;
        return out;
    }
};

// Plans `profile_name` (chosen in code) or, when empty, the profile the environment selects.
planned plan_of(test_env const& env, std::string const& profile_name = {}) {
    aws::shared_config files;
    baton::diagnostics d;
    auto const ec = aws::load_shared_config(files, d, env.lookup());
    REQUIRE_MESSAGE(!ec, d.message);
    auto const choice =
        profile_name.empty() ? aws::choose_profile(env.lookup()) : aws::profile_choice{profile_name, "the caller"};
    aws::detail::profile_planner planner(files, choice, profile_name.empty(), env.lookup());
    planned out;
    out.ec = planner.run(out.r, out.problem);
    return out;
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

TEST_CASE("config file: sso-session and services sections and nested settings are kept, continuations join") {
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
    CHECK(value(m, "a", "s3.max_concurrent_requests") == "20");
    CHECK(value(m, "a", "s3.addressing_style") == "path");
    CHECK(value(m, "a", "note") == "first\nsecond\nthird");

    aws::shared_sections all;
    baton::diagnostics d;
    REQUIRE_FALSE(aws::parse_shared_file("[sso-session corp]\nsso_region = us-east-1\n"
                                         "[services local]\nS3 =\n  Endpoint_URL = http://localhost:9000 # here\n"
                                         "[sso-session]\nx = 1\n[services]\ny = 2\n[profile a]\nregion = r\n",
                                         aws::profile_file_kind::config, "cfg", all, d));
    CHECK(value(all.sso_sessions, "corp", "sso_region") == "us-east-1");
    CHECK(value(all.services, "local", "s3.endpoint_url") == "http://localhost:9000");
    CHECK(all.services.at("local").find("s3.endpoint_url")->line == 5);
    CHECK(all.sso_sessions.size() == 1); // a section without a name is ignored, as the SDKs ignore it
    CHECK(all.services.size() == 1);
    CHECK(value(all.profiles, "a", "region") == "r");

    // Section names split as the CLI splits them: quotes group, more than one name is ignored.
    auto const q = parse_ok("[profile \"my team\"]\nregion = a\n[profile 'q']\nregion = b\n"
                            "[profile two names]\nregion = c\n[profile \"open]\nregion = d\n");
    CHECK(value(q, "my team", "region") == "a");
    CHECK(value(q, "q", "region") == "b");
    CHECK(q.size() == 2);
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

TEST_CASE("profile plan: the AWS CLI's order among the sources one profile can name") {
    config_dir dir;
    test_env env;
    env.set("HOME", dir.path.string());
    struct row {
        std::string config, credentials, expected;
    };
    std::string const keys_c = "aws_access_key_id = AKIDCONFIG\naws_secret_access_key = s-config\n";
    std::string const keys_k = "aws_access_key_id = AKIDCREDS\naws_secret_access_key = s-creds\n";
    std::string const sso = "sso_start_url = https://d-1.awsapps.com/start\nsso_region = eu-west-1\n"
                            "sso_account_id = 111122223333\nsso_role_name = ReadOnly\n";
    std::string const base = "[profile base]\n" + keys_c;
    for (auto const& r : std::vector<row>{
             // role_arn with web_identity_token_file is web identity, not a role to assume
             {"[default]\nrole_arn = arn:r/web\nweb_identity_token_file = /t\nsource_profile = base\n" + base, "",
              "web identity arn:r/web /t"},
             // a role to assume comes before every other source in the profile
             {"[default]\nrole_arn = arn:r/a\nsource_profile = base\n" + sso + "credential_process = p\n" + base,
              "[default]\n" + keys_k, "keys AKIDCONFIG -> arn:r/a"},
             // IAM Identity Center before keys and credential_process
             {"[default]\n" + sso + "credential_process = p\n" + keys_c, "[default]\n" + keys_k,
              "sso 111122223333/ReadOnly"},
             // keys in the credentials file before credential_process ...
             {"[default]\ncredential_process = p\n", "[default]\n" + keys_k, "keys AKIDCREDS"},
             // ... and credential_process before keys in the config file
             {"[default]\ncredential_process = /usr/bin/creds --profile x\n" + keys_c, "",
              "process /usr/bin/creds --profile x"},
             {"[default]\n" + keys_c, "", "keys AKIDCONFIG"},
             // the credentials file wins for the same key
             {"[default]\n" + keys_c, "[default]\n" + keys_k, "keys AKIDCREDS"},
             {"[default]\nregion = eu-west-1\n", "", "absent: has no aws_access_key_id, role_arn or other credentials"},
         }) {
        dir.write(".aws/config", r.config);
        dir.write(".aws/credentials", r.credentials);
        CHECK_MESSAGE(plan_of(env).text() == r.expected, r.config);
    }
}

TEST_CASE("profile plan: web identity variables, AWS_PROFILE and a profile chosen in code") {
    config_dir dir;
    test_env env;
    env.set("HOME", dir.path.string());
    dir.write(".aws/config", "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s\n"
                             "[profile role]\nrole_arn = arn:r/role\nsource_profile = default\n"
                             "[profile webrole]\nrole_arn = arn:r/from-profile\nweb_identity_token_file = ~/jwt\n");
    env.set("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token");
    env.set("AWS_ROLE_ARN", "arn:r/from-env");
    // The variables come before keys in the profile, and keep the SDKs' name for the source.
    auto p = plan_of(env);
    CHECK(p.text() == "web identity arn:r/from-env /var/run/token");
    CHECK(p.r.label == "web identity");
    // A role to assume in the profile comes before them.
    env.set("AWS_PROFILE", "role");
    CHECK(plan_of(env).text() == "keys AKIDDEFAULT -> arn:r/role");
    // Each setting from its variable first, then from the profile.
    env.set("AWS_PROFILE", "webrole");
    env.unset("AWS_ROLE_ARN");
    p = plan_of(env);
    CHECK(p.text() == "web identity arn:r/from-profile /var/run/token");
    CHECK(p.r.label == "profile 'webrole'");
    // Chosen in code, as --profile: the variables do not count.
    CHECK(plan_of(env, "webrole").text() == "web identity arn:r/from-profile " + (dir.path / "jwt").string());
    CHECK(plan_of(env, "default").text() == "keys AKIDDEFAULT");
    // A token file without any role is an error, not a silent fall-through.
    env.unset("AWS_PROFILE");
    dir.write(".aws/config", "[default]\nregion = eu-west-1\n");
    CHECK(plan_of(env).text() == "error: web identity is configured (AWS_WEB_IDENTITY_TOKEN_FILE) but no role is: set "
                                 "AWS_ROLE_ARN or role_arn in profile 'default'");
    // No profile at all: the variables still configure web identity; a profile chosen in code must exist.
    fs::remove(dir.path / ".aws/config");
    env.set("AWS_ROLE_ARN", "arn:r/from-env");
    CHECK(plan_of(env).text() == "web identity arn:r/from-env /var/run/token");
    CHECK(plan_of(env, "ghost").text().starts_with("error: it is not in the shared files ("));
}

TEST_CASE("profile plan: roles from source profiles, chains, credential_source, and what each needs") {
    config_dir dir;
    test_env env;
    env.set("HOME", dir.path.string());
    auto const cfg = dir.write(".aws/config", "");
    auto plan_with = [&](std::string const& text, std::string const& profile) {
        dir.write(".aws/config", text);
        return plan_of(env, profile).text();
    };
    std::string const keys = "aws_access_key_id = AKIDBASE\naws_secret_access_key = s\n";
    // A chain of roles, assumed from the innermost out; a source profile with keys and a role uses its keys.
    CHECK(plan_with("[profile a]\nrole_arn = arn:r/a\nsource_profile = b\n"
                    "[profile b]\nrole_arn = arn:r/b\nsource_profile = c\n"
                    "[profile c]\nrole_arn = arn:r/c-ignored\nsource_profile = a\n" + keys,
                    "a") == "keys AKIDBASE -> arn:r/b -> arn:r/a");
    // A profile may name itself to assume its role with its own keys.
    CHECK(plan_with("[profile self]\nrole_arn = arn:r/self\nsource_profile = self\n" + keys, "self") ==
          "keys AKIDBASE -> arn:r/self");
    // A source profile is read with its own sources: credential_process, SSO, web identity.
    CHECK(plan_with("[profile a]\nrole_arn = arn:r/a\nsource_profile = p\n[profile p]\ncredential_process = run-me\n",
                    "a") == "process run-me -> arn:r/a");
    CHECK(plan_with("[profile a]\nrole_arn = arn:r/a\nsource_profile = w\n"
                    "[profile w]\nrole_arn = arn:r/w\nweb_identity_token_file = /t\n",
                    "a") == "web identity arn:r/w /t -> arn:r/a");
    for (auto const& [source, expected] : std::vector<std::pair<std::string, std::string>>{
             {"Environment", "environment"}, {"Ec2InstanceMetadata", "instance metadata"}, {"EcsContainer", "container"}})
        CHECK(plan_with("[profile a]\nrole_arn = arn:r/a\ncredential_source = " + source + "\n", "a") ==
              expected + " -> arn:r/a");
    // The settings of the call.
    dir.write(".aws/config", "[profile a]\nrole_arn = arn:r/a\nsource_profile = b\nrole_session_name = nightly\n"
                             "external_id = ext-1\nduration_seconds = 7200\nregion = eu-central-1\n[profile b]\n" + keys);
    auto p = plan_of(env, "a");
    REQUIRE(p.r.plan);
    REQUIRE(p.r.plan->roles.size() == 1);
    auto const& role = p.r.plan->roles[0];
    CHECK(role.session_name == "nightly");
    CHECK(role.external_id == std::optional<std::string>("ext-1"));
    CHECK(role.duration_seconds == std::optional<std::int64_t>(7200));
    CHECK(role.sts_url == "https://sts.eu-central-1.amazonaws.com");
    CHECK(role.signing_region == "eu-central-1");
    CHECK(role.configured_by == cfg + " line 2"); // the selected profile's name prefixes every message already

    // Every broken configuration is an error naming the profile, the line and the fix.
    struct bad {
        std::string config, expected;
    };
    for (auto const& b : std::vector<bad>{
             {"[profile a]\nrole_arn = arn:r/a\nsource_profile = b\ncredential_source = Environment\n[profile b]\n" + keys,
              "profile 'a' sets both source_profile (" + cfg + " line 3) and credential_source (" + cfg +
                  " line 4); a role takes its first credentials from one of them: keep one"},
             {"[profile a]\nrole_arn = arn:r/a\n",
              "profile 'a' (" + cfg + " line 2) sets role_arn but neither source_profile nor credential_source; add "
              "source_profile = NAME (a profile with credentials) or credential_source = Environment, "
              "Ec2InstanceMetadata or EcsContainer"},
             {"[profile a]\nrole_arn = arn:r/a\ncredential_source = ec2instancemetadata\n",
              "profile 'a' (" + cfg + " line 3): credential_source 'ec2instancemetadata' is not one of Environment, "
              "Ec2InstanceMetadata, EcsContainer (the names are case-sensitive)"},
             {"[profile a]\nrole_arn = arn:r/a\nsource_profile = nobody\n",
              "profile 'a' (" + cfg + " line 3): the source profile 'nobody' is not in the shared files ("},
             {"[profile a]\nrole_arn = arn:r/a\nsource_profile = b\n[profile b]\nrole_arn = arn:r/b\nsource_profile = a\n",
              "profile 'b' (" + cfg + " line 6): source_profile 'a' leads back to a profile already on the way ('a' -> "
              "'b' -> 'a'); a chain of roles must end at a profile with credentials"},
             {"[profile a]\nrole_arn = arn:r/a\nsource_profile = b\n[profile b]\nregion = eu-west-1\n",
              "profile 'a' (" + cfg + " line 3): the source profile 'b' has no credentials (no aws_access_key_id, "
              "role_arn, sso_*, credential_process or web_identity_token_file)"},
             {"[profile a]\nrole_arn = arn:r/a\nsource_profile = b\nmfa_serial = arn:aws:iam::1:mfa/me\n[profile b]\n" + keys,
              "profile 'a' (" + cfg + " line 4) sets mfa_serial: assuming its role needs an MFA code, which baton "
              "cannot ask for; export the credentials instead (eval \"$(aws configure export-credentials --profile a "
              "--format env)\", then run without choosing the profile, so that the environment's keys count) or use a "
              "role that does not require MFA"},
             {"[profile a]\nrole_arn = arn:r/a\nsource_profile = b\nduration_seconds = 1h\n[profile b]\n" + keys,
              "profile 'a' (" + cfg + " line 4): duration_seconds '1h' is not a whole number of seconds from 900 to 43200"},
             {"[profile a]\nrole_arn = arn:r/a\nsource_profile = b\n[profile b]\naws_access_key_id = AKIDHALF\n",
              "source profile 'b': sets aws_access_key_id (" + cfg + " line 5) but not aws_secret_access_key; set both"},
             {"[profile a]\nsso_account_id = 1\nsso_role_name = r\n",
              "profile 'a' is set up for IAM Identity Center (SSO) but lacks sso_start_url, sso_region (or an "
              "sso_session naming an [sso-session] section)"},
             {"[profile a]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = r\n",
              "profile 'a' (" + cfg + " line 2) names sso_session 'corp', but the config file has no [sso-session corp] "
              "section"},
             {"[profile a]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = r\nsso_region = us-east-1\n"
              "[sso-session corp]\nsso_region = eu-west-1\nsso_start_url = https://x/start\n",
              "the value of sso_region in profile 'a' (" + cfg + " line 5) differs from the one in [sso-session corp] (" +
                  cfg + " line 7); remove one"},
         }) {
        auto const got = plan_with(b.config, "a");
        CHECK_MESSAGE(got.starts_with("error: " + b.expected), got);
    }
}

TEST_CASE("profile plan: the STS region, SSO in a source profile, which file's keys, messages under --profile") {
    config_dir dir;
    test_env env;
    env.set("HOME", dir.path.string());
    dir.write(".aws/config", "[profile a]\nrole_arn = arn:r/a\nsource_profile = ssop\nregion = eu-west-1\n"
                             "[profile ssop]\nsso_start_url = https://x/start\nsso_region = us-east-1\n"
                             "sso_account_id = 1\nsso_role_name = r\n"
                             "[profile web]\nweb_identity_token_file = /t\n"
                             "[profile k]\naws_session_token = from-config\n");
    dir.write(".aws/credentials", "[k]\naws_access_key_id = AKIDK\naws_secret_access_key = s\n");
    auto plan_in = [&](std::string const& region) {
        aws::shared_config files;
        baton::diagnostics d;
        REQUIRE_FALSE(aws::load_shared_config(files, d, env.lookup()));
        aws::detail::profile_planner planner(files, {"a", "the caller"}, false, env.lookup(), region);
        aws::detail::profile_resolution r;
        std::string problem;
        REQUIRE_MESSAGE(!planner.run(r, problem), problem);
        return *r.plan;
    };
    // The region given in code (the CLI's --region) wins over the variables and the profile.
    env.set("AWS_REGION", "us-west-2");
    auto plan = plan_in("cn-north-1");
    CHECK(plan.roles.at(0).sts_url == "https://sts.cn-north-1.amazonaws.com.cn");
    CHECK(plan.roles.at(0).signing_region == "cn-north-1");
    CHECK(plan_in("").roles.at(0).sts_url == "https://sts.us-west-2.amazonaws.com");
    env.unset("AWS_REGION");
    CHECK(plan_in("").roles.at(0).sts_url == "https://sts.eu-west-1.amazonaws.com");
    plan = plan_in("aws-global");
    CHECK(plan.roles.at(0).sts_url == "https://sts.amazonaws.com");
    CHECK(plan.roles.at(0).signing_region == "us-east-1");
    // The login to renew is the source profile's: `aws sso login --profile a` would read a's settings.
    CHECK(plan.sso.profile_name == "ssop");
    // Keys from the credentials file come with that file's session token only.
    auto const k = plan_of(env, "k");
    REQUIRE(k.r.plan);
    CHECK(k.r.plan->keys.access_key_id == "AKIDK");
    CHECK(k.r.plan->keys.session_token.empty());
    // Under a profile chosen in code the variables do not count, so the message does not offer them.
    CHECK(plan_of(env, "web").text() == "error: web identity is configured (" + (dir.path / ".aws/config").string() +
                                            " line 11) but no role is: set role_arn in profile 'web'");
}

TEST_CASE("profile plan: IAM Identity Center settings, merged from the sso-session, and the endpoints") {
    config_dir dir;
    test_env env;
    env.set("HOME", dir.path.string());
    dir.write(".aws/config", "[profile dev]\nsso_session = corp\nsso_account_id = 111122223333\n"
                             "sso_role_name = ReadOnly\nregion = eu-west-1\n"
                             "[sso-session corp]\nsso_start_url = https://d-1.awsapps.com/start\nsso_region = us-east-2\n"
                             "sso_registration_scopes = sso:account:access\n"
                             "[profile legacy]\nsso_start_url = https://d-2.awsapps.com/start\nsso_region = ap-south-1\n"
                             "sso_account_id = 444455556666\nsso_role_name = Admin\n"
                             "[profile local]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = r\n"
                             "services = here\nendpoint_url = http://127.0.0.1:1\n"
                             "[services here]\nsso =\n  endpoint_url = http://127.0.0.1:2\n");
    auto p = plan_of(env, "dev");
    REQUIRE_MESSAGE(p.r.plan, p.text());
    auto const& s = p.r.plan->sso;
    CHECK(s.session_name == "corp");
    CHECK(s.start_url == "https://d-1.awsapps.com/start");
    CHECK(s.sso_region == "us-east-2");
    CHECK(s.account_id == "111122223333");
    CHECK(s.role_name == "ReadOnly");
    CHECK(s.profile_name == "dev");
    CHECK(s.portal_url == "https://portal.sso.us-east-2.amazonaws.com");
    CHECK(s.oidc_url == "https://oidc.us-east-2.amazonaws.com");
    CHECK(s.cache_dir == (dir.path / ".aws/sso/cache").string());
    p = plan_of(env, "legacy");
    REQUIRE(p.r.plan);
    CHECK(p.r.plan->sso.session_name.empty());
    CHECK(p.r.plan->sso.start_url == "https://d-2.awsapps.com/start");
    // The services section for the portal, the profile's endpoint_url for OIDC; the variables win over both.
    p = plan_of(env, "local");
    REQUIRE(p.r.plan);
    CHECK(p.r.plan->sso.portal_url == "http://127.0.0.1:2");
    CHECK(p.r.plan->sso.oidc_url == "http://127.0.0.1:1");
    env.set("AWS_ENDPOINT_URL_SSO_OIDC", "http://127.0.0.1:3");
    env.set("AWS_ENDPOINT_URL_SSO", "http://127.0.0.1:4");
    p = plan_of(env, "local");
    CHECK(p.r.plan->sso.portal_url == "http://127.0.0.1:4");
    CHECK(p.r.plan->sso.oidc_url == "http://127.0.0.1:3");
}

TEST_CASE("endpoints from the shared config: services sections, endpoint_url, the ignore settings") {
    config_dir dir;
    test_env env;
    env.set("HOME", dir.path.string());
    auto const cfg = dir.write(".aws/config", "[profile a]\nservices = mine\nendpoint_url = http://127.0.0.1:9000\n"
                                              "[services mine]\nsts =\n  endpoint_url = http://127.0.0.1:7000\n"
                                              "dynamodb =\n  endpoint_url = http://127.0.0.1:8000\n"
                                              "[profile off]\nendpoint_url = http://127.0.0.1:9000\n"
                                              "ignore_configured_endpoint_urls = true\n"
                                              "[profile typo]\nservices = nope\n"
                                              "[profile bad]\nendpoint_url = ftp://x\n");
    aws::shared_config files;
    baton::diagnostics d;
    REQUIRE_FALSE(aws::load_shared_config(files, d, env.lookup()));
    auto url = [&](std::string_view service, std::string_view profile) -> std::string {
        baton::diagnostics diag;
        auto r = aws::resolve_endpoint_url(service, files, profile, diag, env.lookup());
        if (!r) return "error: " + diag.message;
        return *r ? (*r)->url + " from " + (*r)->source : "none";
    };
    CHECK(url("STS", "a") == "http://127.0.0.1:7000 from [services mine] of profile 'a' (" + cfg + " line 6)");
    CHECK(url("DynamoDB", "a") == "http://127.0.0.1:8000 from [services mine] of profile 'a' (" + cfg + " line 8)");
    CHECK(url("S3", "a") == "http://127.0.0.1:9000 from profile 'a' (" + cfg + " line 3)");
    CHECK(url("S3", "off") == "none");
    CHECK(url("S3", "nobody") == "none");
    CHECK(url("S3", "typo") == "error: profile 'typo' (" + cfg + " line 13) names services 'nope', but the config file "
                               "has no [services nope] section");
    CHECK(url("S3", "bad").starts_with("error: profile 'bad' (" + cfg + " line 15): "));
    env.set("AWS_ENDPOINT_URL", "http://127.0.0.1:1");
    CHECK(url("STS", "a") == "http://127.0.0.1:1 from AWS_ENDPOINT_URL");
    env.set("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true");
    CHECK(url("STS", "a") == "none");
    env.set("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "false"); // the variable wins over the profile's setting
    env.unset("AWS_ENDPOINT_URL");
    CHECK(url("S3", "off") == "http://127.0.0.1:9000 from profile 'off' (" + cfg + " line 10)");
    CHECK(aws::endpoint_url_variable("SSO OIDC") == "AWS_ENDPOINT_URL_SSO_OIDC");
    CHECK(aws::endpoint_url_variable("ACM-PCA") == "AWS_ENDPOINT_URL_ACM_PCA");
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

    // Credentials that expired before they arrived are an error, not a fetch on every use.
    env.set("AWS_CREDENTIAL_EXPIRATION", "2020-01-01T00:00:00Z");
    auto stale = aws::environment_credentials(ioc.get_executor(), env.lookup());
    g = get(ioc, stale);
    CHECK(g.ec == errc::invalid_response);
    CHECK(g.fc.value == nullptr);
    CHECK(g.fc.diag.message.starts_with("environment: the credentials it gave had expired "));
    CHECK(g.fc.diag.message.ends_with(" s before they arrived; check this machine's clock and the source"));
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
    dir.write(".aws/config", "[default]\nregion = x\n");
    g = get(ioc, p = aws::profile_credentials(ioc.get_executor(), {}, env.lookup()));
    CHECK(g.ec == errc::no_credentials);
    CHECK(g.fc.diag.message == "no AWS credentials found; tried: web identity (AWS_WEB_IDENTITY_TOKEN_FILE not set); "
                               "profile 'default' (has no aws_access_key_id, role_arn or other credentials)");
    // A profile chosen in code is the only thing asked.
    g = get(ioc, p = aws::profile_credentials(ioc.get_executor(), "default", env.lookup()));
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
