// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_FENCED_MACHINE_HPP
#define BATON_RECIPE_DETAIL_FENCED_MACHINE_HPP

// Layer: recipes, internal. The fenced record format and the sans-I/O state machine of one fenced write
// (DESIGN §6): read the record, refuse when it already accepted a higher
// token, write with `matches` (or `absent`), and settle every ambiguous answer
// by reading the nonce back before retrying or reporting.

#include <baton/core/detail/config.hpp>
#include <baton/recipe/detail/envelope.hpp>
#include <baton/core/error.hpp>
#include <baton/core/retry.hpp>
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

// "baton-fenced 1 <token> <nonce>\n<value bytes>": binary-safe, and readable with `cat`.
inline constexpr std::string_view fenced_magic = "baton-fenced 1 ";

struct fenced_body {
    std::uint64_t token = 0;
    std::string nonce;
    std::string value;
};

inline std::string encode_fenced(std::uint64_t token, std::string_view nonce, std::string_view value) {
    std::string s;
    s.reserve(fenced_magic.size() + 21 + nonce.size() + 1 + value.size());
    s += fenced_magic;
    s += std::to_string(token);
    s += ' ';
    s += nonce;
    s += '\n';
    s += value;
    return s;
}

// A record that is not a fenced record of this format is errc::foreign_record, never guessed at.
inline error_code decode_fenced(std::string_view body, fenced_body& out, diagnostics& d) {
    auto foreign = [&](char const* why) {
        d.message = std::string("not a fenced record: ") + why;
        return error_code(errc::foreign_record);
    };
    if (body.substr(0, fenced_magic.size()) != fenced_magic) return foreign("it does not start with \"baton-fenced 1 \"");
    body.remove_prefix(fenced_magic.size());
    auto const eol = body.find('\n');
    if (eol == std::string_view::npos) return foreign("its header line has no end");
    std::string_view header = body.substr(0, eol);
    auto const space = header.find(' ');
    if (space == std::string_view::npos) return foreign("its header has no nonce");
    std::string_view digits = header.substr(0, space), nonce = header.substr(space + 1);
    std::uint64_t token = 0;
    if (!parse_canonical_u64(digits, token)) return foreign("its token is not a decimal number of 64 bits");
    if (!is_nonce(nonce)) return foreign("its nonce is not lowercase hex");
    out.token = token;
    out.nonce = std::string(nonce);
    out.value = std::string(body.substr(eol + 1));
    return {};
}

struct fenced_attempt {
    std::string nonce;
};

// What a client last saw of a key: a version and the token stored under it.
struct fenced_seen {
    std::string version;
    std::uint64_t token = 0;
};

struct fenced_action {
    enum class type { read, write, wait, done };
    type what = type::done;
    std::string body;                       // write
    precondition pc = precondition::none(); // write
    bool hooked = false;                    // write: through the store's fenced-write hook (`matches` names the known version, `absent` none)
    std::chrono::nanoseconds delay{0};      // wait
    error_code ec;                          // done
};

// One fenced write. `Retry` is the RetryPolicy (held by reference: copies share its budget).
// `Rng` draws nonces and jitter.
template <class Retry, class Rng>
class fenced_write_machine {
public:
    // Rounds of "refused, read, write again" before the write reports contention (from the third
    // on, after a jittered pause).
    static constexpr unsigned max_contention_rounds = 64;

    // `hook`: the store checks the token itself in one conditional write (DynamoDB), so no read
    // is needed before a first write.
    fenced_write_machine(std::string value, std::uint64_t token, std::optional<fenced_seen> known, Retry& retry, Rng& rng,
                         bool hook = false)
        : value_(std::move(value)), token_(token), known_(std::move(known)), retry_(retry), rng_(rng), hook_(hook) {}

    // The first step: one request when the version is known and its token is not above ours
    // (`matches` then guarantees the record still holds it), or when the store checks tokens
    // itself; a read first otherwise.
    fenced_action start() {
        if (known_ && known_->token <= token_) return write(precondition::matches(known_->version));
        if (hook_ && !known_) return write(precondition::absent());
        return read();
    }

    fenced_action on_put(error_code ec, put_result const& r) {
        ++requests_;
        if (!ec) {
            version_ = r.version;
            retry_.on_success(attempts_ + 1);
            return done({});
        }
        diag_ = r.diag;
        if (ec == errc::precondition_failed || ec == errc::not_found) {
            if (++rounds_ > max_contention_rounds) {
                diag_.message = "the record changed under " + std::to_string(max_contention_rounds) +
                                " fenced writes in a row (heavy contention on one key)";
                return done(errc::precondition_failed);
            }
            if (rounds_ <= 2) {
                if (r.current) return decide(*r.current);
                return read();
            }
            // Many writers on one key: spread the next rounds out (full jitter, doubling, at most 1 s).
            std::chrono::nanoseconds const ceiling =
                std::min<std::chrono::nanoseconds>(std::chrono::milliseconds(5) * (1LL << std::min(rounds_ - 3, 8u)), std::chrono::seconds(1));
            next_is_read_ = true;
            fenced_action a;
            a.what = fenced_action::type::wait;
            a.delay = std::chrono::nanoseconds(static_cast<std::int64_t>(uniform() * static_cast<double>(ceiling.count())));
            return a;
        }
        if (ec == boost::asio::error::operation_aborted) {
            // Cancelled after it may have been sent: settle once, uncancellable, then report.
            doubts_.in_doubt(inflight_);
            stopping_ = true;
            return read();
        }
        if (outcome_unknown(ec)) {
            doubts_.in_doubt(inflight_);
            return backoff(ec, /*always_read=*/true);
        }
        return backoff(ec, false);
    }

    fenced_action on_get(error_code ec, get_result const& r) {
        ++requests_;
        if (ec) {
            diag_ = r.diag;
            if (stopping_) return give_up(ec);
            return backoff(ec, false);
        }
        if (!r.found) {
            if (stopping_) return done(stop_reason_);
            // No write of ours landed (an absent record has none), whatever was in doubt.
            doubts_.clear();
            return write(precondition::absent());
        }
        return decide(*r.found);
    }

    fenced_action on_wait() { return next_is_read_ ? read() : write_again(); }

    // The caller's cancellation arrived at a wait: nothing more is written, and a write in doubt is settled first.
    fenced_action on_cancel() {
        if (doubts_.empty()) return done(boost::asio::error::operation_aborted);
        stopping_ = true;
        return read();
    }

    bool stopping() const noexcept { return stopping_; }
    std::string const& version() const noexcept { return version_; }
    std::uint64_t token() const noexcept { return token_; }
    std::uint64_t winning_token() const noexcept { return winning_; }
    unsigned requests() const noexcept { return requests_; }
    bool settled_by_read() const noexcept { return settled_; }
    diagnostics const& diag() const noexcept { return diag_; }
    // The version to remember for this key after the call, if any is known.
    std::optional<fenced_seen> const& last_seen() const noexcept { return seen_; }

private:
    fenced_action read() {
        last_was_read_ = true;
        fenced_action a;
        a.what = fenced_action::type::read;
        return a;
    }

    fenced_action write(precondition pc) {
        inflight_ = fenced_attempt{make_nonce(rng_)};
        last_pc_ = pc;
        last_was_read_ = false;
        fenced_action a;
        a.what = fenced_action::type::write;
        a.body = encode_fenced(token_, inflight_.nonce, value_);
        a.pc = std::move(pc);
        a.hooked = hook_;
        return a;
    }

    fenced_action write_again() { return write(last_pc_); }

    fenced_action done(error_code ec) {
        fenced_action a;
        a.ec = ec;
        if (!ec) seen_ = fenced_seen{version_, token_};
        else if (ec != errc::fenced) seen_.reset(); // a fenced answer keeps the version it read; others leave none reliable
        return a;
    }

    fenced_action give_up(error_code ec) {
        if (doubts_.empty()) return done(ec);
        diag_.message = "a write of this call may have landed and reading the record back failed (" +
                        error_code(ec).message() + ")";
        return done(errc::unknown_outcome);
    }

    // Waits per the retry policy, then reads (to settle, or after a failed read) or writes again.
    fenced_action backoff(error_code ec, bool always_read) {
        ++attempts_;
        auto const d = retry_.on_failure(ec, attempts_, uniform());
        next_is_read_ = always_read || !doubts_.empty() || last_was_read_;
        if (d.retry) {
            fenced_action a;
            a.what = fenced_action::type::wait;
            a.delay = std::clamp(d.delay, std::chrono::nanoseconds(0), std::chrono::nanoseconds(std::chrono::hours(24)));
            return a;
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

    // The record as it is now decides: ours landed, a higher token won, or write over it.
    fenced_action decide(record const& found) {
        fenced_body b;
        diagnostics d;
        if (auto ec = decode_fenced(found.body, b, d)) {
            diag_ = d;
            diag_.message += " (key " + found.key + ")";
            return done(ec);
        }
        seen_ = fenced_seen{found.version, b.token};
        if (doubts_.landed(b.nonce)) {
            settled_ = true;
            version_ = found.version;
            retry_.on_success(attempts_ + 1);
            return done({});
        }
        doubts_.clear(); // each was conditional on a version now replaced, or was never applied
        if (b.token > token_) {
            winning_ = b.token;
            diag_.clear();
            diag_.message = "token " + std::to_string(token_) + " is below token " + std::to_string(b.token) +
                            " already accepted for this key";
            return done(errc::fenced);
        }
        if (stopping_) return done(stop_reason_);
        return write(precondition::matches(found.version));
    }

    double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

    std::string value_;
    std::uint64_t token_;
    std::optional<fenced_seen> known_;
    Retry& retry_;
    Rng& rng_;
    bool hook_ = false;
    fenced_attempt inflight_;
    precondition last_pc_ = precondition::none();
    settlement_ledger<fenced_attempt> doubts_;
    std::string version_;
    std::optional<fenced_seen> seen_;
    std::uint64_t winning_ = 0;
    unsigned attempts_ = 0;
    unsigned rounds_ = 0;
    unsigned requests_ = 0;
    bool next_is_read_ = false;
    bool last_was_read_ = false;
    bool stopping_ = false;
    error_code stop_reason_ = boost::asio::error::operation_aborted; // what a stopped write that did not land reports
    bool settled_ = false;
    diagnostics diag_;
};

} // namespace baton::detail

#endif
