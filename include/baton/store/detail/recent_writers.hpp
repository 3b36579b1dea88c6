// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_DETAIL_RECENT_WRITERS_HPP
#define BATON_STORE_DETAIL_RECENT_WRITERS_HPP

// Layer: store, internal. The recent writers a record remembers, so that a write whose answer
// was lost is known to have landed even after others wrote over it (docs/design.md §5).
//
// A record written by a recipe carries its own nonce and `recent`: the first 16 hex digits of
// the nonces of the writes before it, newest first, at most 16, separated by commas. A write
// made on a record it read lists that record's nonce and then its list; a write that created
// the key lists the origin marker (16 zeros) instead, so that a complete list ends there. A
// write that could not know what it replaced lists nothing: the chain stops at it.
//
// `chain_fate` judges a write in doubt from a record read back: it landed (its nonce is there),
// it never will (the record descends from the state it was conditional on, through writes that
// are not it), it may still land (the record is that state), or the record cannot tell.

#include <baton/core/detail/config.hpp>
#include <baton/core/detail/text.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace baton::detail {

inline constexpr std::size_t recent_writers_kept = 16;
inline constexpr std::size_t writer_prefix_digits = 16;
// Stands for "no record": the predecessor of the write that created the key.
inline constexpr std::string_view origin_writer = "0000000000000000";

// The prefix of `nonce` that recent lists keep; empty when the nonce is too short to stand in one,
// or would read as the origin marker.
BATON_DECL std::string_view writer_prefix(std::string_view nonce);

// True when `list` is a valid recent list: 1 to recent_writers_kept comma-separated entries of
// 16 lowercase hex digits (the origin marker included).
BATON_DECL bool is_recent_list(std::string_view list);

// The recent list of a write on top of a record with `nonce` and `recent`. A nonce too short to
// list ends the chain there.
BATON_DECL std::string recent_after(std::string_view nonce, std::string_view recent);

// The n-th entry (0: the write just before) of a recent list, or empty.
BATON_DECL std::string_view recent_at(std::string_view recent, std::size_t n);

// Where `prefix` (a writer prefix, or the origin marker) stands in the chain of a record with
// `nonce` and `recent`: 0 for the record itself, i for its i-th entry; none when absent.
BATON_DECL std::optional<std::size_t> chain_index(std::string_view nonce, std::string_view recent,
                                                  std::string_view prefix);

// What a record read back says of one write in doubt.
enum class doubt_fate {
    landed,  // it is the record, or one of the writes the record remembers
    pending, // not yet: the record is still the state it was conditional on, so it may land
    never,   // the record descends from that state through other writes: it cannot land any more
    unsure,  // the record does not show that state: it may be older (a lagging replica) or newer
             // than the chain remembers; another read may tell
};

// The fate of a write in doubt that wrote `attempt_nonce` conditional on exactly the record whose
// writer prefix is `anchor` (the origin marker: on the key being absent), judged from a record
// read back (`nonce`, `recent`), or from the key found absent (`found` false).
BATON_DECL doubt_fate chain_fate(std::string_view attempt_nonce, std::string_view anchor, bool found,
                                 std::string_view nonce, std::string_view recent);

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/store/impl/recent_writers.ipp>
#endif

#endif
