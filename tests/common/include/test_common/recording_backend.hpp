// A record store that records every write it applies, in order, for the
// simulation checkers: they see exactly what landed, not what clients believe.
#ifndef BATON_TEST_COMMON_RECORDING_BACKEND_HPP
#define BATON_TEST_COMMON_RECORDING_BACKEND_HPP

#include <baton/backend/memory.hpp>
#include <baton/recipe/detail/fenced_machine.hpp>
#include <baton/sim/faulty_backend.hpp>
#include <baton/sim/scheduler.hpp>
#include <baton/store/record_store.hpp>

#include <algorithm>
#include <chrono>

#include <cstdint>
#include <map>
#include <optional>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace test_common {

// A record store that passes every operation to `Inner`: the stores below replace `async_put`,
// the one they watch.
template <class Inner>
class forwarding_store {
public:
    using executor_type = typename Inner::executor_type;

    explicit forwarding_store(Inner inner) : inner_(std::move(inner)) {}

    executor_type get_executor() const { return inner_.get_executor(); }
    template <class Handler>
    void async_get(std::string key, Handler&& h) {
        inner_.async_get(std::move(key), std::forward<Handler>(h));
    }
    template <class Handler>
    void async_erase(std::string key, baton::precondition pc, Handler&& h) {
        inner_.async_erase(std::move(key), std::move(pc), std::forward<Handler>(h));
    }
    template <class Handler>
    void async_list(std::string prefix, std::string after, std::size_t limit, Handler&& h) {
        inner_.async_list(std::move(prefix), std::move(after), limit, std::forward<Handler>(h));
    }
    template <class Handler>
    void async_probe(Handler&& h) {
        inner_.async_probe(std::forward<Handler>(h));
    }

protected:
    Inner inner_;
};

// One applied put: the key and the body written.
struct applied_put {
    std::string key;
    std::string body;
};
using applied_log = std::vector<applied_put>;

// The memory store, recording every put it applies. Sits under the faulty network.
// `Hook`: it also offers the fenced-write hook with DynamoDB's semantics (the token of a
// fenced record stands for the item's `fence` attribute), checked atomically; `naive`: the
// condition people write first (a fence at most the token, no version), only to prove that
// the simulation catches what it lets through.
enum class fenced_hook { none, dynamodb, naive };

template <fenced_hook Hook>
class basic_recording_backend : public forwarding_store<baton::memory_backend> {
public:
    basic_recording_backend(baton::memory_backend inner, std::shared_ptr<applied_log> log)
        : forwarding_store(std::move(inner)), log_(std::move(log)) {}

    template <class Handler>
    void async_put(std::string key, std::string body, baton::precondition pc, Handler&& h) {
        auto log = log_;
        auto entry = applied_put{key, body};
        inner_.async_put(std::move(key), std::move(body), std::move(pc),
                         [log, entry = std::move(entry), h = std::forward<Handler>(h)](baton::error_code ec, baton::put_result r) mutable {
                             if (!ec) log->push_back(std::move(entry));
                             std::move(h)(ec, std::move(r));
                         });
    }
    template <class Handler>
        requires(Hook != fenced_hook::none)
    void async_put_fenced(std::string key, std::string body, std::uint64_t token, std::optional<std::string> known, Handler&& h) {
        // As fenced_put_item_request's condition: absent, a lower fence, or the known version with a fence at most `token`.
        auto const cur = inner_.peek(key);
        bool ok = !cur;
        if (cur) {
            baton::detail::fenced_body b;
            baton::diagnostics d;
            bool const has_fence = !baton::detail::decode_fenced(cur->body, b, d);
            ok = Hook == fenced_hook::naive
                     ? has_fence && b.token <= token
                     : (has_fence && b.token < token) || (known && cur->version == *known && (!has_fence || b.token <= token));
        }
        // The memory store applies a put in its initiating function: the check and the write are one step.
        auto pc = !ok ? baton::precondition::matches("refused by the fence condition")
                      : cur ? baton::precondition::matches(cur->version) : baton::precondition::absent();
        async_put(std::move(key), std::move(body), std::move(pc), std::forward<Handler>(h));
    }

private:
    std::shared_ptr<applied_log> log_;
};

/** The faults of one simulated run of a write recipe, drawn from `sched`: each fault class on
    in about 3 runs of 5, at a random rate; delays always; stale reads in 1 of 5; in 3 of 10
    runs, requests that wait in the network for up to a minute, far beyond the client's 2 s
    timeout (writes that land after their sender gave up). Odd seeds answer refusals without
    the current record, as S3 and dynalite do (a seed bit, not a draw: the rest of each seed's
    run is as before). */
inline baton::sim::fault_profile random_write_faults(baton::sim::scheduler& sched) {
    using namespace std::chrono_literals;
    baton::sim::fault_profile fp;
    auto maybe = [&](double hi) { return sched.uniform() < 0.6 ? sched.uniform() * hi : 0.0; };
    fp.drop_request = maybe(0.08);
    fp.drop_response = maybe(0.08);
    fp.conflict = maybe(0.05);
    fp.precondition = maybe(0.03);
    fp.server_error = maybe(0.05);
    fp.unavailable = maybe(0.05);
    fp.throttle = maybe(0.05);
    fp.throttle_applied = maybe(0.03);
    fp.duplicate = maybe(0.05);
    fp.delay = std::max(maybe(0.1), 0.02);
    if (sched.uniform() < 0.2) fp.stale_read = sched.uniform() * 0.2;
    fp.max_extra_delay = sched.uniform() < 0.3 ? 60s : 3s;
    fp.refusals_carry_record = sched.seed() % 2 == 0;
    return fp;
}

/** A client's view of a shared store that notes which of the client's calls sent each write:
    at a put's initiation, the nonce of its body (`NonceOf(body)`, empty when it has none) is
    attributed to the call named by `*current` (the client runs one call at a time). A
    simulation then knows, for every write the store applied (its recording log), which call
    sent it, however late it landed, and can check it against what that call was told.
*/
template <class Inner, class NonceOf>
class attributing_store : public forwarding_store<Inner> {
public:
    using attributions = std::map<std::string, std::string>; // nonce -> call

    attributing_store(Inner inner, std::shared_ptr<attributions> to, std::shared_ptr<std::string> current)
        : forwarding_store<Inner>(std::move(inner)), to_(std::move(to)), current_(std::move(current)) {}
    template <class Handler>
    void async_put(std::string key, std::string body, baton::precondition pc, Handler&& h) {
        if (auto n = NonceOf{}(body); !n.empty()) (*to_)[n] = *current_;
        this->inner_.async_put(std::move(key), std::move(body), std::move(pc), std::forward<Handler>(h));
    }

private:
    std::shared_ptr<attributions> to_;
    std::shared_ptr<std::string> current_;
};

using recording_backend = basic_recording_backend<fenced_hook::none>;
using hooked_recording_backend = basic_recording_backend<fenced_hook::dynamodb>;
using naive_hooked_recording_backend = basic_recording_backend<fenced_hook::naive>;
static_assert(baton::record_store<recording_backend>);
static_assert(baton::record_store<hooked_recording_backend>);

} // namespace test_common

#endif
