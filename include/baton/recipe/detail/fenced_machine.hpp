// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_FENCED_MACHINE_HPP
#define BATON_RECIPE_DETAIL_FENCED_MACHINE_HPP

// Layer: recipes, internal. The fenced record format and the sans-I/O state machine of one fenced write
// (docs/design.md §9): read the record, refuse when it already accepted a higher
// token, write with `matches` (or `absent`), and settle every ambiguous answer
// by reading the nonce back before retrying or reporting. The record names the
// writes before it, so a write that landed and was then overwritten is still
// known as landed; a write is reported failed only once it can never land.

#include <baton/core/detail/config.hpp>
#include <baton/recipe/detail/envelope.hpp>
#include <baton/core/error.hpp>
#include <baton/core/retry.hpp>
#include <baton/store/detail/recent_writers.hpp>
#include <baton/store/detail/settling_write.hpp>
#include <baton/store/settlement.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/error.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace baton::detail {

// Format 1: "baton-fenced 1 <token> <nonce>\n<value bytes>".
// Format 2: "baton-fenced 2 <token> <nonce>[ recent=<p>,<p>,...]\n<value bytes>", where `recent`
// lists the writes before this one (store/detail/recent_writers.hpp). Binary-safe, readable with
// `cat`. Every version reads both; format 1 is written only for fleets that still run a baton
// that reads nothing else.
inline constexpr std::string_view fenced_magic_v1 = "baton-fenced 1 ";
inline constexpr std::string_view fenced_magic_v2 = "baton-fenced 2 ";

struct fenced_body {
    std::uint64_t token = 0;
    std::string nonce;
    std::string recent; // format 2: the writes before it, newest first; empty: none known
    std::string value;
    unsigned format = 2;
};

BATON_DECL std::string encode_fenced(std::uint64_t token, std::string_view nonce, std::string_view value,
                                     std::string_view recent = {}, unsigned format = 2);

// A record that is not a fenced record of either format is errc::foreign_record, never guessed at.
BATON_DECL error_code decode_fenced(std::string_view body, fenced_body& out, diagnostics& d);

// What a client last saw of a key: its version, and the token and writers stored under it.
struct fenced_seen {
    std::string version;
    std::uint64_t token = 0;
    std::string nonce;
    std::string recent;
    unsigned format = 2;
};

struct fenced_attempt {
    std::string nonce;
    std::string anchor; // writer prefix of the record it was written on; origin_writer: on the key being absent
    // Lands only on its anchor. A write through the store's fenced-write hook with a token above
    // its anchor's may also land on any record with a lower token: it cannot name what it replaces.
    bool strict = true;
};

// One fenced write. `Retry` is the RetryPolicy (held by reference: copies share its budget).
// `Rng` draws nonces and jitter. The retry, pacing and settlement rules are settling_write's.
template <class Retry, class Rng>
class fenced_write_machine : public settling_write<fenced_write_machine<Retry, Rng>, fenced_attempt, Retry, Rng> {
    using base = settling_write<fenced_write_machine<Retry, Rng>, fenced_attempt, Retry, Rng>;
    friend base;

public:
    // `hook`: the store checks the token itself in one conditional write (DynamoDB), so no read
    // is needed before a first write; every write then goes through the hook. `format`: the
    // record format written (1 or 2).
    fenced_write_machine(std::string value, std::uint64_t token, std::optional<fenced_seen> known, Retry& retry, Rng& rng,
                         bool hook = false, unsigned format = 2)
        : base(retry, rng), value_(std::move(value)), token_(token), known_(std::move(known)), hook_(hook), format_(format) {}

    // The first step: one request when the version is known and its token is not above ours
    // (`matches` then guarantees the record still holds it), or when the store checks tokens
    // itself; a read first otherwise.
    machine_step start() {
        if (known_ && known_->token <= token_) return write_on(*known_);
        if (hook_ && !known_) return write_new();
        return read();
    }

    machine_step on_put(error_code ec, put_result const& r) {
        ++requests_;
        if (!ec) {
            version_ = r.version;
            seen_ = fenced_seen{r.version, token_, inflight_.nonce, inflight_recent_, format_};
            succeeded();
            return finish({});
        }
        diag_ = r.diag;
        if (ec == errc::precondition_failed || ec == errc::not_found) {
            if (auto s = contention_round([] {
                    return "the record changed under " + std::to_string(base::max_contention_rounds) +
                           " fenced writes in a row (heavy contention on one key)";
                }))
                return *s;
            if (r.current) return decide(*r.current);
            return read();
        }
        return this->write_failed(ec, inflight_);
    }

    machine_step on_get(error_code ec, get_result const& r) {
        ++requests_;
        if (ec) return this->read_failed(ec, r.diag);
        if (!r.found) return decide_absent();
        return decide(*r.found);
    }

    // Every write goes through the store's fenced-write hook (`matches` names the known version, `absent` none).
    bool hooked() const noexcept { return hook_; }
    // On success: the record's version with this write; empty when it landed and was overwritten
    // before it could be read back.
    std::string const& version() const noexcept { return version_; }
    std::uint64_t token() const noexcept { return token_; }
    std::uint64_t winning_token() const noexcept { return winning_; }
    // The version to remember for this key after the call, if any is known.
    std::optional<fenced_seen> const& last_seen() const noexcept { return seen_; }

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

    // A write on the record `on` as seen, conditional on its version. Through the hook it is
    // strict only when `on` already carries our token: the store refuses a hooked write over a
    // token equal to its own unless the version matches.
    machine_step write_on(fenced_seen const& on) {
        bool const strict = !hook_ || on.token == token_;
        return send(precondition::matches(on.version), std::string(writer_prefix(on.nonce)), strict,
                    strict ? recent_after(on.nonce, on.format == 1 ? std::string_view() : std::string_view(on.recent))
                           : std::string());
    }
    // A write that creates the key (through the hook: or lands on any lower token).
    machine_step write_new() {
        return send(precondition::absent(), std::string(origin_writer), !hook_, hook_ ? std::string() : std::string(origin_writer));
    }
    machine_step send(precondition pc, std::string anchor, bool strict, std::string recent) {
        inflight_ = fenced_attempt{make_nonce(this->rng_), std::move(anchor), strict};
        inflight_recent_ = std::move(recent);
        last_pc_ = std::move(pc);
        return send_inflight();
    }
    machine_step write_again() {
        inflight_.nonce = make_nonce(this->rng_);
        return send_inflight();
    }
    machine_step send_inflight() {
        return base::write(encode_fenced(token_, inflight_.nonce, value_, inflight_recent_, format_), last_pc_);
    }

    machine_step finish(error_code ec) {
        if (ec && ec != errc::fenced) seen_.reset(); // a fenced answer keeps the version it read; others leave none reliable
        return machine_step::done(ec);
    }

    // What the record read back (`found` null: the key is absent) says of every write in doubt:
    // the one that landed, if any; the others are kept while they may still land, forgotten
    // once they never can. `unsure`: some write's fate the read cannot tell; `lost`: one it
    // never will (the record moved on past what it remembers, and the write cannot land now).
    struct judgement {
        bool landed = false, landed_here = false; // landed_here: the record read is that very write
        bool pending = false, unsure = false, lost = false;
    };
    judgement judge(fenced_body const* found) {
        judgement j;
        doubts_.keep_if([&](fenced_attempt const& a) {
            doubt_fate f = found ? chain_fate(a.nonce, a.anchor, true, found->nonce, found->format == 1 ? "" : found->recent)
                                 : chain_fate(a.nonce, a.anchor, false, {}, {});
            if (!a.strict && f != doubt_fate::landed) {
                // A hooked write may land on any record with a lower token, and on its anchor while
                // that anchor's token is its own; once the key holds its token or more, only there.
                if (!found || found->token < token_) f = doubt_fate::pending;
                else if (f == doubt_fate::pending && found->token > token_) f = doubt_fate::never;
            }
            // A record with a token above ours came after the state the write was conditional on.
            bool const past = found && found->token > token_;
            switch (f) {
            case doubt_fate::landed:
                j.landed = true;
                j.landed_here = j.landed_here || found->nonce == a.nonce;
                return false;
            case doubt_fate::never: return false;
            case doubt_fate::pending: j.pending = true; return true;
            case doubt_fate::unsure: (past ? j.lost : j.unsure) = true; return true;
            }
            return true;
        });
        return j;
    }

    // After the doubts were judged: success, unknown_outcome, another look, or nothing to say
    // (every write in doubt can no longer land, or may land only where a new write may too).
    std::optional<machine_step> after_judging(judgement const& j) {
        if (j.landed) {
            settled_ = true;
            succeeded();
            return finish({});
        }
        if (j.lost) {
            diag_.clear();
            diag_.message = "a write of this call may have landed: the record moved on past the writes it remembers "
                            "before it could be read back";
            return finish(errc::unknown_outcome);
        }
        if (stopping_ && (j.pending || j.unsure)) {
            diag_.clear();
            diag_.message = "a write of this call may have landed or may still land (the last read showed the record "
                            "as the write found it, or could not tell)";
            return finish(errc::unknown_outcome);
        }
        if (j.unsure) {
            diag_.clear();
            diag_.message = "a read showed the record older than what this call wrote on (a lagging replica), or could "
                            "not tell whether a write of it landed";
            return backoff(errc::unknown_outcome, /*always_read=*/true);
        }
        if (stopping_) return finish(stop_reason_); // nothing of this call can land
        return std::nullopt;
    }

    machine_step decide_absent() {
        seen_.reset();
        if (auto s = after_judging(judge(nullptr))) return *s;
        return write_new();
    }

    // The record as it is now decides: ours landed, a higher token won, or write over it.
    machine_step decide(record const& found) {
        fenced_body b;
        diagnostics d;
        if (auto ec = decode_fenced(found.body, b, d)) {
            diag_ = d;
            diag_.message += " (key " + found.key + ")";
            if (!doubts_.empty()) { // ours may have landed before something else overwrote the key
                diag_.message = "a write of this call may have landed; the key now holds something else: " + diag_.message;
                return finish(errc::unknown_outcome);
            }
            return finish(ec);
        }
        seen_ = fenced_seen{found.version, b.token, b.nonce, b.recent, b.format};
        auto const j = judge(&b);
        if (j.landed) version_ = j.landed_here ? found.version : std::string();
        if (auto s = after_judging(j)) return *s;
        if (b.token > token_) {
            winning_ = b.token;
            diag_.clear();
            diag_.message = "token " + std::to_string(token_) + " is below token " + std::to_string(b.token) +
                            " already accepted for this key";
            return finish(errc::fenced);
        }
        return write_on(*seen_);
    }

    std::string value_;
    std::uint64_t token_;
    std::optional<fenced_seen> known_;
    bool hook_ = false;
    unsigned format_ = 2;
    fenced_attempt inflight_;
    std::string inflight_recent_;
    precondition last_pc_ = precondition::none();
    std::string version_;
    std::optional<fenced_seen> seen_;
    std::uint64_t winning_ = 0;
};

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/fenced_machine.ipp>
#endif

#endif
