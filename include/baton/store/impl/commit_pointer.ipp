// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_IMPL_COMMIT_POINTER_IPP
#define BATON_STORE_IMPL_COMMIT_POINTER_IPP

// Layer: store, internal. The compiled part of store/detail/commit_pointer.hpp: the pointer
// record's codec, the commit objects' names and the rule of when one is unreachable.
#include <baton/store/detail/commit_pointer.hpp>

namespace baton::detail {

BATON_DECL std::string commit_sha256(std::string_view bytes) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1) return {};
    return to_hex(md, len);
}

BATON_DECL std::string commit_base_tag(std::optional<std::string_view> version) {
    if (!version) return std::string(absent_base_tag);
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : *version) {
        h ^= c;
        h *= 1099511628211ull;
    }
    if (h == 0) h = 1; // all zeros means "absent"
    unsigned char b[8];
    for (int i = 7; i >= 0; --i, h >>= 8) b[i] = static_cast<unsigned char>(h & 0xff);
    return to_hex(b, 8);
}

BATON_DECL std::string commit_object_name(std::string_view object_prefix, std::string_view key,
                                          std::string_view base_tag, std::string_view nonce) {
    std::string n;
    n.reserve(object_prefix.size() + key.size() + commit_object_suffix_bytes);
    n.append(object_prefix).append(key).append(commit_object_marker).append(base_tag).append("-").append(nonce);
    return n;
}

BATON_DECL std::optional<commit_object_parts> parse_commit_object_name(std::string_view object_prefix,
                                                                       std::string_view name) {
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

BATON_DECL bool commit_object_unreachable(std::string_view object, std::string_view base_tag,
                                          std::optional<commit_pointer> const& pointer, std::string_view version) {
    if (!pointer) return false;
    if (!pointer->erased && pointer->object == object) return false;
    return commit_base_tag(version) != base_tag;
}

BATON_DECL std::string encode_commit_pointer(commit_pointer const& p) {
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

BATON_DECL error_code decode_commit_pointer(std::string_view text, commit_pointer& out, diagnostics& diag) {
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
