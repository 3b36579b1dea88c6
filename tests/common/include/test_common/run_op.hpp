// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_TEST_COMMON_RUN_OP_HPP
#define BATON_TEST_COMMON_RUN_OP_HPP

// Runs one asynchronous operation to completion on an io_context, for the suites that drive a
// store directly; runs an io_context until a condition holds, or for a while, for the suites on
// real time; and what the suites against real servers share: their variables and random names.

#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
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

/// Lets `d` of real time pass while `ioc` keeps running (renewals, timers).
inline void run_for(boost::asio::io_context& ioc, std::chrono::steady_clock::duration d) {
    auto const end = std::chrono::steady_clock::now() + d;
    run_until(ioc, [&] { return std::chrono::steady_clock::now() >= end; }, d + std::chrono::seconds(1));
}

/// Starts `op(handler)` and runs `ioc` until it completes with `void(error_code, R)`, on real
/// time (timers and servers keep running meanwhile); fails the case after 30 s.
template <class R, class Op>
std::pair<boost::system::error_code, R> run(boost::asio::io_context& ioc, Op&& op) {
    std::optional<std::pair<boost::system::error_code, R>> out;
    std::forward<Op>(op)([&](boost::system::error_code ec, R r) { out.emplace(ec, std::move(r)); });
    REQUIRE(run_until(ioc, [&] { return out.has_value(); }));
    return std::move(*out);
}

/// As `run`, for an operation that completes with `void(error_code)`.
template <class Op>
boost::system::error_code run0(boost::asio::io_context& ioc, Op&& op) {
    std::optional<boost::system::error_code> out;
    std::forward<Op>(op)([&](boost::system::error_code ec) { out = ec; });
    REQUIRE(run_until(ioc, [&] { return out.has_value(); }));
    return *out;
}

/// An environment variable, or nothing when it is unset or empty.
inline std::optional<std::string> env(char const* name) {
    char const* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
}

/// `n` random lower-case hex digits: names of buckets, containers and prefixes that no other run uses.
inline std::string random_hex(std::size_t n = 8) {
    static std::mt19937_64 rng(std::random_device{}());
    static constexpr char digits[] = "0123456789abcdef";
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += digits[rng() & 15];
    return s;
}

} // namespace test_common

#endif
