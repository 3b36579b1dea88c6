// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_DYNAMODB_HPP
#define BATON_BACKEND_DYNAMODB_HPP

/** @file
    `dynamodb_backend`: the record store over Amazon DynamoDB's JSON 1.0 API
    (and compatible servers such as DynamoDB Local and dynalite).

    @par The item schema
    One item per record, in a table whose key schema is exactly one HASH key
    of type S (named by `dynamodb_backend_params::partition_key`, default
    `pk`; `async_create_table` makes such a table):

    | attribute | type | content |
    |---|---|---|
    | `pk` | S | the record's key |
    | `ver` | S | the record's version: 128 random bits in hex, fresh on every put (items written by other tools may use N) |
    | `body` | S | the record's bytes when they are valid UTF-8; otherwise B (base64) |
    | *field* | S / N / BOOL | when the body is a JSON object: each top-level string (≤ 4 KiB), integer and boolean field, under its own name (at most 32 fields, names ≤ 64 bytes, never `pk`, `ver` or `body`) |

    The typed copies make items readable in the console: a lease record
    shows `owner` (S), `token` (N), `nonce` (S), `state` (S), `ttl_ms` (N),
    `value` (S) and `baton` (S, the format tag). They are written with
    every put (PutItem replaces the whole item, so they never go stale) and
    are never read back: reads rebuild the body from `body` alone. Keep
    such bodies under about 180 KiB; DynamoDB's item limit is 400 KB and
    the strings are stored twice.

    @par Operations
    - get: GetItem with `ConsistentRead: true` (projection `ver`, `body`).
    - put: PutItem of the whole item. `absent` is
      `attribute_not_exists(#k)`, `matches(v)` is `#v = :v` on `ver`; a
      fresh version is written every time. Conditional writes ask for
      `ReturnValuesOnConditionCheckFailure: ALL_OLD`; when the service does
      not return the item (dynalite, DynamoDB Local), a consistent GetItem
      fills `put_result::current` after a failed condition. Once the
      service has returned an item with a failure, a failure without one
      means the key is absent and no GetItem is sent.
    - erase: DeleteItem with the same conditions. `matches` on a key that
      is gone gives `errc::not_found` (found the same way), like
      `memory_backend`.
    - list: a consistent Scan, filtered by `begins_with(#k, :p) AND #k > :a`,
      projected to key and version, paginated through `LastEvaluatedKey`,
      sorted client-side; only the `limit + 1` smallest keys are kept in
      memory. **Cost:** DynamoDB keeps no key order across partition keys,
      so every `async_list` call reads the whole table (filters do not
      reduce the read capacity consumed: about one RCU per 4 KB scanned,
      doubled by the consistent read), however small `limit` is.
      Listing is for small tables (lease tables, tools), not for bulk data;
      more than `max_scan_pages` pages gives `errc::capability_missing`.
    - probe: writes, overwrites and deletes a scratch item
      (`baton-probe/<random>`) with stale and fresh conditions.

    @par Errors
    Service errors are classified by `__type` (`aws::classify_dynamodb`);
    `diagnostics` carry the HTTP status, the error name, the message and
    `x-amzn-RequestId`. In particular:
    - `ConditionalCheckFailedException` → `errc::precondition_failed`.
    - throttling (HTTP 400 `ProvisionedThroughputExceededException`,
      `ThrottlingException`, `RequestLimitExceeded`) → `errc::throttled`.
    - `ResourceNotFoundException` → `errc::not_found`, with a message
      naming the missing table and how to create it.
    - `ValidationException` about keys → `errc::invalid_argument`, with a
      message naming the key schema the backend expects.
    - 500/503, and a response whose `x-amz-crc32` does not match its body
      → `errc::service_unavailable`; a timeout after the request was sent
      → `errc::timeout`. A write may have been applied in both cases: the
      backend never retries (the lease reads its nonce back).
    - malformed responses → `errc::invalid_response`; items without `ver`
      or `body` → `errc::foreign_record`.

    @par Thread safety
    Like `http::client`: copies share one connection pool and must be used
    from one thread or strand (pass a strand as the executor).
*/

#include <baton/aws/credentials.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/errors.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/detail/config.hpp>
#include <baton/detail/dynamodb_json.hpp>
#include <baton/error.hpp>
#include <baton/http/client.hpp>
#include <baton/store.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>

namespace baton {

/** Settings of a `dynamodb_backend`. Checked by `validate()` (and so by the constructor). */
struct dynamodb_backend_params {
    /** Where to send requests: `scheme://host[:port]`, e.g. `http://127.0.0.1:8000`.

        Empty (default): `https://dynamodb.<region>.amazonaws.com` (`.com.cn` for `cn-` regions).
    */
    std::string endpoint;
    /// The region in the SigV4 scope, e.g. `us-east-1`. Required.
    std::string region;
    /// The table (3 to 255 characters of `A-Z a-z 0-9 _ . -`). Required.
    std::string table;
    /// Name of the table's partition (HASH) key attribute, of type S. Default `pk`.
    std::string partition_key = "pk";
    /// The identity that signs requests: access key id and secret, unless `credentials_provider` is set.
    aws::credentials credentials;
    /** Where credentials come from instead, e.g. `aws::default_chain(ex)`: leave `credentials` empty.

        Requests sign with the provider's cached credentials without waiting; only when it
        has none usable (first use, or expiry within its mandatory window) does a request
        wait for a fetch, and a failed fetch fails the request with its diagnostics
        (`errc::no_credentials` listing every source tried). An `ExpiredTokenException`
        answer makes the provider fetch afresh for the next request.
    */
    std::optional<aws::credentials_provider> credentials_provider;
    /// Connections, timeouts and response limits of the HTTP client.
    http::client_options http;
    /// Puts with larger bodies fail with `errc::invalid_argument`. Default 128 KiB (at most 180 KiB).
    std::size_t max_body_bytes = 128 * 1024;
    /// How long `async_create_table` waits for the table to become ACTIVE. Default 60 s; at most 24 hours.
    std::chrono::milliseconds table_wait_timeout{60000};
    /// Most Scan pages (up to 1 MB each) one `async_list` reads before giving up. Default 1000.
    std::size_t max_scan_pages = 1000;

    /// Checks the rules in the field comments. @throws config_error naming the field and the rule.
    void validate() const {
        auto fail = [](std::string m) { throw config_error("dynamodb_backend_params: " + std::move(m)); };
        if (region.empty()) fail("region must be set (e.g. us-east-1)");
        for (char c : region)
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
                fail("region may only contain a-z, 0-9 and '-' (e.g. us-east-1)");
        if (table.size() < 3 || table.size() > 255)
            fail("table must be 3 to 255 characters (it is " + std::to_string(table.size()) + ")");
        for (char c : table)
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '.' || c == '-'))
                fail("table may only contain A-Z, a-z, 0-9, '_', '.' and '-'");
        if (partition_key.empty() || partition_key.size() > 255)
            fail("partition_key must be 1 to 255 bytes");
        if (!detail::dynamodb::is_utf8(partition_key)) fail("partition_key must be valid UTF-8");
        if (partition_key == detail::dynamodb::version_attribute || partition_key == detail::dynamodb::body_attribute)
            fail("partition_key must not be 'ver' or 'body' (the backend's own attributes)");
        if (!endpoint.empty()) {
            diagnostics d;
            if (!http::parse_endpoint(endpoint, d)) fail("endpoint: " + d.message);
        }
        if (credentials_provider) {
            if (!credentials.access_key_id.empty() || !credentials.secret_access_key.empty())
                fail("set either credentials or credentials_provider, not both");
        } else {
            if (credentials.access_key_id.empty())
                fail("credentials.access_key_id must be set (or set credentials_provider, e.g. aws::default_chain)");
            if (credentials.secret_access_key.empty()) fail("credentials.secret_access_key must be set");
        }
        if (max_body_bytes == 0 || max_body_bytes > 180 * 1024)
            fail("max_body_bytes must be 1 to 184320 (DynamoDB items hold at most 400 KB, and JSON bodies are "
                 "stored twice)");
        if (table_wait_timeout <= std::chrono::milliseconds::zero() || table_wait_timeout > std::chrono::hours(24))
            fail("table_wait_timeout must be positive and at most 24 hours");
        if (max_scan_pages == 0) fail("max_scan_pages must be at least 1");
        http.validate();
    }

    /// The endpoint URL in force: `endpoint`, or the AWS one for `region`.
    std::string effective_endpoint() const {
        if (!endpoint.empty()) return endpoint;
        return aws::default_endpoint_url("dynamodb", region);
    }
};

/// What `async_create_table` and `async_check_table` found.
struct dynamodb_table_info {
    /// `ACTIVE`, `CREATING`, ... (empty when the table could not be described).
    std::string status;
    /// The table's key schema, e.g. `pk (S, HASH)`.
    std::string key_schema;
    /// True when this call created the table (false: it existed already).
    bool created = false;
    /// What the service said, on failure.
    diagnostics diag;
};

/// The raw answer to `dynamodb_backend::async_call`.
struct dynamodb_response {
    /// HTTP status (0 when no response arrived).
    unsigned status = 0;
    /// The response body (JSON), as received.
    std::string body;
    /// What the service said, on failure.
    diagnostics diag;
};

namespace detail {

using dynamodb_signer_fn = std::function<error_code(http::request&, aws::credentials const&,
                                                    aws::signing_params const&, std::chrono::system_clock::time_point)>;

struct dynamodb_call_result {
    error_code ec;
    unsigned status = 0;
    std::string body;
    diagnostics diag;
};

struct dynamodb_state {
    dynamodb_state(dynamodb_backend_params p, http::client c)
        : params(std::move(p)), ep(http::endpoint::from_url(params.effective_endpoint())), client(std::move(c)),
          signing(aws::signing_params::for_service("dynamodb", params.region)) {
        std::random_device rd;
        std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
        rng.seed(seq);
    }

    dynamodb_backend_params params;
    http::endpoint ep;
    http::client client;
    aws::signing_params signing;
    // Set once a failed condition came back with the current item: the service honours ALL_OLD.
    std::atomic<bool> returns_old_item{false};
    std::mutex rng_mutex;
    std::mt19937_64 rng;

    dynamodb::table_ref table() const noexcept { return {params.table, params.partition_key}; }

    std::string random_hex() {
        std::uint64_t a, b;
        {
            std::lock_guard lock(rng_mutex);
            a = rng();
            b = rng();
        }
        static constexpr char digits[] = "0123456789abcdef";
        std::string out(32, '0');
        for (int i = 0; i < 16; ++i) {
            out[static_cast<std::size_t>(i)] = digits[(a >> (60 - 4 * i)) & 15];
            out[static_cast<std::size_t>(16 + i)] = digits[(b >> (60 - 4 * i)) & 15];
        }
        return out;
    }

    std::string create_hint() const {
        return "create it with dynamodb_backend::async_create_table, or: aws dynamodb create-table --table-name " +
               params.table + " --attribute-definitions AttributeName=" + params.partition_key +
               ",AttributeType=S --key-schema AttributeName=" + params.partition_key +
               ",KeyType=HASH --billing-mode PAY_PER_REQUEST";
    }

    std::string expected_schema() const {
        return "exactly one HASH key named '" + params.partition_key +
               "' of type S (dynamodb_backend_params::partition_key)";
    }

    // Says what a table-level failure means in the caller's terms.
    void explain(diagnostics& d) const {
        std::string const said = d.message.empty() ? std::string() : " (service said: " + d.message + ")";
        if (d.service_code == "ResourceNotFoundException") {
            d.message = "table '" + params.table + "' does not exist at " + ep.origin() + " in region " +
                        params.region + ": " + create_hint() + said;
        } else if (d.service_code == "ValidationException" && dynamodb::is_key_schema_message(d.message)) {
            d.message = "table '" + params.table + "' does not have the key schema dynamodb_backend expects: " +
                        expected_schema() + "; dynamodb_backend::async_check_table shows the table's schema" + said;
        }
    }

    dynamodb_call_result finish_call(std::string_view op, error_code ec, http::response res,
                                     http::request_info const& info) const {
        dynamodb_call_result r;
        if (ec) {
            r.ec = ec;
            r.diag = info.diag;
            if (r.diag.message.empty()) r.diag.message = std::string(op) + " to " + ep.origin() + ": " + ec.message();
            return r;
        }
        r.status = res.result_int();
        r.diag.http_status = r.status;
        if (auto it = res.find("x-amzn-RequestId"); it != res.end()) r.diag.request_id = std::string(it->value());
        if (auto it = res.find("x-amz-crc32"); it != res.end()) {
            if (!dynamodb::crc32_matches(std::string_view(it->value().data(), it->value().size()), res.body())) {
                r.ec = errc::service_unavailable;
                r.diag.message = std::string(op) +
                                 ": the response body does not match its x-amz-crc32 checksum (corrupted in "
                                 "transit); the request may have been applied";
                return r;
            }
        }
        r.body = std::move(res.body());
        if (r.status >= 200 && r.status < 300) return r;
        std::string_view type;
        if (auto it = res.find("x-amzn-ErrorType"); it != res.end())
            type = std::string_view(it->value().data(), it->value().size());
        r.ec = dynamodb::parse_error(r.status, r.body, type, r.diag);
        // Temporary credentials can expire early (revoked session, clock skew): fetch afresh next time.
        if (params.credentials_provider &&
            (r.diag.service_code == "ExpiredTokenException" || r.diag.service_code == "ExpiredToken"))
            aws::credentials_provider(*params.credentials_provider).invalidate(); // a handle: copies share state
        explain(r.diag);
        return r;
    }
};

} // namespace detail

/** The record store over DynamoDB (see the file comment for the item schema, costs and errors).

    A cheap handle: copies share the HTTP client and its connection pool.
    Every operation completes through the handler's associated executor (by
    default the backend's), never inline; any number may be in flight.

    @par Per-Operation Cancellation
    `async_get`, `async_put`, `async_erase`, `async_list`, `async_call` and
    `async_create_table` forward the handler's cancellation slot to each
    HTTP request (and to the table poll's timer): all types act as terminal
    and complete with `operation_aborted`. A write that was already sent
    may have been applied.
*/
class dynamodb_backend {
public:
    /// Completions run here unless the handler has an executor of its own.
    using executor_type = boost::asio::any_io_executor;

    /** A backend with its own HTTP client on `ex`. Nothing is sent until the first operation.

        @throws config_error when `p` breaks a rule of `dynamodb_backend_params`.
    */
    dynamodb_backend(executor_type ex, dynamodb_backend_params p)
        : dynamodb_backend(http::client(ex, (p.validate(), p.http)), std::move(p), 0) {}

    /** A backend that shares `client` (and its pools) with other stores; completions run on its executor.

        `p.http` is ignored: the client's options are in force.
        @throws config_error when `p` breaks a rule of `dynamodb_backend_params`.
    */
    dynamodb_backend(http::client client, dynamodb_backend_params p)
        : dynamodb_backend(std::move(client), (p.validate(), std::move(p)), 0) {}

    /// The default completion executor.
    executor_type get_executor() const noexcept { return ex_; }

    /// The settings in force.
    dynamodb_backend_params const& params() const noexcept { return st_->params; }

    /// The HTTP client (shared by all copies).
    http::client& client() const noexcept { return st_->client; }

    /** Signs this handle's requests with `s` (default: `aws::sigv4_signer`).

        Called by `basic_lease` with its Signer policy. Affects this handle
        and copies made after the call.
    */
    template <class S>
        requires aws::request_signer<S> && std::copy_constructible<S>
    void use_signer(S s) {
        signer_ = std::make_shared<detail::dynamodb_signer_fn const>(
            [s = std::move(s)](http::request& r, aws::credentials const& c, aws::signing_params const& p,
                               std::chrono::system_clock::time_point now) { return s.sign(r, c, p, now); });
    }

    /// Reads `key` (consistent). Completion: `void(error_code, get_result)`.
    template <class Token>
    auto async_get(std::string key, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, get_result)>(
            [](auto handler, dynamodb_backend self, std::string k) {
                self.start_get(get_handler(std::move(handler)), std::move(k));
            },
            token, *this, std::move(key));
    }

    /** Writes `key` if `pc` holds, with a fresh version. Completion: `void(error_code, put_result)`.

        On `errc::precondition_failed`, `current` holds the item as it is
        (from the failure itself or from a consistent GetItem), or nothing
        when the key is absent.
    */
    template <class Token>
    auto async_put(std::string key, std::string body, precondition pc, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, put_result)>(
            [](auto handler, dynamodb_backend self, std::string k, std::string b, precondition c) {
                self.start_put(put_handler(std::move(handler)), std::move(k), std::move(b), std::move(c));
            },
            token, *this, std::move(key), std::move(body), std::move(pc));
    }

    /** The fenced-write hook (`basic_fenced` uses it when present): writes `key` in one
        request, conditional on the fencing token kept in the item's `fence` attribute: applied
        when the item is absent, its fence is below `token`, or it is still `known_version`
        with a fence of at most `token`. Completion: `void(error_code, put_result)`, as
        `async_put` (`precondition_failed` with the current item on refusal).
    */
    template <class Token>
    auto async_put_fenced(std::string key, std::string body, std::uint64_t token, std::optional<std::string> known_version,
                          Token&& tok) {
        return boost::asio::async_initiate<Token, void(error_code, put_result)>(
            [](auto handler, dynamodb_backend self, std::string k, std::string b, std::uint64_t t, std::optional<std::string> v) {
                self.start_put(put_handler(std::move(handler)), std::move(k), std::move(b), precondition::absent(),
                               fenced_condition{t, std::move(v)});
            },
            tok, *this, std::move(key), std::move(body), token, std::move(known_version));
    }

    /// Deletes `key` if `pc` holds. Completion: `void(error_code, erase_result)`.
    template <class Token>
    auto async_erase(std::string key, precondition pc, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, erase_result)>(
            [](auto handler, dynamodb_backend self, std::string k, precondition c) {
                self.start_erase(erase_handler(std::move(handler)), std::move(k), std::move(c));
            },
            token, *this, std::move(key), std::move(pc));
    }

    /** Lists keys with `prefix` strictly after `after`, ascending. Completion: `void(error_code, list_page)`.

        Scans the whole table on every call: see the file comment.
    */
    template <class Token>
    auto async_list(std::string prefix, std::string after, std::size_t limit, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, list_page)>(
            [](auto handler, dynamodb_backend self, std::string p, std::string a, std::size_t l) {
                self.start_list(list_handler(std::move(handler)), std::move(p), std::move(a), l);
            },
            token, *this, std::move(prefix), std::move(after), limit);
    }

    /// Checks what the table honours on a scratch item. Completion: `void(error_code, capabilities)`.
    template <class Token>
    auto async_probe(Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, capabilities)>(
            [](auto handler, dynamodb_backend self) { self.start_probe(probe_handler(std::move(handler))); }, token,
            *this);
    }

    /** Creates the table (on-demand billing, the backend's key schema) and waits until it is ACTIVE.

        A table that exists already is accepted when its key schema is the
        expected one (`info.created` is then false), and refused with
        `errc::invalid_argument` otherwise. Waits at most
        `table_wait_timeout` (then `errc::timeout`), polling DescribeTable.
        Completion: `void(error_code, dynamodb_table_info)`.
    */
    template <class Token>
    auto async_create_table(Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, dynamodb_table_info)>(
            [](auto handler, dynamodb_backend self) { self.start_table(table_handler(std::move(handler)), true); },
            token, *this);
    }

    /** Describes the table once and checks its key schema.

        `errc::not_found` when it does not exist; `errc::invalid_argument`
        (with the table's and the expected schema in the message) when its
        key schema is not one HASH key `partition_key` of type S.
        Completion: `void(error_code, dynamodb_table_info)`.
    */
    template <class Token>
    auto async_check_table(Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, dynamodb_table_info)>(
            [](auto handler, dynamodb_backend self) { self.start_table(table_handler(std::move(handler)), false); },
            token, *this);
    }

    /** Sends one signed request of any DynamoDB operation, e.g. `("DescribeTimeToLive", R"({"TableName":"t"})")`.

        For tools and tests. Completion: `void(error_code, dynamodb_response)`;
        non-2xx statuses give the classified error, with the body kept.
    */
    template <class Token>
    auto async_call(std::string operation, std::string json_body, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, dynamodb_response)>(
            [](auto handler, dynamodb_backend self, std::string op, std::string b) {
                self.start_call(call_handler(std::move(handler)), std::move(op), std::move(b));
            },
            token, *this, std::move(operation), std::move(json_body));
    }

private:
    using get_handler = boost::asio::any_completion_handler<void(error_code, get_result)>;
    using put_handler = boost::asio::any_completion_handler<void(error_code, put_result)>;
    using erase_handler = boost::asio::any_completion_handler<void(error_code, erase_result)>;
    using list_handler = boost::asio::any_completion_handler<void(error_code, list_page)>;
    using probe_handler = boost::asio::any_completion_handler<void(error_code, capabilities)>;
    using table_handler = boost::asio::any_completion_handler<void(error_code, dynamodb_table_info)>;
    using call_handler = boost::asio::any_completion_handler<void(error_code, dynamodb_response)>;
    using result = detail::dynamodb_call_result;

    // `p` is taken by reference so that the public constructors validate it before it is moved from.
    dynamodb_backend(http::client client, dynamodb_backend_params&& p, int)
        : ex_(client.get_executor()),
          st_(std::make_shared<detail::dynamodb_state>(std::move(p), std::move(client))),
          signer_(default_signer()) {}

    static std::shared_ptr<detail::dynamodb_signer_fn const> default_signer() {
        return std::make_shared<detail::dynamodb_signer_fn const>(
            [s = aws::sigv4_signer()](http::request& r, aws::credentials const& c, aws::signing_params const& p,
                                      std::chrono::system_clock::time_point now) { return s.sign(r, c, p, now); });
    }

    template <class Handler, class... Args>
    void complete(Handler h, Args&&... args) const {
        // Never inline: the handler runs later, through its associated executor.
        boost::asio::post(ex_, boost::asio::append(std::move(h), std::forward<Args>(args)...));
    }

    // One signed request; `f(result)` runs on the client's executor.
    template <class F>
    void call(std::string_view op, std::string body, boost::asio::cancellation_slot slot, F&& f) const {
        namespace bhttp = boost::beast::http;
        http::request req{bhttp::verb::post, "/", 11};
        req.set(bhttp::field::host, st_->ep.host_header());
        req.set(bhttp::field::content_type, "application/x-amz-json-1.0");
        req.set("X-Amz-Target", "DynamoDB_20120810." + std::string(op));
        req.set(bhttp::field::accept_encoding, "identity");
        req.body() = std::move(body);
        req.prepare_payload();
        if (!st_->params.credentials_provider)
            return sign_and_send(op, st_->params.credentials, std::move(req), slot, std::forward<F>(f));
        auto& provider = *st_->params.credentials_provider;
        if (auto creds = provider.usable_now())
            return sign_and_send(op, *creds, std::move(req), slot, std::forward<F>(f));
        // The continuation runs on the backend's executor (its strand), not the provider's.
        provider.async_get(boost::asio::bind_executor(ex_, boost::asio::bind_cancellation_slot(
            slot, [self = *this, op = std::string(op), req = std::move(req), slot,
                   f = std::forward<F>(f)](error_code ec, aws::fetched_credentials fc) mutable {
                if (ec) {
                    result r;
                    r.ec = ec;
                    r.diag = std::move(fc.diag);
                    return f(std::move(r));
                }
                self.sign_and_send(op, *fc.value, std::move(req), slot, std::move(f));
            })));
    }

    template <class F>
    void sign_and_send(std::string_view op, aws::credentials const& creds, http::request req,
                       boost::asio::cancellation_slot slot, F&& f) const {
        auto now = std::chrono::system_clock::now();
        if (st_->client.has_skew_estimate()) now += st_->client.skew_estimate();
        if (error_code sec = (*signer_)(req, creds, st_->signing, now)) {
            result r;
            r.ec = sec;
            r.diag.message = std::string(op) + ": the request could not be signed (" + sec.message() +
                             "); check dynamodb_backend_params::region and credentials";
            boost::asio::post(ex_, [f = std::forward<F>(f), r = std::move(r)]() mutable { f(std::move(r)); });
            return;
        }
        auto info = std::make_shared<http::request_info>();
        http::request_info& info_ref = *info;
        st_->client.async_request(
            st_->ep, std::move(req), info_ref,
            boost::asio::bind_cancellation_slot(
                slot, [st = st_, info, op = std::string(op), f = std::forward<F>(f)](error_code ec,
                                                                                    http::response res) mutable {
                    f(st->finish_call(op, ec, std::move(res), *info));
                }));
    }

    error_code check_key(std::string const& key, diagnostics& diag) const {
        if (key.empty() || key.size() > store_limits::max_key_bytes) {
            diag.message = "key must be 1 to " + std::to_string(store_limits::max_key_bytes) + " bytes (it is " +
                           std::to_string(key.size()) + ")";
            return errc::invalid_argument;
        }
        if (!detail::dynamodb::is_utf8(key)) {
            diag.message = "key must be valid UTF-8 (DynamoDB S attributes are)";
            return errc::invalid_argument;
        }
        return {};
    }

    // ---- get ---------------------------------------------------------------------
    void start_get(get_handler h, std::string key) const {
        get_result out;
        if (auto ec = check_key(key, out.diag)) return complete(std::move(h), ec, std::move(out));
        auto slot = boost::asio::get_associated_cancellation_slot(h);
        read_item(std::move(key), slot, [self = *this, h = std::move(h)](error_code ec, get_result r) mutable {
            self.complete(std::move(h), ec, std::move(r));
        });
    }

    // A consistent GetItem; `f(error_code, get_result)`.
    template <class F>
    void read_item(std::string key, boost::asio::cancellation_slot slot, F&& f) const {
        std::string body = detail::dynamodb::get_item_request(st_->table(), key);
        call("GetItem", std::move(body), slot, [key = std::move(key), f = std::forward<F>(f)](result r) mutable {
            get_result out;
            error_code ec = r.ec;
            if (!ec) ec = detail::dynamodb::parse_get_item(r.body, key, out.found, r.diag);
            if (ec) out.diag = std::move(r.diag);
            f(ec, std::move(out));
        });
    }

    // ---- put ---------------------------------------------------------------------
    struct fenced_condition {
        std::uint64_t token;
        std::optional<std::string> known_version;
    };

    void start_put(put_handler h, std::string key, std::string body, precondition pc,
                   std::optional<fenced_condition> fence = std::nullopt) const {
        put_result out;
        if (auto ec = check_key(key, out.diag)) return complete(std::move(h), ec, std::move(out));
        if (body.size() > st_->params.max_body_bytes) {
            out.diag.message = "body of " + std::to_string(body.size()) + " bytes exceeds max_body_bytes (" +
                               std::to_string(st_->params.max_body_bytes) + ")";
            return complete(std::move(h), error_code(errc::invalid_argument), std::move(out));
        }
        std::string version = st_->random_hex();
        std::string req = fence ? detail::dynamodb::fenced_put_item_request(
                                      st_->table(), key, body, version, fence->token,
                                      fence->known_version ? std::optional<std::string_view>(*fence->known_version) : std::nullopt)
                                : detail::dynamodb::put_item_request(st_->table(), key, body, version, pc);
        auto slot = boost::asio::get_associated_cancellation_slot(h);
        bool const conditional = pc.which() != precondition::kind::none;
        call("PutItem", std::move(req), slot,
             [self = *this, h = std::move(h), key = std::move(key), version = std::move(version), conditional,
              slot](result r) mutable {
                 put_result out;
                 if (!r.ec) {
                     out.version = std::move(version);
                     return self.complete(std::move(h), error_code{}, std::move(out));
                 }
                 error_code const ec = r.ec;
                 if (ec != errc::precondition_failed || !conditional) {
                     out.diag = std::move(r.diag);
                     return self.complete(std::move(h), ec, std::move(out));
                 }
                 self.current_after_failure(
                     std::move(key), r.body, slot,
                     [self, h = std::move(h), diag = std::move(r.diag)](std::optional<record> cur, bool) mutable {
                         put_result out;
                         out.current = std::move(cur);
                         out.diag = std::move(diag);
                         self.complete(std::move(h), error_code(errc::precondition_failed), std::move(out));
                     });
             });
    }

    // After ConditionalCheckFailed: the current item from the failure body
    // (ALL_OLD), else from a consistent GetItem. `f(optional<record>, known)`
    // where `known` is false when the GetItem failed (the item is then unknown).
    template <class F>
    void current_after_failure(std::string key, std::string const& failure_body, boost::asio::cancellation_slot slot,
                               F&& f) const {
        std::optional<record> cur;
        diagnostics ignored;
        if (!detail::dynamodb::parse_condition_failure(failure_body, key, cur, ignored) && cur) {
            st_->returns_old_item.store(true, std::memory_order_relaxed);
            return f(std::move(cur), true);
        }
        if (st_->returns_old_item.load(std::memory_order_relaxed)) return f(std::nullopt, true); // absent
        read_item(std::move(key), slot, [f = std::forward<F>(f)](error_code ec, get_result g) mutable {
            if (ec) return f(std::nullopt, false);
            f(std::move(g.found), true);
        });
    }

    // ---- erase -------------------------------------------------------------------
    void start_erase(erase_handler h, std::string key, precondition pc) const {
        erase_result out;
        if (auto ec = check_key(key, out.diag)) return complete(std::move(h), ec, std::move(out));
        std::string req = detail::dynamodb::delete_item_request(st_->table(), key, pc);
        auto slot = boost::asio::get_associated_cancellation_slot(h);
        bool const matches = pc.which() == precondition::kind::matches;
        call("DeleteItem", std::move(req), slot,
             [self = *this, h = std::move(h), key = std::move(key), matches, slot](result r) mutable {
                 erase_result out;
                 error_code const ec = r.ec;
                 if (!ec) return self.complete(std::move(h), ec, std::move(out));
                 out.diag = std::move(r.diag);
                 if (ec != errc::precondition_failed || !matches)
                     return self.complete(std::move(h), ec, std::move(out));
                 // `matches` on a key that is gone is not_found, as in memory_backend.
                 self.current_after_failure(std::move(key), r.body, slot,
                                            [self, h = std::move(h), out = std::move(out)](
                                                std::optional<record> cur, bool known) mutable {
                                                error_code e = errc::precondition_failed;
                                                if (known && !cur) e = errc::not_found;
                                                self.complete(std::move(h), e, std::move(out));
                                            });
             });
    }

    // ---- list --------------------------------------------------------------------
    struct list_op;

    void start_list(list_handler h, std::string prefix, std::string after, std::size_t limit) const;

    // ---- probe -------------------------------------------------------------------
    struct probe_op;

    void start_probe(probe_handler h) const;

    // ---- tables ------------------------------------------------------------------
    struct table_op;

    void start_table(table_handler h, bool create) const;

    // ---- raw calls ---------------------------------------------------------------
    void start_call(call_handler h, std::string op, std::string body) const {
        auto slot = boost::asio::get_associated_cancellation_slot(h);
        call(op, std::move(body), slot, [self = *this, h = std::move(h)](result r) mutable {
            dynamodb_response out;
            out.status = r.status;
            out.body = std::move(r.body);
            out.diag = std::move(r.diag);
            self.complete(std::move(h), r.ec, std::move(out));
        });
    }

    executor_type ex_;
    std::shared_ptr<detail::dynamodb_state> st_;
    std::shared_ptr<detail::dynamodb_signer_fn const> signer_;
};

struct dynamodb_backend::list_op : std::enable_shared_from_this<dynamodb_backend::list_op> {
    list_op(dynamodb_backend b, list_handler hh, std::string p, std::string a, std::size_t l)
        : self(std::move(b)), h(std::move(hh)), prefix(std::move(p)), after(std::move(a)), limit(l) {}

    dynamodb_backend self;
    list_handler h;
    std::string prefix, after;
    std::size_t limit;
    std::map<std::string, std::string> best; // the smallest `limit` matching keys so far
    bool more = false;
    std::size_t pages = 0;

    void fail(error_code ec, diagnostics diag) {
        list_page page;
        page.diag = std::move(diag);
        self.complete(std::move(h), ec, std::move(page));
    }

    void next(std::optional<std::string> start) {
        auto slot = boost::asio::get_associated_cancellation_slot(h);
        self.call("Scan", detail::dynamodb::scan_request(self.st_->table(), prefix, after, start), slot,
                  [op = this->shared_from_this()](result r) { op->on_page(std::move(r)); });
    }

    void on_page(result r) {
        if (r.ec) return fail(r.ec, std::move(r.diag));
        detail::dynamodb::scan_page page;
        if (auto ec = detail::dynamodb::parse_scan(r.body, self.st_->table(), page, r.diag))
            return fail(ec, std::move(r.diag));
        ++pages;
        for (auto& e : page.entries) {
            if (!e.key.starts_with(prefix) || (!after.empty() && e.key <= after)) continue;
            best.insert_or_assign(std::move(e.key), std::move(e.version));
            if (best.size() > limit) {
                best.erase(std::prev(best.end()));
                more = true;
            }
        }
        if (page.last_key) {
            if (pages >= self.st_->params.max_scan_pages) {
                diagnostics d;
                d.message = "listing table '" + self.st_->params.table + "' needs more than " +
                            std::to_string(pages) +
                            " Scan pages (dynamodb_backend_params::max_scan_pages); async_list scans the "
                            "whole table and suits small tables only";
                return fail(errc::capability_missing, std::move(d));
            }
            return next(std::move(page.last_key));
        }
        list_page out;
        out.entries.reserve(best.size());
        for (auto& [k, v] : best) out.entries.push_back(list_entry{k, v});
        out.truncated = more;
        self.complete(std::move(h), error_code{}, std::move(out));
    }
};

struct dynamodb_backend::probe_op : std::enable_shared_from_this<dynamodb_backend::probe_op> {
    probe_op(dynamodb_backend b, probe_handler hh) : self(std::move(b)), h(std::move(hh)) {
        key = "baton-probe/" + self.st_->random_hex();
    }

    dynamodb_backend self;
    probe_handler h;
    std::string key;
    capabilities caps;
    std::string first, latest;

    template <class Result, class F>
    auto step(F f) {
        return [op = this->shared_from_this(), f = std::move(f)](error_code ec, Result r) mutable {
            f(*op, ec, std::move(r));
        };
    }

    void done(error_code ec, diagnostics diag = {}) {
        caps.diag = std::move(diag);
        if (ec) caps.findings.push_back("probe stopped: " + caps.diag.to_string());
        // Remove the scratch item whatever happened (best effort), then report.
        self.start_erase(erase_handler(step<erase_result>([ec](probe_op& op, error_code, erase_result) {
                             op.self.complete(std::move(op.h), ec, std::move(op.caps));
                         })),
                         key, precondition::none());
    }

    void run() {
        self.start_put(put_handler(step<put_result>([](probe_op& op, error_code ec, put_result r) {
                           if (ec) return op.done(ec, std::move(r.diag));
                           op.first = op.latest = r.version;
                           op.create_again();
                       })),
                       key, "probe-1", precondition::absent());
    }

    void create_again() {
        self.start_put(put_handler(step<put_result>([](probe_op& op, error_code ec, put_result r) {
                           if (ec && ec != errc::precondition_failed) return op.done(ec, std::move(r.diag));
                           op.caps.conditional_create = ec == errc::precondition_failed;
                           if (!ec) op.latest = r.version;
                           op.caps.findings.push_back(std::string("put if absent on an existing key: ") +
                                                      (op.caps.conditional_create ? "refused (honoured)"
                                                                                  : "accepted (ignored)"));
                           if (ec) {
                               bool const old = op.self.st_->returns_old_item.load(std::memory_order_relaxed);
                               op.caps.findings.push_back(
                                   std::string("a failed condition returns the current item: ") +
                                   (old ? "yes (ReturnValuesOnConditionCheckFailure honoured)"
                                        : "no (a consistent GetItem fills it in)"));
                           }
                           op.replace_fresh();
                       })),
                       key, "probe-2", precondition::absent());
    }

    void replace_fresh() {
        self.start_put(put_handler(step<put_result>([](probe_op& op, error_code ec, put_result r) {
                           if (ec && ec != errc::precondition_failed) return op.done(ec, std::move(r.diag));
                           if (ec) {
                               op.caps.findings.push_back("put if matching the current version: refused");
                               return op.erase_stale();
                           }
                           op.latest = r.version;
                           op.replace_stale();
                       })),
                       key, "probe-3", precondition::matches(latest));
    }

    void replace_stale() {
        self.start_put(put_handler(step<put_result>([](probe_op& op, error_code ec, put_result r) {
                           if (ec && ec != errc::precondition_failed) return op.done(ec, std::move(r.diag));
                           op.caps.conditional_replace = ec == errc::precondition_failed;
                           op.caps.findings.push_back(std::string("put if matching a stale version: ") +
                                                      (op.caps.conditional_replace ? "refused (honoured)"
                                                                                   : "accepted (ignored)"));
                           op.erase_stale();
                       })),
                       key, "probe-4", precondition::matches(first));
    }

    void erase_stale() {
        self.start_erase(erase_handler(step<erase_result>([](probe_op& op, error_code ec, erase_result r) {
                             if (ec && ec != errc::precondition_failed && ec != errc::not_found)
                                 return op.done(ec, std::move(r.diag));
                             op.caps.conditional_erase = ec == errc::precondition_failed;
                             op.caps.findings.push_back(std::string("erase if matching a stale version: ") +
                                                        (op.caps.conditional_erase ? "refused (honoured)"
                                                                                   : "accepted (ignored)"));
                             op.done(error_code{});
                         })),
                         key, precondition::matches(first));
    }
};

struct dynamodb_backend::table_op : std::enable_shared_from_this<dynamodb_backend::table_op> {
    table_op(dynamodb_backend b, table_handler hh, bool c)
        : self(std::move(b)), h(std::move(hh)), create(c), timer(self.ex_),
          deadline(std::chrono::steady_clock::now() + self.st_->params.table_wait_timeout) {}

    dynamodb_backend self;
    table_handler h;
    bool create;
    boost::asio::steady_timer timer;
    std::chrono::steady_clock::time_point deadline;
    std::chrono::milliseconds delay{100};
    dynamodb_table_info info;

    void finish(error_code ec, diagnostics diag = {}) {
        info.diag = std::move(diag);
        self.complete(std::move(h), ec, std::move(info));
    }

    void run() {
        if (!create) return describe();
        auto slot = boost::asio::get_associated_cancellation_slot(h);
        self.call("CreateTable", detail::dynamodb::create_table_request(self.st_->table()), slot,
                  [op = this->shared_from_this()](result r) {
                      if (r.ec && r.diag.service_code != "ResourceInUseException")
                          return op->finish(r.ec, std::move(r.diag));
                      op->info.created = !r.ec;
                      op->describe();
                  });
    }

    void describe() {
        auto slot = boost::asio::get_associated_cancellation_slot(h);
        self.call("DescribeTable", detail::dynamodb::describe_table_request(self.st_->params.table), slot,
                  [op = this->shared_from_this()](result r) { op->on_describe(std::move(r)); });
    }

    void on_describe(result r) {
        if (r.ec) return finish(r.ec, std::move(r.diag));
        detail::dynamodb::table_description d;
        if (auto ec = detail::dynamodb::parse_table_description(r.body, self.st_->table(), d, r.diag))
            return finish(ec, std::move(r.diag));
        info.status = d.status;
        info.key_schema = d.key_schema;
        if (!d.key_schema_matches) {
            diagnostics diag;
            diag.message = "table '" + self.st_->params.table + "' has the key schema [" + d.key_schema +
                           "], but dynamodb_backend needs " + self.st_->expected_schema() +
                           ": use another table, or set partition_key to match a single S HASH key";
            return finish(errc::invalid_argument, std::move(diag));
        }
        if (!create || d.status == "ACTIVE") return finish(error_code{});
        if (std::chrono::steady_clock::now() + delay > deadline) {
            diagnostics diag;
            diag.message = "table '" + self.st_->params.table + "' is still " + d.status + " after " +
                           std::to_string(self.st_->params.table_wait_timeout.count()) +
                           " ms (dynamodb_backend_params::table_wait_timeout)";
            return finish(errc::timeout, std::move(diag));
        }
        timer.expires_after(delay);
        delay = std::min(delay * 2, std::chrono::milliseconds(2000));
        auto slot = boost::asio::get_associated_cancellation_slot(h);
        timer.async_wait(boost::asio::bind_cancellation_slot(
            slot, [op = this->shared_from_this()](error_code ec) {
                if (ec) {
                    diagnostics diag;
                    diag.message = "cancelled while waiting for table '" + op->self.st_->params.table +
                                   "' to become ACTIVE";
                    return op->finish(boost::asio::error::operation_aborted, std::move(diag));
                }
                op->describe();
            }));
    }
};

inline void dynamodb_backend::start_list(list_handler h, std::string prefix, std::string after, std::size_t limit) const {
    if (limit == 0) {
        list_page out;
        out.diag.message = "list limit must be at least 1";
        return complete(std::move(h), error_code(errc::invalid_argument), std::move(out));
    }
    auto op = std::make_shared<list_op>(*this, std::move(h), std::move(prefix), std::move(after), limit);
    op->next(std::nullopt);
}

inline void dynamodb_backend::start_probe(probe_handler h) const {
    auto op = std::make_shared<probe_op>(*this, std::move(h));
    op->run();
}

inline void dynamodb_backend::start_table(table_handler h, bool create) const {
    auto op = std::make_shared<table_op>(*this, std::move(h), create);
    op->run();
}

static_assert(record_store<dynamodb_backend>);

} // namespace baton

#endif
