// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_TEST_COMMON_RUN_OP_HPP
#define BATON_TEST_COMMON_RUN_OP_HPP

// Runs one asynchronous operation to completion on an io_context, for the suites that drive a
// store directly; and runs an io_context until a condition holds, for the suites on real time.

#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>
#include <utility>

namespace test_common {

/// Starts an operation with `start(handler)`, runs `ioc` until it completes and returns what it
/// completed with, `void(error_code, Result)`; fails the test case if it never completed.
template <class Result, class Start>
std::pair<boost::system::error_code, Result> run_op(boost::asio::io_context& ioc, Start&& start) {
    std::optional<std::pair<boost::system::error_code, Result>> out;
    start([&out](boost::system::error_code ec, Result r) { out.emplace(ec, std::move(r)); });
    ioc.restart();
    ioc.run();
    REQUIRE(out.has_value());
    return std::move(*out);
}

/// Runs `ioc` until `done()`, or until `limit` of real time passed (then false; the limit only
/// matters when a test fails). A stopped io_context is restarted; when nothing is ready, time
/// passes in steps of a millisecond, so that timers, servers and other threads can make
/// `done()` true.
template <class Pred>
bool run_until(boost::asio::io_context& ioc, Pred done,
               std::chrono::steady_clock::duration limit = std::chrono::seconds(30)) {
    using clock = std::chrono::steady_clock;
    auto const end = clock::now() + limit;
    while (!done()) {
        auto const now = clock::now();
        if (now >= end) return false;
        if (ioc.stopped()) ioc.restart();
        if (ioc.run_one_for(std::min<clock::duration>(end - now, std::chrono::milliseconds(20))) == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

} // namespace test_common

#endif
