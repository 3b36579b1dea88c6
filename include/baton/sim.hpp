// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_SIM_HPP
#define BATON_SIM_HPP

/** @file
    Layer: top. `baton::sim`: the deterministic simulation kit (virtual time, a seeded
    scheduler, freezable participants, fault injection). Public, so that
    users can test their own critical sections under the same faults.
*/

#include <baton/sim/faulty_backend.hpp>
#include <baton/sim/manual_clock.hpp>
#include <baton/sim/pausable_executor.hpp>
#include <baton/sim/scheduler.hpp>

#endif
