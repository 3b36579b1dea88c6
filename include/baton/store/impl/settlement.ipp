// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_IMPL_SETTLEMENT_IPP
#define BATON_STORE_IMPL_SETTLEMENT_IPP

// Layer: store, internal. The compiled part of store/settlement.hpp: which answers leave a
// write's outcome unknown.
#include <baton/store/settlement.hpp>

namespace baton {

BATON_DECL bool outcome_unknown(error_code const& ec) noexcept {
    return ec == errc::timeout || ec == errc::unknown_outcome || ec == errc::service_unavailable ||
           ec == errc::conflict || ec == errc::throttled ||
           (ec && ec.category() != baton::error_category() && is_retryable(ec));
}

} // namespace baton

#endif
