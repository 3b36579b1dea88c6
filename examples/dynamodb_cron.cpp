// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
//
// "Run once across the fleet" on DynamoDB: every host's cron starts this at
// the same minute; one of them runs the job for the period, the others see it
// running or already done, and exit.
//
//   dynamodb_cron TABLE JOB PERIOD [WORK_SECONDS]
//
// PERIOD names the run and sorts as text (2026-11-25, 2026-11-25T02). Prints
// `running: JOB for PERIOD with token N` when it starts the job, and then one of
//   ran: JOB for PERIOD with token N          this process ran it (exit 0)
//   done already: JOB for PERIOD (token N)    someone ran it for this period or a later one (exit 0)
//   running elsewhere: JOB (OWNER)            another process still held the job's lease when
//                                             this one stopped waiting (exit 0)
//   lost: JOB for PERIOD ...                  the lease was lost while running, or the store
//                                             refused the completion mark: a successor had
//                                             taken over (exit 3)
//
// How: a lease on `cron/JOB`, waited for at most ttl x 2 + ttl: long enough
// to take over from a holder that crashed (a contender takes over a record left
// unchanged for ttl x max_clock_rate_skew), so a crash never blocks later runs;
// starts that queue behind a running job find it done once they get the
// lease. Then the job's completion mark `cron/JOB/done` is read and, after the
// job, written as a fenced write with the lease's token: a process that was
// paused past its lease while a successor took over cannot write its mark over
// the successor's. A crash after the job but before the mark runs the job again
// at the next start (at least once); make the job idempotent, or fence its own
// writes with the token as this program fences the mark.
//
// The table (partition key `pk`, a string) must exist; endpoint, region and
// credentials come from the environment (examples/aws_settings.hpp), e.g.
// against the local dynalite of tests/servers:
//   AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 AWS_REGION=us-east-1
//   AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x build/examples/dynamodb_cron jobs nightly-report 2026-11-25

#include "aws_settings.hpp"

#include <baton/dynamodb.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

using lease_type = asio::use_awaitable_t<>::as_default_on_t<baton::dynamodb_lease>;
using fenced_type = asio::use_awaitable_t<>::as_default_on_t<baton::dynamodb_fenced>;
constexpr auto with_error = asio::as_tuple(asio::use_awaitable); // outcomes the program handles itself

namespace {

// The job itself: here it only takes its time.
asio::awaitable<void> nightly_job(std::chrono::seconds work) {
    asio::steady_timer t(co_await asio::this_coro::executor, work);
    co_await t.async_wait(asio::use_awaitable);
}

// Runs the job for `period` unless its mark says it is done; the caller holds the lease.
asio::awaitable<int> while_held(lease_type& lease, fenced_type& marks, baton::lease_grant const& grant,
                                std::string const& job, std::string const& period, std::chrono::seconds work) {
    std::string const mark = "cron/" + job + "/done";
    if (auto done = co_await marks.async_read(mark); done && done->value >= period) {
        std::printf("done already: %s for %s (token %llu)\n", job.c_str(), done->value.c_str(),
                    static_cast<unsigned long long>(done->token));
        co_return 0;
    }

    // The job runs while the lease is held; losing the lease stops it. The job's own failure is
    // caught and rethrown after the race, which ends only when one side completes without throwing.
    auto job_failure = [work]() -> asio::awaitable<std::exception_ptr> {
        try {
            co_await nightly_job(work);
        } catch (...) {
            co_return std::current_exception();
        }
        co_return nullptr;
    };
    std::printf("running: %s for %s with token %llu\n", job.c_str(), period.c_str(),
                static_cast<unsigned long long>(grant.fencing_token));
    std::fflush(stdout);
    auto ended = co_await (job_failure() || lease.async_wait_lost(with_error));
    if (ended.index() == 0 && std::get<0>(ended)) std::rethrow_exception(std::get<0>(ended));
    if (ended.index() == 1) {
        std::printf("lost: %s for %s: the lease ended while the job ran; not marked done\n", job.c_str(), period.c_str());
        co_return 3;
    }
    auto [ec, w] = co_await marks.async_write(mark, period, grant.fencing_token, with_error);
    if (ec == baton::errc::fenced) {
        std::printf("lost: %s for %s: token %llu was superseded by %llu; not marked done\n", job.c_str(),
                    period.c_str(), static_cast<unsigned long long>(grant.fencing_token),
                    static_cast<unsigned long long>(w.winning_token));
        co_return 3;
    }
    if (ec) throw boost::system::system_error(ec, "marking " + mark + (w.diag.message.empty() ? "" : ": " + w.diag.message));
    std::printf("ran: %s for %s with token %llu\n", job.c_str(), period.c_str(),
                static_cast<unsigned long long>(grant.fencing_token));
    co_return 0;
}

asio::awaitable<int> run(std::string table, std::string job, std::string period, std::chrono::seconds work) {
    auto ex = co_await asio::this_coro::executor;
    baton::dynamodb_backend_params p;
    p.table = std::move(table);
    baton::dynamodb_backend store(ex, examples::aws_params(ex, "DynamoDB", std::move(p)));
    baton::lease_options o;
    o.key = "cron/" + job;
    o.owner = "cron";
    o.ttl = std::chrono::seconds(10);
    o.max_clock_rate_skew = 2.0;
    lease_type lease(ex, store, o);
    fenced_type marks(ex, store);

    baton::acquire_options wait_for;
    wait_for.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(o.ttl * (o.max_clock_rate_skew + 1));
    auto [ec, grant] = co_await lease.async_acquire(wait_for, with_error);
    if (ec == baton::errc::timeout) {
        auto holder = co_await lease.async_inspect();
        std::printf("running elsewhere: %s (%s)\n", job.c_str(), holder ? holder->owner.c_str() : "just finished");
        co_return 0;
    }
    if (ec) throw boost::system::system_error(ec, "acquiring cron/" + job);

    // Every way out releases the lease, so the next start gets it at once (after a loss the
    // release is refused, harmlessly: the successor holds it).
    int rc = 1;
    std::exception_ptr failure;
    try {
        rc = co_await while_held(lease, marks, grant, job, period, work);
    } catch (...) {
        failure = std::current_exception();
    }
    co_await lease.async_release(with_error);
    if (failure) std::rethrow_exception(failure);
    co_return rc;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 4 || argc > 5) {
        std::fprintf(stderr, "usage: dynamodb_cron TABLE JOB PERIOD [WORK_SECONDS]\n");
        return 64;
    }
    int const work = argc == 5 ? std::atoi(argv[4]) : 1;
    if (work < 0) {
        std::fprintf(stderr, "dynamodb_cron: WORK_SECONDS must not be negative\n");
        return 64;
    }
    asio::io_context ioc;
    int rc = 1;
    asio::co_spawn(ioc, run(argv[1], argv[2], argv[3], std::chrono::seconds(work)),
                   [&](std::exception_ptr failure, int result) {
                       try {
                           if (failure) std::rethrow_exception(failure);
                           rc = result;
                       } catch (std::exception const& e) {
                           std::fprintf(stderr, "dynamodb_cron: %s\n", e.what());
                       }
                   });
    ioc.run();
    return rc;
}
