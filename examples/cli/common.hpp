// Part of the baton command-line tool (examples/cli/main.cpp). What every command shares: the includes, exit statuses, errors, JSON output.
#ifndef BATON_CLI_COMMON_HPP
#define BATON_CLI_COMMON_HPP

#include <baton/baton.hpp>
#include <baton/aws/credentials.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/profile.hpp>
#include <baton/backend/file.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#ifndef BATON_VERSION
#define BATON_VERSION "unknown" // the build gives the project's version
#endif

namespace baton_cli {

namespace asio = boost::asio;
using namespace std::chrono_literals;

constexpr int exit_unavailable = 75; // EX_TEMPFAIL: the lease could not be had
constexpr int exit_usage = 64;       // EX_USAGE: bad usage, or a store that cannot work as configured
constexpr int exit_failure = 1;
// baton kv: outcomes a script branches on, each distinct from errors (1) and from each other.
constexpr int exit_kv_absent = 2;       // get: the key has no value
constexpr int exit_kv_precondition = 3; // --if-version / --if-absent does not hold
constexpr int exit_kv_fenced = 4;       // --fence: a higher token was already accepted for the key

// Set once from --log-format json: events and errors go to stderr as JSON objects, one per line.
inline bool json_log = false;

// An error line on stderr: `baton: LINE`, or {"event":"error","message":LINE} with --log-format json.
inline void print_error(std::string const& line) {
    if (!json_log) {
        std::fprintf(stderr, "baton: %s\n", line.c_str());
        return;
    }
    boost::json::object o;
    o["event"] = "error";
    o["message"] = line;
    std::string text = boost::json::serialize(o) + "\n";
    std::fwrite(text.data(), 1, text.size(), stderr);
}

[[noreturn]] void die(int code, std::string const& line) {
    print_error(line);
    std::exit(code);
}

// One JSON document on stdout (--json).
void print_json(boost::json::value const& v) {
    std::string text = boost::json::serialize(v);
    text += '\n';
    std::fwrite(text.data(), 1, text.size(), stdout);
}

} // namespace baton_cli

#endif
