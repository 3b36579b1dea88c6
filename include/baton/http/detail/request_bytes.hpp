// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_HTTP_DETAIL_REQUEST_BYTES_HPP
#define BATON_HTTP_DETAIL_REQUEST_BYTES_HPP

// Layer: wire (http), internal. A request's head as the bytes Beast's serializer would send,
// written into one reused string, so that the connection sends head and body with one gathered
// write: the serializer's composed operation costs more than the request (profiled on the lease
// cycle), the string keeps its capacity from one request to the next, and the body is not copied.
// Only requests with a known length: a chunked one goes through Beast's serializer, which frames
// the chunks.

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <string>

#ifndef BATON_DOXYGEN
namespace baton::http::detail {

/// True when `write_request_head` and the body, sent as they are, make what Beast would send (no chunked framing).
inline bool writes_in_one_piece(boost::beast::http::request<boost::beast::http::string_body> const& req) {
    return !req.chunked();
}

/// Replaces `out` with the start line, the fields in their order and the blank line; the body follows as it is.
inline void write_request_head(boost::beast::http::request<boost::beast::http::string_body> const& req,
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
}

} // namespace baton::http::detail
#endif

#endif
