// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_ERROR_HPP
#define BATON_CORE_ERROR_HPP

/** @file
    Layer: core. baton's error model: one error enum (`baton::errc`) in a category named
    `baton` with a fixed id, three portable conditions (retryable, contention,
    auth), and a `diagnostics` object that carries the service's own words.

    Service details (HTTP status, AWS error code, message, request id) never
    go into an error code's message: they are in `diagnostics`. Secrets never
    appear in either.
*/

#include <baton/core/detail/config.hpp>

#include <boost/system/error_code.hpp>
#include <boost/system/error_condition.hpp>

#include <stdexcept>
#include <string>
#include <type_traits>

namespace baton {

/// The error code type used in every completion signature.
using error_code = boost::system::error_code;

/** Errors reported by baton's operations.

    Values are stable: they may be stored and compared across versions.
*/
enum class errc {
    /// The lease was taken over by another holder, or its renew deadline passed before a renewal succeeded.
    lease_lost = 1,
    /// A try-once acquisition found the lease validly held by someone else.
    held_by_other,
    /// A conditional write or delete was refused: the record is not in the state the precondition named.
    precondition_failed,
    /// The service saw a concurrent conflicting operation (S3 409 ConditionalRequestConflict); read back, then retry.
    conflict,
    /// The key, bucket or table does not exist.
    not_found,
    /// The service asked the client to slow down (S3 SlowDown, DynamoDB throughput exceptions).
    throttled,
    /// An attempt or a whole operation ran out of time.
    timeout,
    /// The service failed (HTTP 5xx) or is unavailable.
    service_unavailable,
    /// A response was malformed, truncated, oversized or otherwise unusable.
    invalid_response,
    /// The store does not honour an operation this use needs (e.g. it ignores preconditions).
    capability_missing,
    /// Another operation of the same kind is already outstanding on this object.
    operation_in_progress,
    /// A write may or may not have been applied, and reading back could not settle it.
    unknown_outcome,
    /// The service refused the credentials or the signature.
    auth_failed,
    /// An argument is outside what the store or the recipe accepts (empty key, oversized body, ...).
    invalid_argument,
    /// The operation needs a held lease and this object does not hold one.
    not_held,
    /// The lease was released by its holder; work waiting on it ends.
    released,
    /// The store holds a record this recipe did not write or cannot read (wrong format or version).
    foreign_record,
    /// No source yielded AWS credentials, or a configured one cannot (the diagnostics list each source and why).
    no_credentials,
    /// A fenced write carried a token below one the record already accepted (the diagnostics name the winning token).
    fenced,
};

/// Portable groupings of errors, for `ec == baton::condition::retryable` tests.
enum class condition {
    /// Transient: the same request may succeed later (throttling, 5xx, timeouts, S3 409, connection errors).
    retryable = 1,
    /// Another participant won: precondition failures, leases held or lost.
    contention,
    /// Credentials or signatures were refused, or no credentials could be found.
    auth,
};

} // namespace baton

template <>
struct boost::system::is_error_code_enum<baton::errc> : std::true_type {};
template <>
struct boost::system::is_error_condition_enum<baton::condition> : std::true_type {};
template <>
struct std::is_error_code_enum<baton::errc> : std::true_type {};
template <>
struct std::is_error_condition_enum<baton::condition> : std::true_type {};

namespace baton {

/// The category of `baton::errc`; its name is `baton`, its id is fixed.
BATON_DECL boost::system::error_category const& error_category() noexcept;

/// The category of `baton::condition`; its name is `baton.condition`, its id is fixed.
BATON_DECL boost::system::error_category const& condition_category() noexcept;

/// Makes an `error_code` from a `baton::errc` (found by argument-dependent lookup).
inline error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

/// Makes an `error_condition` from a `baton::condition` (found by argument-dependent lookup).
inline boost::system::error_condition make_error_condition(condition c) noexcept {
    return {static_cast<int>(c), condition_category()};
}

/// True when `ec` is transient and the same request may be sent again.
inline bool is_retryable(error_code const& ec) noexcept {
    return ec == condition::retryable;
}

namespace detail {
// The store or the settings refused the request before applying anything, and sending it again
// cannot help: a missing bucket or table, refused credentials, a store without what a recipe
// needs, bad input.
inline bool refused_by_setup(error_code const& ec) noexcept {
    return ec == errc::invalid_argument || ec == errc::auth_failed || ec == errc::capability_missing ||
           ec == errc::not_found;
}
} // namespace detail

/** What the service (or baton's own checks) said about a failed operation.

    Kept apart from the error code so that codes stay comparable while the
    details stay available. Never holds credentials or signatures.
*/
struct diagnostics {
    /// HTTP status of the failing response, or 0 when there was none.
    unsigned http_status = 0;
    /// The service's error code, e.g. `PreconditionFailed` or `ConditionalCheckFailedException`.
    std::string service_code;
    /// The service's message, or baton's own explanation when the failure was found client-side.
    std::string message;
    /// The service's request id, for support cases.
    std::string request_id;

    /// True when nothing has been recorded.
    bool empty() const noexcept {
        return http_status == 0 && service_code.empty() && message.empty() && request_id.empty();
    }
    /// Forgets everything recorded.
    void clear() noexcept { *this = diagnostics{}; }
    /// One line for logs, e.g. `HTTP 412 PreconditionFailed: ... (request id tx00..)`.
    BATON_DECL std::string to_string() const;
};

/// Thrown when a configuration aggregate breaks one of its documented rules; the message names the rule.
class config_error : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

} // namespace baton


#ifndef BATON_SEPARATE_COMPILATION
#include <baton/core/impl/error.ipp>
#endif

#endif
