// Starting a credentials fetch in a test and keeping what it delivers.
#ifndef BATON_TEST_COMMON_CREDENTIALS_HPP
#define BATON_TEST_COMMON_CREDENTIALS_HPP

#include <baton/aws/credentials.hpp>

#include <doctest/doctest.h>

#include <memory>

namespace test_common {

/// What one `async_get` delivered, once `done`.
struct got {
    bool done = false;
    baton::error_code ec;
    baton::aws::fetched_credentials fc;
};

/// Starts `p.async_get`; checks it did not complete inline.
inline std::shared_ptr<got> start_get(baton::aws::credentials_provider& p) {
    auto g = std::make_shared<got>();
    p.async_get([g](baton::error_code ec, baton::aws::fetched_credentials fc) {
        g->ec = ec;
        g->fc = std::move(fc);
        g->done = true;
    });
    CHECK_FALSE(g->done);
    return g;
}

} // namespace test_common

#endif
