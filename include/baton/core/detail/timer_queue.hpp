// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_CORE_DETAIL_TIMER_QUEUE_HPP
#define BATON_CORE_DETAIL_TIMER_QUEUE_HPP

// Layer: core, internal. One Asio timer for all the objects that share an executor.
//
// An object keeps one `entry` with a window [earliest, latest]. The queue waits on one timer
// until the least `latest`; when it fires it runs every entry whose window has opened, in
// order of `latest` (ties in the order they were scheduled). An entry never runs after its
// `latest` on account of the queue (only the executor can be late), and entries whose windows
// overlap share one wake-up. With thousands of leases on one executor, every wake-up of the
// reactor and every re-arm of its timer is a system call: the queue makes that one per batch
// instead of one per renewal, and each object holds an entry instead of Asio timers.
//
// Thread safety: the queue's state is under its mutex, so objects on an executor that runs
// on several threads may share it. An entry's callback runs on the queue's executor with a
// reference on its owner taken under that mutex, so an owner being destroyed is never called.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/query.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace baton::detail {

template <class TimerClock>
class timer_queue : public std::enable_shared_from_this<timer_queue<TimerClock>> {
public:
    using time_point = typename TimerClock::time_point;
    using executor_type = boost::asio::any_io_executor;
    static constexpr std::size_t not_queued = static_cast<std::size_t>(-1);

    /// One object's place in the queue; it lives in that object, which removes it before it dies.
    struct entry {
        time_point earliest{}, latest{};
        void* owner = nullptr;
        /// A reference on `owner`, or null once it is being destroyed (called under the queue's mutex).
        std::shared_ptr<void> (*lock)(void* owner) = nullptr;
        /// Runs the owner's due work; `now` is the timer clock's reading when the queue fired.
        void (*fire)(void* owner, time_point now) = nullptr;
        std::uint64_t seq = 0;
        std::size_t index = not_queued;
    };

    explicit timer_queue(executor_type ex) : ex_(ex), timer_(std::move(ex)) {}

    /// The executor the queue's timer and its callbacks run on.
    executor_type const& executor() const noexcept { return ex_; }

    timer_queue(timer_queue const&) = delete;
    timer_queue& operator=(timer_queue const&) = delete;

    /// Queues `e` to run once, in [earliest, latest] (replacing its window when already queued).
    void schedule(entry& e, time_point earliest, time_point latest) {
        std::lock_guard lk(mutex_);
        e.earliest = earliest < latest ? earliest : latest;
        e.latest = latest;
        e.seq = ++last_seq_;
        if (e.index == not_queued) {
            heap_.push_back(&e); // first: if it throws, `e` is left out, not half in
            e.index = heap_.size() - 1;
        }
        // A later key moves down, an earlier one up: one of the two does nothing.
        sift_down(sift_up(e.index));
        arm_for_earliest();
    }

    /// Takes `e` out of the queue; nothing when it is not queued.
    void remove(entry& e) {
        std::lock_guard lk(mutex_);
        if (e.index == not_queued) return;
        erase_at(e.index);
        arm_for_earliest();
    }

    /// How many entries are queued.
    std::size_t size() const {
        std::lock_guard lk(mutex_);
        return heap_.size();
    }

private:
    using timer = boost::asio::basic_waitable_timer<TimerClock, boost::asio::wait_traits<TimerClock>, executor_type>;

    struct due {
        std::shared_ptr<void> keep;
        entry* e;
    };

    static bool before(entry const* a, entry const* b) noexcept {
        return a->latest < b->latest || (a->latest == b->latest && a->seq < b->seq);
    }

    void place(std::size_t i, entry* e) noexcept {
        heap_[i] = e;
        e->index = i;
    }

    std::size_t sift_up(std::size_t i) noexcept {
        entry* const e = heap_[i];
        while (i > 0) {
            std::size_t const parent = (i - 1) / 2;
            if (!before(e, heap_[parent])) break;
            place(i, heap_[parent]);
            i = parent;
        }
        place(i, e);
        return i;
    }

    void sift_down(std::size_t i) noexcept {
        entry* const e = heap_[i];
        std::size_t const n = heap_.size();
        for (;;) {
            std::size_t child = 2 * i + 1;
            if (child >= n) break;
            if (child + 1 < n && before(heap_[child + 1], heap_[child])) ++child;
            if (!before(heap_[child], e)) break;
            place(i, heap_[child]);
            i = child;
        }
        place(i, e);
    }

    void erase_at(std::size_t i) noexcept {
        entry* const gone = heap_[i];
        entry* const last = heap_.back();
        heap_.pop_back();
        gone->index = not_queued;
        if (last == gone) return;
        place(i, last);
        sift_down(sift_up(i));
    }

    // Keeps one wait pending no later than the least `latest` while anything is queued, and
    // none when nothing is (a pending wait would keep `io_context::run` from returning).
    void arm_for_earliest() {
        if (heap_.empty()) {
            if (waiting_) {
                waiting_ = false;
                timer_.cancel();
            }
            return;
        }
        time_point const t = heap_.front()->latest;
        if (waiting_ && waiting_until_ <= t) return;
        timer_.expires_at(t);
        waiting_ = false; // until the new wait is in place (async_wait may throw)
        std::uint64_t const gen = ++wait_gen_;
        timer_.async_wait([w = this->weak_from_this(), gen](boost::system::error_code ec) {
            if (ec) return; // replaced by an earlier wait, or nothing left to wait for
            if (auto q = w.lock()) q->fire(gen);
        });
        waiting_ = true;
        waiting_until_ = t;
    }

    void fire(std::uint64_t gen) {
        std::vector<due> batch;
        std::shared_ptr<void> spare; // a reference that must not die under the mutex (its owner's destructor takes it)
        time_point now;
        {
            std::lock_guard lk(mutex_);
            if (gen == wait_gen_) waiting_ = false;
            now = TimerClock::now();
            // In order of `latest`; the first entry whose window has not opened ends the batch
            // (one further down may have opened: it still runs by its own `latest`).
            while (!heap_.empty() && !(now < heap_.front()->earliest)) {
                entry* const e = heap_.front();
                std::shared_ptr<void> keep = e->lock(e->owner);
                if (keep) {
                    // Room first, then the move: a reference must never die under the mutex.
                    if (batch.size() == batch.capacity()) {
                        try {
                            batch.reserve(batch.empty() ? 8 : 2 * batch.size());
                        } catch (...) { // out of memory: `e` stays queued, and runs at the next wake-up
                            spare = std::move(keep);
                            break;
                        }
                    }
                    batch.push_back(due{std::move(keep), e}); // cannot throw: there is room
                }
                erase_at(0);
            }
            arm_for_earliest();
        }
        std::size_t i = 0;
        try {
            for (; i < batch.size(); ++i) batch[i].e->fire(batch[i].e->owner, now);
        } catch (...) {
            // An owner threw (its observer, say): the others of the batch go back in the queue,
            // unless they were queued again meanwhile, so that their deadlines still come.
            std::lock_guard lk(mutex_);
            for (std::size_t j = i + 1; j < batch.size(); ++j) {
                entry& e = *batch[j].e;
                if (e.index != not_queued) continue;
                heap_.push_back(&e);
                e.index = heap_.size() - 1;
                sift_down(sift_up(e.index));
            }
            arm_for_earliest();
            throw;
        }
    }

    mutable std::mutex mutex_;
    std::vector<entry*> heap_;
    executor_type ex_;
    timer timer_;
    bool waiting_ = false;
    time_point waiting_until_{};
    std::uint64_t wait_gen_ = 0;
    std::uint64_t last_seq_ = 0;
};

/// The queues of one execution context, one per executor (compared with `==`) and timer clock.
template <class TimerClock>
class timer_queues final : public boost::asio::execution_context::service {
public:
    using queue = timer_queue<TimerClock>;

    static inline boost::asio::execution_context::id id;

    explicit timer_queues(boost::asio::execution_context& ctx) : boost::asio::execution_context::service(ctx) {}

    /// The queue of `ex`'s context for `ex`: shared while any object holds it.
    static std::shared_ptr<queue> of(boost::asio::any_io_executor const& ex) {
        auto& ctx = boost::asio::query(ex, boost::asio::execution::context);
        return boost::asio::use_service<timer_queues>(ctx).find_or_make(ex);
    }

private:
    std::shared_ptr<queue> find_or_make(boost::asio::any_io_executor const& ex) {
        std::lock_guard lk(mutex_);
        std::shared_ptr<queue> found;
        // Only weak references are kept, no executor copies: an executor that tracks work, or a
        // strand, is held by the leases that use it and no longer.
        std::erase_if(queues_, [&](std::weak_ptr<queue> const& w) {
            auto q = w.lock();
            if (!q) return true;
            if (!found && q->executor() == ex) found = std::move(q);
            return false;
        });
        if (found) return found;
        found = std::make_shared<queue>(ex);
        queues_.push_back(found);
        return found;
    }

    void shutdown() override {
        std::lock_guard lk(mutex_);
        queues_.clear();
    }

    std::mutex mutex_;
    std::vector<std::weak_ptr<queue>> queues_; // a list: executors have no order or hash; few per context
};

} // namespace baton::detail

#endif
