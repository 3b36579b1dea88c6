// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_SRC_S3_HPP
#define BATON_SRC_S3_HPP

/** @file
    Top of the house. Part of `<baton/src.hpp>`: the S3 store's request code (signing,
    credentials, the HTTP request over Beast and TLS), compiled once. `<baton/backend/s3.hpp>`
    declares these instantiations `extern` when `BATON_SEPARATE_COMPILATION` is defined. Include it
    in exactly one translation unit of a program that uses the S3 store, beside
    `<baton/src/core.hpp>`, or include `<baton/src.hpp>` for every part at once.
*/

#ifndef BATON_SEPARATE_COMPILATION
#error "Define BATON_SEPARATE_COMPILATION in every translation unit before including <baton/src/s3.hpp>"
#endif

#include <baton/backend/s3.hpp>

namespace baton::detail {
template void s3_get<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, s3_get_handler);
template void s3_put<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, std::string, precondition,
                       s3_put_handler);
template void s3_copy<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, std::string, s3_put_handler);
template void s3_erase<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, precondition, s3_erase_handler);
template void s3_list<>(std::shared_ptr<s3_state>, aws::signed_channel, std::string, std::string, std::size_t,
                        s3_list_handler);
template void s3_probe<>(std::shared_ptr<s3_state>, aws::signed_channel, s3_probe_handler);
template void s3_create_bucket<>(std::shared_ptr<s3_state>, aws::signed_channel, s3_bucket_handler);
} // namespace baton::detail

#endif
