// The versioned key-value store against a real store, the same scenarios on
// every backend: hundreds of concurrent read-modify-writes on one key, each
// applied exactly once; erase and re-create with versions that keep rising;
// fenced writes from a holder that was superseded, refused by the store.
#ifndef BATON_TEST_COMMON_KV_SCENARIOS_HPP
#define BATON_TEST_COMMON_KV_SCENARIOS_HPP

#include <baton/recipe/kv.hpp>

#include <doctest/doctest.h>
#include <test_common/fenced_scenarios.hpp> // run_io_until

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace test_common {

// A counter that also names every task that incremented it, so that the final value tells
// exactly which updates landed: "<count> <id> <id> ...".
struct tally {
    std::uint64_t count = 0;
    std::vector<int> ids;

    static tally parse(std::string const& s) {
        tally t;
        std::istringstream in(s);
        in >> t.count;
        for (int id; in >> id;) t.ids.push_back(id);
        return t;
    }
    std::string text() const {
        std::string s = std::to_string(count);
        for (int id : ids) s += ' ' + std::to_string(id);
        return s;
    }
};

/** `tasks` concurrent updates of one counter through `clients` kv objects (each its own retry
    budget, as separate processes would have). Exact: the final value names each task whose
    update landed, once; every task reported done is there; every task that failed without
    doubt is not; a task whose outcome is unknown may be either. Only documented outcomes are
    allowed: success, a transient failure after the retry policy gave up (RGW answers racing
    writers 500), unknown_outcome, or contention past `max_contention_rounds`. */
template <class Backend, class Make>
void check_concurrent_updates_apply_once(Make make, std::string const& key, int clients, int tasks) {
    using kv_t = baton::basic_kv<Backend>;
    boost::asio::io_context ioc;
    baton::retry_params rp;
    rp.max_attempts = 8;
    std::vector<kv_t> kvs;
    for (int i = 0; i < clients; ++i) kvs.emplace_back(ioc.get_executor(), make(ioc.get_executor()), baton::standard_retry(rp));
    std::map<int, baton::error_code> outcome;
    std::vector<std::string> unexpected;
    unsigned requests = 0;
    int done = 0;
    auto const t0 = std::chrono::steady_clock::now();
    for (int id = 0; id < tasks; ++id) {
        auto add_me = [id](std::optional<baton::kv_entry> const& cur) -> std::optional<std::string> {
            tally t = cur ? tally::parse(cur->value) : tally{};
            ++t.count;
            t.ids.push_back(id);
            return t.text();
        };
        kvs[static_cast<std::size_t>(id % clients)].async_update(key, add_me, [&, id](baton::error_code ec, baton::kv_write_result r) {
            ++done;
            requests += r.requests;
            outcome[id] = ec;
            bool const documented = !ec || baton::is_retryable(ec) || ec == baton::errc::precondition_failed;
            if (!documented) unexpected.push_back(ec.message() + ": " + r.diag.to_string());
        });
    }
    REQUIRE(run_io_until(ioc, [&] { return done == tasks; }, std::chrono::seconds(300)));
    auto const elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO((unexpected.empty() ? std::string() : unexpected.front()));
    CHECK(unexpected.empty());

    std::optional<baton::error_code> rec;
    std::optional<baton::kv_entry> got;
    kvs[0].async_get(key, [&](baton::error_code ec, std::optional<baton::kv_entry> e) { rec = ec; got = std::move(e); });
    REQUIRE(run_io_until(ioc, [&] { return rec.has_value(); }, std::chrono::seconds(30)));
    REQUIRE_FALSE(*rec);
    REQUIRE(got);
    tally const final_tally = tally::parse(got->value);
    std::multiset<int> const landed(final_tally.ids.begin(), final_tally.ids.end());
    CHECK(final_tally.count == final_tally.ids.size());
    CHECK(got->version == final_tally.count); // one write per landed update, no other
    int ok = 0, unknown = 0, failed = 0;
    for (auto const& entry : outcome) {
        auto const& id = std::get<0>(entry);
        auto const& ec = std::get<1>(entry);
        CAPTURE(id);
        CHECK(landed.count(id) <= 1); // never applied twice
        if (!ec) {
            ++ok;
            CHECK(landed.count(id) == 1); // reported done: it is there
        } else if (ec == baton::errc::unknown_outcome) {
            ++unknown;
        } else {
            ++failed;
            CHECK(landed.count(id) == 0); // failed without doubt: it is not
        }
    }
    CHECK(ok > tasks / 2);
    MESSAGE(tasks << " concurrent updates of one key through " << clients << " clients: " << ok << " done, " << failed
                  << " failed (transient or contention), " << unknown << " unknown; final count " << final_tally.count
                  << "; " << requests << " requests (" << double(requests) / std::max(1, ok) << " per update done); "
                  << elapsed << " s");
}

/** Erase leaves a tombstone: versions keep rising across erase and re-create, a writer holding
    a version from before the erase cannot bring the key back, and listing leaves it out. */
template <class Backend, class Make>
void check_erase_and_recreate(Make make, std::string const& prefix) {
    using kv_t = baton::basic_kv<Backend>;
    boost::asio::io_context ioc;
    kv_t a(ioc.get_executor(), make(ioc.get_executor())), stale(ioc.get_executor(), make(ioc.get_executor()));
    auto put = [&](kv_t& kv, std::string key, std::string value, baton::kv_condition c) {
        std::optional<baton::error_code> ec;
        baton::kv_write_result res;
        kv.async_put(std::move(key), std::move(value), c, [&](baton::error_code e, baton::kv_write_result r) { ec = e; res = std::move(r); });
        REQUIRE(run_io_until(ioc, [&] { return ec.has_value(); }, std::chrono::seconds(30)));
        INFO(res.diag.to_string());
        return std::make_pair(*ec, res);
    };
    auto get = [&](kv_t& kv, std::string key) {
        std::optional<baton::error_code> ec;
        std::optional<baton::kv_entry> got;
        kv.async_get(std::move(key), [&](baton::error_code e, std::optional<baton::kv_entry> v) { ec = e; got = std::move(v); });
        REQUIRE(run_io_until(ioc, [&] { return ec.has_value(); }, std::chrono::seconds(30)));
        REQUIRE_FALSE(*ec);
        return got;
    };
    std::string const key = prefix + "job";
    auto [e1, r1] = put(a, key, "first", baton::kv_condition::absent());
    REQUIRE_FALSE(e1);
    CHECK(r1.version == 1);
    CHECK(r1.requests == 1);
    REQUIRE(get(stale, key)->version == 1);
    auto [e2, r2] = put(a, key, "second", baton::kv_condition::version(1));
    REQUIRE_FALSE(e2);
    CHECK(r2.requests == 1); // this client wrote version 1: it names it
    REQUIRE_FALSE(put(a, prefix + "other", "x", baton::kv_condition::none()).first);

    std::optional<baton::error_code> eec;
    baton::kv_write_result er;
    a.async_erase(key, baton::kv_condition::version(2), [&](baton::error_code e, baton::kv_write_result r) { eec = e; er = std::move(r); });
    REQUIRE(run_io_until(ioc, [&] { return eec.has_value(); }, std::chrono::seconds(30)));
    REQUIRE_FALSE(*eec);
    CHECK(er.version == 3);
    CHECK_FALSE(get(a, key));

    auto [e3, r3] = put(stale, key, "resurrected?", baton::kv_condition::version(1));
    CHECK(e3 == baton::errc::precondition_failed);
    CHECK(r3.current_version == 0);
    auto [e4, r4] = put(stale, key, "again", baton::kv_condition::absent());
    REQUIRE_FALSE(e4);
    CHECK(r4.version == 4);
    auto back = get(a, key);
    REQUIRE(back);
    CHECK(back->value == "again");
    CHECK(back->version == 4);

    // Fenced: the key keeps the highest token; a lower one is refused by the store, also
    // through a cached version that still names the record.
    auto [f1, fr1] = put(a, key, "from token 5", baton::kv_condition::none().with_fence(5));
    REQUIRE_FALSE(f1);
    auto [f2, fr2] = put(stale, key, "from token 6", baton::kv_condition::none().with_fence(6));
    REQUIRE_FALSE(f2);
    auto [f3, fr3] = put(a, key, "stale token 5", baton::kv_condition::none().with_fence(5));
    CHECK(f3 == baton::errc::fenced);
    CHECK(fr3.winning_token == 6);
    auto last = get(a, key);
    REQUIRE(last);
    CHECK(last->value == "from token 6");
    CHECK(last->fence == 6);

    std::optional<baton::error_code> lec;
    baton::kv_list_page page;
    a.async_list(prefix, "", 100, [&](baton::error_code e, baton::kv_list_page p) { lec = e; page = std::move(p); });
    REQUIRE(run_io_until(ioc, [&] { return lec.has_value(); }, std::chrono::seconds(30)));
    REQUIRE_FALSE(*lec);
    REQUIRE(page.entries.size() == 2);
    CHECK(page.entries[0].key == key);
    CHECK(page.entries[0].entry.version == 6);
    CHECK(page.entries[1].key == prefix + "other");
}

} // namespace test_common

#endif
