// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_DETAIL_DYNAMODB_JSON_HPP
#define BATON_BACKEND_DETAIL_DYNAMODB_JSON_HPP

// Layer: backends, internal. The DynamoDB JSON 1.0 codec of `dynamodb_backend`: request bodies in,
// response bodies out, no I/O. Kept apart from the backend so that unit
// tests (and a libFuzzer target) can drive every parser with arbitrary
// bytes: each parser returns an error code and fills `diagnostics`, never
// throws, never reads out of bounds, whatever the input.
//
// The item schema (one item per record; see backend/dynamodb.hpp):
//
//   <pk>   S    the record's key (attribute name from dynamodb_backend_params::partition_key)
//   ver    S    the record's version, fresh on every put (read: S or N)
//   body   S    the record's bytes when they are UTF-8, else B (base64)
//   ...         when the body is a JSON object: its top-level scalars as
//               typed attributes (string S, integer N, boolean BOOL), for
//               people reading the table; never read back
//
// Requests are compact JSON with members in a fixed order, so tests can
// compare them byte for byte.

#include <baton/core/detail/config.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/core/error.hpp>
#include <baton/store/record_store.hpp>
#include <baton/aws/errors.hpp>
#include <baton/http/detail/crypto.hpp>

#include <boost/json/array.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton::detail::dynamodb {

namespace json = boost::json;

// ---- schema -----------------------------------------------------------------

/// Attribute holding the record's version.
inline constexpr std::string_view version_attribute = "ver";
/// Attribute holding the record's bytes.
inline constexpr std::string_view body_attribute = "body";
// The highest fencing token a fenced write to the item carried (a number; fenced writes only).
inline constexpr std::string_view fence_attribute = "fence";
/// Bodies larger than this are not searched for typed attributes.
inline constexpr std::size_t max_typed_source_bytes = 64 * 1024;
/// At most this many typed attributes per item.
inline constexpr std::size_t max_typed_attributes = 32;
/// Typed attribute names longer than this are skipped.
inline constexpr std::size_t max_typed_name_bytes = 64;
/// String fields longer than this get no typed copy.
inline constexpr std::size_t max_typed_string_bytes = 4096;

/// The table and its partition key attribute name.
struct table_ref {
    std::string_view table;
    std::string_view pk;
};

// ---- small codecs -------------------------------------------------------------

/// CRC-32 (IEEE 802.3, reflected, as in zlib): what DynamoDB sends in `x-amz-crc32`.
BATON_DECL std::uint32_t crc32(std::string_view data) noexcept;

/// Checks a response body against an `x-amz-crc32` header value (decimal). False on mismatch or a malformed value.
BATON_DECL bool crc32_matches(std::string_view header, std::string_view body) noexcept;

// DynamoDB's encoding of `B` values: standard base64 with padding, decoded strictly.
using baton::detail::base64_decode;
using baton::detail::base64_encode;

// ---- versions ---------------------------------------------------------------------

// A version string names the attribute's type when it is not S: `N:<digits>`
// for a numeric `ver` written by another tool. S values that would be read as
// such a prefix are escaped with `S:`.
BATON_DECL std::string version_from_s(std::string_view s);

BATON_DECL json::object version_value(std::string_view version, json::storage_ptr sp = {});

// ---- requests ---------------------------------------------------------------------
// The builders of a request's JSON tree take the storage to build it in (`sp`): a request builds
// its whole tree in one arena, and adds (moves) subtrees only within it.

BATON_DECL json::object string_value(std::string_view s, json::storage_ptr sp = {});

BATON_DECL json::object key_of(table_ref t, std::string_view key, json::storage_ptr sp = {});

// Adds ConditionExpression and its placeholders for `pc` (nothing for `none`).
BATON_DECL void add_condition(json::object& req, table_ref t, precondition const& pc);

/// Consistent GetItem of `key`, fetching only the version and the body.
BATON_DECL std::string get_item_request(table_ref t, std::string_view key);

/** Typed copies of the top-level scalar fields of a JSON-object body, in body order.

    Strings become S (up to `max_typed_string_bytes`), integers N, booleans
    BOOL; other values (null, doubles, arrays, objects) and names that are
    empty, too long, or taken by the key, `ver` or `body` are skipped.
    Anything that is not a JSON object yields nothing.
*/
BATON_DECL json::object typed_attributes(table_ref t, std::string_view body, json::storage_ptr sp = {});

// The item of a record: its key, version and body (S when UTF-8, else B).
BATON_DECL json::object record_item(table_ref t, std::string_view key, std::string_view body, std::string_view version,
                                   json::storage_ptr sp = {});

/// PutItem of a whole record under `pc`, writing `version`.
BATON_DECL std::string put_item_request(table_ref t, std::string_view key, std::string_view body,
                                        std::string_view version, precondition const& pc);

/** PutItem of a fenced write: the item keeps `token` in `fence`, and the write is conditional
    on the token: the item is absent, or its fence is below `token`, or (when `known_version`
    is given) the item is still that version and its fence, if any, is at most `token`. A
    fence equal to `token` needs the version, so that a delayed write of one holder can never
    land over a later write of the same holder.
*/
BATON_DECL std::string fenced_put_item_request(table_ref t, std::string_view key, std::string_view body, std::string_view version,
                                           std::uint64_t token, std::optional<std::string_view> known_version);

/// DeleteItem of `key` under `pc`.
BATON_DECL std::string delete_item_request(table_ref t, std::string_view key, precondition const& pc);

/** One page of a consistent Scan for keys starting with `prefix` and greater than `after`.

    Empty `prefix`/`after` add no filter. `start_key` continues after a
    page's `LastEvaluatedKey`.
*/
BATON_DECL std::string scan_request(table_ref t, std::string_view prefix, std::string_view after,
                                std::optional<std::string> const& start_key);

/// CreateTable with the backend's key schema (one HASH key of type S), on-demand billing.
BATON_DECL std::string create_table_request(table_ref t);

/// DescribeTable.
BATON_DECL std::string describe_table_request(std::string_view table);

// ---- responses --------------------------------------------------------------------

BATON_DECL std::string shorten(std::string_view s, std::size_t max = 200);

BATON_DECL error_code malformed(diagnostics& diag, std::string what);

// Parses `body` as a JSON object.
BATON_DECL error_code parse_object(std::string_view body, json::value& out, diagnostics& diag);

/** What an error response means, from its status, body and `x-amzn-ErrorType` header.

    Fills `diag.service_code` (the name after `#`) and `diag.message` (from
    `message` or `Message`), and returns `aws::classify_dynamodb`'s answer.
    A body that is not a JSON object gives `invalid_response` for a 4xx
    (nothing can be said about it) and `service_unavailable` for a 5xx.
*/
BATON_DECL error_code parse_error(unsigned status, std::string_view body, std::string_view error_type_header,
                              diagnostics& diag);

/// True for ValidationException messages that mean the table's key schema is not the one the backend uses.
BATON_DECL bool is_key_schema_message(std::string_view message) noexcept;

// The string of attribute value `v` of type `type` ("S", "N", "B"): nothing when it has another type.
// Malformed attribute values (not an object, a non-string payload) are errors.
BATON_DECL error_code attribute_string(json::value const& v, std::string_view name, char const* type,
                                   std::optional<std::string>& out, diagnostics& diag);

// The record version a `ver` attribute holds: an S value as it is, an N value as "N:<digits>";
// empty when it is neither.
BATON_DECL error_code record_version(json::value const& ver, std::optional<std::string>& out, diagnostics& diag);

/** Reads the record in `item` (an Item map): version from `ver` (S or N), bytes from `body` (S or B).

    A well-formed item without them was not written by this backend:
    `errc::foreign_record`. Malformed attribute values: `invalid_response`.
    `key` is the record's key (the item's key attribute is not needed).
*/
BATON_DECL error_code parse_item(json::value const& item_value, std::string_view key, record& out, diagnostics& diag);

/// GetItem response: `found` is empty when the body has no `Item` (absent key).
BATON_DECL error_code parse_get_item(std::string_view body, std::string_view key, std::optional<record>& found,
                                 diagnostics& diag);

/** The current item in a ConditionalCheckFailedException body (ReturnValuesOnConditionCheckFailure ALL_OLD).

    `found` stays empty when the body has no `Item` (the service does not
    return it, or the key is absent). Errors when the body or the item is malformed.
*/
BATON_DECL error_code parse_condition_failure(std::string_view body, std::string_view key, std::optional<record>& found,
                                          diagnostics& diag);

/// One Scan page: entries (in page order) and the key to continue after, if any.
struct scan_page {
    std::vector<list_entry> entries;
    std::optional<std::string> last_key;
    std::size_t scanned = 0;
};

// The key string of an item or a LastEvaluatedKey map.
BATON_DECL error_code item_key(json::value const& item, table_ref t, std::string& out, diagnostics& diag);

/** A Scan response with ProjectionExpression `#k,#v`.

    Items without `ver` (not written by baton) are listed with an empty version.
*/
BATON_DECL error_code parse_scan(std::string_view body, table_ref t, scan_page& out, diagnostics& diag);

/// What DescribeTable (or CreateTable) says about a table.
struct table_description {
    /// `CREATING`, `ACTIVE`, `UPDATING`, `DELETING`, ...
    std::string status;
    /// The key schema, e.g. `pk (S, HASH)` or `id (N, HASH), sk (S, RANGE)`.
    std::string key_schema;
    /// True when the key schema is exactly one HASH key named as the backend's, of type S.
    bool key_schema_matches = false;
};

/// DescribeTable (`Table`) or CreateTable (`TableDescription`) response, checked against `t`.
BATON_DECL error_code parse_table_description(std::string_view body, table_ref t, table_description& out,
                                          diagnostics& diag);

} // namespace baton::detail::dynamodb

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/backend/impl/dynamodb_json.ipp>
#include <baton/backend/impl/dynamodb_replies.ipp>
#endif

#endif
