// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_HTTP_DETAIL_XML_HPP
#define BATON_HTTP_DETAIL_XML_HPP

/** @file
    Layer: wire (http), internal. A small, strict parser for the XML that object stores send
    (S3's and STS's documents in aws/, Azure Blob's in azure/). No XML library is available,
    and their subset is small: elements, attributes, character data, the five predefined
    entities and character references, CDATA sections, comments and processing
    instructions. Nothing else is accepted:

    - no DOCTYPE (so no entity definitions, no expansion bombs);
    - the document must be well-formed UTF-8 without control characters other
      than tab, CR and LF, with exactly one root element and matching tags;
    - sizes are bounded (`xml_limits`): input bytes, nesting depth, element
      count, attributes per element and name length.

    Every failure is `errc::invalid_response` with a message naming the byte
    offset and the rule broken; the parser never reads outside its input, never
    recurses deeper than `xml_limits::max_depth` and never throws anything but
    `std::bad_alloc`. Kept free of I/O so libFuzzer targets can drive it directly.
*/

#include <baton/core/detail/text.hpp>
#include <baton/core/error.hpp>
#include <baton/http/detail/crypto.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace baton::detail::xml {

/// One element: its name as written, its attributes, its character data (decoded, concatenated) and its child elements.
struct element {
    /// The qualified name as written (`ListBucketResult`, or `s3:Key` with a prefix).
    std::string name;
    /// Attributes as written (names qualified), values with entities decoded, in document order.
    std::vector<std::pair<std::string, std::string>> attributes;
    /// Character data directly inside this element, entities decoded, CDATA included, in document order.
    std::string text;
    /// Child elements in document order.
    std::vector<element> children;

    /// The name without a namespace prefix.
    std::string_view local_name() const noexcept;

    /// The first child whose local name is `n`, or null.
    element const* child(std::string_view n) const noexcept;

    /// The text of the first child named `n`, or empty when there is none.
    std::string_view child_text(std::string_view n) const noexcept;

    /// The value of the first attribute whose local name is `n`, or null.
    std::string const* attribute(std::string_view n) const noexcept;
};

/// Bounds on what the parser accepts; beyond them the input is refused, not truncated.
struct xml_limits {
    /// Largest document, in bytes. Default 16 MiB (a listing page of 1000 keys is well under 1 MiB).
    std::size_t max_bytes = 16u * 1024u * 1024u;
    /// Deepest element nesting (root = 1). Default 32; S3 and Azure documents nest 3 or 4 deep.
    std::size_t max_depth = 32;
    /// Most elements in one document. Default 200000.
    std::size_t max_elements = 200000;
    /// Longest element or attribute name, in bytes. Default 256.
    std::size_t max_name_bytes = 256;
    /// Most attributes on one element. Default 16 (the services send a namespace or two).
    std::size_t max_attributes = 16;
};

/** Parses `doc` into `root`.

    @returns `errc::invalid_response` with `diag.message` naming the byte
    offset and the rule when `doc` is not a well-formed document of the subset
    (see the file comment) or breaks `lim`. `root` is unspecified then.
*/
BATON_DECL error_code parse_xml(std::string_view doc, element& root, diagnostics& diag, xml_limits const& lim = {});

/** Decodes the form-style URL encoding that `encoding-type=url` applies to keys (`%XX`, and `+` for a space).

    @returns the decoded bytes, or nothing when a `%` is not followed by two hex digits.
*/
BATON_DECL std::optional<std::string> url_decode(std::string_view s);

} // namespace baton::detail::xml

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/http/impl/xml.ipp>
#endif

#endif
