// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_SRC_AZURE_BLOB_HPP
#define BATON_SRC_AZURE_BLOB_HPP

/** @file
    Top of the house. Part of `<baton/src.hpp>`: the Azure Blob store's request code (Shared Key
    signing, the HTTP request over Beast and TLS), compiled once.
    `<baton/backend/azure_blob.hpp>` declares these instantiations `extern` when
    `BATON_SEPARATE_COMPILATION` is defined. Include it in exactly one translation unit of a
    program that uses the Azure Blob store, beside `<baton/src/core.hpp>`, or include
    `<baton/src.hpp>` for every part at once.
*/

#ifndef BATON_SEPARATE_COMPILATION
#error "Define BATON_SEPARATE_COMPILATION in every translation unit before including <baton/src/azure_blob.hpp>"
#endif

#include <baton/backend/azure_blob.hpp>

namespace baton::detail {
template void azure_get<>(std::shared_ptr<azure_blob_state>, std::string, azure_get_handler);
template void azure_put<>(std::shared_ptr<azure_blob_state>, std::string, std::string, precondition,
                          azure_put_handler);
template void azure_erase<>(std::shared_ptr<azure_blob_state>, std::string, precondition, azure_erase_handler);
template void azure_list<>(std::shared_ptr<azure_blob_state>, std::string, std::string, std::size_t,
                           azure_list_handler);
template void azure_probe<>(std::shared_ptr<azure_blob_state>, azure_probe_handler);
template void azure_create_container<>(std::shared_ptr<azure_blob_state>, azure_container_handler);
} // namespace baton::detail

#endif
