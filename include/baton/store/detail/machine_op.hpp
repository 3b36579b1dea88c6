// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_DETAIL_MACHINE_OP_HPP
#define BATON_STORE_DETAIL_MACHINE_OP_HPP

// Layer: store, internal. The one driver of a sans-I/O machine (store/detail/machine_step.hpp)
// against a record store, as an operation for `async_compose`: fenced and kv writes, the lease
// table's shard changes and retried reads, election's leader reads and watch, and the commit
// protocol's operations (which also address its object store). It carries out each step the
// machine asks for (read, write, erase, list, probe, copy, wait, compute) and feeds the answer
// back, so that every user of it keeps the handler's associated executor, allocator and
// cancellation slot, never completes inline, honours terminal cancellation without abandoning a
// write in doubt, and owns its machine: the answers of one call can never reach another. (The
// lease runs its three lanes on a driver of its own: thousands of leases share one timer there,
// and a lane outlives any one call.)

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

#include <chrono>
#include <memory>
#include <string>
#include <utility>

namespace baton::detail {

// The timer a machine_op keeps for its waits: none when the host has no timer type (the commit protocol never waits).
struct no_timer {};
template <class Host>
struct timer_of {
    using type = no_timer;
};
template <class Host>
    requires requires { typename Host::timer; }
struct timer_of<Host> {
    using type = std::unique_ptr<typename Host::timer>;
};

/* One machine run, as an operation for `async_compose<Token, void(error_code, result_type)>`.
   `Host` holds the stores and the time: `ex` and `backend` (the record store), and optionally
   `objects` (a second store that steps may address: the commit protocol's object store), and
   `clock` with a `timer` type (for waits, and for machines that take the time). `Spec` holds
   what is the caller's own:
     using machine; using result_type;
     std::unique_ptr<machine> make(Host&, std::string const& key);
     result_type finish(Host&, std::string const& key, machine&, error_code);
                                       the result, once the machine is done (not called when check refuses);
                                       taking the error_code by reference, it may change it
   and, optionally:
     error_code check(Host&, std::string const& key, result_type&);
                                       refuses bad arguments before anything is sent
     machine_step compute(machine&);   answers a `compute` step (kv's update)
     template <class Self> void send(Host&, std::string key, machine_step&, machine&, Self&&);
                                       sends a `write` step to the record store (a store hook)
     bool stop_at_wait(Host&);         the machine is stopped (on_cancel) instead of waiting
     static constexpr bool passes_store_aborts = true;
                                       a store's own operation_aborted reaches the machine as it is
   The machine answers start, on_wait and on_cancel, and on_get / on_put / on_erase / on_list /
   on_probe for the requests it makes. `start`, `on_get` and `on_wait` may take the participant's
   own time as a last argument (nanoseconds since the Clock's epoch). `stopping()`, when the
   machine has it, marks a settling read that must not be cancelled. */
template <class Host, class Spec>
struct machine_op {
    using machine = typename Spec::machine;
    using result_type = typename Spec::result_type;
    using ns = std::chrono::nanoseconds;
    static constexpr bool has_objects = requires(Host& h) { h.objects; };
    static constexpr bool has_timer = requires { typename Host::timer; };

    std::shared_ptr<Host> host;
    std::string key;
    Spec spec;
    std::unique_ptr<machine> m{};
    [[no_unique_address]] typename timer_of<Host>::type timer{};
    std::string asked; // the key of the request in flight, when not the call's own
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
        if constexpr (requires { m->start(ns{}); }) step(self, m->start(now()));
        else step(self, m->start());
    }
    template <class Self>
    void operator()(Self& self, error_code ec, put_result r) {
        if constexpr (requires { m->on_put(ec, r); }) step(self, m->on_put(unasked_abort(self, ec), r));
    }
    template <class Self>
    void operator()(Self& self, error_code ec, erase_result r) {
        if constexpr (requires { m->on_erase(ec, r); }) step(self, m->on_erase(unasked_abort(self, ec), r));
    }
    template <class Self>
    void operator()(Self& self, error_code ec, get_result r) {
        if constexpr (requires { m->on_get(ec, std::move(r)); } || requires { m->on_get(ec, std::move(r), ns{}); }) {
            if (!ec && r.found) r.found->key = asked.empty() ? key : asked;
            ec = unasked_abort(self, ec);
            if constexpr (requires { m->on_get(ec, std::move(r), ns{}); }) step(self, m->on_get(ec, std::move(r), now()));
            else step(self, m->on_get(ec, std::move(r)));
        }
    }
    template <class Self>
    void operator()(Self& self, error_code ec, list_page p) {
        if constexpr (requires { m->on_list(ec, std::move(p)); }) step(self, m->on_list(unasked_abort(self, ec), std::move(p)));
    }
    template <class Self>
    void operator()(Self& self, error_code ec, capabilities c) {
        if constexpr (requires { m->on_probe(ec, std::move(c)); }) step(self, m->on_probe(unasked_abort(self, ec), std::move(c)));
    }
    template <class Self>
    void operator()(Self& self, error_code ec) { // a wait ended
        if constexpr (answers_wait) {
            if (ec || cancelled(self)) return step(self, m->on_cancel());
            if constexpr (requires { m->on_wait(ns{}); }) step(self, m->on_wait(now()));
            else step(self, m->on_wait());
        }
    }
    template <class Self>
    void operator()(Self& self, posted, error_code ec, result_type r) {
        self.complete(ec, std::move(r));
    }

private:
    static constexpr bool answers_get = requires(machine& mm) { mm.on_get(error_code{}, get_result{}); } ||
                                        requires(machine& mm) { mm.on_get(error_code{}, get_result{}, ns{}); };
    static constexpr bool answers_wait = requires(machine& mm) { mm.on_wait(); } || requires(machine& mm) { mm.on_wait(ns{}); };
    static constexpr bool answers_put = requires(machine& mm) { mm.on_put(error_code{}, put_result{}); };
    static constexpr bool answers_erase = requires(machine& mm) { mm.on_erase(error_code{}, erase_result{}); };
    static constexpr bool answers_list = requires(machine& mm) { mm.on_list(error_code{}, list_page{}); };
    static constexpr bool answers_probe = requires(machine& mm) { mm.on_probe(error_code{}, capabilities{}); };
    static constexpr bool copies_objects = has_objects && requires(Host& h, std::string s, archetype_handler<void(error_code, put_result)> hd) {
        h.objects.async_copy_object(s, s, std::move(hd));
    };

    ns now() const { return host->clock.now().time_since_epoch(); }

    // A backend that reports operation_aborted although this operation was not cancelled
    // (a wrapper's own cancellation, say): the request's fate is unknown, not abandoned. A spec
    // that passes the store's answer on as it is says so (`passes_store_aborts`): a store made
    // of stores, whose callers settle its writes, or a read, which decides nothing.
    template <class Self>
    static error_code unasked_abort(Self& self, error_code ec) {
        if constexpr (requires { requires Spec::passes_store_aborts; }) return ec;
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

    // The machine's step instead of `a` when it is stopped; the garbage `a` would have deleted still goes.
    machine_step stopped(machine_step a) {
        machine_step s = m->on_cancel();
        for (auto& o : a.discard) s.discard.push_back(std::move(o));
        return s;
    }

    // A step this machine never asks for: nothing is claimed of what it did.
    static machine_step unexpected() {
        BOOST_ASSERT_MSG(false, "a machine asked for a step it never asks for");
        return machine_step::done(errc::unknown_outcome);
    }

    // A step this driver can take for this machine: one it has an answer function for, on a store the host has.
    static bool takes(machine_step const& a) {
        using t = machine_step::type;
        if (a.where == machine_step::store_id::objects && !has_objects) return false;
        switch (a.what) {
        case t::read: return answers_get;
        case t::write: return answers_put && (a.where == machine_step::store_id::records || has_objects);
        case t::erase: return answers_erase;
        case t::list: return answers_list;
        case t::probe: return answers_probe;
        case t::copy: return answers_put && copies_objects && a.where == machine_step::store_id::objects;
        case t::wait: return has_timer && answers_wait;
        case t::none: return false;
        case t::compute:
        case t::done: return true;
        }
        return false;
    }

    template <class Self>
    void step(Self& self, machine_step a) {
        using t = machine_step::type;
        for (;;) {
            if (a.what != t::done && a.what != t::read && cancelled(self) && !stopping()) a = stopped(std::move(a));
            if (a.what == t::wait) {
                if constexpr (requires { spec.stop_at_wait(*host); }) {
                    if (spec.stop_at_wait(*host)) {
                        a = stopped(std::move(a));
                        continue;
                    }
                }
            }
            if (a.what == t::compute) {
                if constexpr (requires { spec.compute(*m); }) a = spec.compute(*m);
                else a = unexpected();
                continue;
            }
            if (!takes(a)) a = unexpected();
            break;
        }
        if constexpr (has_objects) {
            for (auto& o : a.discard) host->objects.async_erase(std::move(o), precondition::none(), [](error_code, erase_result) {});
        } else {
            BOOST_ASSERT_MSG(a.discard.empty(), "a machine asked to discard objects where there is no object store");
        }
        if (a.what != t::done) went_async = true;
        asked = std::move(a.key);
        // `self` holds this op: copy the key a request needs before moving it (waits and the end need none).
        bool const keyed = a.what == t::read || a.what == t::write || a.what == t::erase || a.what == t::list || a.what == t::copy;
        std::string k = keyed ? (asked.empty() ? key : asked) : std::string();
        bool const on_objects = a.where == machine_step::store_id::objects;
        switch (a.what) {
        case t::read:
            if constexpr (answers_get) {
                // A settling read is not cancelled: it decides what the caller is told.
                if (stopping())
                    return with_store(on_objects, [&](auto& store) {
                        store.async_get(std::move(k), boost::asio::bind_cancellation_slot(boost::asio::cancellation_slot(), std::move(self)));
                    });
                return with_store(on_objects, [&](auto& store) { store.async_get(std::move(k), std::move(self)); });
            }
            break;
        case t::write:
            if constexpr (answers_put) {
                if constexpr (requires { spec.send(*host, std::string(key), a, *m, std::move(self)); }) {
                    if (!on_objects) return spec.send(*host, std::move(k), a, *m, std::move(self));
                }
                return with_store(on_objects, [&](auto& store) {
                    store.async_put(std::move(k), std::move(a.body), std::move(a.pc), std::move(self));
                });
            }
            break;
        case t::erase:
            if constexpr (answers_erase)
                return with_store(on_objects, [&](auto& store) { store.async_erase(std::move(k), std::move(a.pc), std::move(self)); });
            break;
        case t::list:
            if constexpr (answers_list)
                return with_store(on_objects, [&](auto& store) { store.async_list(std::move(k), std::move(a.after), a.limit, std::move(self)); });
            break;
        case t::probe:
            if constexpr (answers_probe) return with_store(on_objects, [&](auto& store) { store.async_probe(std::move(self)); });
            break;
        case t::copy:
            if constexpr (copies_objects) return host->objects.async_copy_object(std::move(a.source), std::move(k), std::move(self));
            break;
        case t::wait:
            if constexpr (has_timer && answers_wait) {
                if (!timer) timer = std::make_unique<typename Host::timer>(host->ex);
                timer->expires_at(host->clock.timer_expiry(a.delay));
                return timer->async_wait(std::move(self));
            }
            break;
        case t::none:
        case t::compute:
        case t::done:
            break;
        }
        error_code ec = a.ec; // finish may judge what was read (a record the caller cannot read)
        result_type res = spec.finish(*host, key, *m, ec);
        m.reset();
        if constexpr (has_timer) timer.reset();
        complete(self, ec, std::move(res));
    }

    // Runs `f` on the store a step addresses.
    template <class F>
    void with_store(bool on_objects, F&& f) {
        if constexpr (has_objects) {
            if (on_objects) return f(host->objects);
        }
        f(host->backend);
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
