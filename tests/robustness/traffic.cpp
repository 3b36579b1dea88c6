// The robustness suite's traffic generator: one OS process that uses baton directly against one
// store and records every operation it makes, as the application sees it, for the checkers
// (tests/robustness/README.md gives the history format and what is judged).
//
//   baton_traffic --store URL --workload kv|lease --name P [--incarnation I] --seed S
//                 --duration-ms D --history FILE [--clients N] [--ttl-ms T] [--attempt-timeout-ms A]
//                 [--final] [--broken unknown-as-failed,stale-reads,late-loss]
//
// Stores: file:///dir, s3://bucket, dynamodb://table, s3://bucket?lock=dynamodb://table (the
// commit protocol), azblob://container. AWS stores find their endpoints, region and credentials
// as the SDKs do (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_DYNAMODB, AWS_REGION, AWS_ACCESS_KEY_ID,
// ...), Azure Blob as the Azure CLI does (AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_KEY,
// AZURE_STORAGE_SERVICE_ENDPOINT): the robustness runner points them at its fault proxies.
//
// kv: `--clients` coroutines each run a random mix on a few keys: reads, puts under no condition,
// `absent` or the version last seen, erases, and increments of counters. lease: acquire, fenced
// writes under the token while held, release at random; the loss is recorded when delivered.
// `--final` reads every key (kv) or the fenced record (lease) once, for the checkers' last word.
//
// `--broken` makes this process report what baton told it wrongly, or act when it must not, to
// show the checkers catch such a library on a real run: `unknown-as-failed` reports kv's unknown
// outcomes as plain failures (a retrying caller would apply them twice); `stale-reads` reports,
// for each read, what the client's previous read of the key returned (a stale cache);
// `late-loss` stalls the whole process for three TTLs right after its first acquisition, unseen
// by the runner, then acts on (a pause the application never checks the lease after).

#include <baton/azure.hpp>
#include <baton/commit_protocol.hpp>
#include <baton/dynamodb.hpp>
#include <baton/file.hpp>
#include <baton/s3.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using baton::errc;
using baton::error_code;

namespace {

struct options {
    std::string store;
    std::string workload;
    std::string name;
    int incarnation = 0;
    std::uint64_t seed = 1;
    std::chrono::milliseconds duration{10000};
    std::string history;
    int clients = 2;
    std::chrono::milliseconds ttl{3000};
    std::chrono::milliseconds attempt_timeout{2000};
    bool final_read = false;
    bool unknown_as_failed = false; // --broken unknown-as-failed
    bool stale_reads = false;       // --broken stale-reads
    bool late_loss = false;         // --broken late-loss
};

[[noreturn]] void usage(std::string const& why) {
    std::fprintf(stderr, "baton_traffic: %s\n", why.c_str());
    std::exit(64);
}

std::int64_t number(std::string_view name, std::string_view text) {
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size() || v < 0) usage(std::string(name) + ": not a number");
    return v;
}

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--final") {
            o.final_read = true;
            continue;
        }
        if (i + 1 >= argc) usage(std::string(a) + " needs a value");
        std::string_view v = argv[++i];
        if (a == "--store") o.store = v;
        else if (a == "--workload") o.workload = v;
        else if (a == "--name") o.name = v;
        else if (a == "--incarnation") o.incarnation = static_cast<int>(number(a, v));
        else if (a == "--seed") o.seed = static_cast<std::uint64_t>(number(a, v));
        else if (a == "--duration-ms") o.duration = std::chrono::milliseconds(number(a, v));
        else if (a == "--history") o.history = v;
        else if (a == "--clients") o.clients = static_cast<int>(number(a, v));
        else if (a == "--ttl-ms") o.ttl = std::chrono::milliseconds(number(a, v));
        else if (a == "--attempt-timeout-ms") o.attempt_timeout = std::chrono::milliseconds(number(a, v));
        else if (a == "--broken") {
            // A comma-separated list.
            for (std::size_t at = 0; at <= v.size();) {
                auto const comma = std::min(v.find(',', at), v.size());
                auto const mode = v.substr(at, comma - at);
                if (mode == "unknown-as-failed") o.unknown_as_failed = true;
                else if (mode == "stale-reads") o.stale_reads = true;
                else if (mode == "late-loss") o.late_loss = true;
                else usage("--broken takes unknown-as-failed, stale-reads and late-loss");
                at = comma + 1;
            }
        }
        else usage("unknown option " + std::string(a));
    }
    if (o.store.empty() || o.name.empty() || o.history.empty()) usage("--store, --name and --history are required");
    if (o.workload != "kv" && o.workload != "lease") usage("--workload is kv or lease");
    if (o.clients < 1 || o.clients > 16) usage("--clients is 1 to 16");
    return o;
}

std::int64_t mono_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One JSON object per line. Values are ASCII names, numbers and the library's messages.
class json_line {
public:
    json_line& str(char const* k, std::string_view v) {
        key(k);
        out_ += '"';
        for (char c : v) {
            if (c == '"' || c == '\\') out_ += '\\', out_ += c;
            else if (static_cast<unsigned char>(c) < 0x20) out_ += ' ';
            else out_ += c;
        }
        out_ += '"';
        return *this;
    }
    json_line& num(char const* k, std::int64_t v) { return key(k), out_ += std::to_string(v), *this; }
    json_line& unum(char const* k, std::uint64_t v) { return key(k), out_ += std::to_string(v), *this; }
    json_line& boolean(char const* k, bool v) { return key(k), out_ += v ? "true" : "false", *this; }
    std::string text() const { return out_ + "}\n"; }

private:
    json_line& key(char const* k) {
        out_ += out_.size() == 1 ? "\"" : ",\"";
        out_ += k;
        out_ += "\":";
        return *this;
    }
    std::string out_ = "{";
};

// The process's history file: every line is flushed at once, so a SIGKILL loses no line written.
class history {
public:
    history(options const& o) : p_(o.name), i_(o.incarnation), w_(o.workload) {
        f_ = std::fopen(o.history.c_str(), "a");
        if (!f_) usage("cannot open " + o.history);
    }
    ~history() { std::fclose(f_); }
    history(history const&) = delete;
    history& operator=(history const&) = delete;

    json_line start(char const* op) {
        json_line l;
        l.str("p", p_).num("i", i_).str("w", w_).str("op", op);
        return l;
    }
    void write(json_line const& l) {
        auto const t = l.text();
        // A lost line would turn an outcome into "unknown", which constrains less: never go on without it.
        if (std::fwrite(t.data(), 1, t.size(), f_) != t.size() || std::fflush(f_) != 0) {
            std::fprintf(stderr, "baton_traffic: cannot write the history\n");
            std::_Exit(1);
        }
    }
    std::int64_t next_id() { return ++id_; }

private:
    std::string p_;
    int i_;
    std::string w_;
    FILE* f_;
    std::int64_t id_ = 0;
};

// What the application was told, in the history's words.
char const* outcome(error_code ec, options const& o, errc refused) {
    if (!ec) return "ok";
    if (ec == refused) return "refused";
    if (ec == errc::unknown_outcome) return o.unknown_as_failed ? "failed" : "unknown";
    return "failed";
}

asio::awaitable<void> sleep_for(std::chrono::nanoseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
}

// A kv read's line, as it returned now.
json_line get_line(history& h, std::int64_t id, std::string const& key, std::int64_t t0, error_code ec,
                   std::optional<baton::kv_entry> const& e) {
    auto l = h.start("get").num("id", id).str("key", key).num("t0", t0).num("t1", mono_ns()).str("res", ec ? "failed" : "ok");
    if (ec) return l.str("error", ec.message()), l;
    l.boolean("found", e.has_value());
    if (e) l.str("value", e->value).unum("version", e->version);
    return l;
}

std::vector<std::string> const registers = {"r0", "r1", "r2"};
std::vector<std::string> const counters = {"c0", "c1"};

template <class Kv>
asio::awaitable<void> kv_client(Kv& kv, history& h, options const& o, int client, std::chrono::steady_clock::time_point end) {
    std::mt19937_64 rng(o.seed * 1000003u + static_cast<std::uint64_t>(o.incarnation) * 101u + static_cast<std::uint64_t>(client));
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    std::map<std::string, std::uint64_t> seen; // the version this client last saw a value at, per key
    std::map<std::string, std::optional<baton::kv_entry>> previous_read; // --broken stale-reads
    std::uint64_t n = 0;
    while (std::chrono::steady_clock::now() < end) {
        auto const roll = pick(100);
        auto const id = h.next_id();
        if (roll < 30 || (roll >= 85 && roll < 90)) { // a read, of a register or (the 5) of a counter
            std::string const key = roll < 30 ? registers[pick(registers.size())] : counters[pick(counters.size())];
            auto const t0 = mono_ns();
            h.write(h.start("invoke").str("of", "get").num("id", id).str("key", key).num("t0", t0));
            auto [ec, e] = co_await kv.async_get(key, asio::as_tuple(asio::use_awaitable));
            if (!ec && o.stale_reads) std::swap(e, previous_read[key]);
            if (!ec && e) seen[key] = e->version;
            h.write(get_line(h, id, key, t0, ec, e));
        } else if (roll < 70) { // a put
            std::string const key = registers[pick(registers.size())];
            std::string const value = o.name + "-" + std::to_string(o.incarnation) + "-" + std::to_string(client) + "-" +
                                      std::to_string(++n);
            auto const c = pick(10);
            baton::kv_condition cond = baton::kv_condition::none();
            char const* cname = "none";
            if (c < 3) cond = baton::kv_condition::absent(), cname = "absent";
            else if (c < 8 && seen.count(key)) cond = baton::kv_condition::version(seen[key]), cname = "version";
            auto inv = h.start("invoke").str("of", "put").num("id", id).str("key", key).str("value", value).str("cond", cname);
            if (cond.which() == baton::kv_condition::kind::version) inv.unum("cond_version", cond.version());
            auto const t0 = mono_ns();
            h.write(inv.num("t0", t0));
            auto [ec, r] = co_await kv.async_put(key, value, cond, asio::as_tuple(asio::use_awaitable));
            auto l = h.start("put").num("id", id).str("key", key).str("value", value).str("cond", cname);
            if (cond.which() == baton::kv_condition::kind::version) l.unum("cond_version", cond.version());
            l.num("t0", t0).num("t1", mono_ns()).str("res", outcome(ec, o, errc::precondition_failed));
            if (!ec) {
                l.unum("version", r.version);
                seen[key] = r.version;
            } else if (ec == errc::precondition_failed && cond.which() != baton::kv_condition::kind::none) {
                l.unum("current", r.current_version);
            }
            if (ec) l.str("error", ec.message());
            h.write(l);
        } else if (roll < 85) { // an erase
            std::string const key = registers[pick(registers.size())];
            baton::kv_condition cond = baton::kv_condition::none();
            char const* cname = "none";
            if (pick(2) == 0 && seen.count(key)) cond = baton::kv_condition::version(seen[key]), cname = "version";
            auto inv = h.start("invoke").str("of", "erase").num("id", id).str("key", key).str("cond", cname);
            if (cond.which() == baton::kv_condition::kind::version) inv.unum("cond_version", cond.version());
            auto const t0 = mono_ns();
            h.write(inv.num("t0", t0));
            auto [ec, r] = co_await kv.async_erase(key, cond, asio::as_tuple(asio::use_awaitable));
            auto l = h.start("erase").num("id", id).str("key", key).str("cond", cname);
            if (cond.which() == baton::kv_condition::kind::version) l.unum("cond_version", cond.version());
            l.num("t0", t0).num("t1", mono_ns()).str("res", outcome(ec, o, errc::precondition_failed));
            if (!ec) {
                l.boolean("written", r.written);
                if (r.written) l.unum("version", r.version);
                seen.erase(key);
            } else if (ec == errc::precondition_failed && cond.which() != baton::kv_condition::kind::none) {
                l.unum("current", r.current_version);
            }
            if (ec) l.str("error", ec.message());
            h.write(l);
        } else { // an increment
            std::string const key = counters[pick(counters.size())];
            auto const t0 = mono_ns();
            h.write(h.start("invoke").str("of", "incr").num("id", id).str("key", key).num("t0", t0));
            auto written = std::make_shared<std::string>();
            auto [ec, r] = co_await kv.async_update(
                key,
                [written](std::optional<baton::kv_entry> const& now) -> std::optional<std::string> {
                    std::uint64_t v = 0;
                    if (now) std::from_chars(now->value.data(), now->value.data() + now->value.size(), v);
                    *written = std::to_string(v + 1);
                    return *written;
                },
                asio::as_tuple(asio::use_awaitable));
            auto l = h.start("incr").num("id", id).str("key", key).num("t0", t0).num("t1", mono_ns())
                         .str("res", outcome(ec, o, errc::precondition_failed));
            if (!ec) l.str("value", *written).unum("version", r.version);
            if (ec) l.str("error", ec.message());
            h.write(l);
        }
        co_await sleep_for(std::chrono::milliseconds(pick(60)));
    }
}

template <class Kv>
asio::awaitable<void> kv_final(Kv& kv, history& h) {
    std::vector<std::string> keys = registers;
    keys.insert(keys.end(), counters.begin(), counters.end());
    for (auto const& key : keys) {
        auto const id = h.next_id();
        auto const t0 = mono_ns();
        auto [ec, e] = co_await kv.async_get(key, asio::as_tuple(asio::use_awaitable));
        h.write(get_line(h, id, key, t0, ec, e));
        if (ec) throw std::runtime_error("final read of " + key + ": " + ec.message());
    }
}

std::string const lease_key = "robustness/lease";
std::string const fenced_key = "robustness/fenced";

template <class Lease, class Fenced>
asio::awaitable<void> lease_process(typename Lease::backend_type store, history& h, options const& o,
                                    std::chrono::steady_clock::time_point end) {
    auto ex = co_await asio::this_coro::executor;
    baton::lease_options lo;
    lo.key = lease_key;
    lo.owner = o.name;
    lo.ttl = o.ttl;
    lo.poll_interval = std::chrono::milliseconds(std::max<std::int64_t>(100, o.ttl.count() / 10));
    lo.random_seed = o.seed * 7919u + static_cast<std::uint64_t>(o.incarnation);
    Lease lease(ex, store, lo);
    Fenced output(ex, store);
    std::mt19937_64 rng(o.seed * 31u + static_cast<std::uint64_t>(o.incarnation));
    std::uint64_t n = 0;
    bool paused = false;
    while (std::chrono::steady_clock::now() < end) {
        auto const id = h.next_id();
        auto const t0 = mono_ns();
        h.write(h.start("invoke").str("of", "acquire").num("id", id).num("t0", t0));
        baton::acquire_options ao;
        ao.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()) + 1ms;
        auto [aec, grant] = co_await lease.async_acquire(ao, asio::as_tuple(asio::use_awaitable));
        auto l = h.start("acquire").num("id", id).num("t0", t0).num("t1", mono_ns()).str("res", outcome(aec, o, errc::held_by_other));
        if (aec) {
            h.write(l.str("error", aec.message()));
            continue;
        }
        std::uint64_t const token = grant.fencing_token;
        h.write(l.unum("token", token));
        // The loss, as delivered: from then on this application must not act.
        auto lost_at = std::make_shared<std::optional<std::int64_t>>();
        asio::co_spawn(
            ex,
            [&lease, &h, lost_at, token]() -> asio::awaitable<void> {
                auto [ec] = co_await lease.async_wait_lost(asio::as_tuple(asio::use_awaitable));
                if (ec != errc::lease_lost) co_return;
                *lost_at = mono_ns();
                h.write(h.start("lost").num("t", **lost_at).unum("token", token));
            },
            asio::detached);
        if (o.late_loss && !paused) {
            paused = true;
            std::this_thread::sleep_for(3 * o.ttl); // nothing of this process runs meanwhile
        }
        auto const hold_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500 + rng() % 4000);
        while (!*lost_at && std::chrono::steady_clock::now() < std::min(hold_until, end)) {
            std::string const value = o.name + "-" + std::to_string(o.incarnation) + "-" + std::to_string(++n);
            auto const wid = h.next_id();
            auto const w0 = mono_ns();
            h.write(h.start("invoke").str("of", "fenced").num("id", wid).unum("token", token).str("value", value).num("t0", w0));
            auto [wec, wr] = co_await output.async_write(fenced_key, value, token, asio::as_tuple(asio::use_awaitable));
            auto wl = h.start("fenced").num("id", wid).unum("token", token).str("value", value).num("t0", w0).num("t1", mono_ns())
                          .str("res", outcome(wec, o, errc::fenced));
            if (wec == errc::fenced) wl.unum("winning", wr.winning_token);
            if (wec) wl.str("error", wec.message());
            h.write(wl);
            co_await sleep_for(std::chrono::milliseconds(50 + rng() % 200));
        }
        if (*lost_at) continue;
        auto const rid = h.next_id();
        auto const r0 = mono_ns();
        h.write(h.start("invoke").str("of", "release").num("id", rid).unum("token", token).num("t0", r0));
        auto [rec] = co_await lease.async_release(asio::as_tuple(asio::use_awaitable));
        h.write(h.start("release").num("id", rid).unum("token", token).num("t0", r0).num("t1", mono_ns())
                    .str("res", outcome(rec, o, errc::not_held)));
        co_await sleep_for(std::chrono::milliseconds(rng() % 300));
    }
}

template <class Fenced>
asio::awaitable<void> fenced_final(typename Fenced::backend_type store, history& h) {
    Fenced f(co_await asio::this_coro::executor, store);
    auto const id = h.next_id();
    auto const t0 = mono_ns();
    auto [ec, v] = co_await f.async_read(fenced_key, asio::as_tuple(asio::use_awaitable));
    auto l = h.start("fenced_read").num("id", id).num("t0", t0).num("t1", mono_ns()).str("res", ec ? "failed" : "ok");
    if (!ec) {
        l.boolean("found", v.has_value());
        if (v) l.str("value", v->value).unum("token", v->token);
    } else {
        l.str("error", ec.message());
    }
    h.write(l);
    if (ec) throw std::runtime_error("final read of the fenced record: " + ec.message());
}

template <class Signer, class Backend>
asio::awaitable<void> run(Backend store, history& h, options const& o) {
    auto ex = co_await asio::this_coro::executor;
    auto const end = std::chrono::steady_clock::now() + o.duration;
    using lease_type = baton::basic_lease<Backend, baton::steady_clock, baton::standard_retry, Signer>;
    using fenced_type = baton::basic_fenced<Backend>;
    if (o.workload == "kv") {
        baton::basic_kv<Backend> kv(ex, store);
        if (o.final_read) {
            co_await kv_final(kv, h);
            co_return;
        }
        // Clients run at once; each is a coroutine of its own, and this one waits for them all.
        auto left = std::make_shared<int>(o.clients);
        asio::steady_timer done(ex, asio::steady_timer::time_point::max());
        for (int c = 0; c < o.clients; ++c)
            asio::co_spawn(ex, kv_client(kv, h, o, c, end), [left, &done](std::exception_ptr e) {
                if (e) std::rethrow_exception(e);
                if (--*left == 0) done.cancel();
            });
        co_await done.async_wait(asio::as_tuple(asio::use_awaitable));
        co_return;
    }
    if (o.final_read) co_await fenced_final<fenced_type>(store, h);
    else co_await lease_process<lease_type, fenced_type>(store, h, o, end);
}

// AWS settings as the SDKs find them; every request of this process goes where the runner says.
template <class Params>
Params aws_params(asio::any_io_executor ex, std::string_view service_id, Params p, options const& o) {
    baton::diagnostics d;
    auto endpoint = baton::aws::resolve_endpoint_url(service_id, d);
    if (!endpoint) usage(d.message);
    if (*endpoint) p.endpoint = (*endpoint)->url;
    auto region = baton::aws::resolve_region(d);
    if (!region) usage(d.message);
    p.region = region->name.empty() ? "us-east-1" : region->name;
    p.credentials_provider = baton::aws::default_chain(ex);
    p.http.attempt_timeout = o.attempt_timeout;
    p.http.connect_timeout = o.attempt_timeout;
    return p;
}

} // namespace

int main(int argc, char** argv) {
    options const o = parse(argc, argv);
    history h(o);
    asio::io_context ioc(1);
    auto ex = ioc.get_executor();
    int rc = 0;
    auto done = [&rc](std::exception_ptr e) {
        try {
            if (e) std::rethrow_exception(e);
        } catch (std::exception const& x) {
            std::fprintf(stderr, "baton_traffic: %s\n", x.what());
            rc = 1;
        }
    };
    try {
        auto const sep = o.store.find("://");
        if (sep == std::string::npos) usage("--store is not a URL");
        std::string const scheme = o.store.substr(0, sep);
        std::string rest = o.store.substr(sep + 3);
        if (scheme == "file") {
            baton::file_backend_params p;
            p.root = rest;
            asio::co_spawn(ioc, run<baton::backend_signer>(baton::file_backend(ex, p), h, o), done);
        } else if (scheme == "dynamodb") {
            baton::dynamodb_backend_params p;
            p.table = rest;
            asio::co_spawn(ioc, run<baton::aws::sigv4_signer>(baton::dynamodb_backend(ex, aws_params(ex, "DynamoDB", p, o)), h, o),
                           done);
        } else if (scheme == "s3") {
            std::string lock;
            if (auto q = rest.find("?lock=dynamodb://"); q != std::string::npos) {
                lock = rest.substr(q + 17);
                rest.resize(q);
            }
            baton::s3_backend_params p;
            p.bucket = rest;
            p.path_style = true;
            baton::s3_backend s3(ex, aws_params(ex, "S3", p, o));
            if (lock.empty()) {
                asio::co_spawn(ioc, run<baton::aws::sigv4_signer>(std::move(s3), h, o), done);
            } else {
                baton::dynamodb_backend_params lp;
                lp.table = lock;
                baton::dynamodb_backend commits(ex, aws_params(ex, "DynamoDB", lp, o));
                asio::co_spawn(ioc, run<baton::aws::sigv4_signer>(baton::s3_dynamodb_commit(std::move(s3), std::move(commits)), h, o),
                               done);
            }
        } else if (scheme == "azblob") {
            // The account as the Azure CLI's variables give it; the container is the URL's.
            baton::azure_blob_backend_params p;
            baton::diagnostics d;
            if (baton::azure::account_from_environment(p.account, d)) usage(d.message);
            p.container = rest;
            p.http.attempt_timeout = o.attempt_timeout;
            p.http.connect_timeout = o.attempt_timeout;
            asio::co_spawn(ioc, run<baton::backend_signer>(baton::azure_blob_backend(ex, p), h, o), done);
        } else {
            usage("unknown store scheme " + scheme);
        }
        ioc.run();
    } catch (std::exception const& e) {
        std::fprintf(stderr, "baton_traffic: %s\n", e.what());
        return 1;
    }
    return rc;
}
