#!/usr/bin/env python3
"""Lease-table chaos across processes.

`baton table work` processes split 12 shards of 40 numbered records each; every worker
logs each record it processes (with the time it decided to) and checkpoints after it.
Meanwhile: one worker is killed with SIGKILL, one joins, one is frozen (SIGSTOP) beyond
twice its TTL and resumed, the killed worker comes back under the same name, and a second
worker joins. When every shard is done, the workers are stopped with SIGTERM (graceful:
they hand their shards over and exit 0).

Checks:
  - every record of every shard was processed, and every shard's checkpoint ends at 40;
  - no two works acted on one shard at once: per shard, each work's records (ordered by the
    system-wide monotonic clock) form one unbroken run;
  - per shard, each work starts with a token above every earlier work's, and the checkpoints
    sampled all along (`baton table status --json`, four times a second) never went back;
  - after the deaths and joins the table is balanced: every shard owned by a live worker,
    each within one of the fair share;
  - every worker still running at the end exits 0 on SIGTERM, and the table then shows no
    live worker.
Records processed twice (after a SIGKILL or a loss, between the last checkpoint and the end of
a work) are counted and reported, never failed: that is the documented at-least-once outcome.

Usage: table_chaos.py BATON_BINARY [file | dynamodb | s3 | azblob | composed] [--faults SEED]
  file         a fresh directory (default)
  dynamodb     a fresh table on the dynalite at BATON_DYNAMODB_ENDPOINT (with-servers.sh dynalite)
  s3           a fresh bucket on the S3 store at BATON_S3_ENDPOINT (Ceph RGW, with-servers.sh rgw)
  composed     the commit protocol's store: a fresh bucket on s3rver (which ignores
               preconditions) at BATON_S3RVER_ENDPOINT, its commits in a fresh dynalite table,
               s3://BUCKET/xproc?lock=dynamodb://TABLE (with-servers.sh s3rver dynalite)
  --faults SEED  the workers reach each AWS service through a seeded fault proxy
               (tests/robustness/fault_proxy.py: delays, answers dropped after the store applied
               the request, resets, blackholes); the admin commands and the checks go direct, and
               the network is calmed once every shard is done, and a lease left in doubt
               is given time to settle (ttl x 3 + 1 s) before the balance check
Skipped (exit 0, one line) when its server is not configured.
"""
import json, os, shutil, signal, subprocess, sys, tempfile, time, uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "robustness"))
from cli_cross_process import azblob_store, dynamodb_store, s3_store, skip_without_server
from s3_request import create_bucket
import proxied
from table_workers import finish, stop_workers, wait_all_checkpoints

SHARDS = 12
RECORDS = 40
STEP = "60ms"
TTL = "2s"
DONE_WITHIN = 120  # seconds for every shard to reach its last record
BALANCED_WITHIN = 30


def composed_store():
    """A fresh s3rver bucket whose commits go to a fresh dynalite table: the composed store URL,
    the variables `baton` needs (each service's endpoint variable), those it must not see, and
    how to drop the table."""
    table_url, env, removed, drop = dynamodb_store()
    endpoint = os.environ["BATON_S3RVER_ENDPOINT"]
    region = os.environ.get("BATON_S3RVER_REGION", "us-east-1")
    bucket = "baton-xproc-" + uuid.uuid4().hex
    create_bucket(endpoint, region, os.environ["BATON_S3RVER_ACCESS_KEY"], os.environ["BATON_S3RVER_SECRET_KEY"],
                  bucket)
    # One set of credentials signs both services' requests: s3rver and dynalite accept any.
    env = dict(env, AWS_ENDPOINT_URL_S3=endpoint, AWS_REGION=region,
               AWS_ACCESS_KEY_ID=os.environ["BATON_S3RVER_ACCESS_KEY"],
               AWS_SECRET_ACCESS_KEY=os.environ["BATON_S3RVER_SECRET_KEY"])
    removed = tuple(removed) + ("AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION")
    return "s3://%s/xproc?lock=%s" % (bucket, table_url), env, removed, drop


def main():
    args = sys.argv[1:]
    fault_seed = None
    if "--faults" in args:
        at = args.index("--faults")
        fault_seed = int(args[at + 1])
        del args[at:at + 2]
    baton = args[0]
    kind = args[1] if len(args) > 1 else "file"
    skip_without_server(kind)
    scratch = tempfile.mkdtemp(prefix="baton-table-chaos-")
    drop = None
    env = dict(os.environ)
    if kind == "file":
        store = "file://" + os.path.join(scratch, "store")
        os.makedirs(os.path.join(scratch, "store"))
    elif kind == "dynamodb":
        store, extra, removed, drop = dynamodb_store()
        env.update(extra)
        for k in removed:
            env.pop(k, None)
    elif kind in ("s3", "azblob"):
        store, extra, removed, drop = s3_store() if kind == "s3" else azblob_store()
        env.update(extra)
        for k in removed:
            env.pop(k, None)
    else:
        store, extra, removed, drop = composed_store()
        env.update(extra)
        for k in removed:
            env.pop(k, None)
    log_path = os.path.join(scratch, "events.log")
    failures = []
    procs = {}
    proxies, worker_env = [], env
    if fault_seed is not None and kind != "file":
        # Faults scaled to the 2 s TTL (renew deadline 1.33 s): delays up to 1 s, 1 s blackholes.
        # With the robustness runs' 2.5 s delays and 2 s blackholes every worker loses its term
        # every few seconds and the table thrashes (still safe, but too slow for this test).
        proxies, through = proxied.start(scratch, env, fault_seed, delay_ms="100:1000", blackhole_for=1)
        worker_env = dict(env, **through)

    def cli(*args, check=True):
        r = subprocess.run([baton, *args], env=env, capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            raise RuntimeError("baton %s exited %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
        return r

    def status():
        return json.loads(cli("table", "status", "--store", store, "--json").stdout)

    def start(name):
        out = open(os.path.join(scratch, name + ".err"), "a")
        procs[name] = subprocess.Popen([baton, "table", "work", "--store", store, "--worker", name, "--records",
                                        str(RECORDS), "--step", STEP, "--ttl", TTL, "--log", log_path],
                                       env=worker_env, stdout=out, stderr=out)

    samples = {}  # shard -> checkpoints seen, in order

    samples_log = open(os.path.join(scratch, "status.jsonl"), "a")  # kept with the logs of a failed run

    def sample():
        st = status()
        samples_log.write(json.dumps(dict(st, t=time.monotonic())) + "\n")
        for s in st["shards"]:
            cp = int(s["checkpoint"]) if s["checkpoint"] is not None else 0
            seen = samples.setdefault(s["shard"], [])
            if seen and cp < seen[-1]:
                failures.append("shard %s: checkpoint went back from %d to %d" % (s["shard"], seen[-1], cp))
            seen.append(cp)
        return st

    def wait_sampling(seconds):
        end = time.time() + seconds
        while time.time() < end:
            sample()
            time.sleep(0.25)

    try:
        cli("table", "register", "--store", store, *["s%02d" % i for i in range(SHARDS)])
        for n in ("w1", "w2", "w3"):
            start(n)
        wait_sampling(3)
        procs["w1"].send_signal(signal.SIGKILL)
        procs["w1"].wait()
        print("w1 killed")
        wait_sampling(1)
        start("w4")
        print("w4 joined")
        wait_sampling(1)
        procs["w2"].send_signal(signal.SIGSTOP)
        print("w2 frozen")
        wait_sampling(6)  # beyond ttl x 2 = 4 s: its shards are taken
        procs["w2"].send_signal(signal.SIGCONT)
        print("w2 resumed")
        start("w1")  # the killed worker comes back under its name
        print("w1 restarted")
        wait_sampling(2)
        start("w5")
        print("w5 joined")
        wait_all_checkpoints(sample, RECORDS, DONE_WITHIN, failures)
        proxied.calm(proxies)
        if proxies:
            # A worker whose lease the faults left in doubt learns its fate by its deadline (one
            # ttl) and, if it was lost, takes its record back after the takeover window (ttl x
            # the default skew of 2) and a poll. The status reads records, so until then it shows
            # a worker that no longer holds its lease as live; stopped then, that worker rightly
            # reports the loss (exit 1) and leaves its record unreleased.
            ttl_s = int(TTL.rstrip("s"))
            wait_sampling(ttl_s + 2 * ttl_s + 1)
        # Balanced after the deaths and joins: every shard owned by a live worker, within one of the fair share.
        deadline = time.time() + BALANCED_WITHIN
        while True:
            st = sample()
            live = {w["name"] for w in st["workers"] if not w["released"]}
            running = {n for n, p in procs.items() if p.poll() is None}
            owned = {}
            unowned = [s["shard"] for s in st["shards"] if s["state"] != "owned"]
            for s in st["shards"]:
                if s["state"] == "owned":
                    owned[s["owner"]] = owned.get(s["owner"], 0) + 1
            counts = [owned.get(n, 0) for n in running]
            lo, hi = SHARDS // max(len(running), 1), -(-SHARDS // max(len(running), 1))
            if not unowned and live == running and all(lo <= c <= hi for c in counts):
                print("balanced: %s" % {n: owned.get(n, 0) for n in sorted(running)})
                break
            if time.time() > deadline:
                failures.append("not balanced within %d s: owned %s, unowned %s, live %s, running %s" % (
                    BALANCED_WITHIN, owned, unowned, sorted(live), sorted(running)))
                break
            time.sleep(0.5)
    finally:
        stop_workers(procs, scratch, failures)
        if proxies:
            print("network faults by kind: " + proxied.describe(proxied.stop(proxies)))
    st = status()
    still_live = [w["name"] for w in st["workers"] if not w["released"]]
    if still_live:
        failures.append("workers still live after SIGTERM: %s" % still_live)
    failures += check_log(log_path)
    return finish(failures, scratch, drop, "the workers' logs and the proxies' decisions are")


def check_log(path):
    """The checks on what the works saw (the log), as tests/common/include/test_common/table_workers.hpp does."""
    failures = []
    events = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 6:
                failures.append("malformed log line: %r" % line)
                continue
            ns, worker, shard, token, what, n = parts
            events.append((int(ns), worker, shard, int(token), what, int(n)))
    events.sort(key=lambda e: e[0])
    by_shard = {}
    for e in events:
        by_shard.setdefault(e[2], []).append(e)
    twice = 0
    for shard, evs in sorted(by_shard.items()):
        finished, current, processed = set(), None, {}
        for ns, worker, _, token, what, n in evs:
            work = (worker, token)
            if what == "record":
                if work != current:
                    if work in finished:
                        failures.append("shard %s: %s (token %d) processed record %d after another work acted" % (
                            shard, worker, token, n))
                    if current:
                        finished.add(current)
                    current = work
                processed[n] = processed.get(n, 0) + 1
        missing = [n for n in range(1, RECORDS + 1) if n not in processed]
        if missing:
            failures.append("shard %s: records never processed: %s" % (shard, missing))
        twice += sum(c - 1 for c in processed.values())
    tokens = {}
    for ns, worker, shard, token, what, n in events:
        if what == "start":
            if token < tokens.get(shard, 0):
                failures.append("shard %s: a work started with token %d after token %d" % (shard, token, tokens[shard]))
            tokens[shard] = max(tokens.get(shard, 0), token)
    starts = sum(1 for e in events if e[4] == "start")
    print("%d events, %d works started, %d records processed twice (after a kill or a loss)" % (len(events), starts, twice))
    return failures


if __name__ == "__main__":
    sys.exit(main())
