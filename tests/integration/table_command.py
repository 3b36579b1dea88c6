#!/usr/bin/env python3
"""`baton table work -- CMD` across processes: the Python consumer in examples/ owns shards.

Six shards of 60 input lines each are split among `baton table work` workers, each running
examples/table_consumer.py once per shard it owns. Meanwhile one worker is killed with SIGKILL (its
consumers die with it), one joins, and the killed one comes back; at the end every worker gets
SIGTERM (it stops its consumers, hands their shards over with their last checkpoints, exits 0).

Checks:
  - every line of every shard was processed, and every shard's checkpoint ends at 60;
  - the checkpoints sampled all along (`baton table status --json`) never went back;
  - no two consumers processed one shard at once: per shard, ordered by the monotonic clock, the
    fencing tokens of the processed lines never go down, and each consumer starts at or before
    the line after the last checkpoint written;
  - every worker exits 0 on SIGTERM, and the table then shows no live worker.
Lines processed twice (between a consumer's last checkpoint and its death) are counted, never
failed: that is the documented at-least-once outcome.

Then, on the file store, one worker whose command exits by itself is started again after 1, 2
and 4 s, a checkpoint over the 16 KiB limit is refused and stops the command, and a worker with
--max-commands 2 runs two commands and leaves the other shards to a worker without a limit.

Usage: table_command.py BATON_BINARY [file | dynamodb | s3 | azblob]
Skipped (exit 0, one line) when its server is not configured.
"""
import json, os, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_cross_process import azblob_store, dynamodb_store, s3_store, skip_without_server
from table_workers import finish, stop_workers, wait_all_checkpoints

SHARDS, LINES = 6, 60
STEP = "0.1"  # seconds per line in the consumer: a shard takes 6 s, so the kill and joins land mid-way
DONE_WITHIN = 90

baton, kind = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "file")
consumer = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "table_consumer.py")


def main():
    skip_without_server(kind) if kind != "file" else None
    scratch = tempfile.mkdtemp(prefix="baton-table-command-")
    drop = None
    if kind == "file":
        store, env = "file://" + os.path.join(scratch, "store"), {}
        os.makedirs(os.path.join(scratch, "store"))
    elif kind == "dynamodb":
        store, env, _, drop = dynamodb_store()
    elif kind == "azblob":
        store, env, _, _ = azblob_store()
    else:
        store, env, _, _ = s3_store()
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and not k.startswith("AZURE_")}
    full_env.update(env)
    inputs, output = os.path.join(scratch, "in"), os.path.join(scratch, "processed.log")
    os.makedirs(inputs)
    shards = ["s%d" % i for i in range(SHARDS)]
    for s in shards:
        with open(os.path.join(inputs, s + ".txt"), "w") as f:
            f.write("".join("%s line %d\n" % (s, n) for n in range(1, LINES + 1)))

    def cli(*args):
        r = subprocess.run([baton] + list(args), env=full_env, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError("baton %s exited %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
        return r.stdout

    failures = []
    last_checkpoint = {}

    def sample():
        st = json.loads(cli("table", "status", "--store", store, "--json"))
        for s in st["shards"]:
            cp = int(s["checkpoint"] or 0)
            if cp < last_checkpoint.get(s["shard"], 0):
                failures.append("checkpoint of %s went back: %d after %d" % (s["shard"], cp, last_checkpoint[s["shard"]]))
            last_checkpoint[s["shard"]] = max(cp, last_checkpoint.get(s["shard"], 0))
        return st

    procs = {}

    def start(name):
        err = open(os.path.join(scratch, name + ".err"), "a")
        procs[name] = subprocess.Popen(
            [baton, "table", "work", "--store", store, "--worker", name, "--ttl", "2s", "--grace", "2s", "--",
             sys.executable, consumer, inputs, output, "--step", STEP],
            env=full_env, stdout=subprocess.DEVNULL, stderr=err)

    def wait_sampling(seconds):
        end = time.time() + seconds
        while time.time() < end:
            sample()
            time.sleep(0.25)

    try:
        cli("table", "register", "--store", store, *shards)
        for n in ("w1", "w2", "w3"):
            start(n)
        wait_sampling(2)
        procs["w1"].kill()
        procs["w1"].wait()
        print("w1 killed")
        wait_sampling(1)
        start("w4")
        print("w4 joined")
        wait_sampling(2)
        start("w1")
        print("w1 restarted")
        wait_all_checkpoints(sample, LINES, DONE_WITHIN, failures, "line")
    finally:
        stop_workers(procs, scratch, failures)
    st = sample()
    live = [w["name"] for w in st["workers"] if not w["released"]]
    if live:
        failures.append("workers still live after SIGTERM: %s" % live)

    # The processed lines: every one at least once; per shard, tokens never go down in time.
    seen, twice = {}, 0
    by_shard = {}
    for line in open(output):
        ns, shard, token, n, _ = line.split(" ", 4)
        by_shard.setdefault(shard, []).append((int(ns), int(token), int(n)))
    for s in shards:
        events = sorted(by_shard.get(s, []))
        numbers = [n for _, _, n in events]
        missing = sorted(set(range(1, LINES + 1)) - set(numbers))
        if missing:
            failures.append("%s: lines never processed: %s" % (s, missing[:10]))
        twice += len(numbers) - len(set(numbers))
        top = 0
        for ns, token, n in events:
            if token < top:
                failures.append("%s: line %d processed under token %d after token %d had processed lines "
                                "(two consumers at once)" % (s, n, token, top))
                break
            top = token
        seen[s] = len(set(numbers))
    print("%d lines processed, %d twice (after a kill), tokens per shard: %s" % (
        sum(seen.values()), twice, {s: sorted({t for _, t, _ in by_shard.get(s, [])}) for s in shards}))
    if kind in ("file", "dynamodb"):  # on the file store: it checks the worker, not the store
        failures += restarts_and_refusals(scratch, full_env)
        failures += json_logs_and_metrics(scratch, full_env)
        failures += max_commands(scratch, full_env)
    return finish(failures, scratch, drop, "the workers' logs are")


def restarts_and_refusals(scratch, env):
    """A command that exits by itself is started again after 1 s, 2 s, 4 s; a refused checkpoint
    stops it. One worker, one shard, on the file store."""
    failures = []
    store = "file://" + os.path.join(scratch, "restarts")
    os.makedirs(os.path.join(scratch, "restarts"))
    subprocess.run([baton, "table", "register", "--store", store, "x"], env=env, check=True, capture_output=True)
    # Each run checkpoints one more than it was given, then exits 3; the fourth run also writes a
    # checkpoint of 20000 bytes (over the 16 KiB limit) and waits to be stopped.
    script = ('n=$((${BATON_CHECKPOINT:-0}+1)); echo "checkpoint $n" >&"$BATON_CHECKPOINT_FD"; '
              'if [ "$n" -ge 4 ]; then printf "checkpoint %020000d\\n" 0 >&"$BATON_CHECKPOINT_FD"; '
              'exec sleep 30; fi; exit 3')
    err_path = os.path.join(scratch, "restarts.err")
    t0 = time.monotonic()
    p = subprocess.Popen([baton, "table", "work", "--store", store, "--worker", "r", "--ttl", "2s", "--grace", "1s",
                          "--", "sh", "-c", script], env=env, stdout=subprocess.DEVNULL, stderr=open(err_path, "w"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        err = open(err_path).read()
        if "refused" in err and "was stopped, status 143" in err:
            break
        time.sleep(0.2)
    took = time.monotonic() - t0
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=30)
    err = open(err_path).read()
    st = json.loads(subprocess.run([baton, "table", "status", "--store", store, "--json"], env=env, check=True,
                                   capture_output=True, text=True).stdout)
    for needle in ("the command exited with status 3; starting it again in 1.0s",
                   "the command exited with status 3; starting it again in 2.0s",
                   "the command exited with status 3; starting it again in 4.0s",
                   "refused: ", "stopping the command", "was stopped, status 143"):
        if needle not in err:
            failures.append("restarts: stderr lacks %r:\n%s" % (needle, err[-1500:]))
    if not 7 <= took <= 15:
        failures.append("restarts: three backoffs of 1, 2 and 4 s took %.1f s" % took)
    if st["shards"][0]["checkpoint"] != "4":
        failures.append("restarts: the checkpoint is %r, not 4 (the refused one must not land)" % st["shards"][0]["checkpoint"])
    if rc != 0:
        failures.append("restarts: the worker exited %d on SIGTERM" % rc)
    print("restarts and a refused checkpoint: %.1f s, checkpoint %s" % (took, st["shards"][0]["checkpoint"]))
    return failures


def json_logs_and_metrics(scratch, env):
    """--log-format json: every stderr line of `run` and `table work` is one JSON object with "event"
    and "at", in the order things happened; --metrics-file counts what the worker did."""
    failures = []
    base = "file://" + os.path.join(scratch, "json")
    r = subprocess.run([baton, "run", "--store", base + "-run", "--key", "k", "--log-format", "json", "--",
                        "sh", "-c", "exit 3"], env=env, capture_output=True, text=True, timeout=60)
    try:
        events = [json.loads(line) for line in r.stderr.splitlines()]
    except ValueError:
        return ["json logs: run printed a line that is not JSON: %r" % r.stderr]
    names = [e["event"] for e in events]
    if r.returncode != 3 or [n for n in names if n != "tokens_restarted"] != ["acquired", "command_exited", "released"] \
            or not all("at" in e for e in events) or events[0].get("key") != "k":
        failures.append("json logs: run exited %d with events %s" % (r.returncode, names))
    store, metrics = base + "-table", os.path.join(scratch, "table.prom")
    subprocess.run([baton, "table", "register", "--store", store, "a"], env=env, check=True, capture_output=True)
    err_path = os.path.join(scratch, "json-table.err")
    p = subprocess.Popen([baton, "table", "work", "--store", store, "--worker", "j", "--log-format", "json",
                          "--metrics-file", metrics, "--", "sh", "-c",
                          'echo "checkpoint 1" >&3; echo "checkpoint 2" >&3; exec sleep 30'],
                         env=env, stdout=subprocess.DEVNULL, stderr=open(err_path, "w"))
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and "baton_table_checkpoints_total{result=\"written\"} 2" not in \
            (open(metrics).read() if os.path.exists(metrics) else ""):
        time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=30)
    try:
        events = [json.loads(line) for line in open(err_path).read().splitlines()]
    except ValueError:
        return failures + ["json logs: table work printed a line that is not JSON: %r" % open(err_path).read()]
    names = [e["event"] for e in events]
    if rc != 0 or names != ["shard_acquired", "command_started", "handed_over"] or events[-1].get("checkpoint") != "2":
        failures.append("json logs: table work exited %d with events %s" % (rc, events))
    text = open(metrics).read()
    for line in ("baton_table_shards_owned 0", "baton_table_command_starts_total 1",
                 'baton_table_checkpoints_total{result="written"} 2', "baton_table_shards_handed_over_total 1"):
        if line not in text:
            failures.append("metrics file lacks %r:\n%s" % (line, text))
    print("json logs and metrics: %s" % ("ok" if not failures else "failed"))
    return failures


def max_commands(scratch, env):
    """--max-commands 2: the worker runs two commands and claims no more shards; a worker without
    a limit takes the other three; the status shows the limit. The option needs -- COMMAND."""
    failures = []
    store = "file://" + os.path.join(scratch, "limit")
    os.makedirs(os.path.join(scratch, "limit"))
    shards = ["m%d" % i for i in range(5)]
    subprocess.run([baton, "table", "register", "--store", store] + shards, env=env, check=True, capture_output=True)
    log = os.path.join(scratch, "limit.log")
    # Each command notes its start and its end ("+ WORKER SHARD", "- WORKER SHARD").
    script = ('echo "+ $1 $BATON_SHARD" >> "$2"; trap \'echo "- $1 $BATON_SHARD" >> "$2"; exit 0\' TERM; '
              'sleep 60 & wait')

    def status():
        return json.loads(subprocess.run([baton, "table", "status", "--store", store, "--json"], env=env, check=True,
                                         capture_output=True, text=True).stdout)

    def owned():
        n = {}
        for s in status()["shards"]:
            if s["state"] == "owned":
                n[s["owner"]] = n.get(s["owner"], 0) + 1
        return n

    def until(pred, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not pred():
            time.sleep(0.2)
        return pred()

    procs = {}
    for name, extra in (("m", ["--max-commands", "2"]), ("n", [])):
        procs[name] = subprocess.Popen([baton, "table", "work", "--store", store, "--worker", name, "--ttl", "2s",
                                        "--grace", "1s"] + extra + ["--", "sh", "-c", script, "sh", name, log],
                                       env=env, stdout=subprocess.DEVNULL,
                                       stderr=open(os.path.join(scratch, "limit-%s.err" % name), "w"))
        if name == "m" and not until(lambda: owned() == {"m": 2}, 10):
            failures.append("max-commands: the limited worker alone owns %s, not 2 shards" % owned())
        time.sleep(2 if name == "m" else 0)  # a few scans: it must claim no more
    if not until(lambda: owned() == {"m": 2, "n": 3}, 15):
        failures.append("max-commands: with a worker without a limit the table is %s, not m 2 and n 3" % owned())
    limits = {w["name"]: w["max_shards"] for w in status()["workers"]}
    if limits != {"m": 2, "n": None}:
        failures.append("max-commands: the status shows limits %s" % limits)
    text = subprocess.run([baton, "table", "status", "--store", store], env=env, capture_output=True, text=True).stdout
    # WORKER TERM SHARDS LIMIT STATE
    if not any(f[:1] == ["m"] and f[2:] == ["2", "2", "live"] for f in (line.split() for line in text.splitlines())):
        failures.append("max-commands: the text status does not show m's limit of 2:\n%s" % text)
    for p in procs.values():
        p.send_signal(signal.SIGTERM)
    for name, p in procs.items():
        rc = p.wait(timeout=30)
        if rc != 0:
            failures.append("max-commands: worker %s exited %d on SIGTERM" % (name, rc))
    running, most = {}, {}
    for line in open(log):
        sign, worker, _ = line.split()
        running[worker] = running.get(worker, 0) + (1 if sign == "+" else -1)
        most[worker] = max(most.get(worker, 0), running[worker])
    if most.get("m") != 2:
        failures.append("max-commands: the limited worker ran at most %s commands at once, not 2" % most.get("m"))
    for args, why in ((["--max-commands", "2"], "without -- COMMAND"), (["--max-commands", "0", "--", "true"], "0")):
        r = subprocess.run([baton, "table", "work", "--store", store] + args, env=env, capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 64 or "--max-commands" not in r.stderr:
            failures.append("max-commands: %s exited %d: %s" % (why, r.returncode, r.stderr.strip()))
    print("max-commands: %s commands at once at most, per worker" % most)
    return failures


if __name__ == "__main__":
    sys.exit(main())
