// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_ENVELOPE_HPP
#define BATON_RECIPE_DETAIL_ENVELOPE_HPP

// Layer: recipes, internal. Pieces the recipes' record formats share: a header line of decimal numbers
// and a settlement nonce, parsed strictly (a record that does not parse is
// foreign, never guessed at), and the per-object cache of the versions last
// seen per key (it only ever saves a read).

#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace baton::detail {

// errc::foreign_record, saying in `d` why the body is not a `what` record.
BATON_DECL error_code foreign_record(diagnostics& d, char const* what, std::string const& why);

// A u64 in canonical decimal (no sign, no leading zero, no spaces).
BATON_DECL bool parse_canonical_u64(std::string_view digits, std::uint64_t& out) noexcept;

// A settlement nonce as make_nonce writes it (lowercase hex; up to 64 digits accepted).
BATON_DECL bool is_nonce(std::string_view s) noexcept;

// Splits a recipe record "<magic><header line>\n<rest>". A body that is not one is
// errc::foreign_record, with "not a <what> record: <why>" in `d`, never guessed at.
BATON_DECL error_code split_record(std::string_view body, std::string_view magic, char const* what,
                                   std::string_view& header, std::string_view& rest, diagnostics& d);

// Versions last seen per key, shared by the copies of one recipe object; bounded (past
// `max_keys` it starts over). Thread-safe.
template <class Seen>
class version_cache {
public:
    explicit version_cache(std::size_t max_keys) : max_keys_(max_keys) {}

    std::optional<Seen> find(std::string const& key) const {
        std::lock_guard lk(mu_);
        auto it = seen_.find(key);
        if (it == seen_.end()) return std::nullopt;
        return it->second;
    }

    // Remembers `v` for `key`, or forgets the key when `v` is empty.
    void remember(std::string const& key, std::optional<Seen> const& v) {
        std::lock_guard lk(mu_);
        if (!v) {
            seen_.erase(key);
            return;
        }
        if (seen_.size() >= max_keys_ && !seen_.count(key)) seen_.clear();
        seen_[key] = *v;
    }

    void forget(std::string const& key) { remember(key, std::nullopt); }

private:
    std::size_t max_keys_;
    mutable std::mutex mu_;
    std::map<std::string, Seen, std::less<>> seen_;
};

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/envelope.ipp>
#endif

#endif
