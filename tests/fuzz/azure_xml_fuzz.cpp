// libFuzzer target: Azure Blob's XML (List Blobs pages, error documents, on the generic element
// parser) must refuse malformed bytes with an error code, never crash, recurse without bound or
// read out of bounds.
#include <baton/azure/detail/list_blobs.hpp>
#include <baton/azure/errors.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    std::string_view doc(reinterpret_cast<char const*>(data), size);
    baton::diagnostics diag;
    baton::azure::detail::blob_listing listing;
    (void)baton::azure::detail::parse_list_blobs(doc, listing, diag);
    baton::azure::blob_error error;
    (void)baton::azure::parse_blob_error(doc, error, diag);
    // Names from a hostile page are compared as the parser compares them.
    if (listing.entries.size() >= 2)
        (void)baton::azure::detail::blob_name_less(listing.entries[0].name, listing.entries[1].name);
    return 0;
}
