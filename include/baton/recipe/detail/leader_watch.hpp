// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_LEADER_WATCH_HPP
#define BATON_RECIPE_DETAIL_LEADER_WATCH_HPP

// Layer: recipes, internal. Election's observers as sans-I/O machines, run by machine_op: one
// read of who leads (`leader_read`), and a watch that reads every poll interval until the
// leader differs from a known one (`leader_watch`). A crashed leader's record stays until
// someone takes over, so both age what they read by how long its version is known unchanged
// (`leader_sighting`, shared by every read of one election object).

#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/recipe/lease_options.hpp>
#include <baton/store/detail/machine_step.hpp>
#include <baton/store/record_store.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace baton::detail {

// The leader's record as one candidate's reads have seen it: which version, and since when.
struct leader_sighting {
    std::string version;
    std::chrono::nanoseconds since{0};

    // Ages `i` by how long its version is known unchanged: from the answer of the first read that
    // showed it (`answered`) to the sending of this one (`sent`): a late answer proves nothing
    // about the time after the read reached the store, when a renewal may have landed.
    BATON_DECL void observe(lease_info& i, std::chrono::nanoseconds answered, std::chrono::nanoseconds sent, double skew);
};

// One read of who leads: empty when nobody has led yet or the last leader resigned.
class leader_read {
public:
    leader_read(leader_sighting& seen, double skew) : seen_(seen), skew_(skew) {}

    BATON_DECL machine_step start(std::chrono::nanoseconds now);
    BATON_DECL machine_step on_get(error_code ec, get_result r, std::chrono::nanoseconds now);
    BATON_DECL machine_step on_cancel();

    std::optional<lease_info>& leader() noexcept { return leader_; }
    diagnostics& diag() noexcept { return diag_; }

private:
    friend class leader_watch;
    // The read's answer as a leader (or none); an error when the record is not a lease's.
    BATON_DECL error_code judge(error_code ec, get_result& r, std::chrono::nanoseconds now);

    leader_sighting& seen_;
    double skew_;
    std::chrono::nanoseconds sent_{0};
    std::optional<lease_info> leader_;
    diagnostics diag_;
};

// Reads every `poll` until the leader differs from `known` (another holder, another term,
// resigned, or expired). A read that fails with a retryable error is tried again at the next
// poll; any other error ends the watch.
class leader_watch {
public:
    leader_watch(leader_sighting& seen, double skew, std::optional<lease_info> known, std::chrono::nanoseconds poll)
        : read_(seen, skew), known_(std::move(known)), poll_(poll) {}

    BATON_DECL machine_step start(std::chrono::nanoseconds now);
    BATON_DECL machine_step on_get(error_code ec, get_result r, std::chrono::nanoseconds now);
    BATON_DECL machine_step on_wait(std::chrono::nanoseconds now);
    BATON_DECL machine_step on_cancel();

    std::optional<lease_info>& leader() noexcept { return read_.leader(); }
    diagnostics& diag() noexcept { return read_.diag(); }
    // True when `a` and `b` name the same leadership: holder, term, and whether it ended.
    BATON_DECL static bool same_leader(std::optional<lease_info> const& a, std::optional<lease_info> const& b);

private:
    leader_read read_;
    std::optional<lease_info> known_;
    std::chrono::nanoseconds poll_;
};

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/recipe/impl/leader_watch.ipp>
#endif

#endif
