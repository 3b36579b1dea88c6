// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BENCH_COMMON_HPP
#define BATON_BENCH_COMMON_HPP

// What the benchmarks share: a record store that counts what passes through it.

#include <baton/core/error.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace bench {

/// The operations of a record store, as a counter sees them.
enum class store_op { get, put, erase, list, probe };

/* A record store that forwards every operation to `Inner` and tells a `Counter` about it:
     bool on_request(store_op);        as the request is sent; true to be told its answer
     bool on_request(store_op, std::string_view key, std::size_t body_bytes);
                                       instead, when the counter also wants what is sent: the key
                                       (a listing's prefix) and the body written (0 for the rest)
     void on_answer(store_op, baton::error_code, Answer const&);
                                       optional, per answer type (get_result, put_result, ...):
                                       before the caller sees the answer
     template <class S> auto signer(S); optional: wraps the Signer a recipe hands to the store
   The caller's handler keeps its associated executor and cancellation slot. */
template <class Inner, class Counter>
class counting_store {
public:
    using executor_type = typename Inner::executor_type;

    counting_store(Inner inner, std::shared_ptr<Counter> counter) : inner_(std::move(inner)), c_(std::move(counter)) {}

    executor_type get_executor() const { return inner_.get_executor(); }

    template <class S>
        requires requires(Inner& i, S s) { i.use_signer(std::move(s)); }
    void use_signer(S s) {
        if constexpr (requires(Counter& c) { c.signer(std::move(s)); }) inner_.use_signer(c_->signer(std::move(s)));
        else inner_.use_signer(std::move(s));
    }

    template <class H>
    void async_get(std::string key, H&& h) {
        forward<baton::get_result>(store_op::get, key, 0, std::forward<H>(h),
                                   [&](auto&& hh) { inner_.async_get(std::move(key), std::move(hh)); });
    }
    template <class H>
    void async_put(std::string key, std::string body, baton::precondition pc, H&& h) {
        forward<baton::put_result>(store_op::put, key, body.size(), std::forward<H>(h), [&](auto&& hh) {
            inner_.async_put(std::move(key), std::move(body), std::move(pc), std::move(hh));
        });
    }
    template <class H>
    void async_erase(std::string key, baton::precondition pc, H&& h) {
        forward<baton::erase_result>(store_op::erase, key, 0, std::forward<H>(h),
                                     [&](auto&& hh) { inner_.async_erase(std::move(key), std::move(pc), std::move(hh)); });
    }
    template <class H>
    void async_list(std::string prefix, std::string after, std::size_t limit, H&& h) {
        forward<baton::list_page>(store_op::list, prefix, 0, std::forward<H>(h), [&](auto&& hh) {
            inner_.async_list(std::move(prefix), std::move(after), limit, std::move(hh));
        });
    }
    template <class H>
    void async_probe(H&& h) {
        forward<baton::capabilities>(store_op::probe, {}, 0, std::forward<H>(h),
                                     [&](auto&& hh) { inner_.async_probe(std::move(hh)); });
    }

private:
    // Counts the request and sends it with `send`, its handler wrapped when the counter wants the answer.
    template <class Answer, class H, class Send>
    void forward(store_op op, std::string_view key, std::size_t body_bytes, H&& h, Send&& send) {
        bool observe = false;
        if constexpr (requires(Counter& c) { c.on_request(op, key, body_bytes); }) observe = c_->on_request(op, key, body_bytes);
        else observe = c_->on_request(op);
        if constexpr (requires(Counter& c, Answer const& a) { c.on_answer(op, baton::error_code{}, a); }) {
            if (observe) {
                auto ex = boost::asio::get_associated_executor(h, inner_.get_executor());
                auto slot = boost::asio::get_associated_cancellation_slot(h);
                return send(boost::asio::bind_cancellation_slot(
                    slot, boost::asio::bind_executor(ex, [c = c_, op, h = std::forward<H>(h)](baton::error_code ec, Answer a) mutable {
                        c->on_answer(op, ec, a);
                        std::move(h)(ec, std::move(a));
                    })));
            }
        }
        send(std::forward<H>(h));
    }

    Inner inner_;
    std::shared_ptr<Counter> c_;
};

} // namespace bench

#endif
