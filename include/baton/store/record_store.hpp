// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_RECORD_STORE_HPP
#define BATON_STORE_RECORD_STORE_HPP

/** @file
    Layer: store. The record store: the one primitive every recipe stands on (docs/design.md §2).

    A record is `{key, body, version}`; the version is opaque and changes on
    every put. Writes and deletes carry a precondition (none, absent, or
    matches a version) that the store itself enforces.

    Requirements on a Backend `B` (`b` is a `B&`; `key`, `body`, `prefix`,
    `after` are `std::string`; `pc` a `precondition`; `limit` a
    `std::size_t`; `h` a completion handler of the signature shown). Every
    operation completes through the handler's associated executor (the
    backend's executor by default), never inline, and may be in flight
    several at once.

    | expression                              | completion signature              | meaning |
    |-----------------------------------------|-----------------------------------|---------|
    | `B::executor_type`                      |                                   | where completions run by default |
    | `b.get_executor()`                      |                                   | |
    | `b.async_get(key, h)`                   | `void(error_code, get_result)`    | read; absent is not an error (`found` empty) |
    | `b.async_put(key, body, pc, h)`         | `void(error_code, put_result)`    | write if `pc` holds; `errc::precondition_failed` otherwise (`current` filled when the service returns it) |
    | `b.async_erase(key, pc, h)`             | `void(error_code, erase_result)`  | delete if `pc` holds |
    | `b.async_list(prefix, after, limit, h)` | `void(error_code, list_page)`     | keys starting with `prefix`, strictly after `after`, at most `limit` |
    | `b.async_probe(h)`                      | `void(error_code, capabilities)`  | what this endpoint really honours |

    Backends are cheap handles: copies talk to the same store.

    Reads return the latest applied write (S3's strong read-after-write
    consistency, DynamoDB's `ConsistentRead`, the file and memory stores).
    The recipes stay safe against a lagging replica all the same (nothing is
    applied twice, no acknowledged write is lost; the sim kit injects stale
    reads), but a verdict that writes nothing (a refused condition, an erase
    of an erased key) trusts the read it was made from.

    Outcomes that cannot be known (a timeout after the request was sent, a
    5xx, S3's 409) are reported as such (`errc::timeout`,
    `errc::service_unavailable`, `errc::conflict`, `errc::unknown_outcome`);
    the recipes settle them by reading back, never by guessing.
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/detail/post_completion.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/core/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>

#include <concepts>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace baton {

/// A stored record: the key, its bytes, and the store's opaque version of them.
struct record {
    /// Where it is stored.
    std::string key;
    /// The payload, as bytes.
    std::string body;
    /// Opaque; changes on every put (S3 ETag, DynamoDB version attribute, ...).
    std::string version;
};

/// A condition the store checks atomically with a write or a delete.
class precondition {
public:
    /// Which condition.
    enum class kind {
        none,    ///< unconditional
        absent,  ///< the key must not exist (S3 `If-None-Match: *`)
        matches, ///< the record's version must equal `version()` (S3 `If-Match`)
    };

    /// Unconditional.
    static precondition none() { return precondition{kind::none, {}}; }
    /// Only if the key does not exist.
    static precondition absent() { return precondition{kind::absent, {}}; }
    /// Only if the current version is `v`.
    static precondition matches(std::string v) { return precondition{kind::matches, std::move(v)}; }

    /// Which condition this is.
    kind which() const noexcept { return kind_; }
    /// The version named by `matches`; empty otherwise.
    std::string const& version() const noexcept { return version_; }

    /// Two preconditions are equal when they name the same condition.
    friend bool operator==(precondition const&, precondition const&) = default;

private:
    precondition(kind k, std::string v) : kind_(k), version_(std::move(v)) {}
    kind kind_;
    std::string version_;
};

/// Result of `async_get`.
struct get_result {
    /// The record, or nothing when the key is absent.
    std::optional<record> found;
    /// What the service said, on failure.
    diagnostics diag;
};

/// Result of `async_put`.
struct put_result {
    /// The new version, on success.
    std::string version;
    /// On `precondition_failed`: the current record, when the service returned it (DynamoDB ALL_OLD).
    std::optional<record> current;
    /// What the service said, on failure.
    diagnostics diag;
};

/// Result of `async_erase`.
struct erase_result {
    /// What the service said, on failure.
    diagnostics diag;
};

/// One key of a listing.
struct list_entry {
    /// The key.
    std::string key;
    /// Its current version.
    std::string version;
};

/// A page of a listing, in key order.
struct list_page {
    /// Keys in this page, ascending.
    std::vector<list_entry> entries;
    /// True when more keys follow: list again with `after` = the last key.
    bool truncated = false;
    /// What the service said, on failure.
    diagnostics diag;
};

/// What a store endpoint honours, as found by `async_probe`.
struct capabilities {
    /// A put with `absent` fails when the key exists.
    bool conditional_create = false;
    /// A put with `matches` fails on a stale version.
    bool conditional_replace = false;
    /// An erase with `matches` fails on a stale version.
    bool conditional_erase = false;
    /// One line per check made, with its outcome, for humans.
    std::vector<std::string> findings;
    /// What the service said when a check failed.
    diagnostics diag;

    /// Leases need conditional create and replace (release writes a marker, so conditional erase is optional).
    bool supports_leases() const noexcept { return conditional_create && conditional_replace; }
};

/// Limits every backend enforces, so that hostile sizes fail clearly everywhere.
struct store_limits {
    /// S3's key limit; DynamoDB's partition key limit is larger.
    static constexpr std::size_t max_key_bytes = 1024;

    /** `errc::invalid_argument`, with the rule in `diag`, unless `key` has 1 to `max_key_bytes`
        bytes of valid UTF-8. Every store refuses other keys the same way: S3 keys and DynamoDB
        strings must be UTF-8, and a key that a record names (a commit pointer, a lease table's
        shard) must stay readable as text.
    */
    static error_code check_key(std::string_view key, diagnostics& diag);
};

namespace detail {
// How a backend that does its work in the initiating function offers it as an asynchronous
// operation with completion `void(error_code, Result)`: `work(result)` runs at initiation and
// returns the error; the handler runs later, never inline, on its associated executor (`ex` by default).
template <class Result, class Executor, class Token, class Work>
auto async_at_once(Executor const& ex, Token&& token, Work work) {
    return boost::asio::async_initiate<Token, void(error_code, Result)>(
        [ex](auto handler, Work w) {
            Result r;
            error_code ec = w(r);
            // Never inline: the handler runs later, on its associated executor.
            post_completion(ex, std::move(handler), ec, std::move(r));
        },
        token, std::move(work));
}

// Handlers with exactly the signatures the concept names, for checking backends.
template <class Sig>
using archetype_handler = boost::asio::any_completion_handler<Sig>;
} // namespace detail

/// A Backend (see the requirements table in this header).
template <class B>
concept record_store = std::copy_constructible<B> &&
    requires(B& b, std::string s, precondition pc, std::size_t limit,
             detail::archetype_handler<void(error_code, get_result)> hg,
             detail::archetype_handler<void(error_code, put_result)> hp,
             detail::archetype_handler<void(error_code, erase_result)> he,
             detail::archetype_handler<void(error_code, list_page)> hl,
             detail::archetype_handler<void(error_code, capabilities)> hc) {
        typename B::executor_type;
        { b.get_executor() } -> std::convertible_to<typename B::executor_type>;
        b.async_get(s, std::move(hg));
        b.async_put(s, s, pc, std::move(hp));
        b.async_erase(s, pc, std::move(he));
        b.async_list(s, s, limit, std::move(hl));
        b.async_probe(std::move(hc));
    };

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/store/impl/record_store.ipp>
#endif

#endif
