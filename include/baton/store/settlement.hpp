// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_SETTLEMENT_HPP
#define BATON_STORE_SETTLEMENT_HPP

/** @file
    Layer: store. Settlement of writes whose outcome is unknown, for every recipe.

    A write that timed out, or was answered 5xx, 409 or throttled, may have
    been applied or not. Guessing either way is how coordination breaks: a
    holder that assumes "not applied" loses a lease the store shows as its
    own, one that assumes "applied" acts on a write that never landed. The
    record store's rule (docs/design.md §5) is to settle instead: every write
    carries a fresh nonce, the ambiguous ones are kept in a ledger, and the
    next read of the record tells which of them landed.

    This header is the store layer's part of that rule, sans-I/O: which
    answers are ambiguous (`outcome_unknown`), fresh nonces (`make_nonce`),
    and the ledger (`settlement_ledger`). The recipe decides what a landed
    write means for it (a lease adopts its renewal; a claim becomes a grant).
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/core/error.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace baton {

/** True when a write answered with `ec` may or may not have been applied,
    so that the record must be read back before deciding: timeouts, unknown
    outcomes (the connection broke after the request was sent), 5xx, S3's
    409 `ConditionalRequestConflict`, throttling (normally not applied, but a
    proxy or an S3-compatible store may answer SlowDown after applying), and
    transport errors that are retryable.
*/
BATON_DECL bool outcome_unknown(error_code const& ec) noexcept;

/** Makes `out` a fresh nonce: 128 random bits from `rng` (a 64-bit generator) as 32 lowercase
    hex digits. Reuses `out`'s storage: no allocation when it held a nonce before. */
template <class Rng>
void fill_nonce(Rng& rng, std::string& out) {
    out.resize(32);
    detail::put_hex16(rng(), out.data());
    detail::put_hex16(rng(), out.data() + 16);
}

/** A fresh nonce: 128 random bits from `rng` (a 64-bit generator) as 32 lowercase hex digits. */
template <class Rng>
std::string make_nonce(Rng& rng) {
    std::string s;
    fill_nonce(rng, s);
    return s;
}

/** The writes of one recipe object whose outcome is unknown, until a read settles them.

    `Attempt` is what the recipe wants back when one of them turns out to
    have landed (when it was sent, what it wrote); it has a `nonce` member
    convertible to `std::string_view`.

    @par Thread safety
    Distinct objects: safe. Shared objects: unsafe.
*/
template <class Attempt>
class settlement_ledger {
public:
    /// Keeps `a`: its answer was ambiguous (see `outcome_unknown`).
    void in_doubt(Attempt a) { doubts_.push_back(std::move(a)); }

    /// The attempt in doubt that wrote `nonce`, if any: it landed.
    std::optional<Attempt> landed(std::string_view nonce) const {
        for (auto const& a : doubts_)
            if (std::string_view(a.nonce) == nonce) return a;
        return std::nullopt;
    }

    /// True when some attempt in doubt satisfies `pred`.
    template <class Pred>
    bool any(Pred pred) const {
        return std::any_of(doubts_.begin(), doubts_.end(), pred);
    }

    /// Calls `f` with each attempt in doubt, oldest first.
    template <class F>
    void for_each(F f) const {
        for (auto const& a : doubts_) f(a);
    }

    /// Keeps only the attempts that satisfy `pred` (the others can no longer land).
    template <class Pred>
    void keep_if(Pred pred) {
        std::erase_if(doubts_, [&](Attempt const& a) { return !pred(a); });
    }

    /// Forgets every attempt: the record moved on (each was conditional on a version now replaced), or a new term began.
    void clear() noexcept { doubts_.clear(); }

    /// True when nothing is in doubt.
    bool empty() const noexcept { return doubts_.empty(); }

    /// Attempts in doubt.
    std::size_t size() const noexcept { return doubts_.size(); }

private:
    std::vector<Attempt> doubts_;
};

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/store/impl/settlement.ipp>
#endif

#endif
