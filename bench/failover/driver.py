#!/usr/bin/env python3
"""Failover and handoff figures: how long a lease is without a holder after its holder
releases it, crashes (SIGKILL) or freezes (SIGSTOP), and how long an election is without a
leader after the leader crashes; baton next to dynamodb-lock-client, in one run.
bench/run-failover-bench.sh starts the servers and runs this; see its header for the knobs.

One measurement: a holder process acquires a key of its own; a contender process starts and
waits (its first read is answered: it has seen the holder's record); after a random pause of
up to a ttl (so that the event falls anywhere in the holder's renewal period and the waiter's
poll or read period) the driver releases, kills or freezes the holder. The figure is from the
holder's release call (its own timestamp), or from the driver's kill(2), to the contender's
"held" event, all on CLOCK_MONOTONIC (time.monotonic_ns() here, steady_clock in
failover_bench, process.hrtime in Node: the same clock on Linux).

Columns run concurrently, one thread each (--serial: one after the other); within a column
the scenarios alternate run by run.
"""
import argparse
import json
import os
import queue
import random
import signal
import statistics
import subprocess
import sys
import threading
import time

p = argparse.ArgumentParser()
p.add_argument("--runs", type=int, default=50)
p.add_argument("--ttl-ms", type=int, default=2000)
p.add_argument("--poll-ms", type=int, default=100)
p.add_argument("--skew", type=float, default=2.0)
p.add_argument("--columns", default="baton-ddb,baton-s3,baton-ddb-skew1,lockclient,lockclient-failclosed")
p.add_argument("--bench", help="failover_bench")
p.add_argument("--node-dir", help="bench/failover (lockclient.js, node_modules)")
p.add_argument("--out", help="raw.jsonl is written here")
p.add_argument("--serial", action="store_true")
p.add_argument("--report", help="only print the tables of this raw.jsonl (of a run with the same knobs)")
a = p.parse_args()

TTL, POLL, SKEW = a.ttl_ms, a.poll_ms, a.skew
HEARTBEAT = round(TTL / 3)  # the lock client's heartbeat at baton's mean renew interval (ttl/3)


def baton(store, skew):
    def cmd(role, key):
        return [a.bench, role, "--store", store, "--key", key, "--ttl-ms", str(TTL), "--poll-ms", str(POLL),
                "--skew", repr(skew)]
    return cmd


def lockclient(mode):
    def cmd(role, key):
        return ["node", os.path.join(a.node_dir, "lockclient.js"), role, "--key", key, "--mode", mode,
                "--lease-ms", str(TTL), "--heartbeat-ms", str(HEARTBEAT), "--retry-ms", str(POLL)]
    return cmd


# column -> (command maker, scenarios, what it is)
COLUMNS = {
    "baton-ddb": (baton("ddb", SKEW), ["handoff", "crash", "freeze", "election"],
                  f"baton dynamodb_lease on dynalite, ttl {TTL} ms, poll {POLL} ms, skew {SKEW:g}"),
    "baton-s3": (baton("s3", SKEW), ["handoff", "crash", "freeze", "election"],
                 f"baton s3_lease on Ceph RGW, ttl {TTL} ms, poll {POLL} ms, skew {SKEW:g}"),
    "baton-ddb-skew1": (baton("ddb", 1.0), ["crash", "freeze"],
                        f"baton dynamodb_lease, max_clock_rate_skew 1 (the lock client's rule; only for clocks of equal rate)"),
    "lockclient": (lockclient("failopen"), ["handoff", "crash", "freeze"],
                   f"dynamodb-lock-client FailOpen, leaseDurationMs {TTL}, heartbeatPeriodMs {HEARTBEAT}"),
    "lockclient-failclosed": (lockclient("failclosed"), ["handoff"],
                              f"dynamodb-lock-client FailClosed (no lease), acquirePeriodMs {POLL}"),
}


def bound(column, scenario):
    """The bound the documentation states, in ms, or None (the lock client states none)."""
    if not column.startswith("baton"):
        return None
    if scenario == "handoff":
        return 2 * POLL  # docs/fairness.md §4: a released lease is taken within two poll intervals
    skew = 1.0 if column.endswith("skew1") else SKEW
    return TTL * skew + POLL  # README: the same version seen for ttl x skew, plus up to a poll


def derived(column, scenario):
    """What the lock client's source implies (bench/failover/lockclient.js), for the notes."""
    if column == "lockclient":
        return f"<= {TTL} (waiter's read period)" if scenario == "handoff" else f"{TTL - HEARTBEAT}..{2 * TTL}"
    if column == "lockclient-failclosed":
        return f"<= {POLL} + a request"
    return ""


class Proc:
    """A participant: its stdout's JSON events, each with the time it arrived here."""

    def __init__(self, cmd, stdin=False):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.q = queue.Queue()
        self.err = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.err.extend(self.p.stderr), daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            arrived = time.monotonic_ns()
            try:
                self.q.put((arrived, json.loads(line)))
            except ValueError:
                pass
        self.q.put((time.monotonic_ns(), {"ev": "exit"}))

    def drain(self, ev):
        """The events named ev that have arrived, taken off the queue (with the others)."""
        out = []
        while True:
            try:
                _, e = self.q.get_nowait()
            except queue.Empty:
                return out
            if e["ev"] == ev:
                out.append(e)

    def wait_for(self, ev, timeout):
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"no '{ev}' within {timeout:.0f} s")
            try:
                arrived, e = self.q.get(timeout=left)
            except queue.Empty:
                continue
            if e["ev"] == ev:
                return arrived, e
            if e["ev"] in ("error", "exit"):
                time.sleep(0.1)
                raise RuntimeError(f"waiting for '{ev}': {e} {''.join(self.err[-5:]).strip()}")

    def kill(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
        self.p.wait()


def measure(column, scenario, run):
    make, _, _ = COLUMNS[column]
    key = f"failover/{column}/{scenario}/{run}-{os.getpid()}-{random.getrandbits(32):08x}"
    holder = Proc(make("lead" if scenario == "election" else "hold", key), stdin=True)
    contender = None
    try:
        holder.wait_for("held", 60)
        contender = Proc(make("standby" if scenario == "election" else "contend", key))
        contender.wait_for("ready", 60)
        time.sleep(random.uniform(0.2, 0.2 + TTL / 1000))
        if scenario == "handoff":
            holder.p.stdin.write("release\n")
            holder.p.stdin.flush()
            _, e = holder.wait_for("release_call", 30)
            t0 = e["t"]
        else:
            t0 = time.monotonic_ns()
            holder.p.send_signal(signal.SIGSTOP if scenario == "freeze" else signal.SIGKILL)
        arrived, e = contender.wait_for("held", 3 * TTL * max(SKEW, 1) / 1000 + 30)
        renewals = [r for r in holder.drain("renewed") if r["t"] < t0]
        return {"column": column, "scenario": scenario, "run": run, "ms": (e["t"] - t0) / 1e6,
                "arrived_ms": (arrived - t0) / 1e6, "took_over": e.get("took_over"), "token": e.get("token"),
                "max_read_ms": e.get("max_read_ms"), "claim_ms": e.get("claim_ms"),
                "renewals": len(renewals), "max_renew_ms": max((r["latency_ms"] for r in renewals), default=None),
                "since_renewal_ms": (t0 - renewals[-1]["t"]) / 1e6 if renewals else None}
    finally:
        holder.kill()
        if contender:
            contender.kill()


def load():
    with open("/proc/loadavg") as f:
        la = " ".join(f.read().split()[:3])
    top = subprocess.run(["ps", "-eo", "pcpu=,comm=", "--sort=-pcpu"], capture_output=True, text=True).stdout
    users = [l.split() for l in top.strip().splitlines()]
    return f"load average {la}; top CPU users (share of their lifetime): " + "; ".join(
        [f"{u[1]} {u[0]}%" for u in users if len(u) == 2 and u[1] != "ps"][:3])


rows, failures, lock = [], [], threading.Lock()
cols = [c.strip() for c in a.columns.split(",") if c.strip()]
for c in cols:
    if c not in COLUMNS:
        sys.exit(f"unknown column {c}; known: {', '.join(COLUMNS)}")


def column_thread(column):
    _, scenarios, _ = COLUMNS[column]
    for run in range(1, a.runs + 1):
        for scenario in (scenarios if run % 2 else scenarios[::-1]):
            try:
                r = measure(column, scenario, run)
            except Exception as ex:  # a failed measurement is reported and counted, never dropped silently
                with lock:
                    failures.append((column, scenario, run, str(ex)))
                    print(f"FAILED {column} {scenario} run {run}: {ex}", file=sys.stderr, flush=True)
                continue
            with lock:
                rows.append(r)
                raw.write(json.dumps(r) + "\n")
                raw.flush()
        if run % 10 == 0:
            with lock:
                print(f"# {column}: {run} runs; {load()}", flush=True)


if a.report:
    rows = [json.loads(l) for l in open(a.report) if l.strip()]
    cols = [c for c in cols if any(r["column"] == c for r in rows)]
else:
    if not (a.bench and a.node_dir and a.out):
        sys.exit("--bench, --node-dir and --out are needed to measure")
    raw = open(os.path.join(a.out, "raw.jsonl"), "w")
    t_start = time.monotonic()
    print(f"# {load()}", flush=True)
    for c in cols:
        print(f"# {c}: {COLUMNS[c][2]}; scenarios {', '.join(COLUMNS[c][1])}", flush=True)
    if a.serial:
        for c in cols:
            column_thread(c)
    else:
        threads = [threading.Thread(target=column_thread, args=(c,)) for c in cols]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    print(f"# {load()}")
    print(f"# measured in {time.monotonic() - t_start:.0f} s; {len(rows)} measurements, {len(failures)} failed; raw: {raw.name}")


def stats(v):
    v = sorted(v)
    p99 = statistics.quantiles(v, n=100, method="inclusive")[98] if len(v) > 1 else v[0]
    return statistics.median(v), p99, v[-1], v[0]


def latency(r):
    """The request time a bound leaves out, as the participants measured it: a renewal sent before
    the kill that lands after it (at most the holder's slowest renewal), the contender's read
    before its first sight of that version, that read, the read at the end of the wait (each at
    most its slowest read) and the claim."""
    if r.get("max_read_ms") is None:
        return None
    return (r.get("max_renew_ms") or 0) + 3 * r["max_read_ms"] + r["claim_ms"]


def over(column, scenario):
    """Runs over the stated bound, and those still over it with their requests' latency added."""
    b = bound(column, scenario)
    rs = [r for r in rows if r["column"] == column and r["scenario"] == scenario]
    o = [r for r in rs if r["ms"] > b]
    return o, [r for r in o if latency(r) is None or r["ms"] > b + latency(r)]


def cell(column, scenario):
    v = [r["ms"] for r in rows if r["column"] == column and r["scenario"] == scenario]
    return stats(v) if v else None, len(v)


SCEN = {"handoff": "(a) handoff: holder releases", "crash": "(b) crash: holder SIGKILLed",
        "freeze": "(c) freeze: holder SIGSTOPped", "election": "(d) election: leader SIGKILLed"}
print()
print(f"ttl {TTL} ms, poll {POLL} ms, max_clock_rate_skew {SKEW:g} (baton); lock client: leaseDurationMs {TTL}, "
      f"heartbeatPeriodMs {HEARTBEAT}; {a.runs} runs per cell. Milliseconds from the release call, kill or stop to the "
      f"contender holding: median / p99 / max (min).")
print()
print("| scenario | column | runs | median | p99 | max | min | stated bound | max ≤ bound | runs over it: by (ms); still over with their requests' latency | took over |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
verdicts = []
for s in ("handoff", "crash", "freeze", "election"):
    for c in cols:
        if s not in COLUMNS[c][1]:
            continue
        st, n = cell(c, s)
        if not st:
            print(f"| {SCEN[s]} | {c} | 0 | | | | | | | | |")
            continue
        b = bound(c, s)
        ok = "" if b is None else ("yes" if st[2] <= b else "**NO**")
        ov = ""
        if b is not None:
            o, still = over(c, s)
            verdicts.append((c, s, st[2], b, st[2] <= b, len(still)))
            by = ", ".join("%.0f" % (r["ms"] - b) for r in o)
            ov = f"{len(o)}" + (f": by {by}; {len(still)}" if o else "")
        tk = [r["took_over"] for r in rows if r["column"] == c and r["scenario"] == s and r["took_over"] is not None]
        tk = f"{sum(tk)}/{len(tk)}" if tk else "-"
        bs = f"{b:.0f}" if b is not None else f"none stated (source: {derived(c, s)})"
        print(f"| {SCEN[s]} | {c} | {n} | {st[0]:.0f} | {st[1]:.0f} | {st[2]:.0f} | {st[3]:.0f} | {bs} | {ok} | {ov} | {tk} |")
print()
print("The same, one row per scenario: median / p99 / max in ms.")
print()
print("| scenario | baton's stated bound | " + " | ".join(cols) + " |")
print("|---|---|" + "---|" * len(cols))
for s in ("handoff", "crash", "freeze", "election"):
    cells = []
    for c in cols:
        st, n = cell(c, s) if s in COLUMNS[c][1] else (None, 0)
        if not st:
            cells.append("-")
            continue
        b = bound(c, s)
        mark = "" if b is None or st[2] <= b else " (over)"
        cells.append(f"{st[0]:.0f} / {st[1]:.0f} / {st[2]:.0f}{mark}")
    b = bound("baton", s)
    bs = f"{b:.0f}" + (f" (skew 1: {bound('baton-ddb-skew1', s):.0f})" if s in ("crash", "freeze") and "baton-ddb-skew1" in cols else "")
    print(f"| {SCEN[s]} | {bs} | " + " | ".join(cells) + " |")
print()
print("| ratio | median | p99 | max |")
print("|---|---|---|---|")
for s in ("handoff", "crash", "freeze"):
    for c in [x for x in cols if x.startswith("baton")]:
        for peer in ("lockclient", "lockclient-failclosed"):
            if peer not in cols or s not in COLUMNS[c][1] or s not in COLUMNS[peer][1]:
                continue
            x, _ = cell(c, s)
            y, _ = cell(peer, s)
            if x and y:
                print(f"| {s}: {c} / {peer} | {x[0] / y[0]:.2f} | {x[1] / y[1]:.2f} | {x[2] / y[2]:.2f} |")
print()
bad = [v for v in verdicts if not v[4]]
print(f"bounds: {len(verdicts) - len(bad)} of {len(verdicts)} baton cells hold their stated bound at the maximum over all runs"
      + ("" if not bad else "; over: " + ", ".join(f"{c} {s} max {m:.0f} > {b:.0f}" for c, s, m, b, _, _ in bad)))
still = sum(v[5] for v in verdicts)
print(f"with the store's latency the bounds leave out (per run: the holder's slowest renewal + 3 x the contender's "
      f"slowest read + its claim): {still} runs over")
if failures:
    print(f"failed measurements: {len(failures)}: " + "; ".join(f"{c} {s} #{r}" for c, s, r, _ in failures[:10]))
sys.exit(1 if failures else 0)
