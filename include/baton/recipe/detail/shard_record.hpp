// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_SHARD_RECORD_HPP
#define BATON_RECIPE_DETAIL_SHARD_RECORD_HPP

// Layer: recipes, internal. The shard record of a lease table and the sans-I/O state machine of
// one change to it (docs/design.md §11). JSON, so that people and other tools can read it:
//   {"baton":"shard/1","token":7,"owner":"w1","term":12,"owner_ttl":9000,"retired":false,
//    "checkpoint":"1042","requested_by":"w2","requested_term":3,"requested_count":4,
//    "nonce":"...","recent":"<p>,<p>,..."}
// "checkpoint" is absent until the first one; "requested_by"/"requested_term" only while a worker
// asks for a graceful handoff ("requested_count": how many shards it had then, counting those it
// asked for before). "owner_ttl" is the TTL (ms) the owner's worker lease declares, so that
// others know how long to wait when its worker record is gone. "recent" names the writes before
// this one (store/detail/recent_writers.hpp), so that a change whose answer was lost is known
// to have landed even after another was written over it. Records of an older baton lack both
// fields and are read all the same. The token rises by one on every change of owner (a claim or
// a handoff) and never otherwise; the record is never deleted by baton (retire marks it), so it
// never goes back; at 2^64-1 it changes hands no more.
//
// Every change is a read-modify-write: a function looks at the record as it is now and says what
// it becomes (or that nothing is to be written, or that the change is refused), and the write is
// conditional on the version that function saw. An ambiguous answer is settled by reading the
// nonce back, in the record or among the writes it names (settling_write's rules), and the
// function is asked again about whatever is there: changes are written so that they recognize
// their own effect.

#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/core/retry.hpp>
#include <baton/recipe/detail/lease_record.hpp>
#include <baton/store/detail/recent_writers.hpp>
#include <baton/store/detail/settling_write.hpp>
#include <baton/store/record_store.hpp>
#include <baton/store/settlement.hpp>

#include <boost/asio/error.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <charconv>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace baton::detail {

inline constexpr std::string_view shard_format = "shard/1";
inline constexpr std::size_t max_shard_body_bytes = 64 * 1024;
// A checkpoint is the caller's text (a sequence number, an offset); bounded so a record stays small.
inline constexpr std::size_t max_checkpoint_bytes = 16 * 1024;
// A shard whose token reached this can change hands no more (the next owner would need token + 1).
inline constexpr std::uint64_t max_shard_token = ~std::uint64_t(0);

struct shard_body {
    std::uint64_t token = 0;               // fencing token: +1 on every change of owner
    std::string owner;                     // worker name; empty: nobody
    std::uint64_t term = 0;                // the owner's liveness term (its worker lease's token)
    std::uint64_t owner_ttl_ms = 0;        // the TTL the owner's worker lease declares; 0: not known
    bool retired = false;                  // retired shards are never claimed
    std::optional<std::string> checkpoint; // the owner's progress
    std::string requested_by;              // a worker asking for a graceful handoff; empty: none
    std::uint64_t requested_term = 0;
    std::uint64_t requested_count = 0;    // the shards the requester had (and had asked for) then
    std::string nonce;                     // fresh on every write
    std::string recent;                    // the writes before this one; empty: none known

    bool owned_by(std::string_view worker, std::uint64_t t) const noexcept {
        return !owner.empty() && owner == worker && term == t;
    }
    void clear_request();
};

BATON_DECL std::string encode_shard_body(shard_body const& b);

// Strict: anything that is not a well-formed shard/1 record is errc::foreign_record, never guessed at.
BATON_DECL error_code decode_shard_body(std::string_view text, shard_body& out, diagnostics& diag);

// What a change makes of the record as it is now.
struct shard_change {
    enum class kind {
        write,  // write `next` (conditional on the version seen)
        keep,   // nothing to write: the change is already there (or needs none); success
        refuse, // the change does not apply to the record as it is: fail with `ec`
    };
    kind what = kind::write;
    error_code ec;

    static shard_change write() { return {}; }
    static shard_change keep() { return {kind::keep, {}}; }
    static shard_change refuse(error_code e) { return {kind::refuse, e}; }
};

// `now`: the record as read (empty when absent); `next` starts as a copy of it (or a fresh record).
using shard_change_fn = std::function<shard_change(std::optional<shard_body> const& now, shard_body& next)>;

// A shard record as last seen: its store version and what it says.
struct shard_seen {
    std::string version;
    shard_body body;
};

struct shard_attempt {
    std::string nonce;
    std::string anchor; // writer prefix of the record it was conditional on; origin_writer: on the key being absent
    shard_body body;
};

// One change of one shard record. `Retry` is the RetryPolicy (held by reference); `Rng` draws
// nonces and jitter. Retries, pacing and settlement are settling_write's.
template <class Retry, class Rng>
class shard_write_machine : public settling_write<shard_write_machine<Retry, Rng>, shard_attempt, Retry, Rng> {
    using base = settling_write<shard_write_machine<Retry, Rng>, shard_attempt, Retry, Rng>;
    friend base;

public:
    // `known`: the record as this caller last saw it; the first write is then conditional on it
    // (one request when nobody changed it since), else the record is read first.
    shard_write_machine(shard_change_fn change, std::optional<shard_seen> known, Retry& retry, Rng& rng)
        : base(retry, rng), change_(std::move(change)), known_(std::move(known)) {}

    machine_step start() {
        if (known_) return decide(known_);
        return read();
    }

    machine_step on_put(error_code ec, put_result const& r) {
        ++requests_;
        if (!ec) {
            seen_ = shard_seen{r.version, inflight_.body};
            wrote_ = true;
            succeeded();
            return finish({});
        }
        diag_ = r.diag;
        if (ec == errc::precondition_failed || ec == errc::not_found) {
            if (auto s = contention_round([] {
                    return "the shard record changed under " + std::to_string(base::max_contention_rounds) +
                           " writes in a row (heavy contention on one shard)";
                }))
                return *s;
            return read();
        }
        return this->write_failed(ec, inflight_);
    }

    machine_step on_get(error_code ec, get_result const& r) {
        ++requests_;
        if (ec) return this->read_failed(ec, r.diag);
        std::optional<shard_seen> now;
        if (r.found) {
            shard_body b;
            diagnostics d;
            if (auto e = decode_shard_body(r.found->body, b, d)) {
                diag_ = d;
                diag_.message += " (key " + r.found->key + ")";
                if (!doubts_.empty()) {
                    diag_.message = "a change of this call may have landed; the key now holds something else: " + diag_.message;
                    return finish(errc::unknown_outcome);
                }
                return finish(e);
            }
            now = shard_seen{r.found->version, std::move(b)};
        }
        // Every change in doubt: landed (the record or the writes it names), never (the record
        // descends from the state it was made on without it), or still possible.
        bool landed = false, landed_here = false, pending = false, unsure = false;
        doubts_.keep_if([&](shard_attempt const& a) {
            switch (chain_fate(a.nonce, a.anchor, now.has_value(), now ? std::string_view(now->body.nonce) : std::string_view(),
                               now ? std::string_view(now->body.recent) : std::string_view())) {
            case doubt_fate::landed:
                landed = true;
                landed_here = landed_here || now->body.nonce == a.nonce;
                return false;
            case doubt_fate::never: return false;
            case doubt_fate::pending: pending = true; return true;
            case doubt_fate::unsure: unsure = true; return true;
            }
            return true;
        });
        if (landed) {
            settled_ = true;
            seen_ = std::move(now);
            wrote_ = landed_here;
            succeeded();
            return finish({});
        }
        if (stopping_) {
            if (!pending && !unsure) return finish(stop_reason_);
            diag_.clear();
            diag_.message = "a change of this call may have landed or may still land (the last read showed the record as "
                            "the change found it, or could not tell)";
            return finish(errc::unknown_outcome);
        }
        if (unsure) { // an older record than the one written on (a lagging replica): no verdict from it
            diag_.clear();
            diag_.message = "a read showed the shard record older than what this call wrote on (a lagging replica)";
            return backoff(errc::unknown_outcome, /*always_read=*/true);
        }
        return decide(std::move(now));
    }

    // The record as this call left it (written or read); empty when unknown.
    std::optional<shard_seen> const& last_seen() const noexcept { return seen_; }
    // True when this call's own write is the record now (written, or found landed).
    bool wrote() const noexcept { return wrote_; }

private:
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

    machine_step decide(std::optional<shard_seen> now) {
        std::optional<shard_body> current;
        if (now) current = now->body;
        shard_body next = current ? *current : shard_body{};
        shard_change const c = change_(current, next);
        seen_ = std::move(now);
        if (c.what != shard_change::kind::write && !doubts_.empty()) {
            // A change of this call may still land on this very record: settle it before answering.
            diag_.clear();
            diag_.message = "a change of this call may still land on the record it was made on";
            return backoff(errc::unknown_outcome, /*always_read=*/true);
        }
        if (c.what == shard_change::kind::keep) return finish({});
        if (c.what == shard_change::kind::refuse) return finish(c.ec);
        next.nonce = make_nonce(this->rng_);
        next.recent = seen_ ? recent_after(seen_->body.nonce, seen_->body.recent) : std::string(origin_writer);
        std::string body = encode_shard_body(next);
        if (body.size() > max_shard_body_bytes) {
            diag_.message = "shard record would exceed 64 KiB";
            return finish(errc::invalid_argument);
        }
        inflight_ = shard_attempt{next.nonce, std::string(seen_ ? writer_prefix(seen_->body.nonce) : origin_writer), std::move(next)};
        last_pc_ = seen_ ? precondition::matches(seen_->version) : precondition::absent();
        return base::write(std::move(body), last_pc_);
    }

    machine_step write_again() {
        // Same change, same condition, fresh nonce: the earlier attempt stays in doubt until a read.
        inflight_.nonce = make_nonce(this->rng_);
        inflight_.body.nonce = inflight_.nonce;
        return base::write(encode_shard_body(inflight_.body), last_pc_);
    }

    machine_step finish(error_code ec) {
        return machine_step::done(ec);
    }

    shard_change_fn change_;
    std::optional<shard_seen> known_;
    shard_attempt inflight_;
    precondition last_pc_ = precondition::none();
    std::optional<shard_seen> seen_;
    bool wrote_ = false;
};

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/shard_record.ipp>
#endif

#endif
