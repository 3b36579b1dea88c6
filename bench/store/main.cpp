// Benchmarks on real stores, and the HTTP client on one kept-alive connection.
// bench/run-store-bench.sh runs every figure next to the peer harnesses in
// ../shared/peers on the same servers; this program measures baton's side.
// Each run prints one JSON line with ops_per_s, p50_ms and p99_ms (the peers'
// format) and figure-specific fields.
//
//   store_bench ddb-cycle    [--n 2000] [--warmup 50] [--max-seconds 30]
//       N sequential acquire+release cycles of one baton::dynamodb_lease on one key.
//   store_bench ddb-paired   [--blocks 20] [--block 200] [--warmup 100] [--floor signed|unsigned] [--control 0|1]
//       Figure 1 paired: the ddb-cycle lease and the blocking Beast client's cycle
//       (http-ddb --op cycle-signed, or cycle-unsigned) in one process, in alternating blocks of --block cycles;
//       prints both sides' figures and the median and quartiles of the per-block ratios.
//       --control 1 puts a second blocking client in the lease's place: the method's own bias.
//   store_bench ddb-contend  [--procs 8] [--seconds 10] [--hold-ms 2] [--poll-ms 5] [--ttl-ms 20000] [--yield-ms 0]
//       K OS processes, one lease each, loop acquire (waiting) -> hold -> release on one key.
//       Counts store requests on the wire (every HTTP request is signed once: a counting
//       signer) and at the record-store level (a counting adapter: failed conditional
//       writes), checks that the [acquired, release called] intervals, taken on
//       CLOCK_MONOTONIC in every process, never overlap, and reports per-process counts.
//   store_bench s3-cycle     [--n 1000] [--warmup 50] [--max-seconds 30]
//       The cycle figure with baton::s3_lease (BATON_S3_* : Ceph RGW).
//   store_bench azure-cycle  [--n 1000] [--warmup 50] [--max-seconds 30] [--container NAME]
//       The cycle figure with a lease on Azure Blob Storage (BATON_AZURITE_* : Azurite, else the
//       AZURE_STORAGE_* variables), in a fresh container; requests counted at the record store.
//   store_bench http-ddb     [--n 5000] [--op cycle-unsigned|cycle-signed|put-unsigned|put-signed|get-signed]
//                            [--client baton|beast-sync]
//       Sequential requests over one keep-alive connection to dynalite. cycle-unsigned sends
//       e_raw_floor.js's cycle (conditional PutItem + conditional DeleteItem): the wire floor
//       of one acquire+release from C++, against which the lease's own cost shows.
//   store_bench kv           [--store ddb|s3] [--n 300] [--clients 8]
//       The kv and fenced recipes against the raw floor, in one run: (floor) N sequential
//       read + conditional write pairs straight on the backend, the least a read-modify-write
//       can cost; (update) N sequential kv updates from one client; (contended) N updates of
//       one key by K clients, each updating in a loop (exact final count checked); (fenced) requests
//       per fenced write: a new holder's first write, then its next ones.
//   store_bench commit       [--n 300]
//       The commit protocol's put-if-absent (a Delta-style log entry) and read, N of each in
//       sequence, in one run: native conditional PUT on RGW; objects in s3rver (which ignores
//       preconditions) with commits in dynalite; objects in RGW with commits in dynalite (the
//       same object store as native, so the ratio is the protocol's cost). Requests counted.
//   store_bench http-local   [--n 20000] [--client baton|beast-sync]
//       The same against a trivial in-process Beast server on another thread (client overhead).
//
// Servers come from the environment that tests/servers/with-servers.sh exports
// (BATON_DYNAMODB_*, BATON_S3_*, BATON_S3RVER_*, BATON_AZURITE_*). Every loop is bounded in count and time.

#include "../common.hpp"

#include <baton/baton.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

#include "setup.hpp"
#include "stores.hpp"
#include "cycles.hpp"
#include "azure.hpp"
#include "contention.hpp"
#include "http.hpp"
#include "kv.hpp"
#include "commit.hpp"

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: store_bench ddb-cycle|ddb-paired|ddb-contend|s3-cycle|azure-cycle|http-ddb|http-local|kv|commit [--name value]...\n"
                             "       (see the comment at the top of bench/store/main.cpp)\n");
        return 2;
    }
    std::string const cmd = argv[1];
    args const a(argc, argv, 2);
    try {
        if (cmd == "ddb-cycle") return cmd_ddb_cycle(a);
        if (cmd == "ddb-contend") return cmd_ddb_contend(a);
        if (cmd == "ddb-contend-child") return cmd_contend_child(a);
        if (cmd == "s3-cycle") return cmd_s3_cycle(a);
        if (cmd == "azure-cycle") return cmd_azure_cycle(a);
        if (cmd == "http-ddb") return cmd_http_ddb(a);
        if (cmd == "ddb-paired") return cmd_ddb_paired(a);
        if (cmd == "http-local") return cmd_http_local(a);
        if (cmd == "kv") return cmd_kv(a);
        if (cmd == "commit") return cmd_commit(a);
    } catch (std::exception const& e) {
        die(cmd + ": " + e.what());
    }
    die("unknown command '" + cmd + "'");
}
