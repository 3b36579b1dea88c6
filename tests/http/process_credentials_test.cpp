// The credential_process source, run for real: small /bin/sh scripts that this test writes play
// the credential helpers. Each run is started directly on a strand of an io_context; every wait
// is bounded, and after each run the test checks that the child was reaped (waitpid on its pid
// says it is no child of ours any more) and that nothing of the run is left pending.
#include <baton/aws/detail/process_source.hpp>
#include <test_common/fixtures.hpp>
#include <test_common/run_op.hpp>

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// A namespace of its own: a unity build (-Dunity_tests=true) puts several test files in one TU.
namespace process_credentials_tests {

namespace aws = baton::aws;
namespace ad = baton::aws::detail;
namespace net = boost::asio;
namespace fs = std::filesystem;
using baton::errc;
using test_common::contains;
using test_common::run_until;
using namespace std::chrono_literals;

namespace {

std::string const where = "profile 'dev' (/home/me/.aws/config line 4)";
std::string const label = "profile 'dev'";

struct scripts : test_common::temp_dir {
    scripts() : test_common::temp_dir("baton-process") {}

    // An executable /bin/sh script; returns its path.
    std::string script(std::string const& name, std::string const& body) const {
        auto const p = write(name, "#!/bin/sh\n" + body);
        fs::permissions(p, fs::perms::owner_all);
        return p;
    }
    std::string at(std::string const& name) const { return (path / name).string(); }
};

// A path as one word of the command (shlex rules): single quotes keep everything but a quote.
std::string quoted(std::string const& p) {
    REQUIRE(p.find('\'') == std::string::npos);
    return "'" + p + "'";
}

std::string read_text(std::string const& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

::pid_t read_pid(std::string const& p) {
    auto const text = read_text(p);
    REQUIRE_FALSE(text.empty());
    return static_cast<::pid_t>(std::stol(text));
}

// A child stops being ours only when it is reaped, which it can only be once dead: ECHILD on its
// pid means it neither runs nor lingers as a zombie.
void check_reaped(::pid_t pid) {
    int status = 0;
    errno = 0;
    CHECK(::waitpid(pid, &status, WNOHANG) == -1);
    CHECK(errno == ECHILD);
}

std::size_t open_fds() {
    std::size_t n = 0;
    for ([[maybe_unused]] auto const& e : fs::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

// Runs one command to its outcome, checking the contract on the way: not completed inside the
// call, completed exactly once, on the strand, with nothing of the run left pending or open after.
ad::source_outcome run(std::string command, aws::provider_options const& opts = {},
                       std::chrono::seconds limit = 20s) {
    struct state {
        int calls = 0;
        bool on_strand = false;
        ad::source_outcome outcome;
    };
    auto st = std::make_shared<state>();
    auto const fds_before = open_fds();
    {
        net::io_context ioc;
        auto const strand = net::make_strand(ioc);
        ad::start_credential_process(strand, opts, label, ad::process_settings{std::move(command), where},
                                     [st, strand](ad::source_outcome o) {
                                         ++st->calls;
                                         st->on_strand = strand.running_in_this_thread();
                                         st->outcome = std::move(o);
                                     });
        CHECK(st->calls == 0);
        REQUIRE(run_until(ioc, [&] { return st->calls > 0; }, limit));
        ioc.restart();
        ioc.run_for(5s);
        CHECK(ioc.stopped()); // no timer or read of the run is still pending
    }
    CHECK(st->calls == 1);
    CHECK(st->on_strand);
    CHECK(open_fds() == fds_before);
    return st->outcome;
}

std::string const document =
    R"({"Version": 1, "AccessKeyId": "AKIDPROCESS", "SecretAccessKey": "procSecretKey0123456789",
  "SessionToken": "procSessionToken0123456789", "Expiration": "2026-05-01T12:30:00Z"})";

// ---- splitting ---------------------------------------------------------------------------------

std::vector<std::string> split(std::string_view command) {
    std::string problem;
    auto r = ad::split_command(command, problem);
    REQUIRE_MESSAGE(r.has_value(), problem);
    return *r;
}

std::string split_problem(std::string_view command) {
    std::string problem;
    auto r = ad::split_command(command, problem);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == errc::invalid_argument);
    return problem;
}

using words = std::vector<std::string>;

} // namespace

TEST_CASE("credential_process: the command is split into argv like shlex.split in POSIX mode") {
    CHECK(split("helper") == words{"helper"});
    CHECK(split("  a b\t c\n d\r") == words{"a", "b", "c", "d"});
    CHECK(split(R"("/opt/my tools/helper" --profile dev)") == words{"/opt/my tools/helper", "--profile", "dev"});
    // Single quotes keep everything, backslashes and double quotes included.
    CHECK(split(R"('a "b" \c $HOME')") == words{R"(a "b" \c $HOME)"});
    // Inside double quotes a backslash escapes only `"` and itself.
    CHECK(split(R"("a\"b")") == words{R"(a"b)"});
    CHECK(split(R"("a\\b")") == words{R"(a\b)"});
    CHECK(split(R"("b\$c")") == words{R"(b\$c)"});
    CHECK(split(R"("x\ny")") == words{R"(x\ny)"});
    CHECK(split(R"("it's")") == words{"it's"});
    // Outside quotes it escapes any character, a space or a quote included.
    CHECK(split(R"(a\ b)") == words{"a b"});
    CHECK(split(R"(\'x\" \\)") == words{R"('x")", R"(\)"});
    // Quoted parts and plain parts join into one word; empty quotes make an empty word.
    CHECK(split(R"(a'b'"c"d)") == words{"abcd"});
    CHECK(split(R"(x '' "" y)") == words{"x", "", "", "y"});
    // No comments, no expansion.
    CHECK(split("helper #not-a-comment a#b") == words{"helper", "#not-a-comment", "a#b"});
    CHECK(split("~/bin/helper $HOME ${USER} `id`") == words{"~/bin/helper", "$HOME", "${USER}", "`id`"});
}

TEST_CASE("credential_process: splitting refuses unclosed quotes, a trailing backslash and empty commands") {
    CHECK(contains(split_problem(R"(helper "unclosed)"), "not closed"));
    CHECK(contains(split_problem("helper 'unclosed"), "not closed"));
    CHECK(contains(split_problem(R"(helper "a\")"), "not closed"));
    CHECK(contains(split_problem(R"(helper \)"), "backslash"));
    CHECK(contains(split_problem(R"(helper "a\)"), "backslash"));
    CHECK(contains(split_problem(""), "empty"));
    CHECK(contains(split_problem(" \t\n"), "empty"));
    CHECK(contains(split_problem(std::string_view("a\0b", 3)), "NUL"));
}

// ---- the output document --------------------------------------------------------------------

TEST_CASE("credential_process: the output is read as the CLI reads it") {
    aws::credentials c;
    std::string reason;
    REQUIRE_FALSE(ad::parse_process_output(document, c, reason));
    CHECK(c.access_key_id == "AKIDPROCESS");
    CHECK(c.secret_access_key == "procSecretKey0123456789");
    CHECK(c.session_token == "procSessionToken0123456789");
    REQUIRE(c.expiration.has_value());
    CHECK(*c.expiration == *aws::parse_iso8601("2026-05-01T12:30:00Z"));

    // Long-term keys: no token, no expiration (null counts as absent); 1.0 is 1, as Python compares.
    aws::credentials lt;
    REQUIRE_FALSE(ad::parse_process_output(
        R"({"Version":1.0,"AccessKeyId":"AKIDLONG","SecretAccessKey":"longSecret0123","SessionToken":null})", lt, reason));
    CHECK(lt.session_token.empty());
    CHECK_FALSE(lt.expiration.has_value());

    auto refused = [](std::string_view out) {
        aws::credentials x;
        std::string why;
        CHECK(ad::parse_process_output(out, x, why) == errc::invalid_response);
        CHECK_FALSE(contains(why, "sekrit"));
        return why;
    };
    CHECK(contains(refused(R"({"Version":2,"AccessKeyId":"A","SecretAccessKey":"sekrit00"})"), "'Version' is '2'"));
    CHECK(contains(refused(R"({"Version":"1","AccessKeyId":"A","SecretAccessKey":"sekrit00"})"), "only 1"));
    CHECK(contains(refused(R"({"AccessKeyId":"A","SecretAccessKey":"sekrit00"})"), "no 'Version'"));
    CHECK(contains(refused(R"({"Version":1,"SecretAccessKey":"sekrit00"})"), "'AccessKeyId'"));
    CHECK(contains(refused(R"({"Version":1,"AccessKeyId":"A"})"), "'SecretAccessKey'"));
    CHECK(contains(refused(R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":7})"), "'SecretAccessKey' is not a string"));
    CHECK(contains(refused(R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"sekrit00","SessionToken":5})"),
                   "'SessionToken'"));
    CHECK(contains(refused(R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"sekrit00","Expiration":"tomorrow"})"),
                   "'Expiration' ('tomorrow')"));
    CHECK(contains(refused(R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"sek rit00"})"), "unusable"));
    auto const not_json = refused("AccessKeyId=A SecretAccessKey=sekrit00\n");
    CHECK(contains(not_json, "(39 bytes) is not JSON"));
    CHECK(contains(refused(R"(["sekrit00"])"), "not an object"));
    CHECK(contains(refused(" \n"), "nothing on stdout"));
}

TEST_CASE("credential_process: stderr shown in messages has no secret, no control bytes and a bounded length") {
    auto const secrets = ad::process_output_secrets(document);
    // The key id may be shown; the secret key and the token may not.
    CHECK(std::find(secrets.begin(), secrets.end(), "procSecretKey0123456789") != secrets.end());
    CHECK(std::find(secrets.begin(), secrets.end(), "procSessionToken0123456789") != secrets.end());
    CHECK(std::find(secrets.begin(), secrets.end(), "AKIDPROCESS") == secrets.end());
    // Output that is no credentials document: every long word is taken for a secret.
    auto const words_of = ad::process_output_secrets("key=abcdefgh1234 short \"quotedSecret99\"\n");
    CHECK(words_of == std::vector<std::string>{"quotedSecret99", "abcdefgh1234"});

    // Removed before the text is cut, so that no part of one is left at the cut.
    std::string const secret = "procSecretKey0123456789";
    std::string const text = "xxxxxxxxxx" + secret + " " + std::string(985, 'z'); // the last 1000 begin in it
    auto const shown = ad::stderr_excerpt(text, {secret}, 1000);
    CHECK_FALSE(contains(shown, "procSecret"));
    CHECK_FALSE(contains(shown, "0123456789"));
    CHECK(shown == "xxxxxxxxxx*** " + std::string(985, 'z'));

    CHECK(ad::stderr_excerpt("line one\r\n\tline two\n\n", {}, 1000) == "line one line two");
    CHECK(ad::stderr_excerpt("bell\x07 esc\x1b[31m", {}, 1000) == "bell? esc?[31m");
    CHECK(ad::stderr_excerpt("caf\xc3\xa9 bad\xff\xc3 c1\xc2\x85", {}, 1000) == "caf\xc3\xa9 bad?? c1?");
    auto const cut = ad::stderr_excerpt(std::string(5000, 'y') + "\xc3\xa9nd", {}, 100);
    CHECK(cut == "..." + std::string(97, 'y') + "\xc3\xa9nd");
}

// ---- runs ------------------------------------------------------------------------------------

TEST_CASE("credential_process: a helper's credentials, with token and expiration or without") {
    scripts dir;
    auto const full = dir.script("full.sh", "cat <<'EOF'\n" + document + "\nEOF\n");
    auto o = run(quoted(full));
    REQUIRE_MESSAGE(o.what == ad::source_outcome::kind::found, o.reason);
    CHECK(o.label == label);
    CHECK(o.creds->access_key_id == "AKIDPROCESS");
    CHECK(o.creds->secret_access_key == "procSecretKey0123456789");
    CHECK(o.creds->session_token == "procSessionToken0123456789");
    REQUIRE(o.creds->expiration.has_value());
    CHECK(*o.creds->expiration == *aws::parse_iso8601("2026-05-01T12:30:00Z"));

    // Found on PATH like execvp, with the arguments as shlex splits them: no shell in between.
    auto lt = run(R"(sh -c 'printf "%s" "{\"Version\":1,\"AccessKeyId\":\"AKIDLONG\",\"SecretAccessKey\":\"$0\"}"' longTermSecret)");
    REQUIRE_MESSAGE(lt.what == ad::source_outcome::kind::found, lt.reason);
    CHECK(lt.creds->access_key_id == "AKIDLONG");
    CHECK(lt.creds->secret_access_key == "longTermSecret");
    CHECK(lt.creds->session_token.empty());
    CHECK_FALSE(lt.creds->expiration.has_value());
}

TEST_CASE("credential_process: arguments with spaces and quotes reach the program intact") {
    scripts dir;
    auto const args = dir.at("args.txt");
    auto const helper = dir.script("dir with space/helper.sh", "printf '%s\\n' \"$#\" \"$@\" > " + quoted(args) +
                                                                   "\ncat <<'EOF'\n" + document + "\nEOF\n");
    auto const o = run(quoted(helper) + R"( "two words" 'it is' back\ slash "say \"hi\"" '' $HOME)");
    REQUIRE_MESSAGE(o.what == ad::source_outcome::kind::found, o.reason);
    CHECK(read_text(args) == "6\ntwo words\nit is\nback slash\nsay \"hi\"\n\n$HOME\n");
}

TEST_CASE("credential_process: output that is not a usable Version 1 document is refused") {
    scripts dir;
    auto check = [&](std::string const& out, std::string const& says) {
        auto const helper = dir.script("helper.sh", "cat <<'EOF'\n" + out + "\nEOF\n");
        auto const o = run(quoted(helper));
        CHECK(o.what == ad::source_outcome::kind::failed);
        CHECK(o.ec == errc::invalid_response);
        CHECK_MESSAGE(contains(o.reason, says), o.reason);
        CHECK(contains(o.reason, "credential_process '" + helper + "' (" + where + ")"));
        CHECK_FALSE(contains(o.reason, "verySecretValue"));
        CHECK_FALSE(contains(o.reason, "verySecretToken"));
    };
    check(R"({"Version":2,"AccessKeyId":"AKID","SecretAccessKey":"verySecretValue1"})", "'Version' is '2'; only 1");
    check(R"({"Version":1,"SecretAccessKey":"verySecretValue1","SessionToken":"verySecretToken1"})", "'AccessKeyId'");
    // Not JSON: only its size is told, never the text.
    check("AccessKeyId: AKID\nSecretAccessKey: verySecretValue1", "(52 bytes) is not JSON");
}

TEST_CASE("credential_process: a failing helper's exit status and stderr are in the message") {
    scripts dir;
    auto const helper = dir.script("fail.sh", "echo 'SSO session expired; run aws sso login' >&2\nexit 3\n");
    auto const o = run(quoted(helper) + " --profile secret-arg-value");
    CHECK(o.what == ad::source_outcome::kind::failed);
    CHECK(o.ec == errc::no_credentials);
    CHECK_MESSAGE(contains(o.reason, "credential_process '" + helper + "' (" + where +
                                         ") exited 3: SSO session expired; run aws sso login"),
                  o.reason);
    CHECK_FALSE(contains(o.reason, "secret-arg-value")); // arguments are never shown

    auto const silent = run("sh -c 'exit 5'");
    CHECK(silent.ec == errc::no_credentials);
    CHECK(contains(silent.reason, "credential_process 'sh' (" + where + ") exited 5 and wrote nothing on stderr"));

    auto const killed = run("sh -c 'echo dying >&2; kill -9 $$'");
    CHECK(killed.ec == errc::no_credentials);
    CHECK_MESSAGE(contains(killed.reason, "was killed by signal 9: dying"), killed.reason);
}

TEST_CASE("credential_process: secrets a failing helper writes on stderr are not shown") {
    scripts dir;
    // Its stdout held the credentials; its stderr repeats them, then it fails.
    auto const helper = dir.script("leaky.sh", "cat <<'EOF'\n" + document +
                                                   "\nEOF\n"
                                                   "echo 'debug: secret=procSecretKey0123456789 "
                                                   "token=procSessionToken0123456789 id=AKIDPROCESS' >&2\nexit 1\n");
    auto const o = run(quoted(helper));
    CHECK(o.ec == errc::no_credentials);
    CHECK_FALSE(contains(o.reason, "procSecretKey0123456789"));
    CHECK_FALSE(contains(o.reason, "procSessionToken0123456789"));
    CHECK_MESSAGE(contains(o.reason, "exited 1: debug: secret=*** token=*** id=AKIDPROCESS"), o.reason);

    // Stdout that is no document: its words are the secrets.
    auto const raw = dir.script("raw.sh", "echo 'TOKEN=rawTokenValue42'\necho 'bad token rawTokenValue42' >&2\nexit 2\n");
    auto const r = run(quoted(raw));
    CHECK_FALSE(contains(r.reason, "rawTokenValue42"));
    CHECK_MESSAGE(contains(r.reason, "exited 2: bad token ***"), r.reason);

    // The environment it inherited: a helper that dumps it must not show this process's secrets.
    char const* const before = ::getenv("AWS_SESSION_TOKEN");
    std::optional<std::string> const saved = before ? std::optional<std::string>(before) : std::nullopt;
    ::setenv("AWS_SESSION_TOKEN", "envSessionToken0123", 1);
    auto const e = run(R"(sh -c 'echo "token is $AWS_SESSION_TOKEN" >&2; exit 4')");
    if (saved)
        ::setenv("AWS_SESSION_TOKEN", saved->c_str(), 1);
    else
        ::unsetenv("AWS_SESSION_TOKEN");
    CHECK_FALSE(contains(e.reason, "envSessionToken0123"));
    CHECK_MESSAGE(contains(e.reason, "exited 4: token is ***"), e.reason);
}

TEST_CASE("credential_process: a long stderr is cut to its end") {
    scripts dir;
    auto const helper =
        dir.script("chatty.sh", "i=0\nwhile [ $i -lt 300 ]; do echo \"progress line $i\" >&2; i=$((i+1)); done\n"
                                "echo 'final: access denied' >&2\nexit 1\n");
    auto const o = run(quoted(helper));
    CHECK(o.ec == errc::no_credentials);
    CHECK(contains(o.reason, "exited 1: ..."));
    CHECK(contains(o.reason, "progress line 299 final: access denied"));
    CHECK_FALSE(contains(o.reason, "progress line 1 "));
    auto const shown = o.reason.substr(o.reason.find("exited 1: ") + 10);
    CHECK(shown.size() == 1003); // "..." and the last 1000 characters
}

TEST_CASE("credential_process: output over max_response_bytes is refused and the helper killed") {
    scripts dir;
    for (bool on_stderr : {false, true}) {
        CAPTURE(on_stderr);
        auto const pidfile = dir.at(on_stderr ? "err.pid" : "out.pid");
        auto const helper = dir.script(on_stderr ? "flood-err.sh" : "flood-out.sh",
                                       "echo $$ > " + quoted(pidfile) + "\nexec yes " +
                                           (on_stderr ? "flood >&2" : "procSecretKey0123456789") + "\n");
        aws::provider_options opts;
        opts.max_response_bytes = 4096;
        auto const o = run(quoted(helper), opts);
        CHECK(o.ec == errc::invalid_response);
        CHECK_MESSAGE(contains(o.reason, std::string("wrote more than 4096 bytes on ") +
                                             (on_stderr ? "stderr" : "stdout") + " (provider_options::max_response_bytes); killed"),
                      o.reason);
        CHECK_FALSE(contains(o.reason, "procSecretKey0123456789"));
        check_reaped(read_pid(pidfile));
    }
}

TEST_CASE("credential_process: a helper that hangs is killed after process_timeout and reaped") {
    scripts dir;
    auto const pidfile = dir.at("hung.pid");
    auto const helper =
        dir.script("hung.sh", "echo $$ > " + quoted(pidfile) + "\necho 'Enter MFA code:' >&2\nexec sleep 100\n");
    aws::provider_options opts;
    opts.process_timeout = 300ms;
    auto const started = std::chrono::steady_clock::now();
    auto const o = run(quoted(helper), opts);
    CHECK(std::chrono::steady_clock::now() - started < 10s);
    CHECK(o.ec == errc::timeout);
    CHECK_MESSAGE(contains(o.reason, "credential_process '" + helper + "' (" + where +
                                         ") did not finish within 300 ms; killed; its stderr: Enter MFA code:"),
                  o.reason);
    check_reaped(read_pid(pidfile));

    // It exited, but something it started keeps its output open: the limit ends the wait as well.
    auto const forks = dir.script("forks.sh", "sleep 2 &\ncat <<'EOF'\n" + document + "\nEOF\n");
    auto const f = run(quoted(forks), opts);
    CHECK(f.ec == errc::timeout);
    CHECK_MESSAGE(contains(f.reason, "exited 0, but its stdout or stderr was still open after 300 ms"), f.reason);
    CHECK_FALSE(contains(f.reason, "procSecretKey0123456789"));
}

TEST_CASE("credential_process: a program that cannot be started") {
    scripts dir;
    auto const o = run("baton-no-such-helper-7f3a --token secret-arg-value");
    CHECK(o.what == ad::source_outcome::kind::failed);
    CHECK(o.ec == errc::no_credentials);
    CHECK_MESSAGE(contains(o.reason, "credential_process 'baton-no-such-helper-7f3a' (" + where +
                                         ") could not be started: no program of that name on PATH"),
                  o.reason);
    CHECK_FALSE(contains(o.reason, "secret-arg-value"));

    auto const missing = run(quoted(dir.at("missing/helper")));
    CHECK(contains(missing.reason, "could not be started: no such file"));

    auto const plain = dir.write("not-executable.sh", "#!/bin/sh\nexit 0\n");
    auto const denied = run(quoted(plain));
    CHECK(denied.ec == errc::no_credentials);
    CHECK_MESSAGE(contains(denied.reason, "could not be started: permission denied"), denied.reason);

    // A command that cannot be split is reported the same way: on the executor, never inline.
    auto const unsplit = run(R"(helper "unclosed)");
    CHECK(unsplit.ec == errc::no_credentials);
    CHECK(contains(unsplit.reason, "credential_process (" + where + ") cannot be run: the command has a quotation"));
}

TEST_CASE("credential_process: when the io_context goes away mid-run the helper is killed and reaped") {
    scripts dir;
    auto const pidfile = dir.at("orphan.pid");
    auto const helper = dir.script("sleeper.sh", "echo $$ > " + quoted(pidfile) + "\nexec sleep 100\n");
    auto const fds_before = open_fds();
    ::pid_t pid = -1;
    bool called = false;
    {
        net::io_context ioc;
        ad::start_credential_process(ioc.get_executor(), aws::provider_options{}, label,
                                     ad::process_settings{quoted(helper), where},
                                     [&called](ad::source_outcome) { called = true; });
        REQUIRE(run_until(ioc, [&] { return !read_text(pidfile).empty(); }, 20s));
        pid = read_pid(pidfile);
    } // the run's handlers, and with them the run, are destroyed here
    CHECK_FALSE(called);
    check_reaped(pid);
    CHECK(open_fds() == fds_before);
}

TEST_CASE("credential_process: provider_options::process_timeout is checked") {
    aws::provider_options o;
    CHECK(o.process_timeout == 60s);
    o.validate();
    o.process_timeout = 0ms;
    CHECK_THROWS_AS(o.validate(), baton::config_error);
    o.process_timeout = 1ms;
    o.validate();
    o.process_timeout = 2h;
    CHECK_THROWS_AS(o.validate(), baton::config_error);
}

} // namespace process_credentials_tests
