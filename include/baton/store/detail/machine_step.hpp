// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_DETAIL_MACHINE_STEP_HPP
#define BATON_STORE_DETAIL_MACHINE_STEP_HPP

// Layer: store, internal. The one step type of every sans-I/O machine (the lease's lanes, the
// settled writes of fenced and kv, the lease table's shard changes and retried reads): what the machine asks its
// driver to do next. The driver carries it out and feeds the answer back; the machine never
// touches a socket, a timer or a clock.

#include <baton/core/error.hpp>
#include <baton/store/record_store.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <utility>

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
    };
    type what = type::none;
    std::string body;                       // write
    precondition pc = precondition::none(); // write
    std::string after;                      // list
    std::size_t limit = 0;                  // list
    std::chrono::nanoseconds delay{0};      // wait, in own time
    error_code ec;                          // done

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
};

} // namespace baton::detail

#endif
