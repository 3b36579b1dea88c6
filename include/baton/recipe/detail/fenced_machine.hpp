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
    auto foreign = [&](char const* why) { return foreign_record(d, "fenced", why); };
    std::string_view header, rest;
    if (auto ec = split_record(body, fenced_magic, "fenced", header, rest, d)) return ec;
    auto const space = header.find(' ');
    if (space == std::string_view::npos) return foreign("its header has no nonce");
    std::string_view digits = header.substr(0, space), nonce = header.substr(space + 1);
    std::uint64_t token = 0;
    if (!parse_canonical_u64(digits, token)) return foreign("its token is not a decimal number of 64 bits");
    if (!is_nonce(nonce)) return foreign("its nonce is not lowercase hex");
    out.token = token;
    out.nonce = std::string(nonce);
    out.value = std::string(rest);
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

// One fenced write. `Retry` is the RetryPolicy (held by reference: copies share its budget).
// `Rng` draws nonces and jitter. The retry, pacing and settlement rules are settling_write's.
template <class Retry, class Rng>
class fenced_write_machine : public settling_write<fenced_write_machine<Retry, Rng>, fenced_attempt, Retry, Rng> {
    using base = settling_write<fenced_write_machine<Retry, Rng>, fenced_attempt, Retry, Rng>;
    friend base;

public:
    // `hook`: the store checks the token itself in one conditional write (DynamoDB), so no read
    // is needed before a first write; every write then goes through the hook.
    fenced_write_machine(std::string value, std::uint64_t token, std::optional<fenced_seen> known, Retry& retry, Rng& rng,
                         bool hook = false)
        : base(retry, rng), value_(std::move(value)), token_(token), known_(std::move(known)), hook_(hook) {}

    // The first step: one request when the version is known and its token is not above ours
    // (`matches` then guarantees the record still holds it), or when the store checks tokens
    // itself; a read first otherwise.
    write_step start() {
        if (known_ && known_->token <= token_) return write_fenced(precondition::matches(known_->version));
        if (hook_ && !known_) return write_fenced(precondition::absent());
        return read();
    }

    write_step on_put(error_code ec, put_result const& r) {
        ++requests_;
        if (!ec) {
            version_ = r.version;
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
        if (ec == boost::asio::error::operation_aborted) return cancelled_after_sending(inflight_);
        if (outcome_unknown(ec)) {
            this->doubt(inflight_);
            return backoff(ec, /*always_read=*/true);
        }
        return backoff(ec, false);
    }

    write_step on_get(error_code ec, get_result const& r) {
        ++requests_;
        if (ec) {
            diag_ = r.diag;
            if (stopping_) return give_up(ec);
            return backoff(ec, false);
        }
        if (!r.found) {
            if (stopping_) return finish(stop_reason_);
            // No write of ours landed (an absent record has none), whatever was in doubt.
            doubts_.clear();
            return write_fenced(precondition::absent());
        }
        return decide(*r.found);
    }

    // Every write goes through the store's fenced-write hook (`matches` names the known version, `absent` none).
    bool hooked() const noexcept { return hook_; }
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

    write_step write_fenced(precondition pc) {
        inflight_ = fenced_attempt{make_nonce(this->rng_)};
        last_pc_ = pc;
        return base::write(encode_fenced(token_, inflight_.nonce, value_), std::move(pc));
    }

    write_step write_again() { return write_fenced(last_pc_); }

    write_step finish(error_code ec) {
        write_step s;
        s.ec = ec;
        if (!ec) seen_ = fenced_seen{version_, token_};
        else if (ec != errc::fenced) seen_.reset(); // a fenced answer keeps the version it read; others leave none reliable
        return s;
    }

    // The record as it is now decides: ours landed, a higher token won, or write over it.
    write_step decide(record const& found) {
        fenced_body b;
        diagnostics d;
        if (auto ec = decode_fenced(found.body, b, d)) {
            diag_ = d;
            diag_.message += " (key " + found.key + ")";
            return finish(ec);
        }
        seen_ = fenced_seen{found.version, b.token};
        if (doubts_.landed(b.nonce)) {
            settled_ = true;
            version_ = found.version;
            succeeded();
            return finish({});
        }
        doubts_.clear(); // each was conditional on a version now replaced, or was never applied
        if (b.token > token_) {
            winning_ = b.token;
            diag_.clear();
            diag_.message = "token " + std::to_string(token_) + " is below token " + std::to_string(b.token) +
                                  " already accepted for this key";
            return finish(errc::fenced);
        }
        if (stopping_) return finish(stop_reason_);
        return write_fenced(precondition::matches(found.version));
    }

    std::string value_;
    std::uint64_t token_;
    std::optional<fenced_seen> known_;
    bool hook_ = false;
    fenced_attempt inflight_;
    precondition last_pc_ = precondition::none();
    std::string version_;
    std::optional<fenced_seen> seen_;
    std::uint64_t winning_ = 0;
};

} // namespace baton::detail

#endif
