// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_DETAIL_READ_MACHINES_HPP
#define BATON_STORE_DETAIL_READ_MACHINES_HPP

// Layer: store, internal. Reads as sans-I/O machines any recipe's driver can run. Plain, as the
// store answers (a recipe's reads, whose callers retry): one record (`one_read`), and one page
// of keys with each record read (`listed_reads`); and one plain write (`one_write`). Retried per the RetryPolicy: one record
// (`retried_get`), and every key under a prefix, page by page (`paged_list`). A read changes nothing, so a failure is retried without settlement; only
// failures the error model calls retryable are, and the policy's budget is shared with the
// writes of the same object. `on_cancel()` at a wait ends a read between attempts (its owner
// is going away): it reports the last failure instead of waiting for the next attempt.

#include <baton/core/detail/random.hpp>
#include <baton/core/error.hpp>
#include <baton/core/retry.hpp>
#include <baton/store/detail/machine_step.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/error.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace baton::detail {

// One read of the call's key, answered as the store answered.
class one_read {
public:
    machine_step start() { return machine_step::read(); }
    machine_step on_get(error_code ec, get_result r) {
        result_ = std::move(r);
        return machine_step::done(ec);
    }
    // Never asked for (a read is not stopped before it is sent); there for the driver.
    machine_step on_cancel() { return machine_step::done(boost::asio::error::operation_aborted); }
    get_result& result() noexcept { return result_; }

private:
    get_result result_;
};

// What every spec of a plain `one_read` on machine_op shares; a spec adds its `finish`, which
// decodes the record for its caller.
template <class Result>
struct one_read_spec {
    using machine = one_read;
    using result_type = Result;
    static constexpr bool passes_store_aborts = true; // a read: the store's answer as it is
    template <class Host>
    static std::unique_ptr<machine> make(Host&, std::string const&) {
        return std::make_unique<machine>();
    }
};

// One write of the call's key, answered as the store answered: for a caller that treats every
// failure alike (the lease table's reaper reads the record again at its next scan).
class one_write {
public:
    one_write(std::string body, precondition pc) : body_(std::move(body)), pc_(std::move(pc)) {}
    machine_step start() { return machine_step::write(std::move(body_), std::move(pc_)); }
    machine_step on_put(error_code ec, put_result r) {
        result_ = std::move(r);
        return machine_step::done(ec);
    }
    // Never asked for (a write is not stopped before it is sent); there for the driver.
    machine_step on_cancel() { return machine_step::done(boost::asio::error::operation_aborted); }
    put_result& result() noexcept { return result_; }

private:
    std::string body_;
    precondition pc_;
    put_result result_;
};

// One page of the keys under the call's key (a prefix), after `after`, at most `limit`; then each
// key read in turn and its record handed to `accept` (a key deleted since the listing is
// skipped). `accept(record&, diagnostics&)` may end the page with an error, such as a record
// the recipe cannot read. No retry: the first failure ends it.
template <class Accept>
class listed_reads {
public:
    listed_reads(std::string after, std::size_t limit, Accept accept)
        : after_(std::move(after)), limit_(limit), accept_(std::move(accept)) {}

    machine_step start() { return machine_step::list(after_, limit_); }
    machine_step on_list(error_code ec, list_page p) {
        if (ec) {
            diag_ = std::move(p.diag);
            return machine_step::done(ec);
        }
        keys_ = std::move(p.entries);
        truncated_ = p.truncated;
        listed_ = true;
        if (!keys_.empty()) after_ = keys_.back().key;
        return read_next();
    }
    machine_step on_get(error_code ec, get_result r) {
        if (ec) {
            diag_ = std::move(r.diag);
            return machine_step::done(ec);
        }
        if (r.found) {
            r.found->key = keys_[next_].key;
            if (auto bad = accept_(*r.found, diag_)) return machine_step::done(bad);
        }
        ++next_;
        return read_next();
    }
    // Never asked for (reads are not stopped before they are sent); there for the driver.
    machine_step on_cancel() { return machine_step::done(boost::asio::error::operation_aborted); }

    Accept& accepted() noexcept { return accept_; }
    // Where the next page starts: the last key listed (the `after` given when none was).
    std::string const& next_after() const noexcept { return after_; }
    bool truncated() const noexcept { return truncated_; }
    // True once the page of keys came back (a failure after it came from a read or from `accept`).
    bool listed() const noexcept { return listed_; }
    diagnostics& diag() noexcept { return diag_; }

private:
    machine_step read_next() {
        if (next_ >= keys_.size()) return machine_step::done();
        return machine_step::read().at(machine_step::store_id::records, keys_[next_].key);
    }

    std::string after_;
    std::size_t limit_;
    Accept accept_;
    std::vector<list_entry> keys_;
    bool truncated_ = false;
    bool listed_ = false;
    std::size_t next_ = 0;
    diagnostics diag_;
};

// The retry-policy half both reads share. `Derived` provides `machine_step again()`, the
// attempt after a pause. `Retry` is held by reference (copies share its budget); `Rng` draws
// the jitter.
template <class Derived, class Retry, class Rng>
class retried_read {
public:
    // A driver may end it between attempts with on_cancel (a write machine may not: see settling_write).
    static constexpr bool stops_between_attempts = true;

    // The pause asked for has passed: try again.
    machine_step on_wait() { return static_cast<Derived&>(*this).again(); }
    // The owner stops waiting for this read: it ends with the failure that asked for the pause.
    machine_step on_cancel() { return machine_step::done(last_); }
    // The attempt in flight, counted from 1 (a success starts the count again).
    unsigned attempt() const noexcept { return attempt_; }

protected:
    retried_read(Retry& retry, Rng& rng) : retry_(retry), rng_(rng) {}

    // An attempt succeeded: the policy refunds what the failures before it took.
    void succeeded() {
        retry_.on_success(attempt_);
        attempt_ = 1;
    }

    // An attempt failed with `ec`: a pause before the next (the policy says how long), or the end.
    machine_step failed(error_code ec) {
        last_ = ec;
        if (!is_retryable(ec)) return machine_step::done(ec);
        auto const d = retry_.on_failure(ec, attempt_, uniform01(rng_));
        if (!d.retry) return machine_step::done(ec);
        ++attempt_;
        return machine_step::wait(d.delay);
    }

private:
    Retry& retry_;
    Rng& rng_;
    unsigned attempt_ = 1;
    error_code last_ = boost::asio::error::operation_aborted;
};

// One record, read until it answers or the policy gives up.
template <class Retry, class Rng>
class retried_get : public retried_read<retried_get<Retry, Rng>, Retry, Rng> {
    using base = retried_read<retried_get<Retry, Rng>, Retry, Rng>;
    friend base;

public:
    retried_get(Retry& retry, Rng& rng) : base(retry, rng) {}

    machine_step start() { return machine_step::read(); }

    machine_step on_get(error_code ec, get_result r) {
        result_ = std::move(r);
        if (ec) return this->failed(ec);
        this->succeeded();
        return machine_step::done();
    }

    // The last answer: the record (or none) on success, the service's diagnostics on failure.
    get_result& result() noexcept { return result_; }

private:
    machine_step again() { return machine_step::read(); }
    get_result result_;
};

// Every key under a prefix (the driver's key), in pages of `page_size`: each page is retried on
// its own, and the listing resumes after the last key received.
template <class Retry, class Rng>
class paged_list : public retried_read<paged_list<Retry, Rng>, Retry, Rng> {
    using base = retried_read<paged_list<Retry, Rng>, Retry, Rng>;
    friend base;

public:
    static constexpr std::size_t page_size = 1000;

    paged_list(Retry& retry, Rng& rng) : base(retry, rng) {}

    machine_step start() { return again(); }

    machine_step on_list(error_code ec, list_page page) {
        if (ec) {
            diag_ = std::move(page.diag);
            return this->failed(ec);
        }
        this->succeeded();
        if (page.truncated && page.entries.empty()) {
            // "More follow" with no key to resume after: asking again would loop for ever.
            diag_.message = "the store said more keys follow a page that held none";
            return machine_step::done(errc::invalid_response);
        }
        for (auto& e : page.entries) entries_.push_back(std::move(e));
        if (!page.truncated) return machine_step::done();
        return again();
    }

    // The keys received, ascending (those of earlier pages too when a later one failed).
    std::vector<list_entry>& entries() noexcept { return entries_; }
    // What the service said of the failure that ended the listing.
    diagnostics const& diag() const noexcept { return diag_; }

private:
    // The next page (or the same one again, after a failure).
    machine_step again() const { return machine_step::list(entries_.empty() ? std::string() : entries_.back().key, page_size); }

    std::vector<list_entry> entries_;
    diagnostics diag_;
};

} // namespace baton::detail

#endif
