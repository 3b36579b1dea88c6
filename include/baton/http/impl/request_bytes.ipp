// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_HTTP_IMPL_REQUEST_BYTES_IPP
#define BATON_HTTP_IMPL_REQUEST_BYTES_IPP
// Layer: wire (http), internal. The compiled part of http/detail/request_bytes.hpp.
#include <baton/core/detail/text.hpp>
#include <baton/http/detail/request_bytes.hpp>

#ifndef BATON_DOXYGEN
namespace baton::http::detail {

BATON_DECL void write_request_head(boost::beast::http::request<boost::beast::http::string_body> const& req,
                                   std::string& out) {
    out.clear();
    auto const method = req.method_string();
    auto const target = req.target();
    out.append(method.data(), method.size());
    out.push_back(' ');
    out.append(target.data(), target.size());
    // Beast writes the version's two digits as they are (11 -> "HTTP/1.1").
    char const version[] = {' ', 'H', 'T', 'T', 'P', '/', static_cast<char>('0' + req.version() / 10), '.',
                            static_cast<char>('0' + req.version() % 10), '\r', '\n'};
    out.append(version, sizeof version);
    for (auto const& f : req) {
        auto const name = f.name_string();
        auto const value = f.value();
        out.append(name.data(), name.size());
        out.append(": ", 2);
        out.append(value.data(), value.size());
        out.append("\r\n", 2);
    }
    out.append("\r\n", 2);
    if (req.chunked() && !req.body().empty()) {
        char hex[2 * sizeof(std::size_t)];
        std::size_t n = req.body().size(), at = sizeof hex;
        for (; n != 0; n >>= 4) hex[--at] = baton::detail::hex_digit(static_cast<unsigned>(n));
        out.append(hex + at, sizeof hex - at);
        out.append("\r\n", 2);
    }
}

BATON_DECL std::string_view request_tail(boost::beast::http::request<boost::beast::http::string_body> const& req) {
    if (!req.chunked()) return {};
    // An empty body is no chunk at all: the last chunk (size 0) ends the message.
    return req.body().empty() ? std::string_view("0\r\n\r\n") : std::string_view("\r\n0\r\n\r\n");
}

} // namespace baton::http::detail
#endif

#endif
