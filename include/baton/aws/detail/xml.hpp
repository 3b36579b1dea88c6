// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_DETAIL_XML_HPP
#define BATON_AWS_DETAIL_XML_HPP

/** @file
    Layer: wire (aws), internal. The readers of the XML that S3 sends: `<Error>` documents and
    `ListBucketResult` (ListObjectsV2), on the strict, bounded parser of
    http/detail/xml.hpp (whose names this namespace also carries, for S3's callers). Every
    failure is `errc::invalid_response` with a message naming the rule broken. Kept free of
    I/O so a libFuzzer target can drive `parse_s3_error` and `parse_list_objects_v2` directly.
*/

#include <baton/core/error.hpp>
#include <baton/http/detail/xml.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton::detail::s3_xml {

// The generic parser, by its old names, for S3's callers.
using xml::element;
using xml::parse_xml;
using xml::url_decode;
using xml::xml_limits;

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
