// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_DYNAMODB_HPP
#define BATON_BACKEND_DYNAMODB_HPP

/** @file
    Layer: backends. `dynamodb_backend`: the record store over Amazon DynamoDB's JSON 1.0 API
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
      `ReturnValuesOnConditionCheckFailure: ALL_OLD`, and a failed condition
      fills `put_result::current` with the item the service returned. When
      the service returns none (dynalite, DynamoDB Local, or the key is
      absent), `current` is empty, as with S3, and no GetItem is sent: the
      recipes read the record themselves when they need it, which a
      contender that lost a race does at its next poll, not at once.
    - erase: DeleteItem with the same conditions. `matches` on a key that
      is gone gives `errc::not_found`, like `memory_backend`: from the
      failure when the service returns items with failures (once it has
      returned one, a failure without one means the key is absent), else
      from a consistent GetItem.
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

#include <baton/backend/detail/dynamodb_state.hpp>
#include <baton/backend/dynamodb_params.hpp>
#include <baton/aws/credentials.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/errors.hpp>
#include <baton/aws/signed_channel.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/detail/post_completion.hpp>
#include <baton/backend/detail/dynamodb_json.hpp>
#include <baton/core/error.hpp>
#include <baton/http/client.hpp>
#include <baton/store/record_store.hpp>

namespace baton {

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
template <class = void>
class basic_dynamodb_backend {
public:
    /// Completions run here unless the handler has an executor of its own.
    using executor_type = boost::asio::any_io_executor;

    /** A backend with its own HTTP client on `ex`. Nothing is sent until the first operation.

        @throws config_error when `p` breaks a rule of `dynamodb_backend_params`.
    */
    basic_dynamodb_backend(executor_type ex, dynamodb_backend_params p)
        : basic_dynamodb_backend(http::client(ex, (p.validate(), p.http)), std::move(p), 0) {}

    /** A backend that shares `client` (and its pools) with other stores; completions run on its executor.

        `p.http` is ignored: the client's options are in force.
        @throws config_error when `p` breaks a rule of `dynamodb_backend_params`.
    */
    basic_dynamodb_backend(http::client client, dynamodb_backend_params p)
        : basic_dynamodb_backend(std::move(client), (p.validate(), std::move(p)), 0) {}

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
    template <aws::request_signer S>
        requires signer_policy<S>
    void use_signer(S s) {
        channel_.use_signer(std::move(s));
    }

private:
    // Each operation's initiation is named, not a lambda, so that the functions below declare
    // their return type: checking a concept of them (record_store) then compiles no request code.
    struct initiate_get {
        template <class Handler>
        void operator()(Handler h, basic_dynamodb_backend self, std::string k) const {
            self.start_get(get_handler(std::move(h)), std::move(k));
        }
    };
    struct initiate_put {
        template <class Handler>
        void operator()(Handler h, basic_dynamodb_backend self, std::string k, std::string b, precondition c) const {
            self.start_put(put_handler(std::move(h)), std::move(k), std::move(b), std::move(c));
        }
    };
    struct initiate_put_fenced {
        template <class Handler>
        void operator()(Handler h, basic_dynamodb_backend self, std::string k, std::string b, std::uint64_t t,
                        std::optional<std::string> v) const {
            self.start_put(put_handler(std::move(h)), std::move(k), std::move(b), precondition::absent(),
                           fenced_condition{t, std::move(v)});
        }
    };
    struct initiate_erase {
        template <class Handler>
        void operator()(Handler h, basic_dynamodb_backend self, std::string k, precondition c) const {
            self.start_erase(erase_handler(std::move(h)), std::move(k), std::move(c));
        }
    };
    struct initiate_list {
        template <class Handler>
        void operator()(Handler h, basic_dynamodb_backend self, std::string p, std::string a, std::size_t l) const {
            self.start_list(list_handler(std::move(h)), std::move(p), std::move(a), l);
        }
    };
    struct initiate_probe {
        template <class Handler>
        void operator()(Handler h, basic_dynamodb_backend self) const {
            self.start_probe(probe_handler(std::move(h)));
        }
    };
    struct initiate_create_table {
        template <class Handler>
        void operator()(Handler h, basic_dynamodb_backend self) const {
            self.start_table(table_handler(std::move(h)), true);
        }
    };
    struct initiate_check_table {
        template <class Handler>
        void operator()(Handler h, basic_dynamodb_backend self) const {
            self.start_table(table_handler(std::move(h)), false);
        }
    };
    struct initiate_call {
        template <class Handler>
        void operator()(Handler h, basic_dynamodb_backend self, std::string op, std::string b) const {
            self.start_call(call_handler(std::move(h)), std::move(op), std::move(b));
        }
    };

public:
    /// Reads `key` (consistent). Completion: `void(error_code, get_result)`.
    template <class Token = boost::asio::deferred_t>
    auto async_get(std::string key, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, get_result)>(initiate_get{}, token, *this, std::move(key))) {
        return boost::asio::async_initiate<Token, void(error_code, get_result)>(initiate_get{}, token, *this, std::move(key));
    }

    /** Writes `key` if `pc` holds, with a fresh version. Completion: `void(error_code, put_result)`.

        On `errc::precondition_failed`, `current` holds the item as it is
        (from the failure itself or from a consistent GetItem), or nothing
        when the key is absent.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_put(std::string key, std::string body, precondition pc, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, put_result)>(initiate_put{}, token, *this, std::move(key), std::move(body), std::move(pc))) {
        return boost::asio::async_initiate<Token, void(error_code, put_result)>(initiate_put{}, token, *this, std::move(key), std::move(body), std::move(pc));
    }

    /** The fenced-write hook (`basic_fenced` uses it when present): writes `key` in one
        request, conditional on the fencing token kept in the item's `fence` attribute: applied
        when the item is absent, its fence is below `token`, or it is still `known_version`
        with a fence of at most `token`. Completion: `void(error_code, put_result)`, as
        `async_put` (`precondition_failed`, with the current item when the service returns it).
    */
    template <class Token = boost::asio::deferred_t>
    auto async_put_fenced(std::string key, std::string body, std::uint64_t token, std::optional<std::string> known_version,
                          Token&& tok = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, put_result)>(initiate_put_fenced{}, tok, *this, std::move(key), std::move(body), token, std::move(known_version))) {
        return boost::asio::async_initiate<Token, void(error_code, put_result)>(initiate_put_fenced{}, tok, *this, std::move(key), std::move(body), token, std::move(known_version));
    }

    /// Deletes `key` if `pc` holds. Completion: `void(error_code, erase_result)`.
    template <class Token = boost::asio::deferred_t>
    auto async_erase(std::string key, precondition pc, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, erase_result)>(initiate_erase{}, token, *this, std::move(key), std::move(pc))) {
        return boost::asio::async_initiate<Token, void(error_code, erase_result)>(initiate_erase{}, token, *this, std::move(key), std::move(pc));
    }

    /** Lists keys with `prefix` strictly after `after`, ascending. Completion: `void(error_code, list_page)`.

        Scans the whole table on every call: see the file comment.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_list(std::string prefix, std::string after, std::size_t limit, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, list_page)>(initiate_list{}, token, *this, std::move(prefix), std::move(after), limit)) {
        return boost::asio::async_initiate<Token, void(error_code, list_page)>(initiate_list{}, token, *this, std::move(prefix), std::move(after), limit);
    }

    /// Checks what the table honours on a scratch item. Completion: `void(error_code, capabilities)`.
    template <class Token = boost::asio::deferred_t>
    auto async_probe(Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, capabilities)>(initiate_probe{}, token, *this)) {
        return boost::asio::async_initiate<Token, void(error_code, capabilities)>(initiate_probe{}, token, *this);
    }

    /** Creates the table (on-demand billing, the backend's key schema) and waits until it is ACTIVE.

        A table that exists already is accepted when its key schema is the
        expected one (`info.created` is then false), and refused with
        `errc::invalid_argument` otherwise. Waits at most
        `table_wait_timeout` (then `errc::timeout`), polling DescribeTable.
        Completion: `void(error_code, dynamodb_table_info)`.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_create_table(Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, dynamodb_table_info)>(initiate_create_table{}, token, *this)) {
        return boost::asio::async_initiate<Token, void(error_code, dynamodb_table_info)>(initiate_create_table{}, token, *this);
    }

    /** Describes the table once and checks its key schema.

        `errc::not_found` when it does not exist; `errc::invalid_argument`
        (with the table's and the expected schema in the message) when its
        key schema is not one HASH key `partition_key` of type S.
        Completion: `void(error_code, dynamodb_table_info)`.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_check_table(Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, dynamodb_table_info)>(initiate_check_table{}, token, *this)) {
        return boost::asio::async_initiate<Token, void(error_code, dynamodb_table_info)>(initiate_check_table{}, token, *this);
    }

    /** Sends one signed request of any DynamoDB operation, such as `("DescribeTimeToLive", R"({"TableName":"t"})")`.

        For tools and tests. Completion: `void(error_code, dynamodb_response)`;
        non-2xx statuses give the classified error, with the body kept.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_call(std::string operation, std::string json_body, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, dynamodb_response)>(initiate_call{}, token, *this, std::move(operation), std::move(json_body))) {
        return boost::asio::async_initiate<Token, void(error_code, dynamodb_response)>(initiate_call{}, token, *this, std::move(operation), std::move(json_body));
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
    basic_dynamodb_backend(http::client client, dynamodb_backend_params&& p, int)
        : ex_(client.get_executor()),
          st_(std::make_shared<detail::dynamodb_state>(std::move(p), std::move(client))), channel_(st_->channel) {}

    template <class Handler, class... Args>
    void complete(Handler h, Args&&... args) const {
        // Never inline: the handler runs later, through its associated executor.
        detail::post_completion(ex_, std::move(h), std::forward<Args>(args)...);
    }
    // The same for an answer of call(): `f` runs from the HTTP client's completion, never inside
    // the initiating function (the client posts what it answers from within async_request), so
    // the handler needs no second hop. This rests on
    // aws::signed_channel::send never calling back inline (its signing and credential errors are
    // posted too); a change there must keep it.
    template <class Handler, class... Args>
    void answer(Handler h, Args&&... args) const {
        detail::dispatch_completion(ex_, std::move(h), std::forward<Args>(args)...);
    }

    // The X-Amz-Target of an operation: the ones the backend sends are constants, not built per request.
    // `scratch` holds any other.
    static std::string_view target_of(std::string_view op, std::string& scratch) {
        static constexpr std::string_view known[] = {"DynamoDB_20120810.PutItem", "DynamoDB_20120810.GetItem",
                                                     "DynamoDB_20120810.DeleteItem", "DynamoDB_20120810.Scan"};
        constexpr std::string_view prefix = "DynamoDB_20120810.";
        for (auto k : known)
            if (k.substr(prefix.size()) == op) return k;
        scratch = std::string(prefix) + std::string(op);
        return scratch;
    }

    // One signed request; `f(result)` runs on the client's executor.
    template <class F>
    void call(std::string_view op, std::string body, boost::asio::cancellation_slot slot, F&& f) const {
        namespace bhttp = boost::beast::http;
        http::request req{bhttp::verb::post, "/", 11};
        // A fresh request: insert, not set (which looks each name up first).
        req.insert(bhttp::field::host, st_->ep.host_header());
        req.insert(bhttp::field::content_type, "application/x-amz-json-1.0");
        std::string scratch;
        req.insert("X-Amz-Target", target_of(op, scratch));
        req.insert(bhttp::field::accept_encoding, "identity");
        req.body() = std::move(body);
        req.prepare_payload();
        channel_.send(std::move(req), slot, [st = st_, op = std::string(op), f = std::forward<F>(f)](
                                               aws::signed_reply r) mutable {
            f(st->finish_call(op, r.ec, std::move(r.res), r.info));
        });
    }

    error_code check_key(std::string const& key, diagnostics& diag) const {
        if (auto ec = store_limits::check_key(key, diag)) return ec;
        if (!detail::is_utf8(key)) {
            diag.message = "key must be valid UTF-8 (DynamoDB S attributes are)";
            return errc::invalid_argument;
        }
        return {};
    }

    // ---- get ---------------------------------------------------------------------
    void start_get(get_handler h, std::string key) const;

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
                   std::optional<fenced_condition> fence = std::nullopt) const;

    // The item a ConditionalCheckFailed body carries (ALL_OLD), if any; seeing one teaches that
    // the service returns them (see current_after_failure).
    std::optional<record> item_in_failure(std::string const& key, std::string const& failure_body) const {
        std::optional<record> cur;
        diagnostics ignored;
        if (!detail::dynamodb::parse_condition_failure(failure_body, key, cur, ignored) && cur) {
            st_->returns_old_item.store(true, std::memory_order_relaxed);
            return cur;
        }
        return std::nullopt;
    }

    // After ConditionalCheckFailed: the current item from the failure body
    // (ALL_OLD), else from a consistent GetItem. `f(optional<record>, known)`
    // where `known` is false when the GetItem failed (the item is then unknown).
    template <class F>
    void current_after_failure(std::string key, std::string const& failure_body, boost::asio::cancellation_slot slot,
                               F&& f) const {
        if (auto cur = item_in_failure(key, failure_body)) return f(std::move(cur), true);
        if (st_->returns_old_item.load(std::memory_order_relaxed)) return f(std::nullopt, true); // absent
        read_item(std::move(key), slot, [f = std::forward<F>(f)](error_code ec, get_result g) mutable {
            if (ec) return f(std::nullopt, false);
            f(std::move(g.found), true);
        });
    }

    // ---- erase -------------------------------------------------------------------
    void start_erase(erase_handler h, std::string key, precondition pc) const;

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
    void start_call(call_handler h, std::string op, std::string body) const;

    executor_type ex_;
    std::shared_ptr<detail::dynamodb_state> st_;
    aws::signed_channel channel_;
};
/// The DynamoDB record store (`basic_dynamodb_backend<void>`; a class template only so that its
/// request code compiles in the units that use it).
using dynamodb_backend = basic_dynamodb_backend<>;

} // namespace baton

#include <baton/backend/impl/dynamodb.hpp>

#endif
