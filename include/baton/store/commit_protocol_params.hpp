// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_COMMIT_PROTOCOL_PARAMS_HPP
#define BATON_STORE_COMMIT_PROTOCOL_PARAMS_HPP

/** @file
    Layer: store. The settings of `basic_commit_protocol` (store/commit_protocol.hpp) and what
    its `async_collect` reports.
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace baton {

/// Settings of a `basic_commit_protocol`.
struct commit_protocol_params {
    /// Where the immutable objects live in the object store, in front of the key. Keep it out of
    /// the prefixes that plain readers list; it may be empty.
    std::string object_prefix = "_baton/";
    /// Puts with larger bodies fail with `errc::invalid_argument`.
    std::size_t max_body_bytes = 64 * 1024 * 1024;
    /// How many times a `none` precondition is retried when another writer wins the race between
    /// the pointer read and the commit, before reporting `errc::conflict`.
    unsigned max_unconditional_rounds = 8;
    /// How many object reads `get` retries when the pointer moved on meanwhile.
    unsigned max_read_rounds = 8;
    /// Probe the lock store before the first write of this handle and refuse to write
    /// (`errc::capability_missing`, naming the failed checks) when it ignores preconditions.
    bool check_lock_store = true;

    /// @throws config_error naming the broken rule.
    void validate() const;
};

/// What `async_collect` did.
struct collect_result {
    /// Commit objects listed.
    std::uint64_t scanned = 0;
    /// Deleted: provably unreachable.
    std::uint64_t collected = 0;
    /// Kept: committed, or their commit may still land.
    std::uint64_t kept = 0;
    /// What the service said, on failure.
    diagnostics diag;
};

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/store/impl/commit_protocol.ipp>
#endif

#endif
