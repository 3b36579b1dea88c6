#!/usr/bin/env python3
"""One bounded robustness run on one store (README.md here says what is judged).

Starts kv and lease traffic processes (baton_traffic) against a fresh store, each AWS service
behind a seeded fault proxy (fault_proxy.py: delays, answers dropped after the store applied the
request, resets before and after forwarding, blackholes); on top of those, a seeded schedule of
process faults: SIGKILL and a restart under the same name, SIGSTOP past the lease's TTL and
SIGCONT. When the run's time is up, a process of its own reads every key and the fenced record
directly (no proxy), and baton_history_check judges every history.

Usage: run.py TRAFFIC CHECKER KIND [--seconds N] [--seed S] [--profile default|heavy|none]
              [--broken unknown-as-failed|late-loss] [--keep DIR]
  KIND: file, dynamodb (dynalite), s3 (Ceph RGW), azblob (Azurite), composed (s3rver's objects, commits in dynalite)
  --broken   the traffic processes misreport what baton told them; the run passes only when the
             checkers find a violation (the checkers shown to bite on a real run)
Prints the figures (operations by kind and outcome, unknown outcomes, faults injected by kind,
process faults, violations) and ends with one line "N passed, N failed" (one case: this run).
Skipped (exit 77, meson's skip) when the store's server is not configured.
"""
import argparse, collections, json, os, random, re, shutil, signal, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "integration"))
from cli_cross_process import azblob_store, dynamodb_store, s3_store, skip_without_server  # noqa: E402
from table_chaos import composed_store  # noqa: E402
import proxied  # noqa: E402

KV_PROCESSES = 3
LEASE_PROCESSES = 3
TTL_MS = 3000
ATTEMPT_TIMEOUT_MS = 2000


class Proc:
    def __init__(self, name, workload):
        self.name, self.workload = name, workload
        self.incarnation = -1
        self.popen = None
        self.stopped = False
        self.restart_at = None


def now_ns():
    return time.monotonic_ns()  # CLOCK_MONOTONIC, as the traffic processes' steady_clock


def too_little(files):
    """A run must have done enough for its verdict to mean something: a proxy or server that
    failed everything would leave histories that check clean."""
    n = collections.Counter()

    for path in files:
        with open(path) as f:
            for line in f:
                d = json.loads(line)
                if d.get("res") != "ok":
                    continue
                op, final = d["op"], d["p"].startswith("final-")
                if op == "get":
                    n["final gets" if final else "gets that found a value"] += 1 if final or d.get("found") else 0
                elif op == "fenced_read":
                    n["final fenced reads that found the record"] += 1 if d.get("found") else 0
                else:
                    n[op] += 1
    # (Two acquisitions, not two acquirers: one holder that stops and takes the lease again while
    # the others are stopped or their requests faulted is a run that happens.)
    least = {"put": 10, "gets that found a value": 10, "incr": 5, "acquire": 2, "fenced": 5,
             "final gets": 5, "final fenced reads that found the record": 1}
    return ["too little happened to judge: %d %s (at least %d)" % (n[k], k, m) for k, m in least.items() if n[k] < m]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("traffic")
    ap.add_argument("checker")
    ap.add_argument("kind", choices=["file", "dynamodb", "s3", "azblob", "composed"])
    ap.add_argument("--seconds", type=float, default=25)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("BATON_ROBUSTNESS_SEED", "1")))
    ap.add_argument("--profile", default="default")
    ap.add_argument("--broken")
    ap.add_argument("--keep")
    a = ap.parse_args()
    try:
        skip_without_server(a.kind)
    except SystemExit:
        sys.exit(77)  # meson's "skipped": a run that checked nothing is never counted as passed
    rng = random.Random(a.seed)
    workdir = a.keep or tempfile.mkdtemp(prefix="baton-robustness-%s-" % a.kind)
    os.makedirs(workdir, exist_ok=True)
    print("robustness run: store %s, seed %d, %.0f s, profile %s%s; files in %s" %
          (a.kind, a.seed, a.seconds, a.profile, ", broken: " + a.broken if a.broken else "", workdir))

    env = dict(os.environ)
    direct_env = None
    drop = None
    proxies = []
    if a.kind == "file":
        os.makedirs(os.path.join(workdir, "store"), exist_ok=True)
        store = "file://" + os.path.join(workdir, "store")
        direct_env = env
    else:
        if a.kind == "dynamodb":
            store, extra, removed, drop = dynamodb_store()
        elif a.kind in ("s3", "azblob"):
            store, extra, removed, drop = s3_store() if a.kind == "s3" else azblob_store()
            store = store.rsplit("/", 1)[0]  # the bucket or container itself: the traffic uses fixed keys
        else:
            store, extra, removed, drop = composed_store()
            store = store.replace("/xproc?", "?")
        for k in removed:
            env.pop(k, None)
        env.update(extra)
        direct_env = dict(env)
        proxies, through = proxied.start(workdir, extra, a.seed, a.profile)
        env.update(through)

    history = lambda name: os.path.join(workdir, "h-%s.jsonl" % name)
    events = open(history("proc"), "a")

    def event(proc, op, **extra):
        line = dict(p=proc.name, i=proc.incarnation, w="proc", op=op, t=now_ns(), **extra)
        events.write(json.dumps(line) + "\n")
        events.flush()

    end = time.monotonic() + a.seconds
    procs = [Proc("kv-%d" % i, "kv") for i in range(1, KV_PROCESSES + 1)] + \
            [Proc("lease-%d" % i, "lease") for i in range(1, LEASE_PROCESSES + 1)]
    for n, proc in enumerate(procs):
        proc.seed = a.seed * 1000 + n

    def launch(proc):
        proc.incarnation += 1
        left_ms = max(0, int((end - time.monotonic()) * 1000))
        cmd = [a.traffic, "--store", store, "--workload", proc.workload, "--name", proc.name,
               "--incarnation", str(proc.incarnation), "--seed", str(proc.seed * 100 + proc.incarnation),
               "--duration-ms", str(left_ms), "--history", history(proc.name), "--ttl-ms", str(TTL_MS),
               "--attempt-timeout-ms", str(ATTEMPT_TIMEOUT_MS)]
        if a.broken:
            cmd += ["--broken", a.broken]
        event(proc, "start")
        proc.popen = subprocess.Popen(cmd, env=env, stderr=open(os.path.join(workdir, "%s.err" % proc.name), "a"))
        proc.stopped = False
        proc.restart_at = None

    for proc in procs:
        launch(proc)

    faults = collections.Counter()
    failures = []
    next_fault = time.monotonic() + rng.uniform(1.5, 3)
    while time.monotonic() < end:
        t = time.monotonic()
        for proc in procs:
            if proc.restart_at is not None and t >= proc.restart_at:
                launch(proc)
            if proc.stopped and t >= proc.cont_at:
                os.kill(proc.popen.pid, signal.SIGCONT)
                event(proc, "sigcont")
                proc.stopped = False
        if t >= next_fault:
            next_fault = t + rng.uniform(1.5, 3.5)
            candidates = [p for p in procs if p.restart_at is None and not p.stopped and p.popen.poll() is None]
            if candidates:
                proc = rng.choice(candidates)
                roll = rng.random()
                if roll < 0.35 and end - t > 3:
                    proc.popen.kill()
                    proc.popen.wait()
                    event(proc, "sigkill")  # once it is dead: a hold may last until then
                    faults["sigkill"] += 1
                    proc.restart_at = t + rng.uniform(0.3, 1.5)
                elif roll < 0.7 and not a.broken:
                    # (Not in the bite runs: an interval frozen by SIGSTOP is judged by fencing
                    # alone, so a stop could hide the broken holder's overlap.)
                    event(proc, "sigstop")
                    os.kill(proc.popen.pid, signal.SIGSTOP)
                    faults["sigstop"] += 1
                    proc.stopped = True
                    # Past the lease's TTL: the holder wakes up believing it still holds.
                    proc.cont_at = t + rng.uniform(1.2, 2.5) * TTL_MS / 1000
        time.sleep(0.05)
    for proc in procs:
        if proc.stopped:
            os.kill(proc.popen.pid, signal.SIGCONT)
            event(proc, "sigcont")
            proc.stopped = False
    for proc in procs:
        if proc.restart_at is not None:
            continue  # killed near the end: not restarted
        try:
            rc = proc.popen.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.popen.kill()
            rc = "hung"
        if rc != 0:
            failures.append("%s (incarnation %d) ended with %s; see %s.err" % (proc.name, proc.incarnation, rc, proc.name))
    events.close()

    # The last word: every key and the fenced record, read directly.
    for workload in ("kv", "lease"):
        rc = subprocess.call([a.traffic, "--store", store, "--workload", workload, "--name", "final-" + workload,
                              "--final", "--history", history("final-" + workload), "--attempt-timeout-ms", "10000"],
                             env=direct_env, stderr=open(os.path.join(workdir, "final.err"), "a"))
        if rc != 0:
            failures.append("the final read (%s) failed; see final.err" % workload)

    injected = proxied.stop(proxies) if proxies else collections.Counter()
    print("network faults by kind: " + (proxied.describe(injected) if proxies else "none (no proxy)"))
    print("process faults: " + (", ".join("%s %d" % kv for kv in sorted(faults.items())) or "none"))

    files = sorted(os.path.join(workdir, f) for f in os.listdir(workdir) if f.startswith("h-"))
    if not a.broken:  # (a broken run's verdict is its violations)
        failures += too_little(files)
    check = subprocess.run([a.checker] + files, capture_output=True, text=True)
    sys.stdout.write(check.stdout)
    sys.stderr.write(check.stderr)
    verdict = check.stdout.strip().splitlines()[-1] if check.stdout.strip() else ""
    # One line for soak.sh to add up.
    read = re.search(r"read \d+ file\(s\): (\d+) operations", check.stdout)
    print("figures " + json.dumps({
        "operations": int(read.group(1)) if read else 0,
        "unknown": sum(int(n) for n in re.findall(r"\((\d+) of unknown outcome", check.stdout)),
        "network": dict(injected), "process": dict(faults),
        "violations": int(verdict.split()[-1]) if verdict.startswith(("VIOLATIONS", "INCONCLUSIVE")) else 0,
        "verdict": verdict}))
    if a.broken:
        # Each broken mode must be caught by the check that judges it.
        expected = {"stale-reads": "VIOLATION kv", "unknown-as-failed": "VIOLATION kv", "late-loss": "VIOLATION lease"}
        missed = [m for m in a.broken.split(",") if expected[m] not in check.stdout]
        if check.returncode != 1 or not verdict.startswith("VIOLATIONS") or missed:
            failures.append("the broken traffic (%s) was not caught: the checker said %r" % (",".join(missed) or a.broken, verdict))
        else:
            print("caught, as it must be: the traffic was deliberately broken (%s)" % a.broken)
    elif check.returncode != 0:
        failures.append("the checker said: %s" % verdict)

    if drop:
        try:
            drop()
        except Exception as e:  # the table is thrown away with the server anyway
            print("note: dropping the table failed: %s" % e)
    for f in failures:
        print("FAIL: " + f)
    if failures:
        print("histories and logs kept in " + workdir)
    elif not a.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    print("%d passed, %d failed" % (0 if failures else 1, 1 if failures else 0))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
