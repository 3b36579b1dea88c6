// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_DETAIL_CONFIG_HPP
#define BATON_CORE_DETAIL_CONFIG_HPP

/** @file
    Layer: core, internal. Build configuration shared by every baton header.

    baton is header-only. Defining `BATON_SEPARATE_COMPILATION` in every
    translation unit and including `<baton/src.hpp>` in exactly one of them
    compiles the non-template parts once instead (optional, never required).
*/

#ifdef BATON_SEPARATE_COMPILATION
#define BATON_DECL
#else
/// Linkage of baton's non-template functions: `inline` in header-only mode.
#define BATON_DECL inline
#endif

#if __cplusplus < 202002L && !defined(_MSVC_LANG)
#error "baton needs C++20"
#endif

#endif
