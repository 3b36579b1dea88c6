// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_DETAIL_MACHINE_OP_HPP
#define BATON_RECIPE_DETAIL_MACHINE_OP_HPP

// Layer: recipes, internal. The driver of a sans-I/O machine (store/detail/machine_step.hpp)
// against a record store, as an operation for `async_compose`: fenced and kv writes, the lease
// table's shard changes and retried reads. It carries out each step the machine asks for (read,
// write, list, wait, compute) and feeds the answer back, so that every recipe on it keeps the
// handler's associated executor, allocator and cancellation slot, never completes inline,
// honours terminal cancellation without abandoning a write in doubt, and owns its machine: the
// answers of one call can never reach another. (The lease runs its three lanes on a driver of
// its own: thousands of leases share one timer there, and a lane outlives any one call.)

#include <baton/core/error.hpp>
#include <baton/store/detail/machine_step.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/assert.hpp>

#include <memory>
#include <string>
#include <utility>

namespace baton::detail {

/* One machine run, as an operation for `async_compose<Token, void(error_code, result_type)>`.
   `Host` holds the store and the time: `ex`, `backend`, `clock` and a `timer` type (for the
   waits). `Spec` holds what is the caller's own:
     using machine; using result_type;
     std::unique_ptr<machine> make(Host&, std::string const& key);
     result_type finish(Host&, std::string const& key, machine&, error_code);
                                       the result, once the machine is done (not called when check refuses)
   and, optionally:
     error_code check(Host&, std::string const& key, result_type&);
                                       refuses bad arguments before anything is sent
     machine_step compute(machine&);   answers a `compute` step (kv's update)
     template <class Self> void send(Host&, std::string key, machine_step&, machine&, Self&&);
                                       sends a `write` step (a store hook); a conditional put otherwise
     bool stop_at_wait(Host&);         the machine is stopped (on_cancel) instead of waiting
   The machine answers start, on_wait and on_cancel, and on_get / on_put / on_list when it
   reads, writes or lists; `stopping()`, when it has one, marks a settling read that must not be cancelled. */
template <class Host, class Spec>
struct machine_op {
    using machine = typename Spec::machine;
    using result_type = typename Spec::result_type;

    std::shared_ptr<Host> host;
    std::string key;
    Spec spec;
    std::unique_ptr<machine> m{};
    std::unique_ptr<typename Host::timer> timer{};
    bool went_async = false; // a request or a wait was started: completing now is not inline

    machine_op(std::shared_ptr<Host> h, std::string k, Spec sp) : host(std::move(h)), key(std::move(k)), spec(std::move(sp)) {}

    // The completion of a call that finished before going async, posted to itself (a tag, so
    // that a result_type that is also a store answer stays unambiguous).
    struct posted {};

    template <class Self>
    void operator()(Self& self) {
        self.reset_cancellation_state(boost::asio::enable_terminal_cancellation());
        if constexpr (requires(result_type& r) { spec.check(*host, key, r); }) {
            result_type refused;
            if (auto ec = spec.check(*host, key, refused)) return complete(self, ec, std::move(refused));
        }
        m = spec.make(*host, key);
        step(self, m->start());
    }
    template <class Self>
    void operator()(Self& self, error_code ec, put_result r) {
        if constexpr (requires { m->on_put(ec, r); }) step(self, m->on_put(unasked_abort(self, ec), r));
    }
    template <class Self>
    void operator()(Self& self, error_code ec, get_result r) {
        if constexpr (requires { m->on_get(ec, std::move(r)); }) {
            if (!ec && r.found) r.found->key = key;
            step(self, m->on_get(unasked_abort(self, ec), std::move(r)));
        }
    }
    template <class Self>
    void operator()(Self& self, error_code ec, list_page p) {
        if constexpr (requires { m->on_list(ec, std::move(p)); }) step(self, m->on_list(unasked_abort(self, ec), std::move(p)));
    }
    template <class Self>
    void operator()(Self& self, error_code ec) { // a wait ended
        if (ec || cancelled(self)) return step(self, m->on_cancel());
        step(self, m->on_wait());
    }
    template <class Self>
    void operator()(Self& self, posted, error_code ec, result_type r) {
        self.complete(ec, std::move(r));
    }

private:
    // A backend that reports operation_aborted although this operation was not cancelled
    // (a wrapper's own cancellation, say): the request's fate is unknown, not abandoned.
    template <class Self>
    static error_code unasked_abort(Self& self, error_code ec) {
        if (ec == boost::asio::error::operation_aborted && !cancelled(self)) return errc::unknown_outcome;
        return ec;
    }
    template <class Self>
    static bool cancelled(Self& self) {
        return self.cancelled() != boost::asio::cancellation_type::none;
    }
    bool stopping() const {
        if constexpr (requires { m->stopping(); }) return m->stopping();
        else return false;
    }

    // A step this machine never asks for: nothing is claimed of what it did.
    static machine_step unexpected() {
        BOOST_ASSERT_MSG(false, "a machine asked for a step it never asks for");
        return machine_step::done(errc::unknown_outcome);
    }

    template <class Self>
    void step(Self& self, machine_step a) {
        using t = machine_step::type;
        for (;;) {
            if (a.what != t::done && a.what != t::read && cancelled(self) && !stopping()) a = m->on_cancel();
            if (a.what == t::wait) {
                if constexpr (requires { spec.stop_at_wait(*host); }) {
                    if (spec.stop_at_wait(*host)) {
                        a = m->on_cancel();
                        continue;
                    }
                }
            }
            if (a.what == t::compute) {
                if constexpr (requires { spec.compute(*m); }) a = spec.compute(*m);
                else a = unexpected();
                continue;
            }
            if (a.what == t::none) a = unexpected();
            if constexpr (!requires { m->on_get(error_code{}, get_result{}); }) {
                if (a.what == t::read) a = unexpected();
            }
            if constexpr (!requires { m->on_put(error_code{}, put_result{}); }) {
                if (a.what == t::write) a = unexpected();
            }
            if constexpr (!requires { m->on_list(error_code{}, list_page{}); }) {
                if (a.what == t::list) a = unexpected();
            }
            break;
        }
        if (a.what != t::done) went_async = true;
        switch (a.what) {
        case t::read:
            if constexpr (requires { m->on_get(error_code{}, get_result{}); }) {
                std::string k = key; // `self` holds this op: copy what the call needs before moving it
                if (stopping()) // the settling read is not cancelled: it decides what the caller is told
                    return host->backend.async_get(std::move(k), boost::asio::bind_cancellation_slot(boost::asio::cancellation_slot(), std::move(self)));
                return host->backend.async_get(std::move(k), std::move(self));
            }
            break;
        case t::write:
            if constexpr (requires { m->on_put(error_code{}, put_result{}); }) {
                if constexpr (requires { spec.send(*host, std::string(key), a, *m, std::move(self)); })
                    return spec.send(*host, std::string(key), a, *m, std::move(self));
                else
                    return host->backend.async_put(std::string(key), std::move(a.body), std::move(a.pc), std::move(self));
            }
            break;
        case t::list:
            if constexpr (requires { m->on_list(error_code{}, list_page{}); })
                return host->backend.async_list(std::string(key), std::move(a.after), a.limit, std::move(self));
            break;
        case t::wait:
            if (!timer) timer = std::make_unique<typename Host::timer>(host->ex);
            timer->expires_at(host->clock.timer_expiry(a.delay));
            return timer->async_wait(std::move(self));
        case t::none:
        case t::compute:
        case t::done:
            break;
        }
        result_type res = spec.finish(*host, key, *m, a.ec);
        m.reset();
        timer.reset();
        complete(self, a.ec, std::move(res));
    }

    template <class Self>
    void complete(Self& self, error_code ec, result_type res) {
        if (went_async) return self.complete(ec, std::move(res));
        went_async = true;
        // Posted through the operation's own executor: the handler's may be type-erased, and an
        // erased executor cannot be required to never block. The handler still runs on its own
        // executor (post dispatches there).
        auto ex = self.get_io_executor();
        boost::asio::post(ex, boost::asio::append(std::move(self), posted{}, ec, std::move(res)));
    }
};

} // namespace baton::detail

#endif
