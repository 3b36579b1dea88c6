// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_SRC_HPP
#define BATON_SRC_HPP

/** @file
    Layer: top. Include in exactly one translation unit when `BATON_SEPARATE_COMPILATION`
    is defined, to compile once baton's non-template code and the S3, DynamoDB and Azure Blob
    stores' request code (whose instantiations the store headers then declare `extern`). It is
    its four parts, which may instead be compiled in units of their own, and only those a program
    uses: `<baton/src/core.hpp>` (always), `<baton/src/s3.hpp>`, `<baton/src/dynamodb.hpp>`,
    `<baton/src/azure_blob.hpp>`.
*/

#ifndef BATON_SEPARATE_COMPILATION
#error "Define BATON_SEPARATE_COMPILATION in every translation unit before including <baton/src.hpp>"
#endif

#include <baton/src/azure_blob.hpp>
#include <baton/src/core.hpp>
#include <baton/src/dynamodb.hpp>
#include <baton/src/s3.hpp>

#endif
