// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BATON_HPP
#define BATON_BATON_HPP

/** @file
    Top of the house: the single include. Everything baton offers on every
    store, with the aliases that docs and examples use (each defined in its
    store's header: `<baton/memory.hpp>`, `<baton/file.hpp>`,
    `<baton/s3.hpp>`, `<baton/dynamodb.hpp>`). The simulation kit is apart:
    `<baton/sim.hpp>`.

    The layers, bottom to top (a header includes only its own layer and the
    ones below; tests/layers/check-layers.py checks it):
    core (`core/`) · wire (`http/`, `aws/`) · store (`store/`) ·
    backends (`backend/`) · recipes (`recipe/`) · this folder's top headers.
*/

#include <baton/aws/errors.hpp>
#include <baton/azure.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/commit_protocol.hpp>
#include <baton/core/clock.hpp>
#include <baton/core/error.hpp>
#include <baton/core/retry.hpp>
#include <baton/core/signer.hpp>
#include <baton/dynamodb.hpp>
#include <baton/file.hpp>
#include <baton/http/client.hpp>
#include <baton/memory.hpp>
#include <baton/recipe/lease_metrics.hpp>
#include <baton/recipe/lease_options.hpp>
#include <baton/recipe/run_while_held.hpp>
#include <baton/recipe/write_observer.hpp>
#include <baton/s3.hpp>
#include <baton/store/commit_protocol.hpp>
#include <baton/store/record_store.hpp>
#include <baton/store/settlement.hpp>

#endif
