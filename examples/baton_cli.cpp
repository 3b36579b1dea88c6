// baton: run a command only while holding a lease (like flock(1), across machines).
//
//   baton run    --store URL --key K [--ttl 20s] [--wait DURATION | --no-wait] [--owner NAME] -- CMD ARGS...
//   baton status --store URL --key K
//   baton probe  --store URL
//
// Stores are URLs: file:///dir (the embedded default: a local directory) and
// dynamodb://table (endpoint, region and credentials from --endpoint/--region
// and the usual AWS_* environment variables).
// The command gets BATON_FENCING_TOKEN and BATON_LEASE_KEY, is terminated when
// the lease is lost (at the renew deadline, before the lease could expire),
// and baton exits with its status; 75 (EX_TEMPFAIL) when the lease could not
// be had. SIGINT/SIGTERM are passed to the command, then the lease is released.
// If baton itself is killed, the command is killed too (it would run unprotected).

#include <baton/baton.hpp>
#include <baton/backend/file.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

constexpr int exit_unavailable = 75; // EX_TEMPFAIL: the lease could not be had
constexpr int exit_usage = 64;       // EX_USAGE
constexpr int exit_failure = 1;

char const* const usage_main =
    "usage: baton <command> [options]\n"
    "\n"
    "commands:\n"
    "  run      run a command only while holding a lease\n"
    "  status   show who holds a lease\n"
    "  probe    show what a store honours (conditional writes)\n"
    "\n"
    "stores are URLs: file:///path/to/dir, dynamodb://table\n"
    "run 'baton <command> --help' for the options of each.\n";

char const* const usage_run =
    "usage: baton run --store URL --key KEY [options] -- COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND only while holding the lease KEY in the store, like flock(1).\n"
    "COMMAND gets BATON_FENCING_TOKEN (strictly larger for every new holder) and\n"
    "BATON_LEASE_KEY in its environment. If the lease is lost, COMMAND is sent\n"
    "SIGTERM at the renew deadline (before the lease could expire), then SIGKILL.\n"
    "SIGINT and SIGTERM are passed to COMMAND; the lease is released on exit.\n"
    "If baton itself is killed, COMMAND is killed with it.\n"
    "\n"
    "options:\n"
    "  --store URL        where the lease lives (file:///dir, dynamodb://table)\n"
    "  --endpoint URL     service endpoint (default: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, or AWS)\n"
    "  --region REGION    AWS region (default: AWS_REGION, AWS_DEFAULT_REGION)\n"
    "  --key KEY          the lease's name, e.g. jobs/nightly-report\n"
    "  --ttl DURATION     lease time to live (default 20s); renewed every ttl/3\n"
    "  --wait DURATION    give up after waiting this long (default: wait forever)\n"
    "  --no-wait          try once; exit 75 at once if someone else holds it\n"
    "  --owner NAME       holder name written in the record (default: host:pid)\n"
    "  --grace DURATION   time between SIGTERM and SIGKILL on loss (default 5s)\n"
    "\n"
    "exit status: COMMAND's; 75 when the lease could not be had; 64 on bad usage.\n"
    "durations: 500ms, 20s, 2m, 1h (a bare number is seconds).\n";

char const* const usage_status =
    "usage: baton status --store URL --key KEY\n"
    "\n"
    "Prints the lease record: holder, fencing token, state, value and TTL.\n"
    "A 'held' record may belong to a holder that stopped renewing; contenders\n"
    "take it over only after ttl x 2 of seeing it unchanged.\n";

char const* const usage_probe =
    "usage: baton probe --store URL\n"
    "\n"
    "Writes, overwrites and deletes a scratch record with stale and fresh\n"
    "preconditions and prints what the store honours. Exit 0 when leases are\n"
    "safe on it, 1 when not.\n";

[[noreturn]] void die(int code, std::string const& line) {
    std::fprintf(stderr, "baton: %s\n", line.c_str());
    std::exit(code);
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view s) {
    double value = 0;
    auto const* first = s.data();
    auto const* last = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || ptr == first || value < 0) return std::nullopt;
    std::string_view unit(ptr, static_cast<std::size_t>(last - ptr));
    double ms;
    if (unit.empty() || unit == "s") ms = value * 1000;
    else if (unit == "ms") ms = value;
    else if (unit == "m") ms = value * 60'000;
    else if (unit == "h") ms = value * 3'600'000;
    else return std::nullopt;
    if (ms > 1e12) return std::nullopt;
    return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

struct store_url {
    std::string scheme;
    std::string path; // file: the directory
};

store_url parse_store(std::string const& url) {
    auto const sep = url.find("://");
    if (sep == std::string::npos) die(exit_usage, "--store '" + url + "' is not a URL (expected file:///dir)");
    store_url u{url.substr(0, sep), url.substr(sep + 3)};
    if (u.scheme == "file") {
        // file:///abs/dir, or file://localhost/abs/dir
        if (u.path.rfind("localhost/", 0) == 0) u.path = u.path.substr(9);
        if (u.path.empty() || u.path[0] != '/')
            die(exit_usage, "--store '" + url + "': a file URL needs an absolute path (file:///dir)");
        return u;
    }
    if (u.scheme == "dynamodb") {
        if (u.path.empty() || u.path.find('/') != std::string::npos)
            die(exit_usage, "--store '" + url + "': expected dynamodb://TABLE");
        return u;
    }
    if (u.scheme == "s3")
        die(exit_usage, "--store '" + url + "': s3:// stores are not available in this build yet; use file:///dir or dynamodb://table");
    die(exit_usage, "--store '" + url + "': unknown scheme '" + u.scheme + "' (expected file:// or dynamodb://)");
}

struct options {
    std::string command;
    std::string store;
    std::string key;
    std::string owner;
    std::chrono::milliseconds ttl = 20s;
    std::optional<std::chrono::milliseconds> wait;
    bool no_wait = false;
    std::chrono::milliseconds grace = 5s;
    std::string endpoint;
    std::string region;
    std::vector<std::string> argv; // run: the command
};

options parse_args(int argc, char** argv) {
    options o;
    if (argc < 2) {
        std::fputs(usage_main, stderr);
        std::exit(exit_usage);
    }
    o.command = argv[1];
    if (o.command == "--help" || o.command == "-h" || o.command == "help") {
        std::fputs(usage_main, stdout);
        std::exit(0);
    }
    char const* usage = o.command == "run" ? usage_run : o.command == "status" ? usage_status
                        : o.command == "probe"                                  ? usage_probe
                                                                                : nullptr;
    if (!usage) die(exit_usage, "unknown command '" + o.command + "' (try 'baton --help')");
    for (int i = 2; i < argc; ++i) {
        std::string_view a = argv[i];
        auto value = [&](char const* name) -> std::string {
            if (i + 1 >= argc) die(exit_usage, std::string(name) + " needs a value");
            return argv[++i];
        };
        auto duration = [&](char const* name) {
            auto text = value(name);
            auto d = parse_duration(text);
            if (!d) die(exit_usage, std::string(name) + " '" + text + "' is not a duration (e.g. 500ms, 20s, 2m)");
            return *d;
        };
        if (a == "--help" || a == "-h") {
            std::fputs(usage, stdout);
            std::exit(0);
        } else if (a == "--store") o.store = value("--store");
        else if (a == "--endpoint") o.endpoint = value("--endpoint");
        else if (a == "--region") o.region = value("--region");
        else if (a == "--key") o.key = value("--key");
        else if (a == "--owner" && o.command == "run") o.owner = value("--owner");
        else if (a == "--ttl" && o.command == "run") o.ttl = duration("--ttl");
        else if (a == "--wait" && o.command == "run") o.wait = duration("--wait");
        else if (a == "--no-wait" && o.command == "run") o.no_wait = true;
        else if (a == "--grace" && o.command == "run") o.grace = duration("--grace");
        else if (a == "--" && o.command == "run") {
            for (++i; i < argc; ++i) o.argv.emplace_back(argv[i]);
        } else die(exit_usage, "unknown option '" + std::string(a) + "' for 'baton " + o.command + "' (try --help)");
    }
    if (o.store.empty()) die(exit_usage, "--store is required (e.g. --store file:///var/lib/baton)");
    if (o.command != "probe" && o.key.empty()) die(exit_usage, "--key is required");
    if (o.command == "run" && o.argv.empty()) die(exit_usage, "no command to run: put it after --");
    if (o.no_wait && o.wait) die(exit_usage, "--wait and --no-wait exclude each other");
    return o;
}

std::string default_owner() {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "host");
    return std::string(host) + ":" + std::to_string(getpid());
}

std::string seconds_text(std::chrono::nanoseconds d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1fs", std::chrono::duration<double>(d).count());
    return buf;
}

// ---- run -------------------------------------------------------------------

template <class Lease>
int run_command(asio::io_context& ioc, Lease& lease, options const& o) {
    int exit_code = exit_failure;
    pid_t child = -1;
    bool child_done = false, lost = false, stopping = false;
    asio::signal_set signals(ioc, SIGINT, SIGTERM, SIGCHLD);
    asio::steady_timer progress(ioc), kill_timer(ioc);
    auto const started = std::chrono::steady_clock::now();

    std::function<void()> release_and_exit = [&] {
        signals.cancel();
        progress.cancel();
        kill_timer.cancel();
        if (lease.state() == baton::lease_state::held || lease.state() == baton::lease_state::lost)
            lease.async_release([&](baton::error_code ec) {
                if (ec && ec != baton::errc::lease_lost && ec != baton::errc::not_held)
                    std::fprintf(stderr, "baton: release failed: %s\n", ec.message().c_str());
                ioc.stop();
            });
        else
            ioc.stop();
    };

    std::function<void()> on_signal = [&] {
        signals.async_wait([&](baton::error_code ec, int sig) {
            if (ec) return;
            if (sig == SIGCHLD) {
                int status = 0;
                if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
                    child_done = true;
                    exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                    if (lost) std::fprintf(stderr, "baton: command terminated after the lease was lost\n");
                    return release_and_exit();
                }
            } else {
                stopping = true;
                if (child > 0 && !child_done) kill(child, sig); // pass it on; exit when the child does
                else {
                    exit_code = 128 + sig;
                    return release_and_exit();
                }
            }
            on_signal();
        });
    };

    std::function<void()> show_progress = [&] {
        progress.expires_after(5s);
        progress.async_wait([&](baton::error_code ec) {
            if (ec || child > 0) return;
            std::fprintf(stderr, "baton: waiting for lease '%s' (%s so far)\n", o.key.c_str(),
                         seconds_text(std::chrono::steady_clock::now() - started).c_str());
            show_progress();
        });
    };

    on_signal();
    show_progress();
    baton::acquire_options ao;
    ao.wait = !o.no_wait;
    ao.timeout = o.wait;
    lease.async_acquire(ao, [&](baton::error_code ec, baton::lease_grant g) {
        progress.cancel();
        if (ec) {
            if (stopping) exit_code = 130;
            else if (ec == baton::errc::held_by_other) {
                std::fprintf(stderr, "baton: lease '%s' is held by someone else\n", o.key.c_str());
                exit_code = exit_unavailable;
            } else if (ec == baton::errc::timeout) {
                std::fprintf(stderr, "baton: lease '%s' not acquired within %s\n", o.key.c_str(),
                             seconds_text(*o.wait).c_str());
                exit_code = exit_unavailable;
            } else {
                auto const& d = lease.last_diagnostics();
                std::fprintf(stderr, "baton: cannot acquire lease '%s': %s%s%s\n", o.key.c_str(), ec.message().c_str(),
                             d.empty() ? "" : ": ", d.to_string().c_str());
                exit_code = exit_unavailable;
            }
            return release_and_exit();
        }
        if (stopping) return release_and_exit();
        std::string const token = std::to_string(g.fencing_token);
        std::fprintf(stderr, "baton: acquired lease '%s' (fencing token %s)\n", o.key.c_str(), token.c_str());
        ioc.notify_fork(asio::io_context::fork_prepare);
        pid_t const supervisor = getpid();
        child = fork();
        if (child == 0) {
            // The command must not outlive its supervisor: nobody would stop it on loss.
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != supervisor) _exit(exit_failure);
            ioc.notify_fork(asio::io_context::fork_child);
            setenv("BATON_FENCING_TOKEN", token.c_str(), 1);
            setenv("BATON_LEASE_KEY", o.key.c_str(), 1);
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, nullptr);
            std::vector<char*> args;
            for (auto const& a : o.argv) args.push_back(const_cast<char*>(a.c_str()));
            args.push_back(nullptr);
            execvp(args[0], args.data());
            std::fprintf(stderr, "baton: cannot run '%s': %s\n", args[0], std::strerror(errno));
            _exit(127);
        }
        ioc.notify_fork(asio::io_context::fork_parent);
        if (child < 0) {
            std::fprintf(stderr, "baton: fork failed: %s\n", std::strerror(errno));
            exit_code = exit_failure;
            return release_and_exit();
        }
        lease.async_wait_lost([&](baton::error_code ec) {
            if (ec != baton::errc::lease_lost || child_done) return;
            lost = true;
            std::fprintf(stderr, "baton: lease '%s' lost; terminating the command\n", o.key.c_str());
            kill(child, SIGTERM);
            kill_timer.expires_after(o.grace);
            kill_timer.async_wait([&](baton::error_code e) {
                if (!e && !child_done) kill(child, SIGKILL);
            });
        });
    });
    ioc.run();
    return exit_code;
}

// ---- status and probe ------------------------------------------------------

template <class Lease>
int show_status(asio::io_context& ioc, Lease& lease, options const& o) {
    int code = exit_failure;
    lease.async_inspect([&](baton::error_code ec, std::optional<baton::lease_info> info) {
        if (ec) {
            auto const& d = lease.last_diagnostics();
            std::fprintf(stderr, "baton: cannot read lease '%s': %s%s%s\n", o.key.c_str(), ec.message().c_str(),
                         d.empty() ? "" : ": ", d.to_string().c_str());
            return;
        }
        code = 0;
        if (!info) {
            std::printf("key:    %s\nstate:  free (no record: never held)\n", o.key.c_str());
            return;
        }
        std::printf("key:    %s\nstate:  %s\nholder: %s\ntoken:  %llu\nttl:    %s\nvalue:  %s\n", o.key.c_str(),
                    info->released ? "released" : "held", info->owner.c_str(),
                    static_cast<unsigned long long>(info->fencing_token), seconds_text(info->ttl).c_str(),
                    info->value.c_str());
    });
    ioc.run();
    return code;
}

template <class Backend>
int run_probe(asio::io_context& ioc, Backend& backend) {
    int code = exit_failure;
    backend.async_probe([&](baton::error_code ec, baton::capabilities c) {
        if (ec) {
            std::fprintf(stderr, "baton: probe failed: %s%s%s\n", ec.message().c_str(), c.diag.empty() ? "" : ": ",
                         c.diag.to_string().c_str());
            return;
        }
        for (auto const& f : c.findings) std::printf("%s\n", f.c_str());
        if (c.supports_leases()) {
            std::printf("leases: supported\n");
            code = 0;
        } else {
            std::printf("leases: REFUSED: this store ignores preconditions; two holders could both believe they hold a lease\n");
        }
    });
    ioc.run();
    return code;
}

template <class Lease, class Backend>
int dispatch(asio::io_context& ioc, Backend backend, options const& o) {
    if (o.command == "probe") return run_probe(ioc, backend);
    baton::lease_options lo;
    lo.key = o.key;
    lo.owner = o.owner.empty() ? default_owner() : o.owner;
    lo.ttl = o.ttl;
    lo.poll_interval = std::min<std::chrono::milliseconds>(1000ms, std::max<std::chrono::milliseconds>(o.ttl / 10, 10ms));
    try {
        Lease lease(ioc.get_executor(), std::move(backend), lo);
        if (o.command == "status") return show_status(ioc, lease, o);
        return run_command(ioc, lease, o);
    } catch (baton::config_error const& e) {
        die(exit_usage, e.what());
    }
}

} // namespace

int main(int argc, char** argv) {
    options const o = parse_args(argc, argv);
    store_url const url = parse_store(o.store);
    asio::io_context ioc(1);
    try {
        if (url.scheme == "dynamodb") {
            auto env = [](char const* name) {
                char const* v = std::getenv(name);
                return std::string(v ? v : "");
            };
            baton::dynamodb_backend_params p;
            p.table = url.path;
            p.endpoint = !o.endpoint.empty() ? o.endpoint
                         : !env("AWS_ENDPOINT_URL_DYNAMODB").empty() ? env("AWS_ENDPOINT_URL_DYNAMODB")
                                                                       : env("AWS_ENDPOINT_URL");
            p.region = !o.region.empty() ? o.region : !env("AWS_REGION").empty() ? env("AWS_REGION") : env("AWS_DEFAULT_REGION");
            if (p.region.empty()) die(exit_usage, "no region: pass --region or set AWS_REGION");
            p.credentials.access_key_id = env("AWS_ACCESS_KEY_ID");
            p.credentials.secret_access_key = env("AWS_SECRET_ACCESS_KEY");
            p.credentials.session_token = env("AWS_SESSION_TOKEN");
            if (p.credentials.access_key_id.empty() || p.credentials.secret_access_key.empty())
                die(exit_usage, "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                                "(profiles and instance roles are not supported by this build yet)");
            return dispatch<baton::dynamodb_lease>(ioc, baton::dynamodb_backend(ioc.get_executor(), p), o);
        }
        baton::file_backend_params p;
        p.root = url.path;
        return dispatch<baton::file_lease>(ioc, baton::file_backend(ioc.get_executor(), p), o);
    } catch (baton::config_error const& e) {
        die(exit_usage, e.what());
    } catch (std::exception const& e) {
        die(exit_failure, e.what());
    }
}
