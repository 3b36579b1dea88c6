// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_TEST_COMMON_RUN_OP_HPP
#define BATON_TEST_COMMON_RUN_OP_HPP

// Runs one asynchronous operation to completion on an io_context, for the suites that drive a
// store directly.

#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <doctest/doctest.h>

#include <optional>
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

} // namespace test_common

#endif
