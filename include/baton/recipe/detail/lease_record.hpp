// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_LEASE_RECORD_HPP
#define BATON_RECIPE_DETAIL_LEASE_RECORD_HPP

// Layer: recipes, internal. The body of a lease record: JSON, so that people and other tools can read it.
//   {"baton":"lease/1","owner":"...","token":7,"nonce":"...","state":"held","ttl_ms":20000,"turn_ms":25,"value":"..."}
// "turn_ms" (optional, absent when 0) is advice for the waiters, never part of safety: for how long
// after sending this write its writer will go on taking its own released record straight back
// (lease_options::yield_after). A waiter polls again when that turn is over instead of during it
// (but at least every two poll intervals).
// Only held records state one: a released record is free for whoever reads it.
// The nonce is fresh on every write, so the store's version always changes
// (an S3 ETag is the MD5 of the bytes) and a lost response can be settled by
// reading back.

#include <baton/core/detail/config.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/core/error.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/json/monotonic_resource.hpp>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace baton::detail {

struct lease_body {
    std::string owner;
    std::string value;
    std::string nonce;
    std::uint64_t token = 0;
    bool released = false;
    std::chrono::milliseconds ttl{0};
    std::chrono::milliseconds turn{0}; // "turn_ms": 0 when absent
};

inline constexpr std::string_view lease_format = "lease/1";
inline constexpr std::size_t max_lease_body_bytes = 64 * 1024;
// A declared TTL beyond this is not from a sane holder; refuse rather than wait a week.
inline constexpr std::chrono::milliseconds max_declared_ttl{std::chrono::hours(24)};

BATON_DECL void append_json_string(std::string& out, std::string_view s);

// Encodes straight from views: the renewal path copies no strings.
BATON_DECL std::string encode_lease_body(std::string_view owner, std::string_view value, std::string_view nonce,
                                     std::uint64_t token, bool released, std::chrono::milliseconds ttl,
                                     std::chrono::milliseconds turn = std::chrono::milliseconds(0));

BATON_DECL std::string encode_lease_body(lease_body const& b);

// Strict: anything that is not a well-formed lease/1 record is refused with
// errc::foreign_record and an explanation, never guessed at.
BATON_DECL error_code decode_lease_body(std::string_view text, lease_body& out, diagnostics& diag);

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/lease_record.ipp>
#endif

#endif
