// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AZURE_IMPL_LIST_BLOBS_IPP
#define BATON_AZURE_IMPL_LIST_BLOBS_IPP
// Layer: wire (azure), internal. The compiled part of azure/detail/list_blobs.hpp.
#include <baton/azure/detail/list_blobs.hpp>
#include <baton/core/detail/text.hpp>

#include <algorithm>
#include <cstdint>

namespace baton::azure::detail {

BATON_DECL bool blob_name_less(std::string_view a, std::string_view b) noexcept {
    // UTF-16 order is code point order once U+E000..U+FFFF are moved above U+10FFFF (in UTF-16
    // the characters above U+FFFF are surrogates, D800..DFFF, below E000).
    auto key = [](std::uint32_t cp) -> std::uint32_t { return cp >= 0xE000 && cp <= 0xFFFF ? cp + 0x200000 : cp; };
    std::size_t i = 0;
    std::size_t j = 0;
    while (i < a.size() && j < b.size()) {
        auto const x = baton::detail::decode_utf8_at(a, i);
        auto const y = baton::detail::decode_utf8_at(b, j);
        if (x.code_point != y.code_point) return key(x.code_point) < key(y.code_point);
        i += x.length;
        j += y.length;
    }
    return i == a.size() && j < b.size();
}

BATON_DECL error_code parse_list_blobs(std::string_view doc, blob_listing& out, diagnostics& diag,
                                       xml::xml_limits const& lim) {
    out = blob_listing{};
    xml::element root;
    if (auto ec = xml::parse_xml(doc, root, diag, lim)) return ec;
    auto bad = [&](std::string why) {
        diag.message = "invalid List Blobs response: " + std::move(why);
        return error_code(errc::invalid_response);
    };
    // Names in messages: a bounded, printable excerpt.
    auto shown = [](std::string_view name) {
        std::string s;
        for (char c : name.substr(0, 64)) s += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
        if (name.size() > 64) s += "...";
        return "'" + s + "'";
    };
    if (root.local_name() != "EnumerationResults")
        return bad("expected <EnumerationResults>, got <" + std::string(root.local_name()) + ">");
    auto const* blobs = root.child("Blobs");
    if (blobs == nullptr) return bad("no <Blobs>");
    out.prefix = root.child_text("Prefix");
    out.next_marker = root.child_text("NextMarker");
    if (out.next_marker.size() > max_marker_bytes)
        return bad("<NextMarker> is longer than " + std::to_string(max_marker_bytes) + " bytes");
    std::size_t page_limit = max_listed_blobs;
    if (auto const* mr = root.child("MaxResults"); mr != nullptr && !mr->text.empty()) {
        std::size_t n = 0;
        if (mr->text.size() > 9) return bad("<MaxResults> is not a number");
        for (char c : mr->text) {
            if (c < '0' || c > '9') return bad("<MaxResults> is not a number");
            n = n * 10 + static_cast<std::size_t>(c - '0');
        }
        page_limit = std::min(page_limit, n);
    }
    for (auto const& c : blobs->children) {
        if (c.local_name() == "BlobPrefix") {
            out.prefixes.emplace_back(c.child_text("Name"));
            continue;
        }
        if (c.local_name() != "Blob") continue;
        std::string const at = "blob " + std::to_string(out.entries.size() + 1);
        if (out.entries.size() == page_limit)
            return bad("more than " + std::to_string(page_limit) + " blobs in one page");
        auto const* name = c.child("Name");
        if (name == nullptr || name->text.empty()) return bad(at + " has no <Name>");
        if (auto const* encoded = name->attribute("Encoded"); encoded != nullptr && *encoded != "false")
            return bad(at + " has an encoded name (Encoded=\"" + encoded->substr(0, 8) +
                       "\"): it holds characters XML cannot carry");
        if (name->text.size() > max_blob_name_bytes)
            return bad(at + " has a name longer than " + std::to_string(max_blob_name_bytes) + " bytes");
        if (!name->text.starts_with(out.prefix))
            return bad(at + " " + shown(name->text) + " does not start with the listed prefix " + shown(out.prefix));
        if (!out.entries.empty() && !blob_name_less(out.entries.back().name, name->text))
            return bad(at + " " + shown(name->text) + " does not sort after " + shown(out.entries.back().name));
        auto const* properties = c.child("Properties");
        auto const* etag = properties != nullptr ? properties->child("Etag") : nullptr;
        if (etag == nullptr || etag->text.empty()) return bad(at + " " + shown(name->text) + " has no <Etag>");
        std::string_view value = etag->text;
        if (value.size() > max_etag_bytes)
            return bad(at + " has an ETag longer than " + std::to_string(max_etag_bytes) + " bytes");
        bool const quoted = value.size() >= 2 && value.front() == '"' && value.back() == '"';
        std::string_view const inner = quoted ? value.substr(1, value.size() - 2) : value;
        bool const plain = !inner.empty() && std::all_of(inner.begin(), inner.end(), [](char ch) {
            auto const u = static_cast<unsigned char>(ch);
            return u > 0x20 && u < 0x7f && ch != '"';
        });
        if (!plain) return bad(at + " " + shown(name->text) + " has an ETag with white space, controls or quotes");
        out.entries.push_back({name->text, "\"" + std::string(inner) + "\""});
    }
    return {};
}

} // namespace baton::azure::detail

#endif
