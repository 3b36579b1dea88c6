// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_SIGNER_HPP
#define BATON_CORE_SIGNER_HPP

/** @file
    Layer: core. The Signer policy, how a backend authenticates its requests,
    and the one signer that signs nothing.

    Recipes never sign anything themselves; they hand the Signer to the
    backend. A backend that talks to a service accepts it through a
    `use_signer(Signer)` member, which the recipes call when present
    (detected, not required), unless the Signer is `backend_signer`, the
    recipes' default: the backend keeps the signer it has (SigV4 for the
    AWS backends). What a signer must do to a request is the
    wire layer's business: the AWS backends take any `aws::request_signer`
    (`<baton/aws/sigv4.hpp>`), which `aws::sigv4_signer` and
    `anonymous_signer` both model.

    | expression            | meaning |
    |-----------------------|---------|
    | `S` copy-constructible | signers are small values, shared state behind a pointer |
    | `b.use_signer(s)`     | optional on a Backend `b`: adopt `s` for its requests |
*/

#include <baton/core/error.hpp>

#include <concepts>
#include <type_traits>

namespace baton {

/// A Signer (see the table in this header).
template <class S>
concept signer_policy = std::copy_constructible<S>;

/** The recipes' default Signer: the backend keeps its own (SigV4 for S3
    and DynamoDB, none for the memory and file stores). Not a signer itself.
*/
struct backend_signer {};

/** Signs nothing: for stores that need no authentication (memory, local
    files, local emulators, public buckets), so that they share code paths
    with signed stores. Its `sign` accepts any request and succeeds.
*/
struct anonymous_signer {
    /// Leaves the request untouched and succeeds.
    template <class Request, class... Context>
    error_code sign(Request&, Context const&...) const noexcept {
        return {};
    }
};

namespace detail {
template <class Backend, class Signer>
void adopt_signer(Backend& b, Signer const& s) {
    if constexpr (!std::is_same_v<Signer, backend_signer> && requires { b.use_signer(s); }) b.use_signer(s);
}
} // namespace detail

} // namespace baton

#endif
