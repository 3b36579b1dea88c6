// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_PROVIDER_STATE_IPP
#define BATON_AWS_IMPL_PROVIDER_STATE_IPP

// Layer: wire (aws), internal. The compiled part of aws/detail/provider_state.hpp: the default
// chain's search, and the cache and refresh logic behind every credentials_provider.
#include <baton/aws/detail/provider_state.hpp>

namespace baton::aws::detail {

BATON_DECL void chain_source::fetch(source_callback done) {
    if (!winner_) return discover(0, {}, std::move(done));
    auto const i = *winner_;
    links_[i].source->fetch([this, done = std::move(done)](source_outcome o) mutable {
        if (o.what != source_outcome::kind::absent) return std::move(done)(std::move(o));
        winner_.reset(); // the source that worked is no longer configured: search again
        discover(0, {}, std::move(done));
    });
}

BATON_DECL void chain_source::discover(std::size_t i, std::string tried, source_callback done) {
    if (i == links_.size()) return std::move(done)(absent_outcome({}, std::move(tried)));
    links_[i].source->fetch([this, i, tried = std::move(tried), done = std::move(done)](source_outcome o) mutable {
        using kind = source_outcome::kind;
        if (o.what == kind::found) {
            winner_ = i;
            return std::move(done)(std::move(o));
        }
        if (o.what == kind::failed && !links_[i].failure_means_absent) return std::move(done)(std::move(o));
        if (!tried.empty()) tried += "; ";
        tried += o.tried_entry();
        discover(i + 1, std::move(tried), std::move(done));
    });
}

BATON_DECL provider_state::provider_state(asio::any_io_executor ex, std::string name, provider_options opts,
                                          source_factory const& make)
    : ex_(std::move(ex)), strand_(asio::make_strand(ex_)), opts_(std::move(opts)), name_(std::move(name)) {
    opts_.validate();
    src_ = make(strand_, opts_);
}

BATON_DECL void provider_state::get(handler_type h) {
    std::unique_lock lock(m_);
    auto const now = opts_.current_time();
    if (cached_ && now < wait_after_) {
        refresh_if_due(now);
        fetched_credentials fc{cached_, {}, cached_source_};
        lock.unlock();
        complete(std::move(h), {}, std::move(fc));
        return;
    }
    auto& w = waiters_.emplace_back();
    w.id = ++next_waiter_id_;
    auto slot = asio::get_associated_cancellation_slot(h);
    w.handler.emplace(std::move(h));
    if (slot.is_connected()) {
        w.slot = slot;
        w.cancelled = std::make_shared<std::atomic<bool>>(false);
        slot.assign([weak = weak_from_this(), id = w.id, flag = w.cancelled](asio::cancellation_type) {
            flag->store(true);
            if (auto self = weak.lock()) self->cancel_waiter(id);
        });
    }
    if (!fetching_) start_fetch();
}

BATON_DECL std::shared_ptr<credentials const> provider_state::usable_now() {
    std::lock_guard lock(m_);
    auto const now = opts_.current_time();
    if (!cached_ || now >= wait_after_) return nullptr;
    refresh_if_due(now);
    return cached_;
}

BATON_DECL void provider_state::invalidate() {
    std::lock_guard lock(m_);
    cached_.reset();
    cached_source_.clear();
    wait_after_ = refresh_after_ = time_point::min();
}

BATON_DECL std::string provider_state::current_source() const {
    std::lock_guard lock(m_);
    return cached_source_;
}

BATON_DECL std::uint64_t provider_state::fetch_count() const {
    std::lock_guard lock(m_);
    return fetches_;
}

BATON_DECL void provider_state::complete(handler_type h, error_code ec, fetched_credentials fc) {
    // Never inline: through the handler's associated executor (default: the provider's).
    asio::post(ex_, asio::append(std::move(h), ec, std::move(fc)));
}

BATON_DECL void provider_state::complete_waiter(handler_type h, asio::cancellation_slot slot,
                                                std::shared_ptr<std::atomic<bool>> cancelled,
                                                error_code ec, fetched_credentials fc) {
    auto const hex = asio::get_associated_executor(h, ex_);
    asio::post(ex_, asio::bind_executor(hex, [this_name = name_, h = std::move(h), slot, cancelled, ec,
                                              fc = std::move(fc)]() mutable {
                   if (slot.is_connected()) slot.clear();
                   if (cancelled && cancelled->load()) {
                       fetched_credentials none;
                       none.diag.message = "cancelled while waiting for credentials from " + this_name;
                       return std::move(h)(asio::error::operation_aborted, std::move(none));
                   }
                   std::move(h)(ec, std::move(fc));
               }));
}

BATON_DECL void provider_state::start_fetch() {
    fetching_ = true;
    ++fetches_;
    asio::post(strand_, [self = shared_from_this()] {
        self->src_->fetch([self](source_outcome o) { self->on_fetched(std::move(o)); });
    });
}

BATON_DECL void provider_state::cancel_waiter(std::uint64_t id) {
    std::optional<handler_type> h;
    {
        std::lock_guard lock(m_);
        auto it = std::find_if(waiters_.begin(), waiters_.end(), [id](waiter const& w) { return w.id == id; });
        if (it == waiters_.end()) return;
        h.emplace(std::move(*it->handler));
        waiters_.erase(it); // the slot still runs this very handler: it is not cleared here
    }
    fetched_credentials fc;
    fc.diag.message = "cancelled while waiting for credentials from " + name_ + " (the fetch goes on for others)";
    complete(std::move(*h), asio::error::operation_aborted, std::move(fc));
}

BATON_DECL void provider_state::on_fetched(source_outcome o) {
    std::list<waiter> ready;
    error_code ec;
    fetched_credentials fc;
    {
        std::lock_guard lock(m_);
        auto const now = opts_.current_time();
        fetching_ = false;
        if (o.what == source_outcome::kind::found && o.creds->expiration && *o.creds->expiration <= now) {
            // Handing them out would fail every request, and fetch again on every use.
            auto const ago = std::chrono::duration_cast<std::chrono::seconds>(now - *o.creds->expiration).count();
            o = failed_outcome(o.label, errc::invalid_response,
                               "the credentials it gave had expired " + std::to_string(ago) +
                                   " s before they arrived; check this machine's clock and the source");
        }
        if (o.what == source_outcome::kind::found) {
            cached_ = std::move(o.creds);
            cached_source_ = o.label;
            set_windows(now);
            fc = fetched_credentials{cached_, {}, cached_source_};
        } else {
            diagnostics d = std::move(o.diag);
            if (o.what == source_outcome::kind::absent) {
                ec = errc::no_credentials;
                d.message = "no AWS credentials found; tried: " + o.tried_entry();
            } else {
                ec = o.ec;
                d.message = o.label.empty() ? o.reason : o.label + ": " + o.reason;
            }
            bool const still_valid = cached_ && (!cached_->expiration || now < *cached_->expiration);
            if (still_valid) {
                // Keep what works until it expires; try again after the pause, not on every use.
                refresh_after_ = now + opts_.min_refresh_interval;
                if (cached_->expiration)
                    wait_after_ = std::max(wait_after_, std::min(*cached_->expiration,
                                                                 now + opts_.min_refresh_interval));
                d.message = "refreshing the credentials failed; the current ones (" + cached_source_ +
                            ") stay in use until they expire: " + d.message;
                fc = fetched_credentials{cached_, std::move(d), cached_source_};
                ec = {};
            } else {
                fc.diag = std::move(d);
            }
        }
        ready.splice(ready.end(), waiters_);
    }
    for (auto& w : ready) complete_waiter(std::move(*w.handler), w.slot, w.cancelled, ec, fc);
}

BATON_DECL void provider_state::set_windows(time_point now) {
    if (!cached_->expiration) {
        wait_after_ = refresh_after_ = time_point::max();
        return;
    }
    auto const e = *cached_->expiration;
    auto const pause = now + opts_.min_refresh_interval;
    wait_after_ = std::max(e - opts_.mandatory_refresh, std::min(e, pause));
    refresh_after_ = std::max(e - opts_.advisory_refresh, pause);
}

} // namespace baton::aws::detail

#endif
