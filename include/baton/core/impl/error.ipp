// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_IMPL_ERROR_IPP
#define BATON_CORE_IMPL_ERROR_IPP

// Layer: core, internal. The compiled part of the error category (see core/error.hpp).
#include <baton/core/error.hpp>

#include <boost/asio/error.hpp>

namespace baton {
namespace detail {

class errc_category final : public boost::system::error_category {
public:
    // A fixed id makes comparisons work across shared objects that each hold a copy.
    constexpr errc_category() noexcept : error_category(0xba7011e5c0de0001ULL) {}

    char const* name() const noexcept override { return "baton"; }

    std::string message(int ev) const override {
        switch (static_cast<errc>(ev)) {
        case errc::lease_lost: return "the lease was lost";
        case errc::held_by_other: return "the lease is held by another participant";
        case errc::precondition_failed: return "the record changed: precondition failed";
        case errc::conflict: return "a concurrent conflicting operation was in progress";
        case errc::not_found: return "not found";
        case errc::throttled: return "the service is throttling requests";
        case errc::timeout: return "timed out";
        case errc::service_unavailable: return "the service is unavailable";
        case errc::invalid_response: return "invalid response from the service";
        case errc::capability_missing: return "the store does not honour a required capability";
        case errc::operation_in_progress: return "another operation of this kind is in progress";
        case errc::unknown_outcome: return "the outcome of a write is unknown";
        case errc::auth_failed: return "authentication failed";
        case errc::invalid_argument: return "invalid argument";
        case errc::not_held: return "the lease is not held";
        case errc::released: return "the lease was released";
        case errc::foreign_record: return "the record was not written by this recipe";
        case errc::no_credentials: return "no usable AWS credentials";
        case errc::fenced: return "a higher fencing token was already accepted for this key";
        }
        return "unknown baton error";
    }

    boost::system::error_condition default_error_condition(int ev) const noexcept override {
        return {ev, *this};
    }
};

class condition_category_impl final : public boost::system::error_category {
public:
    constexpr condition_category_impl() noexcept : error_category(0xba7011e5c0de0002ULL) {}

    char const* name() const noexcept override { return "baton.condition"; }

    std::string message(int ev) const override {
        switch (static_cast<condition>(ev)) {
        case condition::retryable: return "retryable";
        case condition::contention: return "contention";
        case condition::auth: return "authentication";
        }
        return "unknown baton condition";
    }

    bool equivalent(error_code const& code, int cond) const noexcept override {
        if (code.category() == baton::error_category()) {
            auto const e = static_cast<errc>(code.value());
            switch (static_cast<condition>(cond)) {
            case condition::retryable:
                return e == errc::throttled || e == errc::timeout || e == errc::service_unavailable ||
                       e == errc::conflict || e == errc::unknown_outcome;
            case condition::contention:
                return e == errc::held_by_other || e == errc::precondition_failed ||
                       e == errc::lease_lost || e == errc::conflict || e == errc::fenced;
            case condition::auth:
                return e == errc::auth_failed || e == errc::no_credentials;
            }
            return false;
        }
        if (static_cast<condition>(cond) != condition::retryable)
            return false;
        // Connection-level failures are transient.
        namespace ae = boost::asio::error;
        return code == ae::connection_reset || code == ae::connection_refused ||
               code == ae::connection_aborted || code == ae::timed_out || code == ae::broken_pipe ||
               code == ae::eof || code == ae::network_unreachable || code == ae::host_unreachable ||
               code == ae::try_again;
    }
};

} // namespace detail

BATON_DECL boost::system::error_category const& error_category() noexcept {
    static constexpr detail::errc_category instance;
    return instance;
}

BATON_DECL boost::system::error_category const& condition_category() noexcept {
    static constexpr detail::condition_category_impl instance;
    return instance;
}

BATON_DECL std::string diagnostics::to_string() const {
    std::string out;
    if (http_status != 0) {
        out += "HTTP ";
        out += std::to_string(http_status);
    }
    if (!service_code.empty()) {
        if (!out.empty()) out += ' ';
        out += service_code;
    }
    if (!message.empty()) {
        if (!out.empty()) out += ": ";
        out += message;
    }
    if (!request_id.empty()) {
        out += " (request id ";
        out += request_id;
        out += ')';
    }
    return out;
}

} // namespace baton

#endif
