// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_DETAIL_CONFIG_HPP
#define BATON_CORE_DETAIL_CONFIG_HPP

/** @file
    Layer: core, internal. Build configuration shared by every baton header.

    baton is header-only. Defining `BATON_SEPARATE_COMPILATION` in every
    translation unit and including `<baton/src.hpp>` in exactly one of them
    compiles the non-template parts, and the S3 and DynamoDB stores' request
    code, once instead (optional, never required).
*/

#ifdef BATON_SEPARATE_COMPILATION
#define BATON_DECL
#else
/// Linkage of baton's non-template functions: `inline` in header-only mode.
#define BATON_DECL inline
#endif

/// Code that only some units use (the AWS request path): a template with a defaulted parameter,
/// so that it compiles only in the units that call it, and a unit that merely includes its
/// header does not pay for it. `BATON_LAZY_DEF` defines one declared `BATON_LAZY` before.
#define BATON_LAZY template <class = void>
#define BATON_LAZY_DEF template <class>

#if __cplusplus < 202002L && !defined(_MSVC_LANG)
#error "baton needs C++20"
#endif

#endif
