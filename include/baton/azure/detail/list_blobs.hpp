// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AZURE_DETAIL_LIST_BLOBS_HPP
#define BATON_AZURE_DETAIL_LIST_BLOBS_HPP

// Layer: wire (azure), internal. The reader of a List Blobs answer (`<EnumerationResults>`), on
// the strict, bounded parser of http/detail/xml.hpp. Kept free of I/O so that unit tests and a
// libFuzzer target can drive it with arbitrary bytes: it returns an error code and fills
// `diagnostics`, never throws but `std::bad_alloc`, never reads out of bounds.

#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/http/detail/xml.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace baton::azure::detail {

namespace xml = baton::detail::xml;

/// Most blobs one List Blobs page may hold: `maxresults` is capped at 5000 by the service.
inline constexpr std::size_t max_listed_blobs = 5000;
/// Longest blob name accepted, in bytes: Azure allows 1024 characters, of up to 4 bytes each in UTF-8.
inline constexpr std::size_t max_blob_name_bytes = 4096;
/// Longest ETag accepted, in bytes (the service's are 20).
inline constexpr std::size_t max_etag_bytes = 256;
/// Longest continuation marker accepted, in bytes.
inline constexpr std::size_t max_marker_bytes = 4096;

/// One blob of a listing.
struct blob_entry {
    /// The blob's name (entities decoded).
    std::string name;
    /// Its ETag as the `ETag` header carries it: quoted (`"0x8DC..."`), so that versions from
    /// get, put and list compare equal.
    std::string etag;
};

/// A parsed List Blobs page.
struct blob_listing {
    /// The blobs of this page, in the service's (ascending) order.
    std::vector<blob_entry> entries;
    /// `<BlobPrefix><Name>` values (only when listing with a delimiter), in order.
    std::vector<std::string> prefixes;
    /// `<Prefix>`: the prefix the service listed under (every name starts with it).
    std::string prefix;
    /// `<NextMarker>`: list again with `marker=` this value; empty when the listing is complete.
    std::string next_marker;
};

/// True when `a` sorts before `b` as the service sorts blob names: by UTF-16 code units (which is
/// byte order, except that U+E000 to U+FFFF sort after the characters above U+FFFF). Both must be
/// well-formed UTF-8.
BATON_DECL bool blob_name_less(std::string_view a, std::string_view b) noexcept;

/** Parses a List Blobs answer (`GET /container?restype=container&comp=list`).

    Strict: the root is `<EnumerationResults>` with a `<Blobs>` element; every `<Blob>` has a
    non-empty `<Name>` (at most `max_blob_name_bytes`, not `Encoded="true"`: such a name holds
    characters XML cannot carry, which baton keys never do) and a `<Properties><Etag>` without
    white space, controls or inner quotes (returned quoted; an already quoted one is kept);
    names are strictly ascending (`blob_name_less`), all start with `<Prefix>`, and there are at
    most `max_listed_blobs` of them, and no more than `<MaxResults>` when it is given (a
    number); `<NextMarker>` is at most `max_marker_bytes`.

    @returns `errc::invalid_response` with `diag.message` naming the byte offset (malformed
    XML) or the blob and the rule broken. `out` is unspecified then.
*/
BATON_DECL error_code parse_list_blobs(std::string_view doc, blob_listing& out, diagnostics& diag,
                                       xml::xml_limits const& lim = {});

} // namespace baton::azure::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/azure/impl/list_blobs.ipp>
#endif

#endif
