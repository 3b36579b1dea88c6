// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
//
// Leader election with a value on S3, the way Vault's HA lock works: every
// instance campaigns with its own address as the value; the leader serves, and
// the standbys know where the leader is (to redirect clients) and take over
// when it resigns or stops renewing.
//
//   s3_leader BUCKET ADDRESS [SERVE_SECONDS]
//
// Campaigns for the key `service/leader` in BUCKET (which must exist). While
// another instance leads it prints `standby: the leader is ADDRESS (token N)`
// whenever the leader changes; once elected, `leader: ADDRESS serves with token
// N`, serves SERVE_SECONDS (default 10), then resigns so a standby takes over
// at once. If leadership is lost first (renewals failed past the renew
// deadline), it stops serving at once and exits 3.
//
// The store and its credentials come from the environment (examples/aws_settings.hpp),
// e.g. against the local Ceph RGW of tests/servers:
//   AWS_ENDPOINT_URL_S3=http://127.0.0.1:7480 AWS_REGION=us-east-1
//   AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... build/examples/s3_leader my-bucket http://10.0.0.1:8200

#include "aws_settings.hpp"

#include <baton/s3.hpp>

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
#include <optional>
#include <string>
#include <tuple>
#include <variant>

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

// Every operation of this election is awaited without naming a token.
using election = asio::use_awaitable_t<>::as_default_on_t<baton::s3_election>;

namespace {

bool leads(std::optional<baton::lease_info> const& l) { return l && !l->released && !l->expired; }

// Prints the leader each time it changes; never returns (the campaign's win cancels it). A read
// that fails is reported and tried again a poll interval later, so a standby never goes quiet.
asio::awaitable<void> follow(election& e) {
    std::optional<baton::lease_info> seen;
    bool first = true;
    for (;;) {
        std::tuple<boost::system::error_code, std::optional<baton::lease_info>> answer;
        if (first) answer = co_await e.async_leader(asio::as_tuple(asio::use_awaitable));
        else answer = co_await e.async_wait_for_change(seen, asio::as_tuple(asio::use_awaitable));
        auto& [ec, now] = answer;
        if (ec == asio::error::operation_aborted) co_return; // the campaign was won
        if (ec) {
            std::fprintf(stderr, "standby: cannot read the leader (%s); trying again\n", ec.message().c_str());
            asio::steady_timer pause(co_await asio::this_coro::executor, e.lease().options().poll_interval);
            co_await pause.async_wait(asio::use_awaitable);
            continue;
        }
        first = false;
        seen = std::move(now);
        if (leads(seen))
            std::printf("standby: the leader is %s (token %llu)\n", seen->value.c_str(),
                        static_cast<unsigned long long>(seen->fencing_token));
        std::fflush(stdout);
    }
}

asio::awaitable<int> run(std::string bucket, std::string address, std::chrono::seconds serve_for) {
    auto ex = co_await asio::this_coro::executor;
    baton::s3_backend_params p;
    p.bucket = std::move(bucket);
    baton::lease_options o;
    o.key = "service/leader";
    o.owner = address;
    o.value = address; // what standbys read: where to send clients
    o.ttl = std::chrono::seconds(10);
    election e(ex, baton::s3_backend(ex, examples::aws_params(ex, "S3", std::move(p))), o);

    // as_tuple: the campaign's outcome, failure included, ends the race (and stops following).
    auto won = co_await (e.async_campaign(asio::as_tuple(asio::use_awaitable)) || follow(e));
    // Following only ends on its own if its wait was cancelled from outside: campaign alone then.
    std::tuple<boost::system::error_code, baton::lease_grant> campaign;
    if (won.index() == 0) campaign = std::get<0>(won);
    else campaign = co_await e.async_campaign(asio::as_tuple(asio::use_awaitable));
    auto const& [ec, term] = campaign;
    if (ec) throw boost::system::system_error(ec, "campaign");
    std::printf("leader: %s serves with token %llu\n", address.c_str(),
                static_cast<unsigned long long>(term.fencing_token));
    std::fflush(stdout);

    // Serve until the time is up or leadership is lost, whichever comes first.
    asio::steady_timer serving(ex, serve_for);
    auto ended = co_await (serving.async_wait(asio::use_awaitable) || e.async_wait_lost(asio::as_tuple(asio::use_awaitable)));
    if (ended.index() == 1) {
        std::printf("lost leadership: stopped serving\n");
        co_return 3;
    }
    co_await e.async_resign();
    std::printf("resigned: %s\n", address.c_str());
    co_return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 3 || argc > 4) {
        std::fprintf(stderr, "usage: s3_leader BUCKET ADDRESS [SERVE_SECONDS]\n");
        return 64;
    }
    int const serve = argc == 4 ? std::atoi(argv[3]) : 10;
    if (serve <= 0) {
        std::fprintf(stderr, "s3_leader: SERVE_SECONDS must be a positive number\n");
        return 64;
    }
    asio::io_context ioc;
    int rc = 1;
    asio::co_spawn(ioc, run(argv[1], argv[2], std::chrono::seconds(serve)),
                   [&](std::exception_ptr failure, int result) {
                       try {
                           if (failure) std::rethrow_exception(failure);
                           rc = result;
                       } catch (std::exception const& e) {
                           std::fprintf(stderr, "s3_leader: %s\n", e.what());
                       }
                   });
    ioc.run();
    return rc;
}
