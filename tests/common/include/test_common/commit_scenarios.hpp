// The commit protocol against real stores, the same scenarios on every composition: racers on
// one put-if-absent, and a Delta-style log that writers append to by put-if-absent.
#ifndef BATON_TEST_COMMON_COMMIT_SCENARIOS_HPP
#define BATON_TEST_COMMON_COMMIT_SCENARIOS_HPP

#include <baton/store/record_store.hpp>

#include <doctest/doctest.h>
#include <test_common/fenced_scenarios.hpp> // run_io_until

#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace test_common {

/** `racers` handles (as separate processes would have) race on one put-if-absent of `key`:
    exactly one wins, and every racer then reads the winner's bytes at the winner's version. */
template <class Store, class Make>
void check_racers_one_wins(Make make, std::string const& key, int racers) {
    boost::asio::io_context ioc;
    std::vector<Store> stores;
    for (int i = 0; i < racers; ++i) stores.push_back(make(ioc.get_executor()));
    std::map<int, baton::error_code> outcome;
    std::map<int, std::string> version;
    for (int i = 0; i < racers; ++i)
        stores[static_cast<std::size_t>(i)].async_put(key, "racer " + std::to_string(i), baton::precondition::absent(),
                                                      [&, i](baton::error_code ec, baton::put_result r) {
                                                          outcome[i] = ec;
                                                          version[i] = r.version;
                                                      });
    REQUIRE(run_io_until(ioc, [&] { return outcome.size() == static_cast<std::size_t>(racers); }, std::chrono::seconds(120)));
    int winners = 0, winner = -1, refused = 0;
    for (auto const& [i, ec] : outcome) {
        if (!ec) ++winners, winner = i;
        else if (ec == baton::errc::precondition_failed) ++refused;
        else FAIL_CHECK("racer " << i << ": " << ec.message());
    }
    CHECK(winners == 1);
    CHECK(refused == racers - 1);
    REQUIRE(winner >= 0);
    int reads = 0;
    for (auto& s : stores)
        s.async_get(key, [&](baton::error_code ec, baton::get_result r) {
            ++reads;
            CHECK_FALSE(ec);
            REQUIRE(r.found);
            CHECK(r.found->body == "racer " + std::to_string(winner));
            CHECK(r.found->version == version[winner]);
        });
    REQUIRE(run_io_until(ioc, [&] { return reads == racers; }, std::chrono::seconds(120)));
    MESSAGE(racers << " racers on one put-if-absent: racer " << winner << " won, " << refused << " refused");
}

/** `writers` append `entries` entries in all to a log `<prefix>NNNNNNNNNNNNNNNNNNNN.json` by
    put-if-absent of the next number (a refusal means another writer took it: try the next).
    Then the log has exactly entries 0 .. entries-1, no gap, each holding the bytes of the writer
    that was told it won that number, none overwritten. */
template <class Store, class Make>
void check_log_appends(Make make, std::string const& prefix, int writers, int entries) {
    boost::asio::io_context ioc;
    auto name = [&](int n) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%020d", n);
        return prefix + buf + ".json";
    };
    struct writer {
        Store store;
        int next = 0;
        int id = 0;
    };
    std::vector<writer> ws;
    for (int i = 0; i < writers; ++i) ws.push_back(writer{make(ioc.get_executor()), 0, i});
    std::map<int, std::string> won; // entry -> body of the writer told it won
    std::vector<std::string> errors;
    int committed = 0, active = writers, attempts = 0;
    std::function<void(writer&)> append = [&](writer& w) {
        if (committed >= entries) {
            --active;
            return;
        }
        int const n = w.next;
        std::string body = "{\"writer\":" + std::to_string(w.id) + ",\"entry\":" + std::to_string(n) + "}";
        ++attempts;
        w.store.async_put(name(n), body, baton::precondition::absent(), [&, n, body](baton::error_code ec, baton::put_result) {
            if (!ec) {
                if (won.count(n)) errors.push_back("entry " + std::to_string(n) + " won twice");
                won[n] = body;
                ++committed;
                w.next = n + 1;
            } else if (ec == baton::errc::precondition_failed) {
                w.next = n + 1; // taken: the next one
            } else {
                errors.push_back("entry " + std::to_string(n) + ": " + ec.message());
                --active;
                return;
            }
            append(w);
        });
    };
    for (auto& w : ws) append(w);
    REQUIRE(run_io_until(ioc, [&] { return active == 0; }, std::chrono::seconds(300)));
    INFO((errors.empty() ? std::string() : errors.front()));
    CHECK(errors.empty());
    // What a reader finds: list the log and read each entry.
    std::optional<baton::list_page> page;
    ws[0].store.async_list(prefix, "", 1000, [&](baton::error_code ec, baton::list_page p) {
        CHECK_FALSE(ec);
        page = std::move(p);
    });
    REQUIRE(run_io_until(ioc, [&] { return page.has_value(); }, std::chrono::seconds(60)));
    int const listed = static_cast<int>(page->entries.size());
    CHECK(listed == static_cast<int>(won.size()));
    for (int n = 0; n < listed; ++n) CHECK(page->entries[static_cast<std::size_t>(n)].key == name(n)); // no gap
    int reads = 0;
    for (auto const& entry : won)
        ws[0].store.async_get(name(std::get<0>(entry)), [&, body = std::get<1>(entry)](baton::error_code ec, baton::get_result r) {
            ++reads;
            CHECK_FALSE(ec);
            REQUIRE(r.found);
            CHECK(r.found->body == body); // never overwritten
        });
    REQUIRE(run_io_until(ioc, [&] { return reads == static_cast<int>(won.size()); }, std::chrono::seconds(120)));
    MESSAGE(writers << " writers appended " << won.size() << " log entries in " << attempts << " attempts, no gap, none overwritten");
}

} // namespace test_common

#endif
