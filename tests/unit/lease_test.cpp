// basic_lease, driven deterministically in virtual time. One unit (the lease's headers compile
// once for all), in a file per subject under lease/: the protocol (round trips, the time model,
// loss, ambiguous outcomes, try-once, foreign records), term boundaries, cancellation and
// completion, observers, fairness, and the sim kit itself.
#include <baton/backend/memory.hpp>
#include <baton/memory.hpp>
#include <baton/recipe/detail/lease_record.hpp>
#include <baton/recipe/lease.hpp>
#include <baton/recipe/lease_metrics.hpp>
#include <baton/sim.hpp>

#include <doctest/doctest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace sim = baton::sim;
using namespace std::chrono_literals;
using baton::errc;
using baton::error_code;
using baton::lease_state;
using sim::virtual_clock;
using vtime = virtual_clock::time_point;

using sim_lease = baton::basic_lease<baton::memory_backend, sim::manual_clock>;
using faulty_store = sim::faulty_backend<baton::memory_backend>;
using faulty_lease = baton::basic_lease<faulty_store, sim::manual_clock>;

constexpr auto ttl = std::chrono::milliseconds(20000);
constexpr auto renew_interval = std::chrono::milliseconds(6666);  // ttl / 3
constexpr auto renew_deadline = std::chrono::milliseconds(13333); // 2/3 ttl
constexpr auto poll_every = std::chrono::milliseconds(1000);
constexpr auto takeover_window = std::chrono::milliseconds(40000); // ttl x max_clock_rate_skew

baton::lease_options options(std::string owner, std::uint64_t seed) {
    baton::lease_options o;
    o.key = "jobs/nightly";
    o.owner = std::move(owner);
    o.value = "addr-of-" + o.owner;
    o.ttl = ttl;
    o.poll_interval = poll_every;
    o.max_clock_rate_skew = 2.0;
    o.random_seed = seed;
    return o;
}

struct acquired {
    std::optional<error_code> ec;
    baton::lease_grant grant;
    vtime at{};
    int calls = 0;
};
auto on_acquired(acquired& r) {
    return [&r](error_code ec, baton::lease_grant g) {
        r.ec = ec;
        r.grant = g;
        r.at = virtual_clock::now();
        ++r.calls;
    };
}

struct completed {
    std::optional<error_code> ec;
    vtime at{};
    int calls = 0;
};
auto on_completed(completed& r) {
    return [&r](error_code ec) {
        r.ec = ec;
        r.at = virtual_clock::now();
        ++r.calls;
    };
}

// Acquires `l` (expected free or released) and checks it worked.
template <class Lease>
baton::lease_grant acquire_now(sim::scheduler& sched, Lease& l) {
    acquired r;
    l.async_acquire(on_acquired(r));
    sched.run_for(50ms);
    REQUIRE(r.ec.has_value());
    REQUIRE_MESSAGE(!*r.ec, r.ec->message());
    return r.grant;
}

template <class Lease>
void release_now(sim::scheduler& sched, Lease& l) {
    completed r;
    l.async_release(on_completed(r));
    sched.run_for(50ms);
    REQUIRE(r.ec.has_value());
    REQUIRE_MESSAGE(!*r.ec, r.ec->message());
}

std::optional<baton::detail::lease_body> stored_body(sim::scheduler& sched, baton::memory_backend& store) {
    std::optional<baton::record> found;
    // Note: this read is counted in store.counts() like any other.
    store.async_get("jobs/nightly", [&](error_code ec, baton::get_result r) {
        REQUIRE_FALSE(ec);
        found = r.found;
    });
    sched.run_for(0ns);
    if (!found) return std::nullopt;
    baton::detail::lease_body b;
    baton::diagnostics d;
    REQUIRE_FALSE(baton::detail::decode_lease_body(found->body, b, d));
    return b;
}

} // namespace

#include "lease/protocol.hpp"
#include "lease/terms.hpp"
#include "lease/completion.hpp"
#include "lease/observers.hpp"
#include "lease/fairness.hpp"
#include "lease/sim_kit.hpp"
