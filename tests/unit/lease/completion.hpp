// Part of the lease's unit tests (tests/unit/lease_test.cpp, one unit): cancellation, completion
// tokens, destruction, and completions that never run inside an initiating call.
#ifndef BATON_TESTS_UNIT_LEASE_COMPLETION_HPP
#define BATON_TESTS_UNIT_LEASE_COMPLETION_HPP

TEST_SUITE("lease") {

// ---- cancellation -------------------------------------------------------------

TEST_CASE("cancelling a waiting acquire completes it with operation_aborted; the object can acquire later") {
    sim::scheduler sched(19);
    baton::memory_backend store(sched.get_executor());
    asio::cancellation_signal sig; // outlives the operations it can cancel
    sim_lease a(sched.get_executor(), store, options("a", 28));
    acquire_now(sched, a);
    sim_lease b(sched.get_executor(), store, options("b", 29));
    acquired r;
    b.async_acquire(asio::bind_cancellation_slot(sig.slot(), on_acquired(r)));
    sched.run_for(5s);
    REQUIRE_FALSE(r.ec.has_value());
    sig.emit(asio::cancellation_type::terminal);
    CHECK_FALSE(r.ec.has_value()); // not inline
    sched.run_for(0ns);
    REQUIRE(r.ec.has_value());
    CHECK(*r.ec == asio::error::operation_aborted);
    CHECK(b.state() == lease_state::idle);
    auto const gets = store.counts().gets;
    sched.run_for(10s);
    CHECK(store.counts().gets == gets); // no more polling
    sig.emit(asio::cancellation_type::terminal); // a late emit is harmless
    sched.run_for(0ns);
    CHECK(r.calls == 1);

    release_now(sched, a);
    auto const g = acquire_now(sched, b);
    CHECK(g.fencing_token == 2);
    CHECK(b.is_held());
}

TEST_CASE("cancelling an async_wait_lost waiter leaves the lease alone") {
    sim::scheduler sched(20);
    baton::memory_backend store(sched.get_executor());
    asio::cancellation_signal sig;
    sim_lease a(sched.get_executor(), store, options("a", 30));
    acquire_now(sched, a);
    completed cancelled, other;
    a.async_wait_lost(asio::bind_cancellation_slot(sig.slot(), on_completed(cancelled)));
    a.async_wait_lost(on_completed(other));
    sched.run_for(1s);
    sig.emit(asio::cancellation_type::terminal);
    sched.run_for(0ns);
    REQUIRE(cancelled.ec.has_value());
    CHECK(*cancelled.ec == asio::error::operation_aborted);
    CHECK_FALSE(other.ec.has_value());
    sched.run_for(30s);
    CHECK(a.is_held());
    CHECK_FALSE(other.ec.has_value());
    release_now(sched, a);
    REQUIRE(other.ec.has_value());
    CHECK(*other.ec == errc::released);
    CHECK(cancelled.calls == 1);
}

TEST_CASE("a cancellation signal destroyed right after emit: the waiter still completes aborted") {
    // The cancellation runs later, posted; the emitter owes the operation nothing after emit.
    sim::scheduler sched(22);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 32));
    acquire_now(sched, a);
    completed cancelled;
    {
        auto sig = std::make_unique<asio::cancellation_signal>();
        a.async_wait_lost(asio::bind_cancellation_slot(sig->slot(), on_completed(cancelled)));
        sched.run_for(1s);
        sig->emit(asio::cancellation_type::terminal);
    } // the signal, and the slot the waiter was bound to, are gone before the cancellation runs
    sched.run_for(0ns);
    REQUIRE(cancelled.ec.has_value());
    CHECK(*cancelled.ec == asio::error::operation_aborted);
    CHECK(cancelled.calls == 1);
    CHECK(a.is_held());
    release_now(sched, a);
}

// ---- completion tokens ------------------------------------------------------------

TEST_CASE("asio::deferred: nothing is sent until the operation is invoked") {
    sim::scheduler sched(21);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 31));
    auto op = a.async_acquire(asio::deferred);
    auto rel = a.async_release(asio::deferred);
    sched.run_for(1s);
    CHECK(store.counts().puts == 0);
    CHECK(a.state() == lease_state::idle);
    acquired r;
    std::move(op)(on_acquired(r));
    sched.run_for(1ms);
    REQUIRE(r.ec.has_value());
    CHECK_FALSE(*r.ec);
    CHECK(r.grant.fencing_token == 1);
    completed done;
    std::move(rel)(on_completed(done));
    sched.run_for(1ms);
    REQUIRE(done.ec.has_value());
    CHECK_FALSE(*done.ec);
    CHECK(a.state() == lease_state::released);
}

TEST_CASE("asio::use_future with a steady-clock lease on a polled io_context") {
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    auto poll_until_ready = [&](auto& f) {
        for (int i = 0; i < 1000 && f.wait_for(0s) != std::future_status::ready; ++i) ioc.poll();
        return f.wait_for(0s) == std::future_status::ready;
    };
    baton::basic_lease<baton::memory_backend> a(ioc.get_executor(), store, options("a", 32));
    baton::basic_lease<baton::memory_backend> b(ioc.get_executor(), store, options("b", 33));

    std::future<baton::lease_grant> got = a.async_acquire(asio::use_future);
    REQUIRE(poll_until_ready(got));
    auto const g = got.get();
    CHECK(g.fencing_token == 1);
    CHECK(g.remaining > 0ns);
    CHECK(a.is_held());

    std::future<baton::lease_grant> refused = b.async_try_acquire(asio::use_future);
    REQUIRE(poll_until_ready(refused));
    try {
        refused.get();
        FAIL("expected held_by_other");
    } catch (boost::system::system_error const& e) {
        CHECK(e.code() == errc::held_by_other);
    }

    std::future<void> released = a.async_release(asio::use_future);
    REQUIRE(poll_until_ready(released));
    CHECK_NOTHROW(released.get());
    CHECK(a.state() == lease_state::released);
}

TEST_CASE("rebind_executor: as_default_on_t makes use_awaitable the default token of every recipe") {
    using awaitable = asio::use_awaitable_t<>;
    using lease_t = awaitable::as_default_on_t<baton::memory_lease>;
    using election_t = awaitable::as_default_on_t<baton::memory_election>;
    using kv_t = awaitable::as_default_on_t<baton::memory_kv>;
    using fenced_t = awaitable::as_default_on_t<baton::memory_fenced>;
    static_assert(std::is_same_v<lease_t, baton::basic_lease<baton::memory_backend, baton::steady_clock, baton::standard_retry,
                                                             baton::backend_signer, awaitable::executor_with_default<asio::any_io_executor>>>);
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    std::uint64_t token = 0, version = 0, leader_token = 0;
    bool finished = false;
    std::exception_ptr failure;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            lease_t lease(ex, store, options("a", 36));
            baton::lease_grant g = co_await lease.async_acquire(); // no token: use_awaitable
            token = g.fencing_token;
            kv_t kv(ex, store);
            baton::kv_write_result w = co_await kv.async_put("config", "v1");
            version = w.version;
            fenced_t fenced(ex, store);
            co_await fenced.async_write("output", "done", token);
            co_await lease.async_release();
            election_t election(ex, store, options("b", 37));
            baton::lease_grant term = co_await election.async_campaign();
            leader_token = term.fencing_token;
            co_await election.async_resign();
        },
        [&](std::exception_ptr e) {
            finished = true;
            failure = e;
        });
    ioc.run();
    REQUIRE(finished);
    CHECK_FALSE(failure);
    CHECK(token == 1);
    CHECK(version == 1);
    CHECK(leader_token == 2); // the same key, after the release: the next term
    CHECK(store.peek("output").has_value());
}

TEST_CASE("asio::use_awaitable in a coroutine") {
    sim::scheduler sched(22);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 34));
    sim_lease b(sched.get_executor(), store, options("b", 35));
    std::uint64_t token = 0;
    error_code try_ec, wait_ec;
    bool finished = false;
    std::exception_ptr failure;
    asio::co_spawn(
        sched.get_executor(),
        [&]() -> asio::awaitable<void> {
            auto g = co_await a.async_acquire(asio::use_awaitable);
            token = g.fencing_token;
            auto [ec, unused] = co_await b.async_try_acquire(asio::as_tuple(asio::use_awaitable));
            (void)unused;
            try_ec = ec;
            co_await a.async_release(asio::use_awaitable);
            try {
                co_await a.async_wait_lost(asio::use_awaitable);
            } catch (boost::system::system_error const& e) {
                wait_ec = e.code();
            }
            auto g2 = co_await b.async_acquire(asio::use_awaitable);
            token = g2.fencing_token;
        },
        [&](std::exception_ptr e) {
            finished = true;
            failure = e;
        });
    sched.run_for(1s);
    REQUIRE(finished);
    CHECK_FALSE(failure);
    CHECK(try_ec == errc::held_by_other);
    CHECK(wait_ec == errc::not_held);
    CHECK(token == 2);
    CHECK(b.is_held());
}

TEST_CASE("handlers never run inside the initiating call") {
    sim::scheduler sched(23);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 36));
    sim_lease b(sched.get_executor(), store, options("b", 37));
    bool returned = false;
    int ran = 0;
    auto grant_cb = [&](error_code, baton::lease_grant) { CHECK(returned); ++ran; };
    auto plain_cb = [&](error_code) { CHECK(returned); ++ran; };
    auto info_cb = [&](error_code, std::optional<baton::lease_info>) { CHECK(returned); ++ran; };

    // Completions decided without any I/O.
    b.async_release(plain_cb);
    b.async_wait_lost(plain_cb);
    a.async_acquire(grant_cb);
    a.async_acquire(grant_cb); // operation_in_progress
    a.async_inspect(info_cb);
    a.async_inspect(info_cb); // operation_in_progress
    returned = true;
    CHECK(ran == 0);
    sched.run_for(1ms);
    CHECK(ran == 6);

    // And on a lease already held, and when trying a held one.
    returned = false;
    a.async_acquire(grant_cb);
    b.async_try_acquire(grant_cb);
    a.async_wait_lost(plain_cb);
    returned = true;
    sched.run_for(1ms);
    CHECK(ran == 8);
    returned = false;
    a.async_release(plain_cb); // also completes the waiter
    returned = true;
    sched.run_for(1ms);
    CHECK(ran == 10);
}

// ---- destruction ------------------------------------------------------------------

TEST_CASE("destroying a lease with an outstanding acquire completes it with operation_aborted") {
    sim::scheduler sched(24);
    baton::memory_backend store(sched.get_executor());
    sim_lease a(sched.get_executor(), store, options("a", 38));
    acquire_now(sched, a);

    SUBCASE("while waiting") {
        acquired r;
        {
            sim_lease b(sched.get_executor(), store, options("b", 39));
            b.async_acquire(on_acquired(r));
            sched.run_for(3s);
            REQUIRE_FALSE(r.ec.has_value());
        }
        CHECK_FALSE(r.ec.has_value()); // not inline, even from the destructor
        sched.run_for(10s);
        REQUIRE(r.ec.has_value());
        CHECK(*r.ec == asio::error::operation_aborted);
        CHECK(r.calls == 1);
    }
    SUBCASE("with a write in flight, and a lost-lease waiter") {
        sim::fault_profile slow;
        slow.min_latency = 100ms;
        slow.max_latency = 200ms;
        faulty_store net(store, sched.get_executor(), 80, slow);
        acquired r;
        completed w;
        {
            faulty_lease c(sched.get_executor(), net, options("c", 40));
            c.async_acquire(on_acquired(r));
            c.async_wait_lost(on_completed(w)); // not held: completes with not_held
            sched.run_for(50ms);                // the create is still travelling
            REQUIRE_FALSE(r.ec.has_value());
        }
        sched.run_for(10s); // the write's answer arrives after the object is gone
        REQUIRE(r.ec.has_value());
        CHECK(*r.ec == asio::error::operation_aborted);
        CHECK(r.calls == 1);
        REQUIRE(w.ec.has_value());
        CHECK(*w.ec == errc::not_held);
    }
    SUBCASE("a held lease's waiters") {
        completed w;
        std::optional<sim_lease> d;
        d.emplace(sched.get_executor(), store, options("d", 41));
        release_now(sched, a);
        acquire_now(sched, *d);
        d->async_wait_lost(on_completed(w));
        d.reset();
        sched.run_for(1ms);
        REQUIRE(w.ec.has_value());
        CHECK(*w.ec == asio::error::operation_aborted);
        CHECK_FALSE(stored_body(sched, store)->released); // abandoned, not released
    }
}

} // TEST_SUITE

namespace {
// Answers every request at once, inside the call, with `answer_with`: a backend that breaks the
// rule that completions come later. The lease must still never complete inside its own call.
struct inline_answering_backend {
    using executor_type = asio::any_io_executor;
    executor_type ex;
    error_code answer_with;
    executor_type get_executor() const { return ex; }
    template <class H>
    void async_get(std::string, H&& h) { std::forward<H>(h)(answer_with, baton::get_result{}); }
    template <class H>
    void async_put(std::string, std::string, baton::precondition, H&& h) { std::forward<H>(h)(answer_with, baton::put_result{}); }
    template <class H>
    void async_erase(std::string, baton::precondition, H&& h) { std::forward<H>(h)(answer_with, baton::erase_result{}); }
    template <class H>
    void async_list(std::string, std::string, std::size_t, H&& h) { std::forward<H>(h)(answer_with, baton::list_page{}); }
    template <class H>
    void async_probe(H&& h) { std::forward<H>(h)(answer_with, baton::capabilities{}); }
};
} // namespace

TEST_CASE("on a real io_context an answer's completion runs without a hop, yet never inside an initiating call") {
    // The lease hands an acquisition or release that a backend's answer completes to its handler
    // by dispatch. Each handler here starts the next operation and checks that its handler has
    // not run by the time the call returns: the chain acquire -> release -> acquire ... never nests.
    asio::io_context ioc;
    baton::memory_backend store(ioc.get_executor());
    baton::basic_lease<baton::memory_backend> a(ioc.get_executor(), store, options("a", 34));
    int cycles = 0, inline_calls = 0, depth = 0, max_depth = 0;
    std::function<void()> next_acquire;
    // Each call gets a flag that is true until the call returns; a handler that sees it true ran inside.
    auto release = [&] {
        auto inside = std::make_shared<bool>(true);
        a.async_release([&, inside](error_code ec) {
            if (*inside) ++inline_calls;
            REQUIRE_FALSE(ec);
            CHECK(a.state() == lease_state::released);
            if (++cycles < 20) next_acquire();
        });
        *inside = false;
    };
    next_acquire = [&] {
        auto inside = std::make_shared<bool>(true);
        a.async_acquire([&, inside](error_code ec, baton::lease_grant g) {
            if (*inside) ++inline_calls;
            REQUIRE_FALSE(ec);
            CHECK(g.fencing_token == static_cast<std::uint64_t>(cycles + 1));
            CHECK(a.is_held());
            max_depth = std::max(max_depth, ++depth);
            release();
            --depth;
        });
        *inside = false;
    };
    next_acquire();
    ioc.run();
    CHECK(cycles == 20);
    CHECK(inline_calls == 0);
    CHECK(max_depth == 1);
    CHECK(a.state() == lease_state::released);
}

TEST_CASE("a backend that answers inside the call still never has the lease complete inside its own call") {
    asio::io_context ioc;
    inline_answering_backend store{ioc.get_executor(), error_code(errc::invalid_argument)};
    baton::basic_lease<inline_answering_backend> a(ioc.get_executor(), store, options("a", 35));
    bool done = false, returned = false, inside = false;
    // Started from a handler: inside io_context::run, where a dispatch would run at once.
    asio::post(ioc, [&] {
        a.async_try_acquire([&](error_code ec, baton::lease_grant) {
            done = true;
            inside = !returned;
            CHECK(ec == errc::invalid_argument);
        });
        returned = true;
    });
    ioc.run();
    CHECK(done);
    CHECK_FALSE(inside);
}

#endif
