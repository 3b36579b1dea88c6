// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_DETAIL_LOCAL_PROBE_HPP
#define BATON_STORE_DETAIL_LOCAL_PROBE_HPP

// Layer: store, internal. The probe of a store that answers at once (memory, file):
// the same checks a remote store gets, run on a scratch key, written once for both.
// Also the request counters both keep.

#include <baton/core/error.hpp>
#include <baton/store/record_store.hpp>

#include <cstdint>
#include <string>

namespace baton::detail {

/// Requests served by a local store, by kind.
struct local_request_counts {
    std::uint64_t gets = 0;    ///< `async_get` calls
    std::uint64_t puts = 0;    ///< `async_put` calls, whatever their outcome
    std::uint64_t erases = 0;  ///< `async_erase` calls
    std::uint64_t lists = 0;   ///< `async_list` calls
    std::uint64_t probes = 0;  ///< `async_probe` calls
    std::uint64_t refused = 0; ///< puts and erases refused by their precondition
};

/** Checks what the store honours on the scratch key `key`, through
    `put(key, body, precondition, put_result&) -> error_code` and
    `erase(key, precondition, diagnostics&) -> error_code`, and removes the key
    again. Fills `c` (capabilities and findings); a failure to write or remove
    the scratch key is returned with its diagnostics in `c.diag`.
*/
template <class Put, class Erase>
error_code probe_by_writes(std::string const& key, Put&& put, Erase&& erase, capabilities& c) {
    put_result first, second, stale, fresh;
    if (auto ec = put(key, "probe-1", precondition::absent(), first)) {
        c.findings.push_back("put if absent on a new key: failed (" + first.diag.message + ")");
        c.diag = first.diag;
        return ec;
    }
    c.conditional_create = put(key, "probe-2", precondition::absent(), second) == errc::precondition_failed;
    c.findings.push_back(std::string("put if absent on an existing key: ") +
                         (c.conditional_create ? "refused (honoured)" : "accepted (ignored)"));
    error_code const fresh_ec = put(key, "probe-3", precondition::matches(first.version), fresh);
    c.conditional_replace =
        !fresh_ec && put(key, "probe-4", precondition::matches(first.version), stale) == errc::precondition_failed;
    c.findings.push_back(std::string("put if matching a stale version: ") +
                         (c.conditional_replace ? "refused (honoured)" : "accepted (ignored)"));
    diagnostics ignored;
    c.conditional_erase = erase(key, precondition::matches(first.version), ignored) == errc::precondition_failed;
    c.findings.push_back(std::string("erase if matching a stale version: ") +
                         (c.conditional_erase ? "refused (honoured)" : "accepted (ignored)"));
    diagnostics cleanup;
    if (auto ec = erase(key, precondition::none(), cleanup)) {
        c.findings.push_back("removing the scratch key: failed (" + cleanup.message + ")");
        c.diag = cleanup;
        return ec;
    }
    return {};
}

} // namespace baton::detail

#endif
