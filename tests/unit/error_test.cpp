#include <baton/error.hpp>

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
