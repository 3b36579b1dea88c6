// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_LEADER_WATCH_IPP
#define BATON_RECIPE_IMPL_LEADER_WATCH_IPP

// Layer: recipes, internal. The compiled part of recipe/detail/leader_watch.hpp.
#include <baton/recipe/detail/leader_watch.hpp>
#include <baton/recipe/detail/lease_machine.hpp>

#include <boost/asio/error.hpp>

#include <algorithm>
#include <utility>

namespace baton::detail {

BATON_DECL void leader_sighting::observe(lease_info& i, std::chrono::nanoseconds answered, std::chrono::nanoseconds sent,
                                         double skew) {
    if (i.version != version) {
        version = i.version;
        since = answered;
    }
    i.unchanged_for = std::max(std::chrono::nanoseconds(0), sent - since);
    i.expired = i.unchanged_for >= lease_machine::takeover_window(i.ttl, skew);
}

BATON_DECL machine_step leader_read::start(std::chrono::nanoseconds now) {
    sent_ = now;
    return machine_step::read();
}

BATON_DECL error_code leader_read::judge(error_code ec, get_result& r, std::chrono::nanoseconds now) {
    leader_.reset();
    diag_ = std::move(r.diag);
    if (ec || !r.found) return ec;
    lease_info i;
    if (auto bad = lease_machine::describe(*r.found, i, diag_)) return bad;
    if (i.released) return {}; // resigned: nobody leads
    seen_.observe(i, now, sent_, skew_);
    leader_ = std::move(i);
    return {};
}

BATON_DECL machine_step leader_read::on_get(error_code ec, get_result r, std::chrono::nanoseconds now) {
    return machine_step::done(judge(ec, r, now));
}

BATON_DECL machine_step leader_read::on_cancel() {
    leader_.reset();
    return machine_step::done(boost::asio::error::operation_aborted);
}

BATON_DECL bool leader_watch::same_leader(std::optional<lease_info> const& a, std::optional<lease_info> const& b) {
    if (a.has_value() != b.has_value()) return false;
    if (!a) return true;
    return a->owner == b->owner && a->fencing_token == b->fencing_token && a->released == b->released &&
           a->expired == b->expired;
}

BATON_DECL machine_step leader_watch::start(std::chrono::nanoseconds now) { return read_.start(now); }

BATON_DECL machine_step leader_watch::on_get(error_code ec, get_result r, std::chrono::nanoseconds now) {
    ec = read_.judge(ec, r, now);
    if (ec && !is_retryable(ec)) {
        read_.leader_.reset();
        return machine_step::done(ec);
    }
    if (!ec && !same_leader(known_, read_.leader_)) return machine_step::done();
    return machine_step::wait(poll_);
}

BATON_DECL machine_step leader_watch::on_wait(std::chrono::nanoseconds now) { return read_.start(now); }

BATON_DECL machine_step leader_watch::on_cancel() { return read_.on_cancel(); }

} // namespace baton::detail

#endif
