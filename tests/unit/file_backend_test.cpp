// file_backend: every record-store semantic the memory backend has, plus what
// a directory adds: files that are corrupt, truncated, oversized or not files
// at all; leftovers of a crash; keys that must not escape the root; locks.
#include <test_common/fixtures.hpp>
#include <test_common/run_op.hpp>
#include <baton/backend/file.hpp>
#include <baton/store/record_store.hpp>

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using baton::errc;
using baton::error_code;
using baton::precondition;

static_assert(baton::record_store<baton::file_backend>);

using test_common::contains;

// A fresh directory under the system's temporary directory, removed with everything in it.
struct store_dir : test_common::temp_dir {
    store_dir() : test_common::temp_dir("baton-file-test") {}
};

baton::file_backend_params params_for(fs::path const& root) {
    baton::file_backend_params p;
    p.root = root;
    return p;
}

using test_common::run_op;

// Names in `dir`, sorted.
std::vector<std::string> names_in(fs::path const& dir) {
    std::vector<std::string> out;
    for (auto const& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

std::size_t record_files(fs::path const& dir) {
    std::size_t n = 0;
    for (auto const& name : names_in(dir))
        if (name.starts_with("r.") || name.starts_with("h.")) ++n;
    return n;
}

std::string slurp(fs::path const& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(fs::path const& p, std::string const& data) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << data;
}

// A small fixture: a directory, a store on it, and shorthands for each operation.
struct store_fixture {
    store_dir dir;
    asio::io_context ioc;
    baton::file_backend store;

    explicit store_fixture(baton::file_backend_params p = {}) : store(ioc.get_executor(), with_root(std::move(p))) {}

    baton::file_backend_params with_root(baton::file_backend_params p) {
        p.root = dir.path;
        return p;
    }
    std::pair<error_code, baton::get_result> get(std::string key) {
        return run_op<baton::get_result>(ioc, [&](auto h) { store.async_get(key, h); });
    }
    std::pair<error_code, baton::put_result> put(std::string key, std::string body, precondition pc) {
        return run_op<baton::put_result>(ioc, [&](auto h) { store.async_put(key, body, pc, h); });
    }
    error_code erase(std::string key, precondition pc) {
        return run_op<baton::erase_result>(ioc, [&](auto h) { store.async_erase(key, pc, h); }).first;
    }
    std::pair<error_code, baton::list_page> list(std::string prefix, std::string after, std::size_t limit) {
        return run_op<baton::list_page>(ioc, [&](auto h) { store.async_list(prefix, after, limit, h); });
    }
    fs::path file_of(std::string const& key) const { return dir.path / baton::file_backend::file_name(key); }
};

std::string keys_of(baton::list_page const& p) {
    std::string s;
    for (auto& e : p.entries) s += e.key + " ";
    return s;
}

} // namespace

TEST_SUITE("file_backend") {

TEST_CASE("get and put: absent, matches and unconditional semantics") {
    store_fixture f;
    auto [ec0, g0] = f.get("k");
    CHECK_FALSE(ec0);
    CHECK_FALSE(g0.found.has_value());

    auto [ec1, p1] = f.put("k", "one", precondition::absent());
    REQUIRE_FALSE(ec1);
    CHECK_FALSE(p1.version.empty());
    CHECK_FALSE(p1.current.has_value());

    auto [ec2, g2] = f.get("k");
    CHECK_FALSE(ec2);
    REQUIRE(g2.found.has_value());
    CHECK(g2.found->key == "k");
    CHECK(g2.found->body == "one");
    CHECK(g2.found->version == p1.version);

    // absent on an existing key: refused, with the current record.
    auto [ec3, p3] = f.put("k", "two", precondition::absent());
    CHECK(ec3 == errc::precondition_failed);
    REQUIRE(p3.current.has_value());
    CHECK(p3.current->body == "one");
    CHECK(p3.current->version == p1.version);
    CHECK(p3.version.empty());

    // matches the current version: applied, new version.
    auto [ec4, p4] = f.put("k", "two", precondition::matches(p1.version));
    REQUIRE_FALSE(ec4);
    CHECK(p4.version != p1.version);

    // matches a stale version: refused, with the current record.
    auto [ec5, p5] = f.put("k", "three", precondition::matches(p1.version));
    CHECK(ec5 == errc::precondition_failed);
    REQUIRE(p5.current.has_value());
    CHECK(p5.current->body == "two");
    CHECK(p5.current->version == p4.version);

    // matches on a missing key: refused, nothing to return, and no lock file left behind.
    auto [ec6, p6] = f.put("gone", "x", precondition::matches(p4.version));
    CHECK(ec6 == errc::precondition_failed);
    CHECK_FALSE(p6.current.has_value());

    // unconditional: always applied.
    auto [ec7, p7] = f.put("k", "four", precondition::none());
    CHECK_FALSE(ec7);
    CHECK(p7.version != p4.version);
    CHECK(f.get("k").second.found->body == "four");

    // One record file and its lock file; no temporary files.
    CHECK(names_in(f.dir.path) == std::vector<std::string>{".lock.r.k", "r.k"});
}

TEST_CASE("every put gets a fresh version, even with identical bytes, seen by every handle on the directory") {
    store_fixture f;
    auto [e1, a] = f.put("k", "same", precondition::none());
    auto b_result = f.put("k", "same", precondition::matches(a.version));
    auto& e2 = std::get<0>(b_result);
    auto& b = std::get<1>(b_result);
    REQUIRE_FALSE(e1);
    REQUIRE_FALSE(e2);
    CHECK(a.version != b.version);
    CHECK(a.version.size() == 33); // "f" + 128 random bits in hex
    // The old version no longer matches (no ABA).
    auto [e3, c] = f.put("k", "same", precondition::matches(a.version));
    CHECK(e3 == errc::precondition_failed);
    // Versions are not reused across keys either.
    auto [e4, d] = f.put("other", "same", precondition::none());
    CHECK(d.version != a.version);
    CHECK(d.version != b.version);
    // The version lives in the file: the same bytes and mtime with another version inside are another version.
    CHECK(contains(slurp(f.file_of("k")), "version " + b.version + "\n"));

    // A rebound handle, and an independent store on the same directory (as another process), see the same record.
    asio::io_context ioc2;
    auto rebound = f.store.rebind(ioc2.get_executor());
    baton::file_backend other(ioc2.get_executor(), params_for(f.dir.path));
    for (auto* s : {&rebound, &other}) {
        auto [eg, g] = run_op<baton::get_result>(ioc2, [&](auto h) { s->async_get("k", h); });
        CHECK_FALSE(eg);
        REQUIRE(g.found.has_value());
        CHECK(g.found->version == b.version);
    }
    auto [e5, e] = run_op<baton::put_result>(ioc2, [&](auto h) { other.async_put("k", "new", precondition::matches(b.version), h); });
    CHECK_FALSE(e5);
    CHECK(f.get("k").second.found->version == e.version);
}

TEST_CASE("erase semantics") {
    store_fixture f;
    auto put = [&](std::string body) { return f.put("k", body, precondition::none()).second.version; };
    // Missing key.
    CHECK(f.erase("k", precondition::matches("f1")) == errc::not_found);
    CHECK_FALSE(f.erase("k", precondition::none()));
    CHECK_FALSE(f.erase("k", precondition::absent()));
    CHECK(names_in(f.dir.path).empty()); // no lock files left behind

    auto const v1 = put("a");
    auto const v2 = put("b");
    CHECK(f.erase("k", precondition::absent()) == errc::precondition_failed);
    CHECK(f.erase("k", precondition::matches(v1)) == errc::precondition_failed);
    CHECK(record_files(f.dir.path) == 1);
    CHECK_FALSE(f.erase("k", precondition::matches(v2)));
    CHECK(record_files(f.dir.path) == 0);
    CHECK(f.erase("k", precondition::matches(v2)) == errc::not_found);
    CHECK_FALSE(f.get("k").second.found.has_value());

    put("c");
    CHECK_FALSE(f.erase("k", precondition::none()));
    CHECK(names_in(f.dir.path).empty()); // the record and its lock file are gone
}

TEST_CASE("list pages by prefix, after and limit") {
    store_fixture f;
    for (std::string k : {"a/3", "a/1", "b/1", "a/2", "ab", "a"}) REQUIRE_FALSE(f.put(k, "x", precondition::none()).first);

    auto [e1, all] = f.list("", "", 100);
    CHECK_FALSE(e1);
    CHECK(keys_of(all) == "a a/1 a/2 a/3 ab b/1 ");
    CHECK_FALSE(all.truncated);
    for (auto& e : all.entries) CHECK(e.version == f.get(e.key).second.found->version);

    auto [e2, a] = f.list("a/", "", 100);
    CHECK(keys_of(a) == "a/1 a/2 a/3 ");
    CHECK_FALSE(a.truncated);

    auto [e3, first] = f.list("a/", "", 2);
    CHECK(keys_of(first) == "a/1 a/2 ");
    CHECK(first.truncated);
    auto [e4, rest] = f.list("a/", first.entries.back().key, 2);
    CHECK(keys_of(rest) == "a/3 ");
    CHECK_FALSE(rest.truncated);

    auto [e5, exact] = f.list("a/", "", 3); // exactly the keys there are: not truncated
    CHECK(keys_of(exact) == "a/1 a/2 a/3 ");
    CHECK_FALSE(exact.truncated);

    auto [e6, after_before_prefix] = f.list("a/", "0", 10); // `after` sorts before the prefix
    CHECK(keys_of(after_before_prefix) == "a/1 a/2 a/3 ");
    auto [e7, after_between] = f.list("a/", "a/1x", 10);
    CHECK(keys_of(after_between) == "a/2 a/3 ");
    auto [e8, none] = f.list("c/", "", 10);
    CHECK(none.entries.empty());
    CHECK_FALSE(none.truncated);

    auto [e9, zero] = f.list("a/", "", 0);
    CHECK(e9 == errc::invalid_argument);
    CHECK(contains(zero.diag.message, "limit"));
}

TEST_CASE("key and body limits fail with invalid_argument and diagnostics") {
    baton::file_backend_params params;
    params.max_body_bytes = 16;
    store_fixture f(params);
    std::string const long_key(baton::store_limits::max_key_bytes + 1, 'k');

    SUBCASE("empty and oversized keys") {
        for (std::string key : {std::string(), long_key}) {
            auto [eg, g] = f.get(key);
            CHECK(eg == errc::invalid_argument);
            CHECK(contains(g.diag.message, "key"));
            auto [ep, p] = f.put(key, "x", precondition::none());
            CHECK(ep == errc::invalid_argument);
            CHECK(contains(p.diag.message, "key"));
            auto [ee, e] = run_op<baton::erase_result>(f.ioc, [&](auto h) { f.store.async_erase(key, precondition::none(), h); });
            CHECK(ee == errc::invalid_argument);
            CHECK(contains(e.diag.message, "key"));
        }
        CHECK(baton::file_backend::file_name("").empty());
        CHECK(baton::file_backend::file_name(long_key).empty());
        CHECK(names_in(f.dir.path).empty());
    }
    SUBCASE("oversized bodies") {
        auto [ep, p] = f.put("k", std::string(17, 'b'), precondition::none());
        CHECK(ep == errc::invalid_argument);
        CHECK(p.diag.message == "body of 17 bytes exceeds the store's limit of 16");
        CHECK(names_in(f.dir.path).empty());
        auto [ok, q] = f.put("k", std::string(16, 'b'), precondition::none());
        CHECK_FALSE(ok);
        auto [eg, g] = f.get("k");
        CHECK_FALSE(eg);
        CHECK(g.found->body == std::string(16, 'b'));
    }
    SUBCASE("bodies of any bytes round-trip") {
        std::string const body("\0\n\r\xff" "baton-file-record 1\n", 24);
        REQUIRE(body.size() == 24);
        baton::file_backend_params big;
        big.root = f.dir.path;
        baton::file_backend store(f.ioc.get_executor(), big);
        auto [ep, p] = run_op<baton::put_result>(f.ioc, [&](auto h) { store.async_put("bin", body, precondition::none(), h); });
        REQUIRE_FALSE(ep);
        auto [eg, g] = run_op<baton::get_result>(f.ioc, [&](auto h) { store.async_get("bin", h); });
        REQUIRE_FALSE(eg);
        CHECK(g.found->body == body);
        auto [e0, empty] = f.put("empty", "", precondition::none());
        CHECK_FALSE(e0);
        CHECK(f.get("empty").second.found->body.empty());
    }
}

TEST_CASE("settings are checked at construction") {
    asio::io_context ioc;
    CHECK_THROWS_AS(baton::file_backend(ioc.get_executor(), baton::file_backend_params{}), baton::config_error);
    baton::file_backend_params p;
    p.root = "/tmp/x";
    p.max_body_bytes = (std::size_t(1) << 30) + 1;
    CHECK_THROWS_AS(baton::file_backend(ioc.get_executor(), p), baton::config_error);
    p.max_body_bytes = 1;
    p.lock_timeout = -1ms;
    CHECK_THROWS_AS(baton::file_backend(ioc.get_executor(), p), baton::config_error);
    p.lock_timeout = std::chrono::milliseconds::max(); // steady now + timeout would overflow
    CHECK_THROWS_WITH_AS(baton::file_backend(ioc.get_executor(), p), doctest::Contains("lock_timeout must be from 0 to 1 hour"),
                         baton::config_error);
    baton::file_backend_params rel;
    rel.root = "relative/dir";
    baton::file_backend store(ioc.get_executor(), rel);
    CHECK(store.root().is_absolute()); // nothing created yet
}

TEST_CASE("requests are counted by kind") {
    store_fixture f;
    auto copy = f.store; // copies share counts
    f.get("k");
    auto v = f.put("k", "a", precondition::absent()).second.version;
    run_op<baton::put_result>(f.ioc, [&](auto h) { copy.async_put("k", "b", precondition::absent(), h); }); // refused
    f.put("", "b", precondition::none());                                                                  // invalid
    run_op<baton::erase_result>(f.ioc, [&](auto h) { copy.async_erase("k", precondition::matches("x"), h); }); // refused
    f.erase("k", precondition::matches(v));
    f.list("", "", 10);
    f.list("", "", 10);
    auto const c = copy.counts();
    CHECK(c.gets == 1);
    CHECK(c.puts == 3);
    CHECK(c.erases == 2);
    CHECK(c.lists == 2);
    CHECK(c.probes == 0);
    CHECK(c.refused == 2);
}

TEST_CASE("completions never run inside the initiating call") {
    store_fixture f;
    int ran = 0;
    auto check_after = [&](bool const& returned) {
        return [&ran, &returned](error_code, auto&&) {
            CHECK(returned);
            ++ran;
        };
    };
    bool returned = false;
    f.store.async_get("k", check_after(returned));
    f.store.async_put("k", "a", precondition::none(), check_after(returned));
    f.store.async_put("", "a", precondition::none(), check_after(returned)); // failing at once is still not inline
    f.store.async_erase("nope", precondition::matches("v"), check_after(returned));
    f.store.async_list("", "", 10, check_after(returned));
    f.store.async_probe(check_after(returned));
    returned = true;
    CHECK(ran == 0);
    f.ioc.run();
    CHECK(ran == 6);
}

TEST_CASE("probe reports all three capabilities and leaves nothing behind") {
    store_fixture f;
    REQUIRE_FALSE(f.put("keep", "x", precondition::none()).first);
    auto const before = names_in(f.dir.path);
    auto [ec, caps] = run_op<baton::capabilities>(f.ioc, [&](auto h) { f.store.async_probe(h); });
    CHECK_FALSE(ec);
    CHECK(caps.conditional_create);
    CHECK(caps.conditional_replace);
    CHECK(caps.conditional_erase);
    CHECK(caps.supports_leases());
    REQUIRE(caps.findings.size() == 4);
    for (int i = 0; i < 3; ++i) CHECK(contains(caps.findings[static_cast<std::size_t>(i)], "refused (honoured)"));
    CHECK(contains(caps.findings[3], "fsync on"));
    CHECK(caps.diag.empty());
    CHECK(names_in(f.dir.path) == before);
    CHECK(f.store.counts().probes == 1);
    CHECK(f.store.counts().puts == 1);

    SUBCASE("a directory that cannot be used fails the probe with diagnostics") {
        fs::path const blocker = f.dir.path / "not-a-dir";
        spit(blocker, "x");
        baton::file_backend bad(f.ioc.get_executor(), params_for(blocker / "sub"));
        auto [ec2, caps2] = run_op<baton::capabilities>(f.ioc, [&](auto h) { bad.async_probe(h); });
        CHECK(ec2);
        CHECK_FALSE(caps2.supports_leases());
        CHECK_FALSE(caps2.diag.empty());
        REQUIRE_FALSE(caps2.findings.empty());
        CHECK(contains(caps2.findings[0], "failed"));
    }
}

TEST_CASE("a missing root is an empty store that the first put creates, or not_found when it may not be created") {
    store_dir dir;
    asio::io_context ioc;
    fs::path const root = dir.path / "a" / "b";
    baton::file_backend store(ioc.get_executor(), params_for(root));
    auto [eg, g] = run_op<baton::get_result>(ioc, [&](auto h) { store.async_get("k", h); });
    CHECK_FALSE(eg);
    CHECK_FALSE(g.found.has_value());
    auto [el, l] = run_op<baton::list_page>(ioc, [&](auto h) { store.async_list("", "", 5, h); });
    CHECK_FALSE(el);
    CHECK(l.entries.empty());
    auto [ee, e] = run_op<baton::erase_result>(ioc, [&](auto h) { store.async_erase("k", precondition::matches("v"), h); });
    CHECK(ee == errc::not_found);
    CHECK_FALSE(fs::exists(root)); // reads and erases create nothing
    auto [ep, p] = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put("k", "v", precondition::absent(), h); });
    CHECK_FALSE(ep);
    CHECK(fs::is_directory(root));

    baton::file_backend_params strict = params_for(dir.path / "missing");
    strict.create_root = false;
    baton::file_backend s2(ioc.get_executor(), strict);
    auto [eg2, g2] = run_op<baton::get_result>(ioc, [&](auto h) { s2.async_get("k", h); });
    CHECK(eg2 == errc::not_found);
    CHECK(contains(g2.diag.message, "missing"));
    auto [ep2, p2] = run_op<baton::put_result>(ioc, [&](auto h) { s2.async_put("k", "v", precondition::none(), h); });
    CHECK(ep2 == errc::not_found);
    CHECK_FALSE(fs::exists(dir.path / "missing"));
}

TEST_CASE("corrupt, truncated, oversized and non-regular files are invalid_response naming the file") {
    store_fixture f;
    auto p_result = f.put("k", "hello world", precondition::none());
    auto& ep = std::get<0>(p_result);
    auto& p = std::get<1>(p_result);
    REQUIRE_FALSE(ep);
    fs::path const file = f.file_of("k");
    std::string const good = slurp(file);
    REQUIRE(good.ends_with("khello world"));

    auto expect_invalid = [&](std::string const& what) {
        CAPTURE(what);
        auto [eg, g] = f.get("k");
        CHECK(eg == errc::invalid_response);
        CHECK(contains(g.diag.message, file.string()));
        CHECK(g.diag.service_code == "CorruptRecord");
        CHECK_FALSE(g.found.has_value());
        auto [el, l] = f.list("", "", 10);
        CHECK(el == errc::invalid_response);
        CHECK(contains(l.diag.message, file.string()));
        // Conditional writes cannot judge an unreadable record.
        auto [ec, c] = f.put("k", "x", precondition::matches(p.version));
        CHECK(ec == errc::invalid_response);
        auto [ea, a] = f.put("k", "x", precondition::absent());
        CHECK(ea == errc::invalid_response);
        CHECK(f.erase("k", precondition::matches(p.version)) == errc::invalid_response);
        // Other keys are unaffected.
        CHECK_FALSE(f.get("other").first);
    };

    SUBCASE("truncated body") {
        spit(file, good.substr(0, good.size() - 3));
        expect_invalid("truncated");
        CHECK(contains(f.get("k").second.diag.message, "truncated"));
    }
    SUBCASE("truncated header") {
        spit(file, good.substr(0, 30));
        expect_invalid("truncated header");
    }
    SUBCASE("empty file") {
        spit(file, "");
        expect_invalid("empty");
    }
    SUBCASE("trailing bytes") {
        spit(file, good + "!");
        expect_invalid("trailing");
    }
    SUBCASE("a flipped body byte fails the checksum") {
        std::string bad = good;
        bad[bad.size() - 1] = 'D';
        spit(file, bad);
        expect_invalid("checksum");
        CHECK(contains(f.get("k").second.diag.message, "checksum"));
    }
    SUBCASE("a changed version fails the checksum") {
        std::string bad = good;
        auto pos = bad.find("version f");
        REQUIRE(pos != std::string::npos);
        bad[pos + 9] = bad[pos + 9] == '0' ? '1' : '0';
        spit(file, bad);
        expect_invalid("version");
    }
    SUBCASE("not a record at all") {
        spit(file, "{\"json\": true}\n");
        expect_invalid("foreign");
        CHECK(contains(f.get("k").second.diag.message, "format tag"));
    }
    SUBCASE("absurd sizes") {
        std::string bad = good;
        auto pos = bad.find("body-bytes 11");
        REQUIRE(pos != std::string::npos);
        bad.replace(pos, 13, "body-bytes 99999999999999999999");
        spit(file, bad);
        expect_invalid("sizes");
    }
    SUBCASE("the record of another key under this key's name") {
        auto [eo, o] = f.put("other", "hello world", precondition::none());
        REQUIRE_FALSE(eo);
        fs::copy_file(f.file_of("other"), file, fs::copy_options::overwrite_existing);
        fs::remove(f.file_of("other"));
        expect_invalid("wrong key");
        CHECK(contains(f.get("k").second.diag.message, "another key"));
    }
    SUBCASE("a directory") {
        fs::remove(file);
        fs::create_directory(file);
        expect_invalid("directory");
        CHECK(contains(f.get("k").second.diag.message, "not a regular file"));
        fs::remove(file);
    }
    SUBCASE("a FIFO does not block the reader") {
        fs::remove(file);
        REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
        expect_invalid("fifo");
        fs::remove(file);
    }
    SUBCASE("a symbolic link is not followed") {
        fs::path const outside = f.dir.path.parent_path() / (f.dir.path.filename().string() + "-outside");
        spit(outside, good);
        fs::remove(file);
        fs::create_symlink(outside, file);
        expect_invalid("symlink");
        CHECK(contains(f.get("k").second.diag.message, "symbolic link"));
        // An unconditional put replaces the link itself, never the file it points to.
        CHECK_FALSE(f.put("k", "fixed", precondition::none()).first);
        CHECK(slurp(outside) == good);
        CHECK_FALSE(fs::is_symlink(file));
        fs::remove(outside);
    }
    SUBCASE("files larger than this store reads") {
        baton::file_backend_params small = params_for(f.dir.path);
        small.max_body_bytes = 4;
        baton::file_backend reader(f.ioc.get_executor(), small);
        // Over the body limit but a small file: the header says so.
        auto [eg, g] = run_op<baton::get_result>(f.ioc, [&](auto h) { reader.async_get("k", h); });
        CHECK(eg == errc::invalid_response);
        CHECK(contains(g.diag.message, "exceeds"));
        CHECK(contains(g.diag.message, file.string()));
        // A huge file is refused by its size, before it is read.
        spit(file, good + std::string(4096, 'x'));
        auto [eg2, g2] = run_op<baton::get_result>(f.ioc, [&](auto h) { reader.async_get("k", h); });
        CHECK(eg2 == errc::invalid_response);
        CHECK(contains(g2.diag.message, "bytes exceeds the largest record"));
        spit(file, good);
    }
    // Whatever the damage, an unconditional put repairs and an unconditional erase removes.
    CHECK_FALSE(f.put("k", "repaired", precondition::none()).first);
    CHECK(f.get("k").second.found->body == "repaired");
    spit(file, "garbage");
    CHECK_FALSE(f.erase("k", precondition::none()));
    CHECK_FALSE(f.get("k").second.found.has_value());
}

TEST_CASE("leftover temporary files, lock files and foreign files are ignored") {
    store_fixture f;
    REQUIRE_FALSE(f.put("a", "1", precondition::none()).first);
    // A crash between writing the temporary file and renaming it leaves this behind.
    std::string const complete_but_unrenamed = slurp(f.file_of("a"));
    spit(f.dir.path / ".tmp.0123456789abcdef0123456789abcdef", complete_but_unrenamed);
    spit(f.dir.path / ".tmp.fedcba9876543210fedcba9876543210", complete_but_unrenamed.substr(0, 10));
    spit(f.dir.path / ".lock.r.b", "");  // a lock file whose key has no record
    spit(f.dir.path / "README", "not a record");
    spit(f.dir.path / "r.%2f", "non-canonical name (lower-case hex)");
    spit(f.dir.path / "r.", "empty key");
    spit(f.dir.path / "h.xyz", "not a hash");
    fs::create_directory(f.dir.path / "subdir");

    auto [el, l] = f.list("", "", 10);
    CHECK_FALSE(el);
    CHECK(keys_of(l) == "a ");
    CHECK_FALSE(f.get("b").second.found.has_value());
    CHECK(f.get("a").second.found->body == "1");
    // Writes to the key whose lock file was left over still work.
    CHECK_FALSE(f.put("b", "2", precondition::absent()).first);
    CHECK(keys_of(f.list("", "", 10).second) == "a b ");
}

TEST_CASE("any valid key round-trips without escaping the root directory; a key that is not UTF-8 is refused") {
    store_dir outer;
    asio::io_context ioc;
    fs::path const root = outer.path / "store";
    baton::file_backend store(ioc.get_executor(), params_for(root));

    std::vector<std::string> keys = {
        "a/b/c",
        "../escape",
        "../../../../../../../../tmp/escape",
        "..",
        ".",
        "/",
        "/absolute/path",
        "with space",
        "tab\there",
        "new\nline",
        std::string("nul\0byte", 8),
        "caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x94\x92",
        "%41 looks encoded",
        ".lock.r.k",
        ".tmp.0123",
        "r.k",
        "h.0000000000000000000000000000000000000000000000000000000000000000",
        std::string(baton::store_limits::max_key_bytes, 'k'),
        std::string(baton::store_limits::max_key_bytes, '/'),
        std::string(200, 'x'),  // the longest readable name
        std::string(201, 'x'),  // hashed
        std::string(67, '/'),   // 201 encoded bytes: hashed
        std::string(66, '/') + "xy",
    };
    std::set<std::string> names;
    for (auto const& key : keys) {
        CAPTURE(key);
        auto const name = baton::file_backend::file_name(key);
        CHECK(name.find('/') == std::string::npos);
        CHECK(name.size() <= 202);
        CHECK((name.starts_with("r.") || name.starts_with("h.")));
        names.insert(name);
        auto p_result = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put(key, "body of " + key, precondition::absent(), h); });
        auto& ep = std::get<0>(p_result);
        auto& p = std::get<1>(p_result);
        REQUIRE_MESSAGE(!ep, p.diag.to_string());
        auto [eg, g] = run_op<baton::get_result>(ioc, [&](auto h) { store.async_get(key, h); });
        REQUIRE_FALSE(eg);
        REQUIRE(g.found.has_value());
        CHECK(g.found->key == key);
        CHECK(g.found->body == "body of " + key);
        CHECK(g.found->version == p.version);
    }
    CHECK(names.size() == keys.size()); // distinct keys, distinct files
    // Every store refuses a key that is not UTF-8 before touching anything; its name would still be safe.
    std::string const not_utf8 = "\xff\xfe not utf-8";
    CHECK(baton::file_backend::file_name(not_utf8).find('/') == std::string::npos);
    auto [ebad, bad] = run_op<baton::put_result>(ioc, [&](auto h) { store.async_put(not_utf8, "x", precondition::absent(), h); });
    CHECK(ebad == errc::invalid_argument);
    CHECK(bad.diag.message.find("UTF-8") != std::string::npos);
    CHECK(baton::file_backend::file_name("jobs/nightly report") == "r.jobs%2Fnightly%20report");
    CHECK(baton::file_backend::file_name(std::string(201, 'x')).size() == 66);

    // Everything is directly under the root: one level, regular files only; nothing beside it in `outer`.
    CHECK(names_in(outer.path) == std::vector<std::string>{"store"});
    std::size_t records = 0;
    for (auto const& e : fs::directory_iterator(root)) {
        CHECK(e.is_regular_file());
        if (!e.path().filename().string().starts_with(".lock.")) ++records;
    }
    CHECK(records == keys.size());

    // The listing gives back every key, in byte order, with its version.
    std::vector<std::string> sorted = keys;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> listed;
    std::string after;
    for (;;) {
        auto [el, page] = run_op<baton::list_page>(ioc, [&](auto h) { store.async_list("", after, 7, h); });
        REQUIRE_FALSE(el);
        for (auto& e : page.entries) listed.push_back(e.key);
        if (!page.truncated) break;
        after = page.entries.back().key;
    }
    CHECK(listed == sorted);
    auto [ep, page] = run_op<baton::list_page>(ioc, [&](auto h) { store.async_list("../", "", 100, h); });
    REQUIRE(page.entries.size() == 2);
    CHECK(page.entries[0].key == "../../../../../../../../tmp/escape");
    CHECK(page.entries[1].key == "../escape");

    // And every key erases, leaving an empty directory.
    for (auto const& key : keys) {
        auto [ee, e] = run_op<baton::erase_result>(ioc, [&](auto h) { store.async_erase(key, precondition::none(), h); });
        CHECK_FALSE(ee);
    }
    CHECK(names_in(root).empty());
}

TEST_CASE("a writer holding a key's lock makes others time out without writing; readers never wait") {
    baton::file_backend_params p;
    p.lock_timeout = 100ms;
    p.durable = false; // the lock is the subject: no fsync before it inflates the measured wait
    store_fixture f(p);
    auto [ep, first] = f.put("k", "one", precondition::none());
    REQUIRE_FALSE(ep);
    fs::path const lock_file = f.dir.path / (".lock." + baton::file_backend::file_name("k"));
    REQUIRE(fs::exists(lock_file));
    int fd = ::open(lock_file.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX) == 0); // as a frozen writer of another process would

    auto const t0 = std::chrono::steady_clock::now();
    auto [ep2, p2] = f.put("k", "two", precondition::matches(first.version));
    auto const waited = std::chrono::steady_clock::now() - t0;
    CHECK(ep2 == errc::timeout);
    CHECK(p2.diag.service_code == "LockTimeout");
    CHECK(contains(p2.diag.message, lock_file.string()));
    CHECK(waited >= 100ms);
    CHECK(waited < 10s); // gave up, rather than waiting for the lock that is never released
    CHECK(f.erase("k", precondition::none()) == errc::timeout);
    // Readers do not lock.
    auto [eg, g] = f.get("k");
    CHECK_FALSE(eg);
    CHECK(g.found->body == "one");
    CHECK(keys_of(f.list("", "", 10).second) == "k ");
    // Nothing was written, and no temporary file is left.
    CHECK(names_in(f.dir.path) == std::vector<std::string>{".lock.r.k", "r.k"});
    // Other keys have their own locks.
    CHECK_FALSE(f.put("other", "x", precondition::absent()).first);

    ::close(fd);
    CHECK_FALSE(f.put("k", "two", precondition::matches(first.version)).first);
}

TEST_CASE("conditional increments from many threads and handles never lose an update" *
          doctest::test_suite("concurrency")) {
    baton::file_backend_params p;
    p.durable = false;       // the locking is the subject here, not the disk
    p.lock_timeout = 60s;    // and not lock timeouts: a slow (sanitized, loaded) run must not give up
    store_fixture f(p);
    REQUIRE_FALSE(f.put("counter", "0", precondition::absent()).first);
    constexpr int threads = 4, each = 25;
    std::atomic<int> refusals{0}, errors{0};
    std::atomic<bool> stop{false}; // an error anywhere ends every thread (a lost counter would make them spin)
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            asio::io_context ioc;
            baton::file_backend store(ioc.get_executor(), f.store.params()); // its own handle, as another process
            for (int done = 0; done < each;) {
                auto g_result = run_op<baton::get_result>(ioc, [&](auto h) { store.async_get("counter", h); });
                auto& eg = std::get<0>(g_result);
                auto& g = std::get<1>(g_result);
                if (eg) {
                    ++errors;
                    return stop.store(true);
                }
                if (!g.found) { // between another thread's erase and its re-create
                    if (stop) return;
                    std::this_thread::yield();
                    continue;
                }
                int const n = std::stoi(g.found->body);
                // Every other round erases and re-creates, so that lock files come and go under contention.
                if ((done + t) % 5 == 4) {
                    auto [ee, e] = run_op<baton::erase_result>(ioc, [&](auto h) {
                        store.async_erase("counter", precondition::matches(g.found->version), h);
                    });
                    // Documented refusals: another thread changed it (precondition_failed) or
                    // erased it first (not_found: `matches` on a missing key).
                    if (ee == errc::precondition_failed || ee == errc::not_found) {
                        ++refusals;
                        continue;
                    }
                    if (ee) {
                        ++errors;
                        return stop.store(true);
                    }
                    auto [ep, pr] = run_op<baton::put_result>(ioc, [&](auto h) {
                        store.async_put("counter", std::to_string(n + 1), precondition::absent(), h);
                    });
                    if (ep) {
                        ++errors; // nobody else may create it while it is erased: they all need a version
                        return stop.store(true);
                    }
                    ++done;
                    continue;
                }
                auto [ep, pr] = run_op<baton::put_result>(ioc, [&](auto h) {
                    store.async_put("counter", std::to_string(n + 1), precondition::matches(g.found->version), h);
                });
                if (ep == errc::precondition_failed) {
                    ++refusals;
                    continue;
                }
                if (ep) {
                    ++errors;
                    return stop.store(true);
                }
                ++done;
            }
        });
    }
    for (auto& th : pool) th.join();
    CHECK(errors == 0);
    MESSAGE("refusals under contention: " << refusals.load());
    auto [eg, g] = f.get("counter");
    REQUIRE_FALSE(eg);
    REQUIRE(g.found.has_value());
    CHECK(g.found->body == std::to_string(threads * each));
}

}
