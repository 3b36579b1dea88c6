// Part of the baton command-line tool (examples/cli/main.cpp). The command line: options, durations, store URLs.
#ifndef BATON_CLI_ARGS_HPP
#define BATON_CLI_ARGS_HPP

#include "common.hpp"
#include "usage.hpp"

namespace baton_cli {

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
    std::string scheme; // file, s3, dynamodb, azblob
    std::string path;   // file: the directory; dynamodb: the table; s3: the bucket; azblob: the container
    std::string prefix; // s3, azblob: the key prefix, empty or ending in '/'
    std::string lock;   // s3 with ?lock=URL: the lock store of the commit protocol (dynamodb:// or file://)
};

// The forms --store takes: every error about a store URL lists them, so that a typo
// (s3:/bucket, S3://bucket) is answered with what would have worked.
constexpr char const* store_forms =
    "file:///dir, s3://bucket[/prefix], s3://bucket[/prefix]?lock=dynamodb://table|file:///dir, dynamodb://table, "
    "azblob://container[/prefix]";

[[noreturn]] void bad_store(std::string const& url, std::string const& why) {
    die(exit_usage, "--store '" + url + "': " + why + "; accepted forms: " + store_forms);
}

// `whole` is the URL the user wrote, for messages: the lock store's URL is parsed on its own.
store_url parse_store(std::string const& url, std::string const& whole) {
    auto const sep = url.find("://");
    if (sep == std::string::npos) bad_store(whole, "not a URL (no '://')");
    store_url u{url, url.substr(0, sep), url.substr(sep + 3), {}, {}};
    if (u.scheme == "file") {
        // file:///abs/dir, or file://localhost/abs/dir
        if (u.path.rfind("localhost/", 0) == 0) u.path = u.path.substr(9);
        if (u.path.empty() || u.path[0] != '/') bad_store(whole, "a file URL needs an absolute path");
        return u;
    }
    if (u.scheme == "dynamodb") {
        if (u.path.empty() || u.path.find('/') != std::string::npos) bad_store(whole, "a dynamodb URL names one table");
        return u;
    }
    if (u.scheme == "azblob") {
        // azblob://container[/prefix]: the account, its endpoint and credentials come from the
        // environment (the Azure CLI's variables) and --endpoint; the prefix names a folder.
        if (u.path.find_first_of("?#") != std::string::npos)
            bad_store(whole, "an azblob URL takes no query (credentials come from the environment)");
        auto const slash = u.path.find('/');
        if (slash != std::string::npos) {
            u.prefix = u.path.substr(slash + 1);
            u.path.resize(slash);
            if (!u.prefix.empty() && u.prefix.back() != '/') u.prefix += '/';
        }
        if (u.path.empty()) bad_store(whole, "an azblob URL names a container");
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
                bad_store(whole, "the only query is ?lock=dynamodb://TABLE or ?lock=file:///DIR");
            u.lock = query.substr(5);
            store_url const lock = parse_store(u.lock, whole);
            if (lock.scheme != "dynamodb" && lock.scheme != "file")
                bad_store(whole, "the lock store must be dynamodb://TABLE or file:///DIR");
        }
        // s3://bucket[/prefix], as the AWS CLI writes them: the prefix is taken literally (no
        // percent-decoding) and names a folder, so s3://b/locks and s3://b/locks/ are the same store.
        auto const slash = u.path.find('/');
        if (slash != std::string::npos) {
            u.prefix = u.path.substr(slash + 1);
            u.path.resize(slash);
            if (!u.prefix.empty() && u.prefix.back() != '/') u.prefix += '/';
        }
        if (u.path.empty()) bad_store(whole, "an s3 URL names a bucket");
        return u;
    }
    std::string lower = u.scheme;
    for (auto& c : lower)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    bad_store(whole, "unknown scheme '" + u.scheme + "'" +
                         (lower != u.scheme && (lower == "s3" || lower == "file" || lower == "dynamodb" || lower == "azblob")
                              ? " (schemes are lower case)"
                              : ""));
}

store_url parse_store(std::string const& url) { return parse_store(url, url); }

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
    std::string profile;            // AWS stores: --profile, as the AWS CLI's (environment keys then unused)
    std::optional<bool> path_style; // s3: --path-style / --virtual-hosted
    std::vector<std::string> argv;  // run: the command
    // kv
    std::string kv_action;                 // get, put, rm, list
    std::optional<std::string> value;      // put --value
    std::optional<std::uint64_t> if_version;
    bool if_absent = false;
    std::optional<std::uint64_t> fence;
    bool json = false;
    bool policy = false;                   // probe: print a bucket policy instead of probing
    // table
    std::string table_action;          // register, retire, status, work
    std::vector<std::string> shards;   // register, retire
    std::string worker;                // work
    std::uint64_t records = 0;         // work: records per shard (0: without end)
    std::chrono::milliseconds step = 100ms;
    std::string log_path;              // work: event lines
    std::size_t max_commands = 0;      // work -- COMMAND: commands at once (0: no limit)
    // watch
    std::chrono::milliseconds interval = 1s; // one read of the record per interval
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
    if (o.command == "--version" || o.command == "-V") {
        std::printf("baton %s\n", BATON_VERSION);
        std::exit(0);
    }
    if (o.command == "--help" || o.command == "-h" || o.command == "help") {
        std::fputs(usage_main, stdout);
        std::exit(0);
    }
    bool path_style = false, virtual_hosted = false;
    char const* usage = o.command == "run" ? usage_run : o.command == "status" ? usage_status
                        : o.command == "probe"                                  ? usage_probe
                        : o.command == "kv"                                     ? usage_kv
                        : o.command == "table"                                  ? usage_table
                        : o.command == "watch"                                  ? usage_watch
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
        else if (a == "--profile") {
            o.profile = value("--profile");
            if (o.profile.empty()) die(exit_usage, "--profile needs a profile name");
        }
        else if (a == "--path-style") path_style = true;
        else if (a == "--virtual-hosted") virtual_hosted = true;
        else if (a == "--key") o.key = value("--key");
        else if (a == "--json" && o.command == "watch") o.json = true;
        else if (a == "--interval" && o.command == "watch") {
            o.interval = duration("--interval");
            // Each interval is one read of the store (a request, billed on AWS): 10 ms is plenty.
            if (o.interval < 10ms)
                die(exit_usage, "--interval '" + std::string(argv[i]) + "' is too short (at least 10ms)");
        }
        else if (a == "--owner" && o.command == "run") o.owner = value("--owner");
        else if (a == "--ttl" && (o.command == "run" || table_work)) o.ttl = duration("--ttl");
        else if (a == "--worker" && table_work) o.worker = value("--worker");
        else if (a == "--records" && table_work) o.records = parse_u64_option("--records", value("--records"), true);
        else if (a == "--step" && table_work) o.step = duration("--step");
        else if (a == "--log" && table_work) o.log_path = value("--log");
        else if (a == "--max-commands" && table_work)
            o.max_commands = static_cast<std::size_t>(parse_u64_option("--max-commands", value("--max-commands"), false));
        else if (table_shards && !a.empty() && a[0] != '-') o.shards.emplace_back(a);
        else if (a == "--wait" && o.command == "run") o.wait = duration("--wait");
        else if (a == "--no-wait" && o.command == "run") o.no_wait = true;
        else if (a == "--grace" && (o.command == "run" || table_work)) o.grace = duration("--grace");
        else if (a == "--wall-clock-tokens" && o.command == "run") o.wall_clock_tokens = true;
        else if (a == "--metrics-file" && (o.command == "run" || table_work)) o.metrics_file = value("--metrics-file");
        else if (a == "--verbose" && o.command == "run") o.verbose = true;
        else if (a == "--log-format" && (o.command == "run" || table_work || o.command == "watch")) {
            auto const f = value("--log-format");
            if (f != "text" && f != "json") die(exit_usage, "--log-format '" + f + "' is not text or json");
            json_log = f == "json";
        }
        else if (a == "--value" && kv && o.kv_action == "put") o.value = value("--value");
        else if (a == "--if-version" && kv_write) o.if_version = parse_u64_option("--if-version", value("--if-version"), false);
        else if (a == "--if-absent" && kv && o.kv_action == "put") o.if_absent = true;
        else if (a == "--fence" && kv_write) o.fence = parse_u64_option("--fence", value("--fence"), true);
        else if (a == "--json" && (kv || o.command == "status" || o.command == "probe" ||
                                   (table && o.table_action == "status")))
            o.json = true;
        else if (a == "--policy" && o.command == "probe") o.policy = true;
        else if (kv && !a.empty() && a[0] != '-' && o.key.empty()) o.key = std::string(a);
        else if (a == "--" && (o.command == "run" || table_work)) {
            for (++i; i < argc; ++i) o.argv.emplace_back(argv[i]);
        } else die(exit_usage, "unknown option '" + std::string(a) + "' for 'baton " + o.command + "' (try --help)");
    }
    if (o.store.empty()) die(exit_usage, std::string("--store is required; accepted forms: ") + store_forms);
    if (o.policy && o.json) die(exit_usage, "--policy prints JSON already; drop --json");
    if (kv && o.kv_action != "list" && o.key.empty()) die(exit_usage, "baton kv " + o.kv_action + ": a KEY is required");
    if (!kv && !table && o.command != "probe" && o.key.empty()) die(exit_usage, "--key is required");
    if (table_shards && o.shards.empty()) die(exit_usage, "baton table " + o.table_action + ": at least one SHARD is required");
    if (o.if_absent && o.if_version) die(exit_usage, "--if-version and --if-absent exclude each other");
    if (o.command == "run" && o.argv.empty()) die(exit_usage, "no command to run: put it after --");
    if (table_work && !o.argv.empty() && (o.records != 0 || !o.log_path.empty()))
        die(exit_usage, "--records and --log drive the demo worker; with -- COMMAND the command does the work");
    if (table_work && o.argv.empty() && o.max_commands != 0)
        die(exit_usage, "--max-commands limits the commands run at once: it needs -- COMMAND");
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

} // namespace baton_cli

#endif
