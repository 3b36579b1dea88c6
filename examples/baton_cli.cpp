// baton: run a command only while holding a lease (like flock(1), across machines).
//
//   baton run    --store URL --key K [--ttl 20s] [--wait DURATION | --no-wait] [--owner NAME] -- CMD ARGS...
//   baton status --store URL --key K
//   baton probe  --store URL
//   baton kv get|put|rm|list --store URL KEY [--value V] [--if-version N | --if-absent] [--fence T] [--json]
//
// Stores are URLs: file:///dir (the embedded default: a local directory),
// s3://bucket[/prefix] and dynamodb://table (endpoint, region and credentials
// from --endpoint/--region and the usual AWS_* environment variables), and
// s3://bucket[/prefix]?lock=dynamodb://table (or ?lock=file:///dir) for an S3
// store that ignores preconditions: objects in S3, commits in the lock store.
// The command gets BATON_FENCING_TOKEN and BATON_LEASE_KEY, is terminated when
// the lease is lost (at the renew deadline, before the lease could expire),
// and baton exits with its status; 75 (EX_TEMPFAIL) when the lease could not
// be had; 64 (EX_USAGE) on bad usage and on stores that cannot work as
// configured (missing bucket or table, refused credentials, a store that
// ignores preconditions). SIGINT/SIGTERM are passed to the command, then the
// lease is released.
// If baton itself is killed, the command is killed too (it would run unprotected).

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

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

constexpr int exit_unavailable = 75; // EX_TEMPFAIL: the lease could not be had
constexpr int exit_usage = 64;       // EX_USAGE: bad usage, or a store that cannot work as configured
constexpr int exit_failure = 1;
// baton kv: outcomes a script branches on, each distinct from errors (1) and from each other.
constexpr int exit_kv_absent = 2;       // get: the key has no value
constexpr int exit_kv_precondition = 3; // --if-version / --if-absent does not hold
constexpr int exit_kv_fenced = 4;       // --fence: a higher token was already accepted for the key

char const* const usage_main =
    "usage: baton <command> [options]\n"
    "\n"
    "commands:\n"
    "  run      run a command only while holding a lease\n"
    "  status   show who holds a lease\n"
    "  probe    show what a store honours (conditional writes)\n"
    "  kv       get, put, erase and list versioned values (get|put|rm|list)\n"
    "  table    a lease table: shards split among workers (register|retire|status|work)\n"
    "\n"
    "stores are URLs: file:///path/to/dir, s3://bucket[/prefix], dynamodb://table,\n"
    "  s3://bucket[/prefix]?lock=dynamodb://table (an S3 store without conditional writes,\n"
    "  coordinated through a DynamoDB table; ?lock=file:///dir on one host)\n"
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
    "  --store URL        where the lease lives (file:///dir, s3://bucket[/prefix], dynamodb://table)\n"
    "  --key KEY          the lease's name, e.g. jobs/nightly-report\n"
    "  --ttl DURATION     lease time to live (default 20s); renewed every ttl/3\n"
    "  --wait DURATION    give up after waiting this long (default: wait forever)\n"
    "  --no-wait          try once; exit 75 at once if someone else holds it\n"
    "  --owner NAME       holder name written in the record (default: host:pid)\n"
    "  --grace DURATION   time between SIGTERM and SIGKILL on loss (default 5s)\n"
    "  --wall-clock-tokens  a record this run creates starts its tokens at the\n"
    "                     wall-clock microsecond, so tokens keep growing even if\n"
    "                     the record is deleted (a lifecycle rule, a TTL)\n"
    "  --metrics-file PATH  keep the lease's figures in PATH in Prometheus text\n"
    "                     format (node_exporter's textfile collector), rewritten\n"
    "                     atomically after every event\n"
    "  --verbose          print every event on stderr: acquisition, renewals with\n"
    "                     their latency and margin, each store answer, retries,\n"
    "                     writes in doubt and how they were settled, loss, release\n"
    "%s"
    "\n"
    "exit status: COMMAND's; 75 when the lease could not be had; 64 on bad usage or\n"
    "a store that cannot work as configured (missing bucket or table, refused\n"
    "credentials, a store that ignores preconditions).\n"
    "durations: 500ms, 20s, 2m, 1h (a bare number is seconds).\n";

char const* const usage_status =
    "usage: baton status --store URL --key KEY [options]\n"
    "\n"
    "Prints the lease record: holder, fencing token, state, value and TTL.\n"
    "A 'held' record may belong to a holder that stopped renewing; contenders\n"
    "take it over only after ttl x 2 of seeing it unchanged.\n"
    "\n"
    "options:\n"
    "  --store URL        file:///dir, s3://bucket[/prefix] or dynamodb://table\n"
    "  --key KEY          the lease's name\n"
    "  --json             print one JSON document: {\"key\", \"state\" (free, held or\n"
    "                     released), \"holder\", \"token\", \"ttl_ms\", \"value\", \"version\"}\n"
    "%s"
    "\n"
    "exit status: 0 when the record could be read; 64 on bad usage or a store that\n"
    "cannot work as configured; 1 otherwise.\n";

char const* const usage_probe =
    "usage: baton probe --store URL [options]\n"
    "\n"
    "Writes, overwrites and deletes a scratch record with stale and fresh\n"
    "preconditions and prints what the store honours: conditional create,\n"
    "replace and erase, and for S3 whether If-Match must be sent unquoted\n"
    "(Ceph RGW) and whether leases release by marker (stores that ignore\n"
    "If-Match on DELETE). Stores that ignore preconditions (e.g. s3rver) are\n"
    "refused for leases.\n"
    "\n"
    "options:\n"
    "  --store URL        file:///dir, s3://bucket[/prefix] or dynamodb://table\n"
    "  --json             print one JSON document: {\"store\", \"checks\": [...],\n"
    "                     \"conditional_create\", \"conditional_replace\", \"conditional_erase\",\n"
    "                     \"unquoted_if_match\" (S3), \"leases\": \"supported\" or \"refused\", \"reason\"}\n"
    "%s"
    "\n"
    "exit status: 0 when leases are safe on the store, 1 when not (or the probe\n"
    "could not finish), 64 on bad usage or a store that cannot work as configured.\n";

char const* const usage_kv =
    "usage: baton kv get  --store URL KEY [--json]\n"
    "       baton kv put  --store URL KEY [--value VALUE] [--if-version N | --if-absent] [--fence TOKEN] [--json]\n"
    "       baton kv rm   --store URL KEY [--if-version N] [--fence TOKEN] [--json]\n"
    "       baton kv list --store URL [PREFIX] [--json]\n"
    "\n"
    "A versioned key-value store: every write raises the key's version by one\n"
    "(erases too: they leave a tombstone, so versions never go back and a writer\n"
    "holding an old version cannot bring an erased key back).\n"
    "  get   prints the value's bytes (--json: {\"key\", \"version\", \"value\", \"fence\"};\n"
    "        a value that is not UTF-8 is given as \"value_base64\")\n"
    "  put   writes VALUE (or standard input) and prints the new version\n"
    "  rm    erases the key and prints the tombstone's version\n"
    "  list  prints the keys under PREFIX that have a value, one per line\n"
    "        (--json: [{\"key\", \"version\", \"value\"}, ...])\n"
    "\n"
    "options:\n"
    "  --store URL        file:///dir, s3://bucket[/prefix] or dynamodb://table\n"
    "  --value VALUE      put: the value (default: all of standard input)\n"
    "  --if-version N     put, rm: only if the key's value has version N\n"
    "  --if-absent        put: only if the key has no value\n"
    "  --fence TOKEN      put, rm: a fencing token (e.g. \"$BATON_FENCING_TOKEN\" under\n"
    "                     'baton run'); refused by the store if the key already\n"
    "                     accepted a higher one\n"
    "  --json             print one JSON document\n"
    "%s"
    "\n"
    "exit status: 0 done; 2 get: no value; 3 the --if-version/--if-absent condition\n"
    "does not hold; 4 fenced (a higher token was accepted); 1 any other failure\n"
    "(the message says whether a write may have landed); 64 on bad usage or a store\n"
    "that cannot work as configured (missing bucket or table, refused credentials,\n"
    "a store that ignores preconditions).\n";

char const* const usage_table =
    "usage: baton table register --store URL SHARD...\n"
    "       baton table retire   --store URL SHARD...\n"
    "       baton table status   --store URL [--json]\n"
    "       baton table work     --store URL [--worker NAME] [--records N] [--step DURATION]\n"
    "                            [--ttl DURATION] [--log FILE]\n"
    "\n"
    "A lease table: shards (streams, partitions, tenants, queues) split among workers,\n"
    "each shard owned by one worker at a time, with a fencing token that rises at each\n"
    "change of owner and a checkpoint that only its owner can write. The store URL names\n"
    "the table (a directory, a bucket prefix, a DynamoDB table).\n"
    "  register  adds shards (a retired shard comes back with its token)\n"
    "  retire    retires shards: their owners stop, nobody claims them again\n"
    "  status    prints every shard (owner, token, checkpoint, state) and every worker\n"
    "            (--json: {\"shards\": [{\"shard\", \"owner\", \"term\", \"token\",\n"
    "            \"checkpoint\", \"state\", \"requested_by\"}], \"workers\": [{\"name\",\n"
    "            \"term\", \"released\", \"shards\"}]})\n"
    "  work      runs a worker that consumes numbered records 1..N of each shard it is\n"
    "            handed, one per --step, checkpointing after each; SIGTERM or SIGINT\n"
    "            hands its shards over and exits 0\n"
    "\n"
    "options:\n"
    "  --store URL        file:///dir, s3://bucket[/prefix], dynamodb://table, or\n"
    "                     s3://bucket[/prefix]?lock=dynamodb://table\n"
    "  --worker NAME      work: this worker's name, unique among live workers\n"
    "                     (default: host name and process id)\n"
    "  --records N        work: records per shard (default 0: without end)\n"
    "  --step DURATION    work: time to process one record (default 100ms)\n"
    "  --ttl DURATION     work: the worker lease's TTL (default 20s); a dead worker's\n"
    "                     shards are taken after twice that\n"
    "  --log FILE         work: append one line per event to FILE:\n"
    "                     MONOTONIC_NS WORKER SHARD TOKEN start|record|refused|end N\n"
    "  --json             status: print one JSON document\n"
    "%s"
    "\n"
    "exit status: 0 done; 1 a store operation failed; 64 on bad usage or a store that\n"
    "cannot work as configured.\n";

// The options of the AWS stores, shared by every command's help.
char const* const usage_aws =
    "\n"
    "s3:// and dynamodb:// stores:\n"
    "  --endpoint URL     service endpoint, e.g. http://127.0.0.1:7480 (default:\n"
    "                     AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL_DYNAMODB, then\n"
    "                     AWS_ENDPOINT_URL, unless AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true;\n"
    "                     else AWS in the region)\n"
    "  --region REGION    AWS region (default: AWS_REGION, AWS_DEFAULT_REGION, then the\n"
    "                     profile's region; s3:// with a custom endpoint: us-east-1)\n"
    "  --path-style       s3://: address the bucket as host/bucket/key (default for\n"
    "                     custom endpoints and bucket names with a dot)\n"
    "  --virtual-hosted   s3://: address the bucket as bucket.host/key (default on AWS)\n"
    "  s3://...?lock=dynamodb://TABLE: --endpoint names S3's endpoint; the table's comes from\n"
    "                     AWS_ENDPOINT_URL_DYNAMODB, then AWS_ENDPOINT_URL (else AWS in the region)\n"
    "  credentials: the AWS SDKs' default chain: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,\n"
    "               AWS_SESSION_TOKEN; web identity (AWS_WEB_IDENTITY_TOKEN_FILE,\n"
    "               AWS_ROLE_ARN); profiles (AWS_PROFILE, ~/.aws/credentials, ~/.aws/config);\n"
    "               ECS/EKS container credentials; EC2 instance metadata (IMDSv2)\n";

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

// Prints a command's help, with the AWS store options where its text says %s.
void print_usage(char const* usage, std::FILE* to) {
    std::string text = usage;
    if (auto at = text.find("%s"); at != std::string::npos) text.replace(at, 2, usage_aws);
    std::fputs(text.c_str(), to);
}

struct store_url {
    std::string text;   // as given, for messages
    std::string scheme; // file, s3, dynamodb
    std::string path;   // file: the directory; dynamodb: the table; s3: the bucket
    std::string prefix; // s3: the key prefix, empty or ending in '/'
    std::string lock;   // s3 with ?lock=URL: the lock store of the commit protocol (dynamodb:// or file://)
};

store_url parse_store(std::string const& url) {
    auto const sep = url.find("://");
    if (sep == std::string::npos) die(exit_usage, "--store '" + url + "' is not a URL (expected file:///dir)");
    store_url u{url, url.substr(0, sep), url.substr(sep + 3), {}, {}};
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
    if (u.scheme == "s3") {
        // s3://bucket[/prefix][?lock=dynamodb://TABLE|file:///DIR]: with a lock store, the
        // objects live in S3 and the commits in the lock store (the commit protocol), for S3
        // stores that ignore preconditions.
        if (auto const q = u.path.find('?'); q != std::string::npos) {
            std::string const query = u.path.substr(q + 1);
            u.path.resize(q);
            if (query.rfind("lock=", 0) != 0 || query.size() == 5)
                die(exit_usage, "--store '" + url + "': the only query is ?lock=dynamodb://TABLE or ?lock=file:///DIR");
            u.lock = query.substr(5);
            store_url const lock = parse_store(u.lock);
            if (lock.scheme != "dynamodb" && lock.scheme != "file")
                die(exit_usage, "--store '" + url + "': the lock store must be dynamodb://TABLE or file:///DIR");
        }
        // s3://bucket[/prefix], as the AWS CLI writes them: the prefix is taken literally (no
        // percent-decoding) and names a folder, so s3://b/locks and s3://b/locks/ are the same store.
        auto const slash = u.path.find('/');
        if (slash != std::string::npos) {
            u.prefix = u.path.substr(slash + 1);
            u.path.resize(slash);
            if (!u.prefix.empty() && u.prefix.back() != '/') u.prefix += '/';
        }
        if (u.path.empty()) die(exit_usage, "--store '" + url + "': expected s3://BUCKET or s3://BUCKET/PREFIX");
        return u;
    }
    die(exit_usage, "--store '" + url + "': unknown scheme '" + u.scheme +
                        "' (expected file://, s3:// or dynamodb://)");
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
    bool wall_clock_tokens = false;
    std::string metrics_file; // run: Prometheus text, rewritten after every event
    bool verbose = false;     // run: every lease event on stderr
    std::string endpoint;
    std::string region;
    std::optional<bool> path_style; // s3: --path-style / --virtual-hosted
    std::vector<std::string> argv;  // run: the command
    // kv
    std::string kv_action;                 // get, put, rm, list
    std::optional<std::string> value;      // put --value
    std::optional<std::uint64_t> if_version;
    bool if_absent = false;
    std::optional<std::uint64_t> fence;
    bool json = false;
    // table
    std::string table_action;          // register, retire, status, work
    std::vector<std::string> shards;   // register, retire
    std::string worker;                // work
    std::uint64_t records = 0;         // work: records per shard (0: without end)
    std::chrono::milliseconds step = 100ms;
    std::string log_path;              // work: event lines
};

std::uint64_t parse_u64_option(char const* name, std::string const& text, bool allow_zero) {
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size() || text.empty() || (!allow_zero && v == 0))
        die(exit_usage, std::string(name) + " '" + text + "' is not a number from " + (allow_zero ? "0" : "1") +
                            " to 18446744073709551615");
    return v;
}

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
    bool path_style = false, virtual_hosted = false;
    char const* usage = o.command == "run" ? usage_run : o.command == "status" ? usage_status
                        : o.command == "probe"                                  ? usage_probe
                        : o.command == "kv"                                     ? usage_kv
                        : o.command == "table"                                  ? usage_table
                                                                                : nullptr;
    if (!usage) die(exit_usage, "unknown command '" + o.command + "' (try 'baton --help')");
    int first = 2;
    if (o.command == "kv") {
        if (argc < 3) {
            print_usage(usage_kv, stderr);
            std::exit(exit_usage);
        }
        o.kv_action = argv[2];
        if (o.kv_action == "--help" || o.kv_action == "-h") {
            print_usage(usage_kv, stdout);
            std::exit(0);
        }
        if (o.kv_action != "get" && o.kv_action != "put" && o.kv_action != "rm" && o.kv_action != "list")
            die(exit_usage, "unknown kv action '" + o.kv_action + "' (get, put, rm or list)");
        first = 3;
    }
    if (o.command == "table") {
        if (argc < 3) {
            print_usage(usage_table, stderr);
            std::exit(exit_usage);
        }
        o.table_action = argv[2];
        if (o.table_action == "--help" || o.table_action == "-h") {
            print_usage(usage_table, stdout);
            std::exit(0);
        }
        if (o.table_action != "register" && o.table_action != "retire" && o.table_action != "status" &&
            o.table_action != "work")
            die(exit_usage, "unknown table action '" + o.table_action + "' (register, retire, status or work)");
        first = 3;
    }
    bool const table = o.command == "table";
    bool const table_shards = table && (o.table_action == "register" || o.table_action == "retire");
    bool const table_work = table && o.table_action == "work";
    bool const kv = o.command == "kv";
    bool const kv_write = kv && (o.kv_action == "put" || o.kv_action == "rm");
    for (int i = first; i < argc; ++i) {
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
            print_usage(usage, stdout);
            std::exit(0);
        } else if (a == "--store") o.store = value("--store");
        else if (a == "--endpoint") o.endpoint = value("--endpoint");
        else if (a == "--region") o.region = value("--region");
        else if (a == "--path-style") path_style = true;
        else if (a == "--virtual-hosted") virtual_hosted = true;
        else if (a == "--key") o.key = value("--key");
        else if (a == "--owner" && o.command == "run") o.owner = value("--owner");
        else if (a == "--ttl" && (o.command == "run" || table_work)) o.ttl = duration("--ttl");
        else if (a == "--worker" && table_work) o.worker = value("--worker");
        else if (a == "--records" && table_work) o.records = parse_u64_option("--records", value("--records"), true);
        else if (a == "--step" && table_work) o.step = duration("--step");
        else if (a == "--log" && table_work) o.log_path = value("--log");
        else if (table_shards && !a.empty() && a[0] != '-') o.shards.emplace_back(a);
        else if (a == "--wait" && o.command == "run") o.wait = duration("--wait");
        else if (a == "--no-wait" && o.command == "run") o.no_wait = true;
        else if (a == "--grace" && o.command == "run") o.grace = duration("--grace");
        else if (a == "--wall-clock-tokens" && o.command == "run") o.wall_clock_tokens = true;
        else if (a == "--metrics-file" && o.command == "run") o.metrics_file = value("--metrics-file");
        else if (a == "--verbose" && o.command == "run") o.verbose = true;
        else if (a == "--value" && kv && o.kv_action == "put") o.value = value("--value");
        else if (a == "--if-version" && kv_write) o.if_version = parse_u64_option("--if-version", value("--if-version"), false);
        else if (a == "--if-absent" && kv && o.kv_action == "put") o.if_absent = true;
        else if (a == "--fence" && kv_write) o.fence = parse_u64_option("--fence", value("--fence"), true);
        else if (a == "--json" && (kv || o.command == "status" || o.command == "probe" ||
                                   (table && o.table_action == "status")))
            o.json = true;
        else if (kv && !a.empty() && a[0] != '-' && o.key.empty()) o.key = std::string(a);
        else if (a == "--" && o.command == "run") {
            for (++i; i < argc; ++i) o.argv.emplace_back(argv[i]);
        } else die(exit_usage, "unknown option '" + std::string(a) + "' for 'baton " + o.command + "' (try --help)");
    }
    if (o.store.empty()) die(exit_usage, "--store is required (e.g. --store file:///var/lib/baton)");
    if (kv && o.kv_action != "list" && o.key.empty()) die(exit_usage, "baton kv " + o.kv_action + ": a KEY is required");
    if (!kv && !table && o.command != "probe" && o.key.empty()) die(exit_usage, "--key is required");
    if (table_shards && o.shards.empty()) die(exit_usage, "baton table " + o.table_action + ": at least one SHARD is required");
    if (o.if_absent && o.if_version) die(exit_usage, "--if-version and --if-absent exclude each other");
    if (o.command == "run" && o.argv.empty()) die(exit_usage, "no command to run: put it after --");
    if (o.no_wait && o.wait) die(exit_usage, "--wait and --no-wait exclude each other");
    if (path_style && virtual_hosted) die(exit_usage, "--path-style and --virtual-hosted exclude each other");
    if (path_style || virtual_hosted) o.path_style = path_style;
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

// ---- stores ----------------------------------------------------------------

// What messages about the store name: the container, where it is, and whose credentials were used.
struct store_context {
    std::string url;       // the --store URL
    std::string container; // "bucket 'b'", "table 't'", "directory '/d'"
    std::string location;  // " at https://host:443 (endpoint from AWS_ENDPOINT_URL_S3)"; empty for local stores
    std::string identity;  // the credentials' key id, never the secret; empty for local stores
    std::string addressing; // s3: "path-style" or "virtual-hosted"
};

// Prints one line for a failed store operation and returns the exit status it deserves.
// Problems that waiting cannot fix (a missing bucket or table, refused credentials, a store that
// ignores preconditions) are configuration errors, exit 64; anything else exits `otherwise`.
int report_store_error(store_context const& s, std::string const& doing, baton::error_code ec,
                       baton::diagnostics const& d, int otherwise) {
    std::string const said = d.empty() ? ec.message() : d.to_string();
    std::string line;
    int code = exit_usage;
    if (ec == baton::errc::not_found) {
        line = doing + ": " + s.container + " does not exist" + s.location + " (" + said +
               "); create it, or check --store, --endpoint and --region";
    } else if (ec == baton::errc::auth_failed) {
        line = doing + ": the store" + s.location + " refused the credentials (" + s.identity + "): " + said +
               "; check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and --region";
    } else if (ec == baton::errc::capability_missing) {
        line = doing + ": " + s.container + s.location + " cannot hold leases safely: " +
               (d.message.empty() ? ec.message() : d.message) + " ('baton probe --store " + s.url +
               "' shows what it honours)";
    } else {
        line = doing + ": " + ec.message() + (d.empty() ? std::string() : ": " + d.to_string());
        code = otherwise;
    }
    std::fprintf(stderr, "baton: %s\n", line.c_str());
    return code;
}

// ---- run -------------------------------------------------------------------

template <class Lease>
int run_command(asio::io_context& ioc, Lease& lease, options const& o, store_context const& store) {
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
                exit_code = report_store_error(store, "cannot acquire lease '" + o.key + "'", ec,
                                               lease.last_diagnostics(), exit_unavailable);
            }
            return release_and_exit();
        }
        if (stopping) return release_and_exit();
        std::string const token = std::to_string(g.fencing_token);
        std::fprintf(stderr, "baton: acquired lease '%s' (fencing token %s)\n", o.key.c_str(), token.c_str());
        if (g.created_record && g.fencing_token == 1)
            std::fprintf(stderr, "baton: created the lease record; if it existed before and was deleted, tokens "
                                 "restarted at 1 (see --wall-clock-tokens)\n");
        ioc.notify_fork(asio::io_context::fork_prepare);
        pid_t const supervisor = getpid();
        // SIGINT and SIGTERM stay blocked across the fork: one that reached the child before it
        // reset their handlers would run the supervisor's handler there and be lost (the command
        // would then ignore a stop). The child unblocks them once they have their default action.
        sigset_t stop_signals, before;
        sigemptyset(&stop_signals);
        sigaddset(&stop_signals, SIGINT);
        sigaddset(&stop_signals, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &stop_signals, &before);
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
        pthread_sigmask(SIG_SETMASK, &before, nullptr); // what arrived meanwhile is delivered now
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

// One JSON document on stdout (--json).
void print_json(boost::json::value const& v) {
    std::string text = boost::json::serialize(v);
    text += '\n';
    std::fwrite(text.data(), 1, text.size(), stdout);
}

// ---- status and probe ------------------------------------------------------

template <class Lease>
int show_status(asio::io_context& ioc, Lease& lease, options const& o, store_context const& store) {
    int code = exit_failure;
    lease.async_inspect([&](baton::error_code ec, std::optional<baton::lease_info> info) {
        if (ec) {
            code = report_store_error(store, "cannot read lease '" + o.key + "'", ec, lease.last_diagnostics(),
                                      exit_failure);
            return;
        }
        code = 0;
        char const* const state = !info ? "free" : info->released ? "released" : "held";
        if (o.json) {
            boost::json::object obj;
            obj["key"] = o.key;
            obj["state"] = state;
            if (info) {
                obj["holder"] = info->owner;
                obj["token"] = info->fencing_token;
                obj["ttl_ms"] = info->ttl.count();
                obj["value"] = info->value;
                obj["version"] = info->version;
            }
            print_json(obj);
            return;
        }
        if (!info) {
            std::printf("key:    %s\nstate:  free (no record: never held)\n", o.key.c_str());
            return;
        }
        std::printf("key:    %s\nstate:  %s\nholder: %s\ntoken:  %llu\nttl:    %s\nvalue:  %s\n", o.key.c_str(), state,
                    info->owner.c_str(), static_cast<unsigned long long>(info->fencing_token),
                    seconds_text(info->ttl).c_str(), info->value.c_str());
    });
    ioc.run();
    return code;
}

// Prints what the probe found: each check as made, then what it means for leases (or one JSON document).
template <class Backend>
int run_probe(asio::io_context& ioc, Backend& backend, options const& o, store_context const& store) {
    int code = exit_failure;
    backend.async_probe([&](baton::error_code ec, baton::capabilities c) {
        if (ec) {
            if (!o.json)
                for (auto const& f : c.findings) std::printf("check: %s\n", f.c_str());
            code = report_store_error(store, "probe failed", ec, c.diag, exit_failure);
            return;
        }
        bool unquoted = false;
        if constexpr (std::is_same_v<Backend, baton::s3_backend>) unquoted = backend.sends_unquoted_etags();
        std::string const refusal = c.diag.message.empty() ? "this store ignores preconditions" : c.diag.message;
        code = c.supports_leases() ? 0 : exit_failure;
        if (o.json) {
            boost::json::object obj;
            obj["store"] = store.url;
            boost::json::array checks;
            for (auto const& f : c.findings) checks.emplace_back(f);
            obj["checks"] = std::move(checks);
            obj["conditional_create"] = c.conditional_create;
            obj["conditional_replace"] = c.conditional_replace;
            obj["conditional_erase"] = c.conditional_erase;
            if constexpr (std::is_same_v<Backend, baton::s3_backend>) obj["unquoted_if_match"] = unquoted;
            obj["leases"] = c.supports_leases() ? "supported" : "refused";
            if (!c.supports_leases()) obj["reason"] = refusal;
            print_json(obj);
            return;
        }
        std::printf("store: %s (%s%s%s%s)\n", store.url.c_str(), store.container.c_str(), store.location.c_str(),
                    store.addressing.empty() ? "" : ", ", store.addressing.c_str());
        for (auto const& f : c.findings) std::printf("check: %s\n", f.c_str());
        auto honoured = [](bool yes) { return yes ? "honoured" : "NOT honoured"; };
        std::printf("conditional create (put if absent): %s\n", honoured(c.conditional_create));
        std::printf("conditional replace (put if matching): %s\n", honoured(c.conditional_replace));
        if (unquoted) std::printf("quirk: If-Match matches only the unquoted ETag here; baton sends it unquoted\n");
        if (c.conditional_erase)
            std::printf("conditional erase (delete if matching): honoured\n");
        else
            std::printf("conditional erase (delete if matching): NOT honoured; leases release by writing a marker "
                        "instead, so they are not affected\n");
        if (c.supports_leases())
            std::printf("leases: supported\n");
        else
            std::printf("leases: REFUSED: %s; two holders could both believe they hold a lease\n", refusal.c_str());
        if constexpr (std::is_same_v<Backend, baton::s3_backend>)
            if (!c.supports_leases())
                std::printf("hint: coordinate through a lock store that has conditional writes (the commit protocol): "
                            "--store '%s?lock=dynamodb://TABLE' (or ?lock=file:///DIR on one host)\n",
                            store.url.c_str());
    });
    ioc.run();
    return code;
}

// ---- kv --------------------------------------------------------------------

std::string base64(std::string_view in) {
    static constexpr char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    for (std::size_t i = 0; i < in.size(); i += 3) {
        std::uint32_t n = std::uint32_t(static_cast<unsigned char>(in[i])) << 16;
        if (i + 1 < in.size()) n |= std::uint32_t(static_cast<unsigned char>(in[i + 1])) << 8;
        if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
        out += table[(n >> 18) & 63];
        out += table[(n >> 12) & 63];
        out += i + 1 < in.size() ? table[(n >> 6) & 63] : '=';
        out += i + 2 < in.size() ? table[n & 63] : '=';
    }
    return out;
}

// A value in JSON: as a string when it is UTF-8 text, else as "value_base64".
void put_value(boost::json::object& obj, std::string const& value) {
    if (baton::detail::is_utf8(value)) obj["value"] = value;
    else obj["value_base64"] = base64(value);
}

// Prints one line for a failed kv operation and returns its exit status.
int report_kv_error(store_context const& store, options const& o, baton::error_code ec, baton::kv_write_result const& r) {
    std::string const what = "kv " + o.kv_action + " '" + o.key + "'";
    if (ec == baton::errc::precondition_failed && (o.if_version || o.if_absent)) {
        std::fprintf(stderr, "baton: %s: %s\n", what.c_str(), r.diag.message.c_str());
        return exit_kv_precondition;
    }
    if (ec == baton::errc::fenced) {
        std::fprintf(stderr, "baton: %s: fenced: %s\n", what.c_str(), r.diag.message.c_str());
        return exit_kv_fenced;
    }
    return report_store_error(store, "cannot " + what, ec, r.diag, exit_failure);
}

template <class Kv>
int run_kv(asio::io_context& ioc, Kv& kv, options const& o, store_context const& store) {
    int code = exit_failure;
    auto on_write = [&](baton::error_code ec, baton::kv_write_result r) {
        if (ec) {
            code = report_kv_error(store, o, ec, r);
            return;
        }
        code = 0;
        if (o.json) {
            boost::json::object obj;
            obj["key"] = o.key;
            obj["version"] = r.version;
            obj["written"] = r.written;
            print_json(obj);
        } else {
            std::printf("%llu\n", static_cast<unsigned long long>(r.version));
        }
    };
    baton::kv_condition cond = o.if_absent ? baton::kv_condition::absent()
                               : o.if_version ? baton::kv_condition::version(*o.if_version)
                                              : baton::kv_condition::none();
    if (o.fence) cond = cond.with_fence(*o.fence);

    if (o.kv_action == "get") {
        kv.async_get(o.key, [&](baton::error_code ec, std::optional<baton::kv_entry> e) {
            if (ec) {
                baton::kv_write_result r;
                code = report_store_error(store, "cannot kv get '" + o.key + "'", ec, r.diag, exit_failure);
                if (ec == baton::errc::foreign_record)
                    std::fprintf(stderr, "baton: '%s' holds a record that 'baton kv' did not write\n", o.key.c_str());
                return;
            }
            if (!e) {
                code = exit_kv_absent;
                if (o.json) {
                    boost::json::object obj;
                    obj["key"] = o.key;
                    obj["version"] = nullptr;
                    print_json(obj);
                } else {
                    std::fprintf(stderr, "baton: kv get '%s': no value\n", o.key.c_str());
                }
                return;
            }
            code = 0;
            if (o.json) {
                boost::json::object obj;
                obj["key"] = o.key;
                obj["version"] = e->version;
                put_value(obj, e->value);
                obj["fence"] = e->fence;
                print_json(obj);
            } else {
                std::fwrite(e->value.data(), 1, e->value.size(), stdout);
            }
        });
    } else if (o.kv_action == "put") {
        std::string value;
        if (o.value) value = *o.value;
        else value.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
        kv.async_put(o.key, std::move(value), cond, on_write);
    } else if (o.kv_action == "rm") {
        kv.async_erase(o.key, cond, on_write);
    } else {
        // list: every page, reading each key's value
        auto entries = std::make_shared<boost::json::array>();
        std::function<void(std::string)> page = [&](std::string after) {
            kv.async_list(o.key, std::move(after), 1000, [&, entries](baton::error_code ec, baton::kv_list_page p) {
                if (ec) {
                    code = report_store_error(store, "cannot kv list '" + o.key + "'", ec, p.diag, exit_failure);
                    return;
                }
                for (auto const& e : p.entries) {
                    if (o.json) {
                        boost::json::object obj;
                        obj["key"] = e.key;
                        obj["version"] = e.entry.version;
                        put_value(obj, e.entry.value);
                        entries->push_back(std::move(obj));
                    } else {
                        std::printf("%s\n", e.key.c_str());
                    }
                }
                if (p.truncated) return page(p.next_after);
                code = 0;
                if (o.json) print_json(*entries);
            });
        };
        page(std::string());
    }
    ioc.run();
    std::fflush(stdout);
    return code;
}

// ---- observing the lease (--metrics-file, --verbose) -------------------------

// ---- table -----------------------------------------------------------------

// One line per worker event, appended with one write(2) (lines stay whole across processes).
struct table_event_log {
    int fd = -1;
    // `at`: when the event was decided (a record is logged with the time its budget was checked,
    // so that a process stopped between the check and the write is judged by the check).
    void write(std::string const& worker, std::string const& shard, std::uint64_t token, char const* what, std::uint64_t n,
               std::chrono::steady_clock::time_point at = std::chrono::steady_clock::now()) const {
        if (fd < 0) return;
        auto const ns = std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch());
        std::string line = std::to_string(ns.count()) + " " + worker + " " + shard + " " + std::to_string(token) + " " + what +
                           " " + std::to_string(n) + "\n";
        [[maybe_unused]] auto written = ::write(fd, line.data(), line.size());
    }
};

template <class Table>
int run_table(asio::io_context& ioc, Table& table, options const& o, store_context const& store) {
    int code = exit_failure;
    if (o.table_action == "register" || o.table_action == "retire") {
        bool const retire = o.table_action == "retire";
        auto done = [&](baton::error_code ec) {
            if (ec) {
                code = report_store_error(store, std::string("cannot ") + (retire ? "retire" : "register") + " shards", ec,
                                          table.last_diagnostics(), exit_failure);
                return;
            }
            code = 0;
            std::printf("%s %zu shard%s\n", retire ? "retired" : "registered", o.shards.size(), o.shards.size() == 1 ? "" : "s");
        };
        if (retire) table.async_retire(o.shards, done);
        else table.async_register(o.shards, done);
        ioc.run();
        return code;
    }
    if (o.table_action == "status") {
        table.async_snapshot([&](baton::error_code ec, baton::table_snapshot snap) {
            if (ec) {
                code = report_store_error(store, "cannot read the table", ec, table.last_diagnostics(), exit_failure);
                return;
            }
            code = 0;
            if (o.json) {
                boost::json::array shards, workers;
                for (auto const& s : snap.shards) {
                    boost::json::object j;
                    j["shard"] = s.shard;
                    j["owner"] = s.owner.empty() ? boost::json::value(nullptr) : boost::json::value(s.owner);
                    j["term"] = s.term;
                    j["token"] = s.token;
                    j["checkpoint"] = s.checkpoint ? boost::json::value(*s.checkpoint) : boost::json::value(nullptr);
                    j["state"] = baton::to_string(s.state);
                    j["requested_by"] = s.requested_by.empty() ? boost::json::value(nullptr) : boost::json::value(s.requested_by);
                    shards.push_back(std::move(j));
                }
                for (auto const& w : snap.workers) {
                    boost::json::object j;
                    j["name"] = w.name;
                    j["term"] = w.term;
                    j["released"] = w.released;
                    j["shards"] = w.shards;
                    workers.push_back(std::move(j));
                }
                boost::json::object doc;
                doc["shards"] = std::move(shards);
                doc["workers"] = std::move(workers);
                print_json(doc);
                return;
            }
            std::printf("%-24s %-20s %8s %-10s %s\n", "SHARD", "OWNER", "TOKEN", "STATE", "CHECKPOINT");
            for (auto const& s : snap.shards)
                std::printf("%-24s %-20s %8llu %-10s %s\n", s.shard.c_str(), s.owner.empty() ? "-" : s.owner.c_str(),
                            static_cast<unsigned long long>(s.token), baton::to_string(s.state),
                            s.checkpoint ? s.checkpoint->c_str() : "-");
            std::printf("\n%-24s %-20s %8s %s\n", "WORKER", "TERM", "SHARDS", "STATE");
            for (auto const& w : snap.workers)
                std::printf("%-24s %-20llu %8zu %s\n", w.name.c_str(), static_cast<unsigned long long>(w.term), w.shards,
                            w.released ? "ended" : "live");
        });
        ioc.run();
        return code;
    }
    // work: numbered records of each shard, a checkpoint after each.
    table_event_log log;
    if (!o.log_path.empty()) {
        log.fd = ::open(o.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log.fd < 0) die(exit_usage, "--log " + o.log_path + ": " + std::strerror(errno));
    }
    std::string const worker = table.options().worker;
    auto const records = o.records;
    auto const step = std::chrono::nanoseconds(o.step);
    auto work = [log, worker, records, step](typename Table::shard_type s) -> asio::awaitable<void> {
        std::uint64_t n = 0;
        if (auto const& cp = s.grant().checkpoint) std::from_chars(cp->data(), cp->data() + cp->size(), n);
        log.write(worker, s.shard(), s.token(), "start", n);
        asio::steady_timer t(co_await asio::this_coro::executor);
        while (!s.stop_requested() && (records == 0 || n < records)) {
            bool const budget = s.remaining() > step; // start a record only with the time to finish it
            t.expires_after(budget ? step : step / 4);
            auto [ec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            if (ec || s.stop_requested()) break;
            auto const decided = std::chrono::steady_clock::now();
            if (!budget || s.remaining() <= std::chrono::nanoseconds(0)) continue;
            ++n;
            log.write(worker, s.shard(), s.token(), "record", n, decided);
            std::string value = std::to_string(n);
            auto [cec] = co_await s.async_checkpoint(std::move(value), asio::as_tuple(asio::use_awaitable));
            if (cec) {
                log.write(worker, s.shard(), s.token(), "refused", n);
                break;
            }
        }
        // Done with the records: keep the shard (returning would give it up) until asked to stop.
        if (!s.stop_requested()) co_await s.async_wait_stop(asio::as_tuple(asio::use_awaitable));
        log.write(worker, s.shard(), s.token(), "end", n);
    };
    asio::signal_set signals(ioc, SIGTERM, SIGINT);
    signals.async_wait([&](baton::error_code ec, int) {
        if (!ec) table.request_stop();
    });
    table.async_run(work, [&](baton::error_code ec) {
        signals.cancel();
        if (ec) {
            code = report_store_error(store, "worker stopped", ec, table.last_diagnostics(), exit_failure);
            return;
        }
        code = 0;
    });
    ioc.run();
    if (log.fd >= 0) ::close(log.fd);
    return code;
}

std::string millis_text(std::chrono::nanoseconds d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f ms", std::chrono::duration<double, std::milli>(d).count());
    return buf;
}

// The lease's observer in `baton run`: figures for --metrics-file, lines for --verbose.
struct cli_observer {
    baton::lease_metrics metrics;
    std::shared_ptr<std::string const> metrics_file = std::make_shared<std::string const>();
    bool verbose = false;

    // Written to a temporary name and renamed, so a collector never reads half a file.
    bool write_metrics() const {
        if (metrics_file->empty()) return true;
        std::string const tmp = *metrics_file + ".tmp." + std::to_string(::getpid());
        std::string const text = metrics.prometheus_text();
        std::FILE* f = std::fopen(tmp.c_str(), "w");
        if (!f) return false;
        bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
        ok = (std::fclose(f) == 0) && ok;
        if (ok && std::rename(tmp.c_str(), metrics_file->c_str()) == 0) return true;
        std::remove(tmp.c_str());
        return false;
    }
    void after_event() const {
        if (!write_metrics()) {
            std::fprintf(stderr, "baton: cannot write --metrics-file %s: %s\n", metrics_file->c_str(), std::strerror(errno));
        }
    }
    void say(std::string const& line) const {
        if (verbose) std::fprintf(stderr, "baton: event: %s\n", line.c_str());
    }

    void on_acquired(baton::lease_acquired_event const& e) {
        metrics.on_acquired(e);
        say("acquired '" + std::string(e.key) + "' with token " + std::to_string(e.fencing_token) +
            (e.took_over ? " (taken over)" : e.created_record ? " (record created)" : "") + "; " +
            seconds_text(e.remaining) + " to the renew deadline");
        after_event();
    }
    void on_renewed(baton::lease_renewed_event const& e) {
        metrics.on_renewed(e);
        say("renewed '" + std::string(e.key) + "' (token " + std::to_string(e.fencing_token) + ") in " +
            millis_text(e.latency) + ", " + seconds_text(e.margin) + " before the renew deadline");
        after_event();
    }
    void on_lost(baton::lease_lost_event const& e) {
        metrics.on_lost(e);
        say("lost '" + std::string(e.key) + "' (token " + std::to_string(e.fencing_token) + "): " + std::string(e.reason) +
            (e.detail.empty() ? "" : ": " + std::string(e.detail)));
        after_event();
    }
    void on_released(baton::lease_released_event const& e) {
        metrics.on_released(e);
        say("released '" + std::string(e.key) + "' (token " + std::to_string(e.fencing_token) +
            "): " + (e.ec ? e.ec.message() : "ok"));
        after_event();
    }
    void on_request(baton::lease_request_event const& e) {
        metrics.on_request(e);
        std::string line = std::string(baton::to_string(e.lane)) + (e.write ? " write: " : " read: ") +
                           baton::to_string(e.kind) + " in " + millis_text(e.latency);
        if (e.kind != baton::answer_kind::ok && e.diag && !e.diag->empty()) line += " (" + e.diag->to_string() + ")";
        else if (e.ec) line += " (" + e.ec.message() + ")";
        say(line);
        after_event();
    }
    void on_settled(baton::lease_settled_event const& e) {
        metrics.on_settled(e);
        say(std::string(baton::to_string(e.lane)) + " write in doubt (token " + std::to_string(e.fencing_token) +
            ") settled: " + baton::to_string(e.outcome));
        after_event();
    }
    void on_retry(baton::lease_retry_event const& e) {
        metrics.on_retry(e);
        say(std::string(baton::to_string(e.lane)) + " retry " + std::to_string(e.attempt) + " in " +
            millis_text(e.delay) + " after: " + e.ec.message());
        after_event();
    }
};

template <class Signer, class Backend>
int dispatch(asio::io_context& ioc, Backend backend, options const& o, store_context const& store) {
    using Lease = baton::basic_lease<Backend, baton::steady_clock, baton::standard_retry, Signer,
                                     asio::any_io_executor, cli_observer>;
    if (o.command == "probe") return run_probe(ioc, backend, o, store);
    if (o.command == "kv") {
        baton::basic_kv<Backend> kv(ioc.get_executor(), std::move(backend));
        return run_kv(ioc, kv, o, store);
    }
    if (o.command == "table") {
        baton::lease_table_options to;
        to.worker = o.worker.empty() ? default_owner() + "-" + std::to_string(::getpid()) : o.worker;
        to.ttl = o.ttl;
        to.poll_interval = std::min<std::chrono::milliseconds>(1000ms, std::max<std::chrono::milliseconds>(o.ttl / 10, 10ms));
        try {
            baton::basic_lease_table<Backend, baton::steady_clock, baton::standard_retry, Signer> table(
                ioc.get_executor(), std::move(backend), to);
            return run_table(ioc, table, o, store);
        } catch (baton::config_error const& e) {
            die(exit_usage, e.what());
        }
    }
    baton::lease_options lo;
    lo.key = o.key;
    lo.owner = o.owner.empty() ? default_owner() : o.owner;
    lo.ttl = o.ttl;
    lo.wall_clock_tokens = o.wall_clock_tokens;
    lo.poll_interval = std::min<std::chrono::milliseconds>(1000ms, std::max<std::chrono::milliseconds>(o.ttl / 10, 10ms));
    try {
        cli_observer observer;
        observer.metrics_file = std::make_shared<std::string const>(o.metrics_file);
        observer.verbose = o.verbose;
        // A path that cannot be written is a usage error, found before the lease is touched.
        if (o.command == "run" && !observer.write_metrics())
            die(exit_usage, "--metrics-file " + o.metrics_file + ": " + std::strerror(errno));
        Lease lease(ioc.get_executor(), std::move(backend), lo, {}, {}, {}, observer);
        if (o.command == "status") return show_status(ioc, lease, o, store);
        return run_command(ioc, lease, o, store);
    } catch (baton::config_error const& e) {
        die(exit_usage, e.what());
    }
}

// The credentials that sign requests to AWS stores, from the SDKs' default chain
// (environment, web identity, profile files, container, instance metadata). Fetched
// once up front so that "no credentials" is one clear line before anything starts;
// the backend then keeps them fresh through the provider.
struct loaded_credentials {
    baton::aws::credentials_provider provider;
    baton::aws::credentials first; // what the first fetch gave, for messages (redacted there)
};

loaded_credentials load_credentials(asio::io_context& ioc) {
    auto provider = baton::aws::default_chain(ioc.get_executor());
    std::optional<std::pair<baton::error_code, baton::aws::fetched_credentials>> got;
    provider.async_get([&](baton::error_code ec, baton::aws::fetched_credentials fc) { got.emplace(ec, std::move(fc)); });
    while (!got) ioc.run_one();
    ioc.restart(); // running out of work stopped it; the store's operations run on it next
    auto& [ec, fc] = *got;
    if (ec) die(exit_usage, fc.diag.message.empty() ? "no AWS credentials: " + ec.message() : fc.diag.message);
    return {std::move(provider), *fc.value};
}

// The endpoint an AWS store uses: --endpoint, else the environment (AWS_ENDPOINT_URL_<SERVICE>,
// AWS_ENDPOINT_URL), else none (the backend's AWS default). `source` says which, for messages.
struct endpoint_choice {
    std::string url;
    std::string source;
};

endpoint_choice choose_endpoint(options const& o, std::string_view service_id) {
    baton::diagnostics d;
    if (!o.endpoint.empty()) {
        if (!baton::http::parse_endpoint(o.endpoint, d)) die(exit_usage, "--endpoint: " + d.message);
        return {o.endpoint, "--endpoint"};
    }
    auto configured = baton::aws::resolve_endpoint_url(service_id, d);
    if (!configured) die(exit_usage, d.message);
    if (*configured) return {(*configured)->url, (*configured)->source};
    return {};
}

// --region, else AWS_REGION (the SDKs' variable), else AWS_DEFAULT_REGION (the CLI's), else the
// profile's `region`; may be empty. Broken shared files are one clear line, not a silent default.
std::string choose_region(options const& o) {
    if (!o.region.empty()) return o.region;
    baton::diagnostics d;
    baton::aws::shared_config config;
    if (baton::aws::load_shared_config(config, d)) die(exit_usage, d.message);
    d = {};
    auto region = baton::aws::resolve_region(config, baton::aws::choose_profile(), d);
    return region ? region->name : std::string();
}

// " at ORIGIN (endpoint from SOURCE)": where requests go, for messages and the probe report.
std::string describe_location(baton::http::endpoint const& ep, endpoint_choice const& chosen,
                              std::string const& region) {
    return " at " + ep.origin() + " (endpoint " +
           (chosen.source.empty() ? "of AWS in " + region : "from " + chosen.source) + ")";
}

} // namespace

int main(int argc, char** argv) {
    options const o = parse_args(argc, argv);
    store_url const url = parse_store(o.store);
    if (o.path_style && url.scheme != "s3")
        die(exit_usage, "--path-style and --virtual-hosted apply to s3:// stores only");
    asio::io_context ioc(1);
    store_context store;
    store.url = url.text;
    try {
        if (url.scheme == "s3") {
            auto const chosen = choose_endpoint(o, "S3");
            baton::s3_backend_params p;
            p.bucket = url.path;
            p.key_prefix = url.prefix;
            p.endpoint = chosen.url;
            p.region = choose_region(o);
            if (p.region.empty()) {
                if (chosen.url.empty())
                    die(exit_usage, "no region: pass --region or set AWS_REGION (it names the AWS S3 endpoint)");
                p.region = "us-east-1"; // what S3-compatible stores expect unless configured otherwise
            }
            p.path_style = o.path_style;
            auto creds = load_credentials(ioc);
            p.credentials_provider = creds.provider;
            baton::s3_backend backend(ioc.get_executor(), p);
            baton::diagnostics d;
            auto const address = baton::aws::resolve_s3_address(p.endpoint, p.region, p.bucket, p.path_style, d);
            store.container = "bucket '" + p.bucket + "'";
            if (!p.key_prefix.empty()) store.container += ", prefix '" + p.key_prefix + "'";
            if (address) store.location = describe_location(address->endpoint, chosen, p.region);
            store.identity = creds.first.redacted();
            store.addressing = backend.path_style() ? "path-style" : "virtual-hosted";
            if (url.lock.empty()) return dispatch<baton::aws::sigv4_signer>(ioc, std::move(backend), o, store);
            store_url const lock = parse_store(url.lock);
            if (lock.scheme == "file") {
                baton::file_backend_params fp;
                fp.root = lock.path;
                store.addressing += std::string(store.addressing.empty() ? "" : ", ") + "commits in directory '" + lock.path + "'";
                return dispatch<baton::aws::sigv4_signer>(
                    ioc, baton::s3_file_commit(std::move(backend), baton::file_backend(ioc.get_executor(), fp)), o, store);
            }
            // The lock table's endpoint is resolved like any dynamodb:// store's (--endpoint names S3's).
            baton::dynamodb_backend_params lp;
            lp.table = lock.path;
            auto lock_endpoint = baton::aws::resolve_endpoint_url("DynamoDB", d);
            if (!lock_endpoint) die(exit_usage, d.message);
            if (*lock_endpoint) lp.endpoint = (*lock_endpoint)->url;
            lp.region = p.region;
            lp.credentials_provider = creds.provider;
            store.addressing += std::string(store.addressing.empty() ? "" : ", ") + "commits in table '" + lp.table + "' at " +
                                baton::http::endpoint::from_url(lp.effective_endpoint()).origin();
            return dispatch<baton::aws::sigv4_signer>(
                ioc, baton::s3_dynamodb_commit(std::move(backend), baton::dynamodb_backend(ioc.get_executor(), lp)), o, store);
        }
        if (url.scheme == "dynamodb") {
            auto const chosen = choose_endpoint(o, "DynamoDB");
            baton::dynamodb_backend_params p;
            p.table = url.path;
            p.endpoint = chosen.url;
            p.region = choose_region(o);
            if (p.region.empty()) die(exit_usage, "no region: pass --region or set AWS_REGION");
            auto creds = load_credentials(ioc);
            p.credentials_provider = creds.provider;
            baton::dynamodb_backend backend(ioc.get_executor(), p);
            store.container = "table '" + p.table + "'";
            store.location =
                describe_location(baton::http::endpoint::from_url(p.effective_endpoint()), chosen, p.region);
            store.identity = creds.first.redacted();
            return dispatch<baton::aws::sigv4_signer>(ioc, std::move(backend), o, store);
        }
        baton::file_backend_params p;
        p.root = url.path;
        store.container = "directory '" + url.path + "'";
        return dispatch<baton::backend_signer>(ioc, baton::file_backend(ioc.get_executor(), p), o, store);
    } catch (baton::config_error const& e) {
        die(exit_usage, e.what());
    } catch (std::exception const& e) {
        die(exit_failure, e.what());
    }
}
