// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_KV_MACHINE_HPP
#define BATON_RECIPE_DETAIL_KV_MACHINE_HPP

// Layer: recipes, internal. The kv record format and the sans-I/O state machine of one kv write (put,
// erase, or a read-modify-write update), docs/design.md §10: every record carries a
// logical version that the next write raises by one, erases leave a
// tombstone so versions keep rising across delete and re-create, and every
// ambiguous answer is settled by reading the write's nonce back before
// anything is retried or reported.

#include <baton/core/detail/config.hpp>
#include <baton/recipe/detail/envelope.hpp>
#include <baton/core/error.hpp>
#include <baton/core/retry.hpp>
#include <baton/store/detail/recent_writers.hpp>
#include <baton/store/detail/settling_write.hpp>
#include <baton/store/settlement.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace baton::detail {

// A kv record: "baton-kv 1 <version> <nonce>[ fence=<token>][ recent=<p>,<p>,...][ tombstone]\n"
// then the value's bytes (none for a tombstone).
//   fence:  the highest fencing token a write to the key carried (absent: none yet);
//   recent: the first 16 hex digits of the nonces of the writes before this one, newest first
//           (at most 16, store/detail/recent_writers.hpp): a writer whose answer was lost finds
//           its write there even after others wrote on top of it, and never applies it twice.
inline constexpr std::string_view kv_magic = "baton-kv 1 ";

struct kv_body {
    std::uint64_t version = 0;
    std::string nonce;
    std::uint64_t fence = 0;
    std::string recent; // "<p>,<p>,..." or empty
    bool live = true;
    std::string value;
};

BATON_DECL std::string encode_kv(kv_body const& b);

BATON_DECL error_code decode_kv(std::string_view body, kv_body& out, diagnostics& d);

// What a client last saw of a key: the store's version, the logical version under it, live or tombstone.
struct kv_seen {
    std::string store_version;
    std::uint64_t version = 0;
    bool live = true;
    std::uint64_t fence = 0;
    std::string nonce;  // of the write that made it
    std::string recent; // its recent writers
};

// The caller's condition on a put or an erase.
struct kv_expect {
    enum class kind { none, absent, version };
    kind which = kind::none;
    std::uint64_t version = 0;
    // A fencing token the write carries: refused (errc::fenced) when the key accepted a higher one.
    std::optional<std::uint64_t> fence;
};

enum class kv_op { put, erase, update };

struct kv_attempt {
    std::string nonce;
    std::uint64_t version = 0; // the logical version it writes
    std::uint64_t fence = 0;   // the fence it writes
    precondition pc = precondition::none();
};

// One kv write. `Retry` is the RetryPolicy (held by reference: copies share its budget).
// `Rng` draws nonces and jitter. For `update`, a `compute` step hands the current value
// (`current()`) to the caller, who answers with `on_computed`. The retry, pacing and
// settlement rules are settling_write's.
template <class Retry, class Rng>
class kv_write_machine : public settling_write<kv_write_machine<Retry, Rng>, kv_attempt, Retry, Rng> {
    using base = settling_write<kv_write_machine<Retry, Rng>, kv_attempt, Retry, Rng>;
    friend base;

public:
    // Highest logical version: a key that reached it takes no more writes.
    static constexpr std::uint64_t max_version = ~std::uint64_t(0);

    kv_write_machine(kv_op op, std::string value, kv_expect expect, std::optional<kv_seen> known, Retry& retry, Rng& rng)
        : base(retry, rng), op_(op), value_(std::move(value)), expect_(expect), known_(std::move(known)),
          floor_(known_ ? known_->version : 0) {}

    // The first step: one request when what this client saw last lets it name the version to
    // replace (`matches` then checks that it still holds); a read first otherwise. A guess is
    // never a verdict: a refusal of a write made on a guess is followed by a read.
    machine_step start() {
        using k = kv_expect::kind;
        if (op_ == kv_op::update) return read();
        if (expect_.which == k::version && expect_.version == 0) {
            diag_.message = "version 0 names no value (versions start at 1)";
            return finish(errc::invalid_argument);
        }
        if (op_ == kv_op::put && !known_ && expect_.which == k::absent) return write_new(1, fence_over(0), precondition::absent(), {});
        if (known_) {
            bool const plausible = (expect_.which == k::none && (op_ == kv_op::put || known_->live)) ||
                                   (expect_.which == k::absent && op_ == kv_op::put && !known_->live) ||
                                   (expect_.which == k::version && known_->live && known_->version == expect_.version);
            bool const fence_ok = !expect_.fence || known_->fence <= *expect_.fence;
            if (plausible && fence_ok && known_->version < max_version)
                return write_new(known_->version + 1, fence_over(known_->fence), precondition::matches(known_->store_version),
                                 recent_after(known_->nonce, known_->recent));
        }
        return read();
    }

    machine_step on_put(error_code ec, put_result const& r) {
        ++requests_;
        if (!ec) {
            version_ = inflight_.version;
            written_ = true;
            seen_ = kv_seen{r.version, inflight_.version, op_ != kv_op::erase, inflight_.fence, inflight_.nonce, inflight_recent_};
            succeeded();
            return finish({});
        }
        diag_ = r.diag;
        if (ec == errc::precondition_failed || ec == errc::not_found) {
            // Refused: the record is not what the write assumed. A condition normally gets its
            // verdict from the next read; rounds are counted all the same, so that a store that
            // keeps refusing writes its reads say should pass (a lagging replica, a store that
            // mishandles If-Match) is paced and then reported, not hammered forever.
            if (auto s = contention_round([this] {
                    return expect_.which == kv_expect::kind::none
                               ? "the record changed under " + std::to_string(base::max_contention_rounds) +
                                     " writes in a row (heavy contention on one key)"
                               : "the store refused " + std::to_string(base::max_contention_rounds) +
                                     " writes in a row whose condition its reads showed to hold";
                }))
                return *s;
            if (r.current) return decide(*r.current);
            return read();
        }
        if (ec == boost::asio::error::operation_aborted) return cancelled_after_sending(inflight_);
        if (outcome_unknown(ec)) {
            this->doubt(inflight_);
            if (ec == errc::throttled) return backoff(ec, /*always_read=*/true);
            // Settle first, blame later: if the read shows that another write got in, this was a
            // lost race (RGW answers racing losers 500), not the service failing, and the retry
            // budget is not spent on it.
            blame_ = ec;
            return read();
        }
        return backoff(ec, false);
    }

    machine_step on_get(error_code ec, get_result const& r) {
        ++requests_;
        if (ec) {
            blame_.reset();
            return this->read_failed(ec, r.diag);
        }
        if (!r.found) return decide_absent();
        return decide(*r.found);
    }

    // update: the new value, or nothing to leave the record as it is.
    machine_step on_computed(std::optional<std::string> value) {
        if (!value) {
            // Nothing to write, but an earlier round's write may still land: settle it first.
            if (!doubts_.empty()) return look_again();
            version_ = current_live_ ? current_version_ : 0;
            return finish({});
        }
        value_ = std::move(*value);
        return write_over_current();
    }

    // update, at a `compute` step: the current value (empty when the key is absent or erased)
    // and its version.
    std::optional<std::string> const& current() const noexcept { return current_value_; }
    std::uint64_t current_version() const noexcept { return current_live_ ? current_version_ : 0; }

    // The logical version written (or, when nothing needed writing, the one found).
    std::uint64_t version() const noexcept { return version_; }
    bool written() const noexcept { return written_; }
    // On errc::fenced: the token the key had accepted, above the write's.
    std::uint64_t winning_token() const noexcept { return winning_; }
    // update, at a `compute` step: the key's fence.
    std::uint64_t current_fence() const noexcept { return current_fence_; }
    // What to remember for this key after the call, if anything reliable is known.
    std::optional<kv_seen> const& last_seen() const noexcept { return seen_; }

private:
    using kind = kv_expect::kind;
    using base::backoff;
    using base::cancelled_after_sending;
    using base::contention_round;
    using base::diag_;
    using base::doubts_;
    using base::give_up;
    using base::read;
    using base::requests_;
    using base::settled_;
    using base::stop_reason_;
    using base::stopping_;
    using base::succeeded;

    machine_step write_new(std::uint64_t version, std::uint64_t fence, precondition pc, std::string recent) {
        inflight_ = kv_attempt{make_nonce(this->rng_), version, fence, std::move(pc)};
        inflight_recent_ = std::move(recent);
        return send_inflight();
    }
    machine_step write_again() {
        inflight_.nonce = make_nonce(this->rng_);
        return send_inflight();
    }
    machine_step send_inflight() {
        return base::write(encode_kv(kv_body{inflight_.version, inflight_.nonce, inflight_.fence, inflight_recent_, op_ != kv_op::erase, value_}),
                           inflight_.pc);
    }

    // The next version over what the last read found (absent: version 1, written only if still absent).
    machine_step write_over_current() {
        if (!current_exists_) return write_new(1, fence_over(0), precondition::absent(), {});
        if (current_version_ == max_version) {
            diag_.message = "the key's version reached 2^64-1; it takes no more writes";
            return finish(errc::invalid_argument);
        }
        return write_new(current_version_ + 1, fence_over(current_fence_), precondition::matches(current_store_version_),
                         recent_after(current_nonce_, current_recent_));
    }

    // The fence a write leaves: the caller's token (checked to be at least the stored one), or the stored one kept.
    std::uint64_t fence_over(std::uint64_t stored) const noexcept { return expect_.fence ? *expect_.fence : stored; }

    machine_step finish(error_code ec) {
        // A refusal keeps what it read; other failures leave nothing reliable to remember.
        if (ec && ec != errc::precondition_failed && ec != errc::fenced) seen_.reset();
        return machine_step::done(ec);
    }

    // A stopped call reports why it stopped (a cancellation included) only when no write of it
    // can land any more; while one may, its fate is unknown: a caller told "aborted" or "failed"
    // would write again, and apply it twice.
    machine_step stop() {
        if (!doubts_.empty()) {
            diag_.message = "a write of this call may have landed or may still land (the last read showed the record "
                            "at or before the version it was written on)";
            return finish(errc::unknown_outcome);
        }
        return finish(stop_reason_);
    }

    // Looks for the writes in doubt in a record read back (`found`; none: the key is absent):
    // the one that landed, if any. A write whose version the record has reached is found by its
    // nonce, in the record or among its recent writers, or it can never land (one write lands
    // per version, and versions only rise) and is forgotten. Writes above the record's version
    // stay in doubt: they may still land, and a stale read (a lagging replica) can show a
    // record older than one of them that already did. A write more than recent_writers_kept
    // versions below the record cannot be told: `lost_track_`.
    std::optional<kv_attempt> settle(kv_body const* found) {
        std::uint64_t const at = found ? found->version : 0;
        std::optional<kv_attempt> landed;
        doubts_.keep_if([&](kv_attempt const& a) {
            if (a.version > at) return true;
            std::uint64_t const below = at - a.version;
            if (below == 0 && a.nonce == found->nonce) landed = a;
            else if (below > 0 && below <= recent_writers_kept) {
                // A list shorter than that ends at a writer that named none (a foreign nonce): it cannot tell.
                std::string_view const entry = recent_at(found->recent, below - 1);
                if (entry.empty()) lost_track_ = true;
                else if (entry == writer_prefix(a.nonce)) landed = a;
            } else if (below > recent_writers_kept) {
                lost_track_ = true;
            }
            return false;
        });
        return landed;
    }

    // True when a write in doubt was based on a version above what the read shows: the read
    // came from a replica that lags behind this call's own view, and decides nothing.
    bool read_is_stale(std::uint64_t found) const {
        return doubts_.any([&](kv_attempt const& a) { return a.version > found + 1; });
    }

    // Reads again after the retry policy's pause (a stale read is a transient failure).
    machine_step look_again() {
        blame_.reset();
        diag_.clear();
        diag_.message = "reads showed the record older than this call knows it to be (a lagging replica), or a "
                        "write of it still in doubt";
        return backoff(errc::unknown_outcome, /*always_read=*/true);
    }

    machine_step refuse(std::uint64_t found_version, bool live) {
        diag_.clear();
        auto const shown = [](std::uint64_t v, bool l) { return l ? "version " + std::to_string(v) : std::string("no value"); };
        std::string expected = expect_.which == kind::absent ? std::string("no value") : "version " + std::to_string(expect_.version);
        diag_.message = "expected " + expected + ", found " + shown(found_version, live);
        current_version_ = found_version;
        current_live_ = live;
        return finish(errc::precondition_failed);
    }

    machine_step decide_absent() {
        settle(nullptr);
        if (stopping_) return stop();
        if (read_is_stale(0) || floor_ > 0) return look_again();
        if (auto wait = after_settling()) return *wait;
        seen_.reset();
        current_exists_ = false;
        current_live_ = false;
        current_version_ = 0;
        current_fence_ = 0;
        current_value_.reset();
        switch (op_) {
        case kv_op::update:
            return machine_step::compute();
        case kv_op::erase:
            if (expect_.which == kind::version) return refuse(0, false);
            return finish({}); // nothing to erase
        case kv_op::put:
            if (expect_.which == kind::version) return refuse(0, false);
            return write_over_current();
        }
        return finish({});
    }

    // The record as it is now decides: a write of ours landed, the condition fails, or write over it.
    machine_step decide(record const& found) {
        kv_body b;
        diagnostics d;
        if (auto ec = decode_kv(found.body, b, d)) {
            diag_ = d;
            diag_.message += " (key " + found.key + ")";
            if (!doubts_.empty()) { // ours may have landed before something else overwrote the key
                diag_.message = "a write of this call may have landed; the key now holds something else: " + diag_.message;
                return finish(errc::unknown_outcome);
            }
            return finish(ec);
        }
        seen_ = kv_seen{found.version, b.version, b.live, b.fence, b.nonce, b.recent};
        if (auto mine = settle(&b)) {
            settled_ = true;
            written_ = true;
            version_ = mine->version;
            succeeded();
            return finish({});
        }
        if (lost_track_) {
            diag_.message = "a write of this call may have landed: the record moved on by more than " +
                            std::to_string(recent_writers_kept) + " writes before it could be read back";
            return finish(errc::unknown_outcome);
        }
        if (!stopping_ && (read_is_stale(b.version) || b.version < floor_)) return look_again();
        floor_ = std::max(floor_, b.version);
        if (stopping_) return stop();
        if (auto wait = after_settling()) return *wait;
        current_exists_ = true;
        current_store_version_ = found.version;
        current_version_ = b.version;
        current_live_ = b.live;
        current_fence_ = b.fence;
        current_nonce_ = b.nonce;
        current_recent_ = b.recent;
        if (b.live) current_value_ = std::move(b.value);
        else current_value_.reset();
        if (expect_.fence && b.fence > *expect_.fence) {
            winning_ = b.fence;
            diag_.clear();
            diag_.message = "token " + std::to_string(*expect_.fence) + " is below token " + std::to_string(b.fence) +
                            " already accepted for this key";
            return finish(errc::fenced);
        }
        switch (op_) {
        case kv_op::update:
            return machine_step::compute();
        case kv_op::erase:
            if (expect_.which == kind::version && !(b.live && b.version == expect_.version)) return refuse(b.version, b.live);
            if (!b.live) {
                version_ = 0;
                return finish({}); // already erased: no value
            }
            return write_over_current();
        case kv_op::put:
            if (expect_.which == kind::absent && b.live) return refuse(b.version, b.live);
            if (expect_.which == kind::version && !(b.live && b.version == expect_.version)) return refuse(b.version, b.live);
            return write_over_current();
        }
        return finish({});
    }

    // After an ambiguous answer was read back and did not land: while it still may land (the record
    // is as it assumed), the failure is the service's and the retry policy spaces the next look;
    // if the record moved on, the write lost a race: a contention round.
    std::optional<machine_step> after_settling() {
        if (!blame_) return std::nullopt;
        error_code const ec = *blame_;
        blame_.reset();
        if (!doubts_.empty()) return backoff(ec, /*always_read=*/true);
        if (expect_.which != kind::none) return std::nullopt; // a condition: the read gives the verdict
        return contention_round([] {
            return "the record changed under " + std::to_string(base::max_contention_rounds) +
                   " writes in a row (heavy contention on one key)";
        });
    }

    kv_op op_;
    std::string value_;
    kv_expect expect_;
    std::optional<kv_seen> known_;
    kv_attempt inflight_;
    // What the last read found.
    bool current_exists_ = false;
    bool current_live_ = false;
    std::string current_store_version_;
    std::uint64_t current_version_ = 0;
    std::uint64_t current_fence_ = 0;
    std::string current_nonce_;
    std::string current_recent_;
    std::optional<std::string> current_value_;
    std::string inflight_recent_;
    bool lost_track_ = false;
    // The highest version this call knows the key reached (its cache, every record it saw):
    // versions only rise and records are never removed, so a read below it is a lagging replica.
    std::uint64_t floor_ = 0;
    std::uint64_t winning_ = 0;

    std::uint64_t version_ = 0;
    std::optional<kv_seen> seen_;
    bool written_ = false;
    std::optional<error_code> blame_; // an ambiguous answer whose read-back is in flight
};

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/kv_machine.ipp>
#endif

#endif
