// One include, as a user would write it.
#include <baton/baton.hpp>

#include <boost/asio/io_context.hpp>

#include <cstdio>

int main() {
    boost::asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    baton::lease_options opts;
    opts.key = "consumer/lock";
    baton::memory_lease lease(ioc.get_executor(), store, opts);
    std::uint64_t token = 0;
    lease.async_acquire([&](baton::error_code ec, baton::lease_grant g) {
        if (!ec) token = g.fencing_token;
        lease.async_release([](baton::error_code) {});
    });
    ioc.run();
    std::printf("consumer: acquired token %llu through dependency('baton')\n", static_cast<unsigned long long>(token));
    return token == 1 ? 0 : 1;
}
