// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
//
// A lease holder's output, fenced by the store itself: a holder that was
// paused past its lease (a long GC, swapping, a frozen VM, SIGSTOP) while
// another process took over cannot overwrite its successor's output — the
// store refuses its write, whatever the holder believes about its lease.
//
//   fenced_writer s3 BUCKET NAME [WORK_SECONDS [TTL_SECONDS]]
//   fenced_writer dynamodb TABLE NAME [WORK_SECONDS [TTL_SECONDS]]
//
// Acquires the lease `report/lock` (waiting while someone holds it), works
// WORK_SECONDS (default 1) with the event loop blocked, as a long computation
// or a pause would block it, then writes NAME to `report/output` with its
// fencing token. Prints
//   acquired: NAME has token N
//   written: NAME with token N                (exit 0)
//   refused: NAME's token N is below M        the store refused it: a successor with
//                                             token M wrote first (exit 4)
// To see a refusal, start one writer with a long WORK_SECONDS and a short TTL,
// and a second one once the first says `acquired`: the second takes over after
// TTL x 2 (the lease's max_clock_rate_skew) and writes; the first then wakes and is refused.
//
// Endpoint, region and credentials come from the environment
// (examples/aws_settings.hpp); see the README's "Examples" section.

#include "aws_settings.hpp"

#include <baton/dynamodb.hpp>
#include <baton/s3.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <thread>

namespace asio = boost::asio;

namespace {

struct settings {
    std::string name;
    std::chrono::seconds work{1};
    std::chrono::seconds ttl{10};
};

// The same program on any record store: Lease and Fenced are that store's recipe types.
template <class Lease, class Fenced>
asio::awaitable<int> run(typename Lease::backend_type store, settings s) {
    using lease_type = typename asio::use_awaitable_t<>::template as_default_on_t<Lease>;
    using fenced_type = typename asio::use_awaitable_t<>::template as_default_on_t<Fenced>;
    auto ex = co_await asio::this_coro::executor;
    baton::lease_options o;
    o.key = "report/lock";
    o.owner = s.name;
    o.ttl = s.ttl;
    o.poll_interval = std::min<std::chrono::milliseconds>(std::chrono::milliseconds(s.ttl) / 4, std::chrono::seconds(1));
    lease_type lease(ex, store, o);
    fenced_type output(ex, store);

    auto const grant = co_await lease.async_acquire();
    std::printf("acquired: %s has token %llu\n", s.name.c_str(), static_cast<unsigned long long>(grant.fencing_token));
    std::fflush(stdout);

    std::this_thread::sleep_for(s.work); // the work: nothing else runs meanwhile, not even renewals

    auto [ec, w] = co_await output.async_write("report/output", s.name, grant.fencing_token,
                                               asio::as_tuple(asio::use_awaitable));
    if (ec == baton::errc::fenced) {
        std::printf("refused: %s's token %llu is below %llu\n", s.name.c_str(),
                    static_cast<unsigned long long>(grant.fencing_token), static_cast<unsigned long long>(w.winning_token));
        co_return 4;
    }
    if (ec) throw boost::system::system_error(ec, "writing report/output" + (w.diag.message.empty() ? "" : ": " + w.diag.message));
    std::printf("written: %s with token %llu\n", s.name.c_str(), static_cast<unsigned long long>(grant.fencing_token));
    std::fflush(stdout);
    // The lease may have been lost during the work (its successor then holds it): nothing to release.
    co_await lease.async_release(asio::as_tuple(asio::use_awaitable));
    co_return 0;
}

} // namespace

int main(int argc, char** argv) {
    std::string_view const kind = argc > 1 ? argv[1] : "";
    if (argc < 4 || argc > 6 || (kind != "s3" && kind != "dynamodb")) {
        std::fprintf(stderr, "usage: fenced_writer s3|dynamodb BUCKET|TABLE NAME [WORK_SECONDS [TTL_SECONDS]]\n");
        return 64;
    }
    settings s;
    s.name = argv[3];
    if (argc > 4) s.work = std::chrono::seconds(std::atoi(argv[4]));
    if (argc > 5) s.ttl = std::chrono::seconds(std::atoi(argv[5]));
    if (s.work.count() < 0 || s.ttl.count() <= 0) {
        std::fprintf(stderr, "fenced_writer: WORK_SECONDS must not be negative and TTL_SECONDS must be positive\n");
        return 64;
    }
    asio::io_context ioc;
    int rc = 1;
    auto report = [&](std::exception_ptr failure, int result) {
        try {
            if (failure) std::rethrow_exception(failure);
            rc = result;
        } catch (std::exception const& e) {
            std::fprintf(stderr, "fenced_writer: %s\n", e.what());
        }
    };
    try {
        auto ex = ioc.get_executor();
        if (kind == "s3") {
            baton::s3_backend_params p;
            p.bucket = argv[2];
            baton::s3_backend store(ex, examples::aws_params(ex, "S3", std::move(p)));
            asio::co_spawn(ioc, run<baton::s3_lease, baton::s3_fenced>(store, s), report);
        } else {
            baton::dynamodb_backend_params p;
            p.table = argv[2];
            baton::dynamodb_backend store(ex, examples::aws_params(ex, "DynamoDB", std::move(p)));
            asio::co_spawn(ioc, run<baton::dynamodb_lease, baton::dynamodb_fenced>(store, s), report);
        }
    } catch (std::exception const& e) {
        std::fprintf(stderr, "fenced_writer: %s\n", e.what());
        return 64;
    }
    ioc.run();
    return rc;
}
