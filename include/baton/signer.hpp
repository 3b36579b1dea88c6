// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_SIGNER_HPP
#define BATON_SIGNER_HPP

/** @file
    The Signer policy: how a backend authenticates its requests.

    Recipes never sign anything themselves; they hand the Signer to the
    backend. A backend that talks to a service accepts it through a
    `use_signer(Signer)` member, which `basic_lease` calls when present
    (detected, not required). `anonymous` signs nothing; the AWS SigV4
    signer lives in `<baton/aws/sigv4.hpp>`.

    | expression            | meaning |
    |-----------------------|---------|
    | `S` copy-constructible | signers are small values, shared state behind a pointer |
    | `b.use_signer(s)`     | optional on a Backend `b`: adopt `s` for its requests |
*/

#include <concepts>

namespace baton {

/// A Signer (see the table in this header).
template <class S>
concept signer_policy = std::copy_constructible<S>;

/// Signs nothing: for stores that need no authentication (memory, local files).
struct anonymous {};

namespace detail {
template <class Backend, class Signer>
void adopt_signer(Backend& b, Signer const& s) {
    if constexpr (requires { b.use_signer(s); }) b.use_signer(s);
}
} // namespace detail

} // namespace baton

#endif
