// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_DETAIL_COMMIT_POINTER_HPP
#define BATON_STORE_DETAIL_COMMIT_POINTER_HPP

// Layer: store, internal. The sans-I/O parts of the commit protocol (store/commit_protocol.hpp):
// the pointer record kept in the lock store, the names of the immutable objects in the object
// store, and the one rule that decides when an object can never be reached again.
//
// A pointer is JSON, so that people and other tools can read it:
//   {"baton":"commit/1","object":"_baton/doc.baton-5f1c...-9a0b...","size":12,"sha256":"..."}
//   {"baton":"commit/1","erased":"<nonce>"}                       (a tombstone: the key is absent)
// An object's name is  <object prefix><key>.baton-<base tag>-<nonce>  where the base tag names the
// state of the pointer its commit is conditional on: 16 zeros for "absent", else 16 hex digits of
// a hash of the pointer version it must match (never all zeros).

#include <baton/core/detail/config.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/core/error.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <openssl/evp.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton::detail {

inline constexpr std::string_view commit_format = "commit/1";
inline constexpr std::string_view commit_object_marker = ".baton-";
inline constexpr std::string_view absent_base_tag = "0000000000000000";
// ".baton-" + 16 hex + "-" + 32 hex
inline constexpr std::size_t commit_object_suffix_bytes = 7 + 16 + 1 + 32;

/// What the lock store holds for a key.
struct commit_pointer {
    bool erased = false;
    std::string object;       // live: the immutable object that holds the bytes
    std::uint64_t size = 0;   // live: its length
    std::string sha256;       // live: its SHA-256, lower-case hex
    std::string nonce;        // tombstone: fresh on every write, so the version always changes
};

BATON_DECL std::string commit_sha256(std::string_view bytes);

/// The base tag of a commit conditional on `version` (none: conditional on the key being absent).
/// FNV-1a 64: a collision can only keep an unreachable object longer, never collect a reachable one.
BATON_DECL std::string commit_base_tag(std::optional<std::string_view> version);

BATON_DECL std::string commit_object_name(std::string_view object_prefix, std::string_view key,
                                          std::string_view base_tag, std::string_view nonce);

/// An object name taken apart: the key it was written for and its base tag.
struct commit_object_parts {
    std::string key;
    std::string base_tag;
};

/// Parses `name` (as listed in the object store); nothing when it is not a commit object under `object_prefix`.
BATON_DECL std::optional<commit_object_parts> parse_commit_object_name(std::string_view object_prefix,
                                                                       std::string_view name);

/** May `object` (a commit object of the key whose pointer is `pointer` at `version`, or absent)
    be deleted? Only when no commit can ever make a pointer name it:
    - the pointer exists (pointers are never deleted: an erase writes a tombstone), and
    - it does not name `object`, and
    - its version does not match the object's base tag.
    The commit that would name the object is conditional on exactly its base (absent, or one
    version); the key exists, so "absent" never holds again, and a lock store never repeats a
    version, so a version that is not current now is never current again. No clock is involved.
*/
BATON_DECL bool commit_object_unreachable(std::string_view object, std::string_view base_tag,
                                          std::optional<commit_pointer> const& pointer, std::string_view version);

BATON_DECL std::string encode_commit_pointer(commit_pointer const& p);

/// Strict: anything that is not a commit/1 pointer is errc::foreign_record, with the reason.
BATON_DECL error_code decode_commit_pointer(std::string_view text, commit_pointer& out, diagnostics& diag);

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/store/impl/commit_pointer.ipp>
#endif

#endif
