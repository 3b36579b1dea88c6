// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_SRC_DYNAMODB_HPP
#define BATON_SRC_DYNAMODB_HPP

/** @file
    Top of the house. Part of `<baton/src.hpp>`: the DynamoDB store's request code (signing,
    credentials, the HTTP request over Beast and TLS), compiled once.
    `<baton/backend/dynamodb.hpp>` declares this instantiation `extern` when
    `BATON_SEPARATE_COMPILATION` is defined. Include it in exactly one translation unit of a
    program that uses the DynamoDB store, beside `<baton/src/core.hpp>`, or include
    `<baton/src.hpp>` for every part at once.
*/

#ifndef BATON_SEPARATE_COMPILATION
#error "Define BATON_SEPARATE_COMPILATION in every translation unit before including <baton/src/dynamodb.hpp>"
#endif

#include <baton/backend/dynamodb.hpp>

namespace baton {
template class basic_dynamodb_backend<void>;
} // namespace baton

#endif
