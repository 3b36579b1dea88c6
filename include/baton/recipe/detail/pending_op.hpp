// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_PENDING_OP_HPP
#define BATON_RECIPE_DETAIL_PENDING_OP_HPP

// Layer: recipes, internal. The one way a recipe object keeps an asynchronous operation it has
// started (docs/design.md §7): the user's handler with its associated executor,
// allocator and cancellation slot; a cancellation that reaches the object
// through its executor and only while it lives; a completion that is never
// inline; one outstanding operation per kind (the caller refuses a second
// with operation_in_progress while `busy()`); and a generation, so that a
// timer or an answer captured for an earlier operation stands down instead of
// touching a later one.

#include <baton/core/detail/post_completion.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <cstdint>
#include <memory>
#include <utility>

namespace baton::detail {

template <class Signature>
class pending_op;

/// An operation with completion signature `void(Args...)` that a recipe object has started and not completed.
template <class... Args>
class pending_op<void(Args...)> {
public:
    using handler_type = boost::asio::any_completion_handler<void(Args...)>;

    /// True from `start` until `complete` or `take`.
    bool busy() const noexcept { return busy_; }

    /// Changes at every start and completion: work captured under another generation is stale.
    std::uint64_t generation() const noexcept { return gen_; }

    /// True while the operation started at generation `g` is still the one outstanding.
    bool current(std::uint64_t g) const noexcept { return busy_ && g == gen_; }

    /** Keeps `h` and returns the new generation. When its cancellation slot
        is connected, a cancellation posts `on_cancel()` to `ex` if `owner`
        still lives then (never runs inside the emitter, never after the
        object is gone).
    */
    template <class Handler, class Owner, class OnCancel>
    std::uint64_t start(Handler&& h, boost::asio::any_io_executor const& ex, std::weak_ptr<Owner> owner,
                        OnCancel on_cancel) {
        { // Boost 1.81's any_completion_handler move-assignment recurses: swap instead.
            handler_type tmp(std::forward<Handler>(h));
            h_.swap(tmp);
        }
        // After wrapping: any_completion_handler puts its own cancellation state in the handler's
        // slot, replacing anything installed there before; ours goes on the wrapper's slot.
        slot_ = boost::asio::get_associated_cancellation_slot(h_);
        slot_fired_.reset();
        if (slot_.is_connected()) {
            // The emitter may destroy its signal as soon as emit returns, before the posted
            // cancellation runs: once fired, the slot is not touched again.
            auto fired = std::make_shared<bool>(false);
            slot_fired_ = fired;
            slot_.assign([owner = std::move(owner), ex, on_cancel, fired](boost::asio::cancellation_type) {
                *fired = true;
                boost::asio::post(ex, [owner, on_cancel] {
                    if (auto o = owner.lock()) on_cancel(*o);
                });
            });
        }
        busy_ = true;
        return ++gen_;
    }

    /// Completes the operation with `args`, later, on its handler's associated executor. Nothing when not busy.
    template <class... A>
    void complete(boost::asio::any_io_executor const& ex, A&&... args) {
        if (!busy_) return;
        post_completion(ex, take(), std::forward<A>(args)...);
    }

    /// The same, but by dispatch when `from_answer`: only when the caller runs from an answer that
    /// was itself delivered later (a backend's completion), never inside an initiating function.
    template <class... A>
    void complete_from(boost::asio::any_io_executor const& ex, bool from_answer, A&&... args) {
        if (!busy_) return;
        if (from_answer)
            dispatch_completion(ex, take(), std::forward<A>(args)...);
        else
            post_completion(ex, take(), std::forward<A>(args)...);
    }

    /// Ends the operation and hands its handler to the caller (disconnected from cancellation).
    handler_type take() {
        busy_ = false;
        ++gen_;
        if (slot_.is_connected() && !(slot_fired_ && *slot_fired_)) slot_.clear();
        slot_ = {};
        slot_fired_.reset();
        handler_type out;
        out.swap(h_);
        return out;
    }

private:
    handler_type h_;
    boost::asio::cancellation_slot slot_;
    std::shared_ptr<bool> slot_fired_; // set by the slot's handler: the signal may be gone since
    std::uint64_t gen_ = 0;
    bool busy_ = false;
};

} // namespace baton::detail

#endif
