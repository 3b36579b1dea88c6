// libFuzzer target: DynamoDB response parsing must refuse malformed bytes with
// an error code (invalid_response, foreign_record, ...), never crash, hang or
// read out of bounds, whatever the service (or something pretending to be it) sends.
#include <baton/backend/detail/dynamodb_json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    namespace ddb = baton::detail::dynamodb;
    std::string_view body(reinterpret_cast<char const*>(data), size);
    baton::diagnostics diag;
    std::optional<baton::record> found;
    (void)ddb::parse_get_item(body, "jobs/nightly", found, diag);
    found.reset();
    (void)ddb::parse_condition_failure(body, "jobs/nightly", found, diag);
    ddb::scan_page page;
    (void)ddb::parse_scan(body, ddb::table_ref{"locks", "pk"}, page, diag);
    ddb::table_description description;
    (void)ddb::parse_table_description(body, ddb::table_ref{"locks", "pk"}, description, diag);
    for (unsigned status : {400u, 500u}) (void)ddb::parse_error(status, body, {}, diag);
    return 0;
}
