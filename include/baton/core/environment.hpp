// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_ENVIRONMENT_HPP
#define BATON_CORE_ENVIRONMENT_HPP

/** @file
    Layer: core. How configuration reads environment variables: through an `env_lookup`, so
    that the AWS and Azure settings can be resolved against a chosen environment (tests,
    embedding) instead of the process's own.
*/

#include <baton/core/detail/config.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace baton {

/** Reads one environment variable: its value, or nothing when it is not set.

    Every resolution function takes one, so that configuration can be
    resolved against a chosen environment (tests, embedding) instead of the
    process's. Must be safe to call from any thread the caller uses.
*/
using env_lookup = std::function<std::optional<std::string>(std::string_view)>;

/// The process environment (`getenv`), the default for every resolution function.
BATON_DECL env_lookup process_environment();

/// A fixed environment holding exactly `vars`, e.g. for resolving configuration apart from the process's.
BATON_DECL env_lookup fixed_environment(std::map<std::string, std::string, std::less<>> vars);

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/core/impl/environment.ipp>
#endif

#endif
