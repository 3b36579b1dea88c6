// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_IMPL_COMMIT_PROTOCOL_IPP
#define BATON_STORE_IMPL_COMMIT_PROTOCOL_IPP

// Layer: store, internal. The compiled part of store/commit_protocol_params.hpp: the settings' rules.
#include <baton/store/commit_protocol_params.hpp>

#include <baton/core/detail/text.hpp>

namespace baton {

BATON_DECL void commit_protocol_params::validate() const {
    if (object_prefix.size() > 256) throw config_error("commit_protocol_params: object_prefix longer than 256 bytes");
    if (!detail::is_utf8(object_prefix)) throw config_error("commit_protocol_params: object_prefix must be valid UTF-8");
    if (max_body_bytes == 0) throw config_error("commit_protocol_params: max_body_bytes must be at least 1");
    if (max_unconditional_rounds == 0 || max_read_rounds == 0)
        throw config_error("commit_protocol_params: max_unconditional_rounds and max_read_rounds must be at least 1");
}

} // namespace baton

#endif
