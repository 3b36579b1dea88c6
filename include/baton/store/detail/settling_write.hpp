// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_DETAIL_SETTLING_WRITE_HPP
#define BATON_STORE_DETAIL_SETTLING_WRITE_HPP

// Layer: store, internal. What every sans-I/O machine of one settled write shares (fenced, kv,
// and the recipes after them): the steps it asks its driver for, the retry policy's pauses,
// the pacing of contention, and the rule of settlement (docs/design.md §5) that a write whose answer
// was ambiguous or cancelled is read back before anything is retried or reported. The recipe's
// machine decides what a record means; this base decides when to read, wait or give up.

#include <baton/core/detail/random.hpp>
#include <baton/core/error.hpp>
#include <baton/core/retry.hpp>
#include <baton/store/record_store.hpp>
#include <baton/store/detail/machine_step.hpp>
#include <baton/store/settlement.hpp>

#include <boost/asio/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace baton::detail {

/* The shared half of a settled write. `Derived` provides:
     machine_step finish(error_code)  the done step, after noting what to remember of the key;
     machine_step write_again()       the last write again, with a fresh nonce.
   `Attempt` is what the ledger keeps of a write in doubt (it has a `nonce`). `Retry` is the
   RetryPolicy (held by reference: copies share its budget); `Rng` draws nonces and jitter. */
template <class Derived, class Attempt, class Retry, class Rng>
class settling_write {
public:
    // Rounds of "refused, read, write again" before the write reports contention (from the
    // third on, after a jittered pause).
    static constexpr unsigned max_contention_rounds = 64;

    // The pause asked for has passed.
    machine_step on_wait() { return next_is_read_ ? read() : self().write_again(); }

    // The caller's cancellation arrived at a wait: nothing more is written, and a write in doubt is settled first.
    machine_step on_cancel() {
        if (doubts_.empty()) return self().finish(boost::asio::error::operation_aborted);
        stopping_ = true;
        return read();
    }

    // True once the call is only settling what it sent: the driver must not cancel that read.
    bool stopping() const noexcept { return stopping_; }
    unsigned requests() const noexcept { return requests_; }
    bool settled_by_read() const noexcept { return settled_; }
    // Answers that left a write's outcome unknown, and failures the retry policy chose to try again.
    unsigned ambiguous() const noexcept { return ambiguous_; }
    unsigned retries() const noexcept { return retries_; }
    diagnostics const& diag() const noexcept { return diag_; }

protected:
    settling_write(Retry& retry, Rng& rng) : retry_(retry), rng_(rng) {}

    machine_step read() {
        last_was_read_ = true;
        return machine_step::read();
    }

    machine_step write(std::string body, precondition pc) {
        last_was_read_ = false;
        return machine_step::write(std::move(body), std::move(pc));
    }


    // A write whose answer left its outcome unknown: kept until a read settles it.
    void doubt(Attempt a) {
        ++ambiguous_;
        doubts_.in_doubt(std::move(a));
    }

    // The write in flight was cancelled after it may have been sent: settle once, uncancellable, then report.
    machine_step cancelled_after_sending(Attempt inflight) {
        doubt(std::move(inflight));
        stopping_ = true;
        return read();
    }

    // A write that failed with `ec`, other than refused: cancelled after it may have been sent,
    // in doubt (read back after the policy's pause), or failed for sure (sent again after it).
    machine_step write_failed(error_code ec, Attempt const& inflight) {
        if (ec == boost::asio::error::operation_aborted) return cancelled_after_sending(inflight);
        if (outcome_unknown(ec)) {
            doubt(inflight);
            return backoff(ec, /*always_read=*/true);
        }
        return backoff(ec, false);
    }

    // A read that failed with `ec`: the end when it was the settling read of a stop, else
    // read again after the policy's pause.
    machine_step read_failed(error_code ec, diagnostics const& d) {
        diag_ = d;
        if (stopping_) return give_up(ec);
        return backoff(ec, false);
    }

    // Fails with `ec`, or with unknown_outcome when a write of this call may have landed.
    machine_step give_up(error_code ec) {
        if (doubts_.empty()) return self().finish(ec);
        diag_.message = "a write of this call may have landed and reading the record back failed (" +
                        error_code(ec).message() + ")";
        return self().finish(errc::unknown_outcome);
    }

    // Waits per the retry policy, then reads (to settle, or after a failed read) or writes again.
    machine_step backoff(error_code ec, bool always_read) {
        ++attempts_;
        auto const d = retry_.on_failure(ec, attempts_, uniform());
        next_is_read_ = always_read || !doubts_.empty() || last_was_read_;
        if (d.retry) {
            ++retries_;
            return machine_step::wait(d.delay);
        }
        if (!doubts_.empty() && !stopping_) {
            // Out of retries with a write in doubt: one last read settles it; if it did not
            // land, the caller is told this failure.
            stopping_ = true;
            stop_reason_ = ec;
            return read();
        }
        return give_up(ec);
    }

    // One more round lost to another writer (or refused): past max_contention_rounds the call fails
    // with precondition_failed and `exhausted()` as its message, once no write of it can land (one
    // in doubt is settled by a last read first: the refusal may be its own write's doing); the
    // first two rounds go on at once (nothing returned); later ones read again after a jittered,
    // doubling pause (at most 1 s).
    template <class Message>
    std::optional<machine_step> contention_round(Message exhausted) {
        if (++rounds_ > max_contention_rounds) {
            diag_.message = exhausted();
            if (doubts_.empty()) return self().finish(errc::precondition_failed);
            stopping_ = true;
            stop_reason_ = errc::precondition_failed;
            return read();
        }
        if (rounds_ <= 2) return std::nullopt;
        std::chrono::nanoseconds const ceiling = std::min<std::chrono::nanoseconds>(
            std::chrono::milliseconds(5) * (1LL << std::min(rounds_ - 3, 8u)), std::chrono::seconds(1));
        next_is_read_ = true;
        return machine_step::wait(std::chrono::nanoseconds(static_cast<std::int64_t>(uniform() * static_cast<double>(ceiling.count()))));
    }

    // A write (or the settling of one) succeeded after this many failed attempts.
    void succeeded() { retry_.on_success(attempts_ + 1); }

    double uniform() { return uniform01(rng_); }

    Retry& retry_;
    Rng& rng_;
    settlement_ledger<Attempt> doubts_;
    unsigned attempts_ = 0;
    unsigned rounds_ = 0;
    unsigned requests_ = 0;
    unsigned ambiguous_ = 0;
    unsigned retries_ = 0;
    bool next_is_read_ = false;
    bool last_was_read_ = false;
    bool stopping_ = false;
    error_code stop_reason_ = boost::asio::error::operation_aborted; // what a stopped write that did not land reports
    bool settled_ = false;
    diagnostics diag_;

private:
    Derived& self() noexcept { return static_cast<Derived&>(*this); }
};

} // namespace baton::detail

#endif
