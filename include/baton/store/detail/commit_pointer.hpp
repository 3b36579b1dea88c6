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

inline std::string commit_hex(unsigned char const* p, std::size_t n) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s(2 * n, '0');
    for (std::size_t i = 0; i < n; ++i) {
        s[2 * i] = digits[p[i] >> 4];
        s[2 * i + 1] = digits[p[i] & 15];
    }
    return s;
}

inline std::string commit_sha256(std::string_view bytes) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1) return {};
    return commit_hex(md, len);
}

/// The base tag of a commit conditional on `version` (none: conditional on the key being absent).
/// FNV-1a 64: a collision can only keep an unreachable object longer, never collect a reachable one.
inline std::string commit_base_tag(std::optional<std::string_view> version) {
    if (!version) return std::string(absent_base_tag);
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : *version) {
        h ^= c;
        h *= 1099511628211ull;
    }
    if (h == 0) h = 1; // all zeros means "absent"
    unsigned char b[8];
    for (int i = 7; i >= 0; --i, h >>= 8) b[i] = static_cast<unsigned char>(h & 0xff);
    return commit_hex(b, 8);
}

inline std::string commit_object_name(std::string_view object_prefix, std::string_view key, std::string_view base_tag,
                                      std::string_view nonce) {
    std::string n;
    n.reserve(object_prefix.size() + key.size() + commit_object_suffix_bytes);
    n.append(object_prefix).append(key).append(commit_object_marker).append(base_tag).append("-").append(nonce);
    return n;
}

/// An object name taken apart: the key it was written for and its base tag.
struct commit_object_parts {
    std::string key;
    std::string base_tag;
};

/// Parses `name` (as listed in the object store); nothing when it is not a commit object under `object_prefix`.
inline std::optional<commit_object_parts> parse_commit_object_name(std::string_view object_prefix, std::string_view name) {
    if (name.size() < object_prefix.size() + 1 + commit_object_suffix_bytes) return std::nullopt;
    if (name.substr(0, object_prefix.size()) != object_prefix) return std::nullopt;
    std::string_view const suffix = name.substr(name.size() - commit_object_suffix_bytes);
    if (suffix.substr(0, commit_object_marker.size()) != commit_object_marker || suffix[7 + 16] != '-' ||
        !is_lower_hex(suffix.substr(7, 16)) || !is_lower_hex(suffix.substr(7 + 16 + 1)))
        return std::nullopt;
    std::string_view const key =
        name.substr(object_prefix.size(), name.size() - object_prefix.size() - commit_object_suffix_bytes);
    return commit_object_parts{std::string(key), std::string(suffix.substr(7, 16))};
}

/** May `object` (a commit object of the key whose pointer is `pointer` at `version`, or absent)
    be deleted? Only when no commit can ever make a pointer name it:
    - the pointer exists (pointers are never deleted: an erase writes a tombstone), and
    - it does not name `object`, and
    - its version does not match the object's base tag.
    The commit that would name the object is conditional on exactly its base (absent, or one
    version); the key exists, so "absent" never holds again, and a lock store never repeats a
    version, so a version that is not current now is never current again. No clock is involved.
*/
inline bool commit_object_unreachable(std::string_view object, std::string_view base_tag,
                                      std::optional<commit_pointer> const& pointer, std::string_view version) {
    if (!pointer) return false;
    if (!pointer->erased && pointer->object == object) return false;
    return commit_base_tag(version) != base_tag;
}

inline std::string encode_commit_pointer(commit_pointer const& p) {
    boost::json::object o;
    o["baton"] = commit_format;
    if (p.erased) {
        o["erased"] = p.nonce;
    } else {
        o["object"] = p.object;
        o["size"] = p.size;
        o["sha256"] = p.sha256;
    }
    return boost::json::serialize(o);
}

/// Strict: anything that is not a commit/1 pointer is errc::foreign_record, with the reason.
inline error_code decode_commit_pointer(std::string_view text, commit_pointer& out, diagnostics& diag) {
    auto refuse = [&](std::string why) {
        diag.message = "not a baton commit pointer: " + why;
        return error_code(errc::foreign_record);
    };
    if (text.size() > 16 * 1024) return refuse("larger than 16 KiB");
    boost::system::error_code jec;
    boost::json::value v = boost::json::parse(text, jec);
    if (jec) return refuse("not JSON (" + jec.message() + ")");
    auto const* o = v.if_object();
    if (!o) return refuse("not a JSON object");
    auto const* fmt = o->if_contains("baton");
    if (!fmt || !fmt->is_string() || fmt->get_string() != commit_format) return refuse("no \"baton\":\"commit/1\"");
    if (auto const* e = o->if_contains("erased")) {
        if (!e->is_string()) return refuse("\"erased\" is not a string");
        out = commit_pointer{true, {}, 0, {}, std::string(e->get_string())};
        return {};
    }
    auto const* obj = o->if_contains("object");
    auto const* size = o->if_contains("size");
    auto const* sha = o->if_contains("sha256");
    if (!obj || !obj->is_string() || obj->get_string().empty()) return refuse("no \"object\"");
    if (!size || !(size->is_uint64() || (size->is_int64() && size->get_int64() >= 0))) return refuse("no \"size\"");
    if (!sha || !sha->is_string() || sha->get_string().size() != 64 || !is_lower_hex(sha->get_string()))
        return refuse("no \"sha256\"");
    out = commit_pointer{false, std::string(obj->get_string()),
                         size->is_uint64() ? size->get_uint64() : static_cast<std::uint64_t>(size->get_int64()),
                         std::string(sha->get_string()), {}};
    return {};
}

} // namespace baton::detail

#endif
