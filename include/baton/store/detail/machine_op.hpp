// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_DETAIL_MACHINE_OP_HPP
#define BATON_STORE_DETAIL_MACHINE_OP_HPP

// Layer: store, internal. The one driver of every sans-I/O machine (store/detail/machine_step.hpp)
// against a record store: the lease's lanes, fenced and kv writes and reads, the lease table's
// shard changes and retried reads, election's leader reads and watch, and the commit protocol's
// operations (which also address its object store). It carries out each step the machine asks
// for (read, write, erase, list, probe, copy, wait, compute) and feeds the answer back. Run for
// one call (`machine_op`, an operation for `async_compose`), it keeps the handler's associated
// executor, allocator and cancellation slot, never completes inline, honours terminal
// cancellation without abandoning a write in doubt, and owns its machine: the answers of one
// call can never reach another. Run for a lane of an object that outlives its calls (the
// lease's), the lane's continuation decides how it waits (thousands of leases share one timer),
// stamps what it sends, and completes the lane.

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

/* The one driver: carries out each step a sans-I/O machine (store/detail/machine_step.hpp) asks
   for and feeds the answer back. `Ctx` is where one run lives:
     host_type, spec_type             the host (stores, time) and the caller's spec (below)
     host                             pointer-like to the host
     key                              the call's key (a string)
     spec                             the spec
     m                                pointer-like to the machine, with reset()
     timer                            when the host has a `timer` type (its waits)
     asked                            a string: the key of the request in flight, when not the call's own
     went_async                       a request or a wait was started: completing now is not inline
   It is a `machine_op` (one call, below) or a lane of a recipe object that outlives every call
   (the lease's acquire, renew and release lanes). `Self` is the continuation a request carries
   and the driver completes: async_compose's, or a lane's. Besides `cancelled()` and
   `complete(ec, result)`, a lane's continuation may have
     void wait(nanoseconds);          waits itself (a slot on a timer many objects share)
     void sending(machine_step const&); is told that a request leaves (to stamp it)
     void rest();                     takes a `none` step: nothing to do now
   The host has `backend` (the record store), optionally `objects` (a second store that steps may
   address: the commit protocol's object store), and `clock` with `ex` and a `timer` type (for
   waits, and for machines that take the time). The spec holds what is the caller's own:
     using machine; using result_type;
     result_type finish(Host&, std::string const& key, machine&, error_code);
                                       the result, once the machine is done; taking the
                                       error_code by reference, it may change it
   and, optionally:
     machine_step compute(machine&);   answers a `compute` step (kv's update)
     template <class Self> void send(Host&, std::string key, machine_step&, machine&, Self&&);
                                       sends a `write` step to the record store (a store hook)
     bool stop_at_wait(Host&);         the machine is stopped (on_cancel) instead of waiting
     static constexpr bool passes_store_aborts = true;
                                       a store's own operation_aborted reaches the machine as it is
   The machine answers on_wait and on_cancel, and on_get / on_put / on_erase / on_list /
   on_probe for the requests it makes. `start`, `on_get` and `on_wait` may take the participant's
   own time as a last argument (nanoseconds since the Clock's epoch).
   `stopping()`, when the machine has it, marks a settling read that must not be cancelled. */
template <class Ctx>
struct machine_driver {
    using host_type = typename Ctx::host_type;
    using spec_type = typename Ctx::spec_type;
    using machine = typename spec_type::machine;
    using result_type = typename spec_type::result_type;
    using ns = std::chrono::nanoseconds;
    static constexpr bool has_objects = requires(host_type& h) { h.objects; };
    static constexpr bool has_timer = requires { typename host_type::timer; };

    // The machine's first step (from its start, or handed in by a lane).
    template <class Self>
    static void start(Ctx& c, Self& self) {
        if constexpr (requires(machine& mm) { mm.start(ns{}); }) step(c, self, c.m->start(now(c)));
        else step(c, self, c.m->start());
    }

    template <class Self>
    static void answer(Ctx& c, Self& self, error_code ec, put_result r) {
        if constexpr (requires(machine& mm) { mm.on_put(ec, r); }) step(c, self, c.m->on_put(unasked_abort(self, ec), r));
    }
    template <class Self>
    static void answer(Ctx& c, Self& self, error_code ec, erase_result r) {
        if constexpr (requires(machine& mm) { mm.on_erase(ec, r); }) step(c, self, c.m->on_erase(unasked_abort(self, ec), r));
    }
    template <class Self>
    static void answer(Ctx& c, Self& self, error_code ec, get_result r) {
        if constexpr (answers_get) {
            if (!ec && r.found) r.found->key = c.asked.empty() ? c.key : c.asked;
            ec = unasked_abort(self, ec);
            if constexpr (requires(machine& mm) { mm.on_get(ec, std::move(r), ns{}); }) step(c, self, c.m->on_get(ec, std::move(r), now(c)));
            else step(c, self, c.m->on_get(ec, std::move(r)));
        }
    }
    template <class Self>
    static void answer(Ctx& c, Self& self, error_code ec, list_page p) {
        if constexpr (requires(machine& mm) { mm.on_list(ec, std::move(p)); }) step(c, self, c.m->on_list(unasked_abort(self, ec), std::move(p)));
    }
    template <class Self>
    static void answer(Ctx& c, Self& self, error_code ec, capabilities cap) {
        if constexpr (requires(machine& mm) { mm.on_probe(ec, std::move(cap)); }) step(c, self, c.m->on_probe(unasked_abort(self, ec), std::move(cap)));
    }
    // A wait ended: `ec` (or a cancellation) stops the machine.
    template <class Self>
    static void waited(Ctx& c, Self& self, error_code ec) {
        if constexpr (answers_wait) {
            if (ec || cancelled(self)) return step(c, self, c.m->on_cancel());
            if constexpr (requires(machine& mm) { mm.on_wait(ns{}); }) step(c, self, c.m->on_wait(now(c)));
            else step(c, self, c.m->on_wait());
        }
    }

    template <class Self>
    static void step(Ctx& c, Self& self, machine_step a) {
        using t = machine_step::type;
        for (;;) {
            if (a.what != t::done && a.what != t::read && cancelled(self) && !stopping(c)) a = stopped(c, std::move(a));
            if (a.what == t::wait) {
                if constexpr (requires { c.spec.stop_at_wait(*c.host); }) {
                    if (c.spec.stop_at_wait(*c.host)) {
                        a = stopped(c, std::move(a));
                        continue;
                    }
                }
            }
            if (a.what == t::compute) {
                if constexpr (requires { c.spec.compute(*c.m); }) a = c.spec.compute(*c.m);
                else a = unexpected();
                continue;
            }
            if (!takes<Self>(a)) a = unexpected();
            break;
        }
        if constexpr (has_objects) {
            for (auto& o : a.discard) c.host->objects.async_erase(std::move(o), precondition::none(), [](error_code, erase_result) {});
        } else {
            BOOST_ASSERT_MSG(a.discard.empty(), "a machine asked to discard objects where there is no object store");
        }
        if (a.what != t::done && a.what != t::none) c.went_async = true;
        c.asked = std::move(a.key);
        // `self` holds the run: copy the key a request needs before moving it (waits and the end need none).
        bool const keyed = a.what == t::read || a.what == t::write || a.what == t::erase || a.what == t::list || a.what == t::copy;
        std::string k = keyed ? (c.asked.empty() ? c.key : c.asked) : std::string();
        bool const on_objects = a.where == machine_step::store_id::objects;
        if constexpr (requires { self.sending(a); }) {
            if (keyed || a.what == t::probe) self.sending(a);
        }
        switch (a.what) {
        case t::read:
            if constexpr (answers_get) {
                // A settling read is not cancelled: it decides what the caller is told.
                if (stopping(c))
                    return with_store(c, on_objects, [&](auto& store) {
                        store.async_get(std::move(k), boost::asio::bind_cancellation_slot(boost::asio::cancellation_slot(), std::move(self)));
                    });
                return with_store(c, on_objects, [&](auto& store) { store.async_get(std::move(k), std::move(self)); });
            }
            break;
        case t::write:
            if constexpr (answers_put) {
                if constexpr (requires { c.spec.send(*c.host, std::string(c.key), a, *c.m, std::move(self)); }) {
                    if (!on_objects) return c.spec.send(*c.host, std::move(k), a, *c.m, std::move(self));
                }
                return with_store(c, on_objects, [&](auto& store) {
                    store.async_put(std::move(k), std::move(a.body), std::move(a.pc), std::move(self));
                });
            }
            break;
        case t::erase:
            if constexpr (answers_erase)
                return with_store(c, on_objects, [&](auto& store) { store.async_erase(std::move(k), std::move(a.pc), std::move(self)); });
            break;
        case t::list:
            if constexpr (answers_list)
                return with_store(c, on_objects, [&](auto& store) { store.async_list(std::move(k), std::move(a.after), a.limit, std::move(self)); });
            break;
        case t::probe:
            if constexpr (answers_probe) return with_store(c, on_objects, [&](auto& store) { store.async_probe(std::move(self)); });
            break;
        case t::copy:
            if constexpr (copies_objects) return c.host->objects.async_copy_object(std::move(a.source), std::move(k), std::move(self));
            break;
        case t::wait:
            if constexpr (requires { self.wait(a.delay); }) {
                return self.wait(a.delay);
            } else if constexpr (has_timer && answers_wait) {
                if (!c.timer) c.timer = std::make_unique<typename host_type::timer>(c.host->ex);
                c.timer->expires_at(c.host->clock.timer_expiry(a.delay));
                return c.timer->async_wait(std::move(self));
            }
            break;
        case t::none:
            if constexpr (requires { self.rest(); }) return self.rest();
            break;
        case t::compute:
        case t::done:
            break;
        }
        error_code ec = a.ec; // finish may judge what was read (a record the caller cannot read)
        result_type res = c.spec.finish(*c.host, c.key, *c.m, ec);
        c.m.reset();
        if constexpr (has_timer) c.timer.reset();
        complete(c, self, ec, std::move(res));
    }

    // The completion of a call that finished before going async, posted to itself (a tag, so
    // that a result_type that is also a store answer stays unambiguous).
    struct posted {};

    // Completes the run: at once when it went asynchronous, posted otherwise.
    template <class Self>
    static void complete(Ctx& c, Self& self, error_code ec, result_type res) {
        if constexpr (!requires { self.get_io_executor(); }) {
            // A lane's continuation completes itself: its pending operation posts when it must.
            return self.complete(ec, std::move(res));
        } else {
            if (c.went_async) return self.complete(ec, std::move(res));
            c.went_async = true;
        // Posted through the operation's own executor: the handler's may be type-erased, and an
        // erased executor cannot be required to never block. The handler still runs on its own
        // executor (post dispatches there).
            auto ex = self.get_io_executor();
            boost::asio::post(ex, boost::asio::append(std::move(self), posted{}, ec, std::move(res)));
        }
    }

private:
    static constexpr bool answers_get = requires(machine& mm) { mm.on_get(error_code{}, get_result{}); } ||
                                        requires(machine& mm) { mm.on_get(error_code{}, get_result{}, ns{}); };
    static constexpr bool answers_wait = requires(machine& mm) { mm.on_wait(); } || requires(machine& mm) { mm.on_wait(ns{}); };
    static constexpr bool answers_put = requires(machine& mm) { mm.on_put(error_code{}, put_result{}); };
    static constexpr bool answers_erase = requires(machine& mm) { mm.on_erase(error_code{}, erase_result{}); };
    static constexpr bool answers_list = requires(machine& mm) { mm.on_list(error_code{}, list_page{}); };
    static constexpr bool answers_probe = requires(machine& mm) { mm.on_probe(error_code{}, capabilities{}); };
    static constexpr bool copies_objects = has_objects && requires(host_type& h, std::string s, archetype_handler<void(error_code, put_result)> hd) {
        h.objects.async_copy_object(s, s, std::move(hd));
    };

    static ns now(Ctx const& c) { return c.host->clock.now().time_since_epoch(); }

    // A backend that reports operation_aborted although this run was not cancelled (a
    // wrapper's own cancellation, say): the request's fate is unknown, not abandoned. A spec
    // that passes the store's answer on as it is says so (`passes_store_aborts`): a store made
    // of stores, whose callers settle its writes, a read, which decides nothing, or a machine
    // that settles its own writes.
    template <class Self>
    static error_code unasked_abort(Self& self, error_code ec) {
        if constexpr (requires { requires spec_type::passes_store_aborts; }) return ec;
        if (ec == boost::asio::error::operation_aborted && !cancelled(self)) return errc::unknown_outcome;
        return ec;
    }
    template <class Self>
    static bool cancelled(Self& self) {
        return self.cancelled() != boost::asio::cancellation_type::none;
    }
    static bool stopping(Ctx const& c) {
        if constexpr (requires { c.m->stopping(); }) return c.m->stopping();
        else return false;
    }

    // The machine's step instead of `a` when it is stopped; the garbage `a` would have deleted still goes.
    static machine_step stopped(Ctx& c, machine_step a) {
        machine_step s = c.m->on_cancel();
        for (auto& o : a.discard) s.discard.push_back(std::move(o));
        return s;
    }

    // A step this machine never asks for: nothing is claimed of what it did.
    static machine_step unexpected() {
        BOOST_ASSERT_MSG(false, "a machine asked for a step it never asks for");
        return machine_step::done(errc::unknown_outcome);
    }

    // A step this driver can take for this machine: one it has an answer function for, on a store the host has.
    template <class Self>
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
        case t::wait: return answers_wait && (has_timer || requires(Self& s) { s.wait(ns{}); });
        case t::none: return requires(Self& s) { s.rest(); };
        case t::compute:
        case t::done: return true;
        }
        return false;
    }

    // Runs `f` on the store a step addresses.
    template <class F>
    static void with_store(Ctx& c, bool on_objects, F&& f) {
        if constexpr (has_objects) {
            if (on_objects) return f(c.host->objects);
        }
        f(c.host->backend);
    }

};

/* One machine run for one call, as an operation for
   `async_compose<Token, void(error_code, result_type)>`, on the driver above. `Spec` also has
     std::unique_ptr<machine> make(Host&, std::string const& key);
   and, optionally,
     error_code check(Host&, std::string const& key, result_type&);
                                       refuses bad arguments before anything is sent (finish is
                                       then not called) */
template <class Host, class Spec>
struct machine_op {
    using host_type = Host;
    using spec_type = Spec;
    using machine = typename Spec::machine;
    using result_type = typename Spec::result_type;
    using driver = machine_driver<machine_op>;
    using posted = typename driver::posted;

    std::shared_ptr<Host> host;
    std::string key;
    Spec spec;
    std::unique_ptr<machine> m{};
    [[no_unique_address]] typename timer_of<Host>::type timer{};
    std::string asked;
    bool went_async = false;

    machine_op(std::shared_ptr<Host> h, std::string k, Spec sp) : host(std::move(h)), key(std::move(k)), spec(std::move(sp)) {}

    template <class Self>
    void operator()(Self& self) {
        self.reset_cancellation_state(boost::asio::enable_terminal_cancellation());
        if constexpr (requires(result_type& r) { spec.check(*host, key, r); }) {
            result_type refused;
            if (auto ec = spec.check(*host, key, refused)) return driver::complete(*this, self, ec, std::move(refused));
        }
        m = spec.make(*host, key);
        driver::start(*this, self);
    }
    template <class Self, class Answer>
    void operator()(Self& self, error_code ec, Answer r) {
        driver::answer(*this, self, ec, std::move(r));
    }
    template <class Self>
    void operator()(Self& self, error_code ec) {
        driver::waited(*this, self, ec);
    }
    template <class Self>
    void operator()(Self& self, posted, error_code ec, result_type r) {
        self.complete(ec, std::move(r));
    }
};

} // namespace baton::detail

#endif
