// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_DETAIL_PROVIDER_STATE_HPP
#define BATON_AWS_DETAIL_PROVIDER_STATE_HPP

// Layer: wire (aws), internal. The default chain of sources, and the cache and refresh logic behind every
// `credentials_provider` handle.

#include <baton/aws/detail/endpoint_sources.hpp>
#include <baton/aws/detail/web_identity_sources.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/profile.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/aws/detail/xml.hpp>
#include <baton/core/error.hpp>
#include <baton/http/client.hpp>

#ifndef BATON_DOXYGEN
namespace baton::aws::detail {

// ---- the default chain ---------------------------------------------------------------------------

class chain_source final : public credentials_source {
public:
    struct link {
        std::unique_ptr<credentials_source> source;
        bool failure_means_absent = false; // instance metadata: probed last, unreachable is normal off EC2
    };

    explicit chain_source(std::vector<link> links) : credentials_source("default chain"), links_(std::move(links)) {}

    void fetch(source_callback done) override;

private:
    std::vector<link> links_;
    std::optional<std::size_t> winner_;

    void discover(std::size_t i, std::string tried, source_callback done);
};

// ---- the cache and refresh logic behind a provider handle --------------------------------------------

class provider_state : public std::enable_shared_from_this<provider_state> {
public:
    using handler_type = asio::any_completion_handler<void(error_code, fetched_credentials)>;
    using time_point = std::chrono::system_clock::time_point;
    using source_factory =
        std::function<std::unique_ptr<credentials_source>(asio::any_io_executor const&, provider_options const&)>;

    provider_state(asio::any_io_executor ex, std::string name, provider_options opts, source_factory const& make);

    asio::any_io_executor const& executor() const noexcept { return ex_; }
    std::string const& name() const noexcept { return name_; }

    void get(handler_type h);

    std::shared_ptr<credentials const> usable_now();

    void invalidate();

    std::string current_source() const;

    std::uint64_t fetch_count() const;

private:
    struct waiter {
        std::uint64_t id = 0;
        std::optional<handler_type> handler; // emplaced, never move-assigned (Boost 1.81)
        asio::cancellation_slot slot;
        // Set by the slot: a cancellation that arrives after the fetch took the waiter
        // (cancel_waiter no longer finds it) must still win over the result.
        std::shared_ptr<std::atomic<bool>> cancelled;
    };

    asio::any_io_executor ex_;
    asio::any_io_executor strand_;
    provider_options opts_;
    std::string name_;
    std::unique_ptr<credentials_source> src_;

    mutable std::mutex m_;
    std::shared_ptr<credentials const> cached_;
    std::string cached_source_;
    time_point wait_after_ = time_point::min();    // from here on, callers wait for a fetch
    time_point refresh_after_ = time_point::min(); // from here on, use starts a background fetch
    bool fetching_ = false;
    std::uint64_t fetches_ = 0;
    std::list<waiter> waiters_;
    std::uint64_t next_waiter_id_ = 0;

    void complete(handler_type h, error_code ec, fetched_credentials fc);

    // Completes a waiter whose cancellation slot we used. The slot is cleared on the handler's own
    // executor, where the caller may emit the signal, not on the strand that finished the fetch.
    void complete_waiter(handler_type h, asio::cancellation_slot slot, std::shared_ptr<std::atomic<bool>> cancelled,
                         error_code ec, fetched_credentials fc);

    // Called with m_ held.
    void refresh_if_due(time_point now) {
        if (!fetching_ && now >= refresh_after_) start_fetch();
    }

    // Called with m_ held.
    void start_fetch();

    void cancel_waiter(std::uint64_t id);

    void on_fetched(source_outcome o);

    // Called with m_ held, after a successful fetch.
    void set_windows(time_point now);
};

} // namespace baton::aws::detail
#endif

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/provider_state.ipp>
#endif

#endif
