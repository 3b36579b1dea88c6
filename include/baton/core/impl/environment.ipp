// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_IMPL_ENVIRONMENT_IPP
#define BATON_CORE_IMPL_ENVIRONMENT_IPP
// Layer: core, internal. The compiled part of core/environment.hpp.
#include <baton/core/environment.hpp>

#include <cstdlib>
#include <memory>

namespace baton {

BATON_DECL env_lookup process_environment() {
    return [](std::string_view name) -> std::optional<std::string> {
        std::string const key(name);
        char const* v = std::getenv(key.c_str());
        if (v == nullptr) return std::nullopt;
        return std::string(v);
    };
}

BATON_DECL env_lookup fixed_environment(std::map<std::string, std::string, std::less<>> vars) {
    auto shared = std::make_shared<std::map<std::string, std::string, std::less<>> const>(std::move(vars));
    return [shared](std::string_view name) -> std::optional<std::string> {
        auto const it = shared->find(name);
        if (it == shared->end()) return std::nullopt;
        return it->second;
    };
}

} // namespace baton

#endif
