// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_HTTP_DETAIL_REQUEST_BYTES_HPP
#define BATON_HTTP_DETAIL_REQUEST_BYTES_HPP

// Layer: wire (http), internal. A request as the bytes to send: its head (and, when chunked, the
// one chunk's size line) written into one reused string, then the body as it is, then the
// framing's tail, so that the connection sends a request with one gathered write. Beast's
// serializer is not used: its composed operation costs more than the request (profiled on the
// lease cycle) and compiles to a third of a second more in every unit that sends; the string
// keeps its capacity from one request to the next, and the body is not copied. The bytes are
// what Beast's serializer sends, except for a chunked request with an empty body, where Beast
// sends the last chunk twice.

#include <baton/core/detail/config.hpp>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <string>
#include <string_view>

#ifndef BATON_DOXYGEN
namespace baton::http::detail {

/// Replaces `out` with the start line, the fields in their order and the blank line, and for a
/// chunked request with a body, the size line of the one chunk that holds it; the body follows.
BATON_DECL void write_request_head(boost::beast::http::request<boost::beast::http::string_body> const& req,
                                   std::string& out);

/// What follows the body: nothing, or for a chunked request the end of its chunk and the last chunk.
BATON_DECL std::string_view request_tail(boost::beast::http::request<boost::beast::http::string_body> const& req);

} // namespace baton::http::detail
#endif

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/http/impl/request_bytes.ipp>
#endif

#endif
