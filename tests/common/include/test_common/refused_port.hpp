// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_TEST_COMMON_REFUSED_PORT_HPP
#define BATON_TEST_COMMON_REFUSED_PORT_HPP

// A loopback port that refuses connections for as long as the object lives.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <string>

namespace test_common {

/** A loopback TCP port bound by a socket that never listens, so a connect to it is refused.

    Holding the port is the point: a port found free and released again can be taken at once by
    a test server of another test process (the suites run side by side), whose connections then
    arrive where a refusal was expected. The socket does not set SO_REUSEADDR, so no other socket
    can bind the port while this object lives.
*/
class refused_port {
public:
    refused_port() : sock_(ioc_) {
        sock_.open(boost::asio::ip::tcp::v4());
        sock_.bind(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    }
    refused_port(refused_port const&) = delete;
    refused_port& operator=(refused_port const&) = delete;

    /// The port.
    std::uint16_t port() const { return sock_.local_endpoint().port(); }
    /// `http://127.0.0.1:PORT`.
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }

private:
    boost::asio::io_context ioc_;
    boost::asio::ip::tcp::socket sock_;
};

} // namespace test_common

#endif
