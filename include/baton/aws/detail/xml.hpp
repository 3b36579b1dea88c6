// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_DETAIL_XML_HPP
#define BATON_AWS_DETAIL_XML_HPP

/** @file
    Layer: wire (aws), internal. A small, strict parser for the XML that S3 sends: `<Error>` documents and
    `ListBucketResult` (ListObjectsV2). No XML library is available, and S3's
    subset is small: elements, attributes (read and ignored), character data,
    the five predefined entities and character references, CDATA sections,
    comments and processing instructions. Nothing else is accepted:

    - no DOCTYPE (so no entity definitions, no expansion bombs);
    - the document must be well-formed UTF-8 without control characters other
      than tab, CR and LF, with exactly one root element and matching tags;
    - sizes are bounded (`xml_limits`): input bytes, nesting depth, element
      count and name length.

    Every failure is `errc::invalid_response` with a message naming the byte
    offset and the rule broken; the parser never reads outside its input, never
    recurses deeper than `xml_limits::max_depth` and never throws anything but
    `std::bad_alloc`. Kept free of I/O so a libFuzzer target can drive
    `parse_xml`, `parse_s3_error` and `parse_list_objects_v2` directly.
*/

#include <baton/core/detail/text.hpp>
#include <baton/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton::detail::s3_xml {

/// One element: its name as written, its character data (decoded, concatenated) and its child elements.
struct element {
    /// The qualified name as written (`ListBucketResult`, or `s3:Key` with a prefix).
    std::string name;
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
};

/// Bounds on what the parser accepts; beyond them the input is refused, not truncated.
struct xml_limits {
    /// Largest document, in bytes. Default 16 MiB (a ListObjectsV2 page of 1000 keys is well under 1 MiB).
    std::size_t max_bytes = 16u * 1024u * 1024u;
    /// Deepest element nesting (root = 1). Default 32; S3 documents nest 3 deep.
    std::size_t max_depth = 32;
    /// Most elements in one document. Default 200000.
    std::size_t max_elements = 200000;
    /// Longest element or attribute name, in bytes. Default 256.
    std::size_t max_name_bytes = 256;
};

namespace impl {


BATON_DECL int hex_value(char c) noexcept;

} // namespace impl

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

/// The parts of an S3 `<Error>` document that baton reports.
struct s3_error {
    /// `<Code>`, e.g. `PreconditionFailed`.
    std::string code;
    /// `<Message>`.
    std::string message;
    /// `<RequestId>`.
    std::string request_id;
    /// `<HostId>`.
    std::string host_id;
    /// `<Resource>` or `<Key>`, when present.
    std::string resource;
};

/** Parses an S3 error document (`<Error><Code>…</Code>…</Error>`).

    @returns `errc::invalid_response` (with `diag.message`) when `doc` is not
    well-formed, its root is not `Error`, or it has no non-empty `<Code>`.
*/
BATON_DECL error_code parse_s3_error(std::string_view doc, s3_error& out, diagnostics& diag, xml_limits const& lim = {});

/// One `<Contents>` entry of a listing.
struct s3_object {
    /// The key, URL-decoded when the listing was URL-encoded.
    std::string key;
    /// The ETag with entities decoded: `"…"`, quotes included, as the `ETag` header carries it.
    std::string etag;
};

/// A parsed `ListBucketResult` (ListObjectsV2).
struct s3_listing {
    /// The keys of this page, in the order sent.
    std::vector<s3_object> contents;
    /// `<CommonPrefixes><Prefix>` values (only with a delimiter), decoded like keys.
    std::vector<std::string> common_prefixes;
    /// More keys follow: list again with `next_continuation_token`.
    bool is_truncated = false;
    /// Opaque token for the next page; set when `is_truncated`.
    std::string next_continuation_token;
    /// `<Prefix>`, decoded like keys.
    std::string prefix;
    /// `<KeyCount>` when present.
    std::optional<std::size_t> key_count;
    /// True when the service applied `encoding-type=url` (and keys were decoded here).
    bool url_encoded = false;
};

/** Parses a ListObjectsV2 response body.

    Decodes XML entities (ETags arrive as `&quot;…&quot;`) and, when the
    document says `<EncodingType>url</EncodingType>`, the URL encoding of
    keys and prefixes.

    @returns `errc::invalid_response` (with `diag.message`) when the document
    is malformed, its root is not `ListBucketResult`, `IsTruncated` is not
    `true`/`false`, a truncated page has no `NextContinuationToken`, a
    `<Contents>` lacks a non-empty `<Key>` or an `<ETag>`, `<KeyCount>` is not
    a number, or an encoded key is not valid URL encoding.
*/
BATON_DECL error_code parse_list_objects_v2(std::string_view doc, s3_listing& out, diagnostics& diag,
                                        xml_limits const& lim = {});

} // namespace baton::detail::s3_xml

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/xml.ipp>
#endif

#endif
