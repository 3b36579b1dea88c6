// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_IMPL_RECORD_STORE_IPP
#define BATON_STORE_IMPL_RECORD_STORE_IPP

// Layer: store, internal. The compiled part of store/record_store.hpp: the key rule every
// store enforces.
#include <baton/store/record_store.hpp>

namespace baton {

BATON_DECL error_code store_limits::check_key(std::string_view key, diagnostics& diag) {
    if (key.empty() || key.size() > max_key_bytes) {
        diag.message = "key must be 1 to " + std::to_string(max_key_bytes) + " bytes (it is " +
                       std::to_string(key.size()) + ")";
        return errc::invalid_argument;
    }
    if (!detail::is_utf8(key)) {
        diag.message = "key must be valid UTF-8";
        return errc::invalid_argument;
    }
    return {};
}

} // namespace baton

#endif
