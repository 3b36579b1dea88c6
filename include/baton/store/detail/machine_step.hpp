// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_DETAIL_MACHINE_STEP_HPP
#define BATON_STORE_DETAIL_MACHINE_STEP_HPP

// Layer: store, internal. The one step type of every sans-I/O machine (the lease's lanes, the
// settled writes of fenced and kv, the lease table's shard changes and retried reads, election's
// leader reads, the commit protocol's operations): what the machine asks its driver to do next.
// The driver carries it out and feeds the answer back; the machine never touches a socket, a
// timer or a clock.

#include <baton/core/error.hpp>
#include <baton/store/record_store.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace baton::detail {

struct machine_step {
    enum class type : unsigned char {
        none,    // nothing to do now (a lane with no request to make)
        read,    // read the record; answer with the machine's on_get (or on_read)
        write,   // put `body` under `pc`; answer with its on_put (or on_write)
        list,    // list the keys under the call's key (a prefix) after `after`, at most `limit`; answer with on_list
        wait,    // wait `delay` of the participant's own time; answer with its on_wait (on_cancel when cancelled)
        compute, // hand the current value to the caller's function (kv's update); answer with on_computed
        done,    // finished with `ec`
        erase,   // erase the record under `pc`; answer with on_erase
        probe,   // probe the store's capabilities; answer with on_probe
        copy,    // copy the object `source` to the key, in the object store; answer with on_put
    };
    // Which store a request goes to: the call's record store, or the object store of a
    // composition (the commit protocol's, whose records are the lock store).
    enum class store_id : unsigned char { records, objects };

    type what = type::none;
    store_id where = store_id::records;     // read, write, list, erase, probe, copy
    std::string key;                        // read, write, list, erase, copy: empty for the call's own key
    std::string body;                       // write
    precondition pc = precondition::none(); // write, erase
    std::string after;                      // list
    std::string source;                     // copy
    std::size_t limit = 0;                  // list
    std::chrono::nanoseconds delay{0};      // wait, in own time
    error_code ec;                          // done
    // Objects to delete in the object store as this step is taken, without waiting for the
    // answers: garbage either way (the commit protocol's replaced and refused objects).
    std::vector<std::string> discard;

    static machine_step none() { return {}; }
    static machine_step read() {
        machine_step s;
        s.what = type::read;
        return s;
    }
    static machine_step write(std::string body, precondition pc) {
        machine_step s;
        s.what = type::write;
        s.body = std::move(body);
        s.pc = std::move(pc);
        return s;
    }
    static machine_step list(std::string after, std::size_t limit) {
        machine_step s;
        s.what = type::list;
        s.after = std::move(after);
        s.limit = limit;
        return s;
    }
    // Kept within [0, 24 h] (a custom RetryPolicy's delay, say), so that no timer deadline computed from it overflows.
    static machine_step wait(std::chrono::nanoseconds d) {
        machine_step s;
        s.what = type::wait;
        s.delay = std::clamp(d, std::chrono::nanoseconds(0), std::chrono::nanoseconds(std::chrono::hours(24)));
        return s;
    }
    static machine_step compute() {
        machine_step s;
        s.what = type::compute;
        return s;
    }
    static machine_step done(error_code ec = {}) {
        machine_step s;
        s.what = type::done;
        s.ec = ec;
        return s;
    }
    static machine_step erase(precondition pc) {
        machine_step s;
        s.what = type::erase;
        s.pc = std::move(pc);
        return s;
    }
    static machine_step probe() {
        machine_step s;
        s.what = type::probe;
        return s;
    }
    static machine_step copy(std::string source) {
        machine_step s;
        s.what = type::copy;
        s.where = store_id::objects;
        s.source = std::move(source);
        return s;
    }

    // The same step, sent to `key` in store `w` instead of the call's own key in its record store.
    machine_step&& at(store_id w, std::string k) && {
        where = w;
        key = std::move(k);
        return std::move(*this);
    }
    // The same step, deleting `object` in the object store as it is taken (nothing when empty).
    machine_step&& discarding(std::string object) && {
        if (!object.empty()) discard.push_back(std::move(object));
        return std::move(*this);
    }
};

} // namespace baton::detail

#endif
