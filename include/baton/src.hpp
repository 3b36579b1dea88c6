// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_SRC_HPP
#define BATON_SRC_HPP

/** @file
    Layer: top. Include in exactly one translation unit when `BATON_SEPARATE_COMPILATION`
    is defined, to compile baton's non-template code once.
*/

#ifndef BATON_SEPARATE_COMPILATION
#error "Define BATON_SEPARATE_COMPILATION in every translation unit before including <baton/src.hpp>"
#endif

#undef BATON_DECL
#define BATON_DECL

#include <baton/core/impl/error.ipp>
#include <baton/http/impl/endpoint.ipp>
#include <baton/aws/impl/sigv4.ipp>
#include <baton/aws/impl/endpoint.ipp>
#include <baton/aws/impl/profile.ipp>
#include <baton/aws/impl/xml.ipp>
#include <baton/aws/impl/credential_source.ipp>
#include <baton/backend/impl/dynamodb_json.ipp>
#include <baton/backend/impl/file_store.ipp>
#include <baton/recipe/impl/lease_record.ipp>

#endif
