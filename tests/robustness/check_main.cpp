// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
// baton_history_check [--time-limit-ms N] FILES...
//
// Reads the histories of a robustness run (JSON lines, merged), runs the
// checks of the workloads present (kv linearizability per key, the lease
// checks), prints figures and every violation with its explanation.
// Exit 0: clean; 1: a violation or an inconclusive check; 2: bad input.
// The last line of output is `histories clean`, `VIOLATIONS: N` or
// `INCONCLUSIVE: N` (violations first when there are both).

#include <robustness/history.hpp>
#include <robustness/kv_check.hpp>
#include <robustness/lease_check.hpp>

#include <boost/json/src.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace robustness;

int usage(std::string const& why) {
    std::cerr << "baton_history_check: " << why << "\n"
              << "usage: baton_history_check [--time-limit-ms N] FILES...\n"
              << "  --time-limit-ms N  time for each kv key's search (default 10000); past it the key is inconclusive\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::chrono::milliseconds per_key{10000};
    std::vector<std::string> files;
    for (int a = 1; a < argc; ++a) {
        std::string_view const arg = argv[a];
        if (arg == "--time-limit-ms") {
            if (++a == argc) return usage("--time-limit-ms needs a value");
            char* end = nullptr;
            long long const ms = std::strtoll(argv[a], &end, 10);
            if (*end != '\0' || ms <= 0) return usage("bad --time-limit-ms '" + std::string(argv[a]) + "'");
            per_key = std::chrono::milliseconds(ms);
        } else if (arg == "-h" || arg == "--help") {
            usage("checks robustness histories");
            return 0;
        } else if (arg.starts_with("--")) {
            return usage("unknown option " + std::string(arg));
        } else {
            files.emplace_back(arg);
        }
    }
    if (files.empty()) return usage("no history files");

    history h;
    try {
        h = read_history(files);
    } catch (history_error const& e) {
        std::cout << "bad history: " << e.what() << "\n";
        return 2;
    }

    std::size_t violations = 0, inconclusive = 0, never_returned = 0;
    std::vector<std::string> warnings;
    for (auto const& op : h.ops) never_returned += !op.returned;
    std::cout << "read " << files.size() << " file(s): " << h.ops.size() << " operations and events, "
              << never_returned << " never returned\n";

    if (h.has(workload::kv)) {
        auto const kv = check_kv(h, per_key);
        std::size_t unknown = 0;
        for (auto const& op : h.ops) unknown += op.w == workload::kv && op.res == outcome::unknown;
        std::cout << "kv: " << kv.operations << " operations (" << unknown << " of unknown outcome, "
                  << kv.never_returned << " never returned) on " << kv.keys.size() << " keys\n"
                  << format(count(h, workload::kv));
        std::size_t longest = 0;
        for (auto const& k : kv.keys) longest = std::max(longest, k.search.operations);
        std::cout << "  keys checked: " << kv.keys.size() << " (ok " << kv.count(verdict::ok) << ", violation "
                  << kv.count(verdict::violation) << ", inconclusive " << kv.count(verdict::inconclusive)
                  << "); operations searched: " << kv.searched << ", left out (failed, contention, lost reads): "
                  << kv.operations - kv.searched << "; largest key: " << longest << " operations\n";
        for (auto const& k : kv.keys) {
            std::size_t ops = 0, never = 0;
            for (auto const& [kind, row] : k.counts) ops += row[0] + row[1] + row[2] + row[3], never += row[4];
            std::cout << "    '" << k.key << "': " << name(k.search.result) << ", " << ops << " operations ("
                      << k.search.operations << " searched, " << k.left_out << " left out, " << never
                      << " never returned), " << k.search.steps << " steps, " << k.elapsed.count() << " ms\n";
        }
        for (auto const& k : kv.keys) {
            if (k.search.result == verdict::ok) continue;
            (k.search.result == verdict::violation ? violations : inconclusive) += 1;
            std::cout << (k.search.result == verdict::violation ? "VIOLATION" : "INCONCLUSIVE") << " kv key '" << k.key
                      << "' (" << k.search.operations << " operations, " << k.search.steps << " steps): "
                      << k.search.explanation;
        }
    }

    if (h.has(workload::lease)) {
        auto const lease = check_lease(h);
        std::size_t unknown = 0;
        for (auto const& op : h.ops) unknown += op.w == workload::lease && op.res == outcome::unknown;
        std::cout << "lease: " << lease.operations << " operations (" << unknown << " of unknown outcome, "
                  << lease.never_returned << " never returned)\n"
                  << format(count(h, workload::lease)) << "  hold intervals: " << lease.intervals.size()
                  << " (frozen by sigstop " << lease.frozen() << ", overlaps left to fencing "
                  << lease.frozen_overlaps << "); fenced writes accepted: " << lease.fenced_ok
                  << "; final reads checked: " << lease.final_reads_checked << "\n";
        for (auto const& v : lease.violations) std::cout << "VIOLATION " << v << "\n";
        violations += lease.violations.size();
        warnings.insert(warnings.end(), lease.warnings.begin(), lease.warnings.end());
    }

    if (h.has(workload::proc)) {
        std::map<op_kind, std::size_t> events;
        for (auto const& op : h.ops) events[op.kind] += op.w == workload::proc;
        std::cout << "process events:";
        for (auto const& [kind, n] : events)
            if (n) std::cout << " " << name(kind) << " " << n;
        std::cout << "\n";
    }
    for (auto const& w : warnings) std::cout << "warning: " << w << "\n";

    if (violations) {
        if (inconclusive) std::cout << "(and " << inconclusive << " inconclusive)\n";
        std::cout << "VIOLATIONS: " << violations << "\n";
        return 1;
    }
    if (inconclusive) {
        std::cout << "INCONCLUSIVE: " << inconclusive << "\n";
        return 1;
    }
    std::cout << "histories clean\n";
    return 0;
}
