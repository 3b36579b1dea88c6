// The program every consumer test builds: Conan's test_package, the CMake and
// pkg-config builds against `meson install`'s tree (tests/consumer/installed.sh)
// and the project that vendors baton through a Meson wrap (tests/consumer/run.sh).
// It touches each link dependency the package must carry: a lease on the memory
// store (Asio, Boost.JSON records), an endpoint URL (Boost.URL) and a SigV4
// signing key (OpenSSL's HMAC); in separate-compilation mode, the last two and the lease's record
// format come from baton_src.cpp. It includes what it uses, not <baton/baton.hpp>, which
// brings in the S3 and DynamoDB stores' HTTP and signing code: with GCC that is two thirds of
// this program's compile time. installed.sh checks that every header is installed.
#include <baton/aws/sigv4.hpp>
#include <baton/http/endpoint.hpp>
#include <baton/memory.hpp>

#include <boost/asio/io_context.hpp>

#include <cstdio>

int main() {
    boost::asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    baton::lease_options opts;
    opts.key = "test_package/lock";
    baton::memory_lease lease(ioc.get_executor(), store, opts);
    std::uint64_t token = 0;
    lease.async_acquire([&](baton::error_code ec, baton::lease_grant g) {
        if (!ec) token = g.fencing_token;
        lease.async_release([](baton::error_code) {});
    });
    ioc.run();

    auto const ep = baton::http::parse_endpoint("https://s3.eu-west-1.amazonaws.com");
    // The derived-key example of AWS's SigV4 documentation.
    auto const key = baton::aws::derive_signing_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20120215",
                                                     "us-east-1", "iam");
    bool const key_ok = key.bytes[0] == 0xf4 && key.bytes[1] == 0x78 && key.bytes[31] == 0x4d;

#ifdef BATON_SEPARATE_COMPILATION
    char const* const mode = "separate compilation";
#else
    char const* const mode = "header-only";
#endif
    std::printf("test_package (%s): lease token %llu, endpoint %s, signing key %s\n", mode,
                static_cast<unsigned long long>(token), ep ? ep->origin().c_str() : "refused",
                key_ok ? "as documented" : "WRONG");
    return token == 1 && ep && ep->port == 443 && key_ok ? 0 : 1;
}
