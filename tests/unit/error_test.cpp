#include <baton/core/error.hpp>

#include <doctest/doctest.h>

#include <boost/asio/error.hpp>

TEST_SUITE("error") {

TEST_CASE("errc codes carry the baton category and readable messages") {
    baton::error_code ec = baton::errc::precondition_failed;
    CHECK(ec.category().name() == std::string("baton"));
    CHECK(ec.message() == "the record changed: precondition failed");
    CHECK(ec != baton::errc::conflict);
}

TEST_CASE("conditions group errors") {
    using baton::errc;
    using baton::condition;
    CHECK(baton::error_code(errc::throttled) == condition::retryable);
    CHECK(baton::error_code(errc::conflict) == condition::retryable);
    CHECK(baton::error_code(errc::conflict) == condition::contention);
    CHECK(baton::error_code(errc::precondition_failed) != condition::retryable);
    CHECK(baton::error_code(errc::precondition_failed) == condition::contention);
    CHECK(baton::error_code(errc::auth_failed) == condition::auth);
    CHECK(baton::error_code(errc::invalid_response) != condition::retryable);
    CHECK(baton::is_retryable(boost::asio::error::connection_reset));
    CHECK_FALSE(baton::is_retryable(boost::asio::error::operation_aborted));
}

TEST_CASE("std::error_code interoperates") {
    std::error_code sec = baton::errc::timeout;
    CHECK(sec.message() == "timed out");
    CHECK(sec == std::error_condition(baton::condition::retryable));
}

TEST_CASE("diagnostics render one line") {
    baton::diagnostics d;
    CHECK(d.empty());
    d.http_status = 412;
    d.service_code = "PreconditionFailed";
    d.message = "At least one of the pre-conditions you specified did not hold";
    d.request_id = "tx01";
    CHECK(d.to_string() == "HTTP 412 PreconditionFailed: At least one of the pre-conditions you specified did not hold (request id tx01)");
    d.clear();
    CHECK(d.empty());
}

}

// The store layer's settlement rule: which answers leave a write in doubt, nonces, the ledger.
#include <baton/store/settlement.hpp>

#include <random>
#include <set>

TEST_SUITE("settlement") {

TEST_CASE("ambiguous answers are those after which the write may have landed") {
    using baton::errc;
    for (auto e : {errc::timeout, errc::unknown_outcome, errc::service_unavailable, errc::conflict, errc::throttled})
        CHECK(baton::outcome_unknown(baton::error_code(e)));
    for (auto e : {errc::precondition_failed, errc::not_found, errc::auth_failed, errc::invalid_argument,
                   errc::invalid_response, errc::held_by_other})
        CHECK_FALSE(baton::outcome_unknown(baton::error_code(e)));
    CHECK_FALSE(baton::outcome_unknown(baton::error_code{}));
    CHECK(baton::outcome_unknown(baton::error_code(boost::asio::error::connection_reset)));
}

TEST_CASE("nonces are 32 hex digits and do not repeat") {
    std::mt19937_64 rng(7);
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        auto n = baton::make_nonce(rng);
        REQUIRE(n.size() == 32);
        CHECK(n.find_first_not_of("0123456789abcdef") == std::string::npos);
        seen.insert(std::move(n));
    }
    CHECK(seen.size() == 1000);
}

TEST_CASE("the ledger finds the attempt that landed by its nonce, and forgets on clear") {
    struct attempt {
        std::string nonce;
        int sent = 0;
        bool release = false;
    };
    baton::settlement_ledger<attempt> ledger;
    CHECK(ledger.empty());
    CHECK_FALSE(ledger.landed("a").has_value());
    ledger.in_doubt({"a", 1, false});
    ledger.in_doubt({"b", 2, true});
    CHECK(ledger.size() == 2);
    auto b = ledger.landed("b");
    REQUIRE(b.has_value());
    CHECK(b->sent == 2);
    CHECK_FALSE(ledger.landed("c").has_value());
    CHECK(ledger.any([](attempt const& x) { return x.release; }));
    CHECK_FALSE(ledger.any([](attempt const& x) { return x.sent > 2; }));
    ledger.clear();
    CHECK(ledger.empty());
    CHECK_FALSE(ledger.landed("a").has_value());
}

}
