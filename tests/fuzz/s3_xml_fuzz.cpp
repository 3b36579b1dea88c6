// libFuzzer target: S3's XML (error documents, ListObjectsV2 results, and the
// generic element parser under them) must refuse malformed bytes with an
// error code, never crash, recurse without bound or read out of bounds.
#include <baton/aws/detail/xml.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    namespace x = baton::detail::s3_xml;
    std::string_view doc(reinterpret_cast<char const*>(data), size);
    baton::diagnostics diag;
    x::element root;
    (void)x::parse_xml(doc, root, diag);
    x::s3_error err;
    (void)x::parse_s3_error(doc, err, diag);
    x::s3_listing listing;
    (void)x::parse_list_objects_v2(doc, listing, diag);
    (void)x::url_decode(doc);
    return 0;
}
