// A record store that records every write it applies, in order, for the
// simulation checkers: they see exactly what landed, not what clients believe.
#ifndef BATON_TEST_COMMON_RECORDING_BACKEND_HPP
#define BATON_TEST_COMMON_RECORDING_BACKEND_HPP

#include <baton/backend/memory.hpp>
#include <baton/store.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace test_common {

// One applied put: the key and the body written.
struct applied_put {
    std::string key;
    std::string body;
};
using applied_log = std::vector<applied_put>;

// The memory store, recording every put it applies. Sits under the faulty network.
class recording_backend {
public:
    using executor_type = baton::memory_backend::executor_type;

    recording_backend(baton::memory_backend inner, std::shared_ptr<applied_log> log)
        : inner_(std::move(inner)), log_(std::move(log)) {}

    executor_type get_executor() const { return inner_.get_executor(); }

    template <class Handler>
    void async_get(std::string key, Handler&& h) {
        inner_.async_get(std::move(key), std::forward<Handler>(h));
    }
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

private:
    baton::memory_backend inner_;
    std::shared_ptr<applied_log> log_;
};

static_assert(baton::record_store<recording_backend>);

} // namespace test_common

#endif
