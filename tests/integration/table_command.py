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

And the events of --log-format json (and --metrics-file) that a loss or a slow renewal brings,
on the file store, with the processes frozen by SIGSTOP at chosen moments (a renewal of a
file-store record renames a new file over it, so the test sees each one):
  - `run`: frozen right after a renewal until the next one can land only late, it says
    `renewed_late` (less than a sixth of the TTL left, or past the deadline it raced when a
    loaded machine stops it late); frozen past its renew deadline, `lost`
    with its reason, and the command is stopped;
  - the demo worker (`table work` without COMMAND): `shard_acquired`, `renewed_late` of its
    worker lease, `shard_lost` with the reason `renew deadline passed`, the shard claimed again,
    `handed_over` at SIGTERM, and its --metrics-file counting all of it;
  - a fencing refusal: the shard record is taken over (rewritten, as another worker's claim
    would) while the worker holds it, so the command's next checkpoint is refused by the store:
    `checkpoint_refused`, the command stopped, `shard_lost` with the reason `shard taken` (JSON,
    and the line of the text log), the refused checkpoint never stored.

Usage: table_command.py BATON_BINARY [file | dynamodb | s3 | azblob]
Skipped (exit 0, one line) when its server is not configured.
"""
import fcntl, json, os, shutil, signal, subprocess, sys, tempfile, time, urllib.parse, uuid, zlib

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
        failures += losses_and_late_renewals(scratch, full_env)
        failures += fencing_refusal(scratch, full_env, "json")
        failures += fencing_refusal(scratch, full_env, "text")
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


def record_file(root, key):
    """The file of `key` in a file store (docs: backend/file.hpp, "On disk")."""
    return os.path.join(root, "r." + urllib.parse.quote(key, safe=""))


def json_events(path):
    """The JSON events of a stderr file so far (a line that is not JSON is a failure of its own)."""
    events = []
    for line in open(path).read().splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            events.append({"event": "NOT JSON", "line": line})
    return events


def wait_for(pred, seconds, interval=0.05):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not pred():
        time.sleep(interval)
    return pred()


def freeze(p, seconds):
    p.send_signal(signal.SIGSTOP)
    time.sleep(max(0.0, seconds))
    p.send_signal(signal.SIGCONT)


def renew_late(p, record, err_path, ttl):
    """Freezes `p` right after a renewal of `record` until its next renewal can only land with
    less than a sixth of the TTL left: renewals come every ttl/3 and the renew deadline is 2/3 of
    the TTL after a renewal, so a process that resumes at 0.57 ttl sends the next one at once and
    it lands about 0.1 ttl before the deadline. Up to three tries (a machine slow enough to
    overshoot the deadline loses the lease instead). True when `renewed_late` was logged."""
    for _ in range(3):
        if p.poll() is not None:  # it lost its lease in the last freeze, and exited
            return False
        before = os.stat(record).st_ino
        if not wait_for(lambda: os.stat(record).st_ino != before or p.poll() is not None, 3 * ttl) or \
                p.poll() is not None:
            return False
        since = time.time() - os.stat(record).st_mtime  # the renewal's write: when it was sent
        freeze(p, 0.57 * ttl - since)
        if wait_for(lambda: any(e["event"] == "renewed_late" for e in json_events(err_path)), ttl / 2):
            return True
    return False


def losses_and_late_renewals(scratch, env):
    """`run` and the demo worker, frozen after a renewal (renewed_late) and past their renew
    deadline (lost, shard_lost); the demo worker's events and metrics."""
    failures = []
    ttl = 3.0
    # A freeze that catches a renewal written but not yet answered in the process (a loaded
    # machine) can end past the deadline that renewal raced: the renewal or the deadline is
    # then seen first, and `run` may lose its lease there and exit. Such a run starts again.
    rc = None
    for attempt in range(3):
        root = os.path.join(scratch, "late-run-%d" % attempt)
        os.makedirs(root)
        err_path = os.path.join(scratch, "late-run-%d.err" % attempt)
        p = subprocess.Popen([baton, "run", "--store", "file://" + root, "--key", "k", "--ttl", "3s", "--log-format",
                              "json", "--", "sleep", "60"], env=env, stdout=subprocess.DEVNULL, stderr=open(err_path, "w"))
        try:
            if not wait_for(lambda: any(e["event"] == "acquired" for e in json_events(err_path)), 10):
                failures.append("run: not acquired within 10 s: %s" % json_events(err_path))
                break
            late_seen = renew_late(p, record_file(root, "k"), err_path, ttl)
            if not late_seen and p.poll() is not None and attempt < 2:
                continue  # lost while frozen to provoke a late renewal: the next attempt
            if not late_seen:
                failures.append("run: no renewed_late after three freezes: %s" % json_events(err_path))
            freeze(p, 0.9 * ttl)  # past the renew deadline (2/3 ttl after the last renewal) from any moment
            rc = p.wait(timeout=30)
            break
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    events = json_events(err_path)
    late = [e for e in events if e["event"] == "renewed_late"]
    lost = [e for e in events if e["event"] == "lost"]
    exited = [e for e in events if e["event"] == "command_exited"]
    # A renewal sent before the freeze may land after the deadline it was racing (a loaded machine
    # stops the process later than asked): its margin is then negative, and it is still late.
    if not late or late[0].get("key") != "k" or not late[0].get("margin_ms", ttl * 1000) < ttl * 1000 / 6 \
            or late[0].get("token") != 1:
        failures.append("run: renewed_late %s, not one for k with under %d ms left" % (late, ttl * 1000 / 6))
    if len(lost) != 1 or lost[0].get("key") != "k" or lost[0].get("reason") != "renew deadline passed":
        failures.append("run: lost events %s, not one for k with the reason 'renew deadline passed'" % lost)
    if rc != 143 or len(exited) != 1 or exited[0].get("after_loss") is not True or exited[0].get("status") != 143:
        failures.append("run: exited %s after the loss, command_exited %s (the command must get SIGTERM)" % (rc, exited))
    if [e for e in events if e["event"] == "NOT JSON"]:
        failures.append("run: stderr lines that are not JSON: %s" % events)

    # The demo worker, with its metrics file.
    root = os.path.join(scratch, "late-table")
    os.makedirs(root)
    store, metrics = "file://" + root, os.path.join(scratch, "late-table.prom")
    subprocess.run([baton, "table", "register", "--store", store, "d"], env=env, check=True, capture_output=True)
    err_path = os.path.join(scratch, "late-table.err")
    p = subprocess.Popen([baton, "table", "work", "--store", store, "--worker", "j", "--ttl", "3s", "--step", "50ms",
                          "--log-format", "json", "--metrics-file", metrics],
                         env=env, stdout=subprocess.DEVNULL, stderr=open(err_path, "w"))
    names = lambda: [e["event"] for e in json_events(err_path)]
    try:
        if not wait_for(lambda: "shard_acquired" in names(), 10):
            failures.append("demo worker: no shard_acquired within 10 s: %s" % json_events(err_path))
        elif not renew_late(p, record_file(root, "workers/j"), err_path, ttl):
            failures.append("demo worker: no renewed_late after three freezes: %s" % json_events(err_path))
        lost_before = names().count("shard_lost")

        def claimed_again():  # lost once more, then acquired again (under the worker's next term)
            n = names()
            return n.count("shard_lost") > lost_before and "shard_acquired" in n[len(n) - n[::-1].index("shard_lost"):]

        freeze(p, 0.9 * ttl)
        if not wait_for(claimed_again, 20):
            failures.append("demo worker: frozen past its deadline, it did not lose and claim the shard again: %s"
                            % json_events(err_path))
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    events = json_events(err_path)
    late = [e for e in events if e["event"] == "renewed_late"]
    lost = [e for e in events if e["event"] == "shard_lost"]
    if not late or late[0].get("key") != "workers/j" or not late[0].get("margin_ms", ttl * 1000) < ttl * 1000 / 6:
        failures.append("demo worker: renewed_late %s, not one for workers/j" % late)
    if not lost or lost[-1].get("reason") != "renew deadline passed" or lost[-1].get("shard") != "d":
        failures.append("demo worker: shard_lost %s, not d with the reason 'renew deadline passed'" % lost)
    st = json.loads(subprocess.run([baton, "table", "status", "--store", store, "--json"], env=env, check=True,
                                   capture_output=True, text=True).stdout)
    stored = st["shards"][0]["checkpoint"]
    shard_events = [e for e in events if e["event"] in ("shard_acquired", "shard_lost", "handed_over")]
    if rc != 0 or [e["event"] for e in shard_events[-3:]] != ["shard_lost", "shard_acquired", "handed_over"] or \
            shard_events[-1].get("checkpoint") != stored:
        failures.append("demo worker: exited %d with shard events %s (checkpoint %s stored)" % (rc, shard_events, stored))
    if any(e["event"].startswith("command_") or e["event"] == "NOT JSON" for e in events):
        failures.append("demo worker: events of no demo worker: %s" % events)
    text = open(metrics).read() if os.path.exists(metrics) else ""
    written = int(stored or 0)
    for line in ("baton_table_shards_owned 0", "baton_table_command_starts_total 0",
                 "baton_table_shards_lost_total %d" % len(lost), "baton_table_shards_handed_over_total 1"):
        if line not in text:
            failures.append("demo worker: the metrics file lacks %r:\n%s" % (line, text))
    counted = [l for l in text.splitlines() if l.startswith('baton_table_checkpoints_total{result="written"}')]
    if written < 2 or not counted or int(counted[0].split()[-1]) < written:
        failures.append("demo worker: checkpoint %d stored, metrics %s" % (written, counted))
    print("losses and late renewals: %s" % ("ok" if not failures else "failed"))
    return failures


def take_shard(root, shard, owner):
    """Rewrites the shard record of a file store as another worker's claim would leave it (a new
    owner and term, the token one higher), under the key's lock, with a fresh version: the
    worker holding the shard learns of it only from the store."""
    name = os.path.basename(record_file(root, "shards/" + shard))
    lock = os.open(os.path.join(root, ".lock." + name), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = open(os.path.join(root, name), "rb").read()
        head, rest = data.split(b"\n\n", 1)
        fields = dict(line.split(b" ", 1) for line in head.split(b"\n")[1:])
        key_bytes, body_bytes = int(fields[b"key-bytes"]), int(fields[b"body-bytes"])
        key, body = rest[:key_bytes], rest[key_bytes:key_bytes + body_bytes]
        doc = json.loads(body)
        doc.update(owner=owner, term=1, token=doc["token"] + 1)
        for k in ("requested_by", "requested_term", "requested_count"):
            doc.pop(k, None)
        body = json.dumps(doc, separators=(",", ":")).encode()
        head = b"baton-file-record 1\nversion f%s\nkey-bytes %d\nbody-bytes %d\n" % (
            uuid.uuid4().hex.encode(), len(key), len(body))
        tmp = os.path.join(root, ".tmp." + uuid.uuid4().hex)
        with open(tmp, "wb") as f:
            f.write(head + b"crc32 %08x\n\n" % zlib.crc32(head + key + body) + key + body)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, os.path.join(root, name))
        return doc["token"]
    finally:
        os.close(lock)


def fencing_refusal(scratch, env, log_format):
    """The command checkpoints 1; the shard record is then taken over behind the worker's back;
    the command's checkpoint 2 is refused by the store (a fencing refusal: the worker's lease is
    fine), the command is stopped, the shard is lost as taken, and 1 stays the checkpoint."""
    failures = []
    tag = "fencing-" + log_format
    root = os.path.join(scratch, tag)
    os.makedirs(root)
    store, metrics, fifo = "file://" + root, os.path.join(scratch, tag + ".prom"), os.path.join(scratch, tag + ".fifo")
    os.mkfifo(fifo)
    subprocess.run([baton, "table", "register", "--store", store, "f"], env=env, check=True, capture_output=True)
    err_path = os.path.join(scratch, tag + ".err")
    # A long TTL: the worker's scans (every ttl/2) stay clear of the takeover and the checkpoint.
    p = subprocess.Popen([baton, "table", "work", "--store", store, "--worker", "j", "--ttl", "20s", "--grace", "1s",
                          "--log-format", log_format, "--metrics-file", metrics, "--", "sh", "-c",
                          'echo "checkpoint 1" >&3; read go < "$0"; echo "checkpoint 2" >&3; exec sleep 60', fifo],
                         env=env, stdout=subprocess.DEVNULL, stderr=open(err_path, "w"))
    token = None
    try:
        if not wait_for(lambda: 'baton_table_checkpoints_total{result="written"} 1' in
                        (open(metrics).read() if os.path.exists(metrics) else ""), 15):
            failures.append("%s: checkpoint 1 not written within 15 s: %s" % (tag, open(err_path).read()))
        else:
            token = take_shard(root, "f", "intruder")
            # The command opens the FIFO to read after its first checkpoint; never block on it.
            go, until = None, time.monotonic() + 10
            while go is None and time.monotonic() < until:
                try:
                    go = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                except OSError:
                    time.sleep(0.05)
            if go is not None:
                os.write(go, b"go\n")
                os.close(go)
            if not wait_for(lambda: "lost: shard taken" in open(err_path).read() or '"shard_lost"' in open(err_path).read(),
                            15):
                failures.append("%s: the shard was not lost within 15 s: %s" % (tag, open(err_path).read()))
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = open(err_path).read()
    if log_format == "json":
        events = json_events(err_path)
        names = [e["event"] for e in events]
        refused = [e for e in events if e["event"] == "checkpoint_refused"]
        lost = [e for e in events if e["event"] == "shard_lost"]
        # The loss and the refusal are both told at once: the command is stopped by the first.
        if names[:2] != ["shard_acquired", "command_started"] or sorted(names[2:4]) != [
                "checkpoint_refused", "command_stopping"] or names[4:] != ["shard_lost"]:
            failures.append("%s: events %s" % (tag, events))
        if len(refused) != 1 or refused[0].get("value") != "2" or refused[0].get("shard") != "f" or \
                not refused[0].get("error"):
            failures.append("%s: checkpoint_refused %s, not one for checkpoint 2 of f" % (tag, refused))
        if len(lost) != 1 or lost[0].get("reason") != "shard taken" or lost[0].get("checkpoint") != "1":
            failures.append("%s: shard_lost %s, not f taken at checkpoint 1" % (tag, lost))
    else:
        lines = err.splitlines()
        stopping = [l for l in lines if l.startswith("baton: shard f: ") and l.endswith("; stopping the command")]
        if len(stopping) != 1 or not ("checkpoint '2' refused: " in stopping[0] or "(shard taken)" in stopping[0]) \
                or not any(l.startswith("baton: shard f (token ") and l.endswith(") lost: shard taken") for l in lines):
            failures.append("%s: stderr lacks the refusal and the loss, with its reason:\n%s" % (tag, err))
    text = open(metrics).read()
    for line in ('baton_table_checkpoints_total{result="refused"} 1', 'baton_table_checkpoints_total{result="written"} 1',
                 "baton_table_shards_lost_total 1", "baton_table_shards_owned 0"):
        if line not in text:
            failures.append("%s: the metrics file lacks %r:\n%s" % (tag, line, text))
    st = json.loads(subprocess.run([baton, "table", "status", "--store", store, "--json"], env=env, check=True,
                                   capture_output=True, text=True).stdout)
    shard = st["shards"][0]
    if shard["checkpoint"] != "1" or shard["owner"] != "intruder" or shard["token"] != token:
        failures.append("%s: the shard record is %s: the refused checkpoint landed, or the takeover was undone" % (tag, shard))
    if rc != 0:
        failures.append("%s: the worker exited %d on SIGTERM" % (tag, rc))
    print("a fencing refusal (%s log): %s" % (log_format, "ok" if not failures else "failed"))
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

    procs = {}
    for name, extra in (("m", ["--max-commands", "2"]), ("n", [])):
        procs[name] = subprocess.Popen([baton, "table", "work", "--store", store, "--worker", name, "--ttl", "2s",
                                        "--grace", "1s"] + extra + ["--", "sh", "-c", script, "sh", name, log],
                                       env=env, stdout=subprocess.DEVNULL,
                                       stderr=open(os.path.join(scratch, "limit-%s.err" % name), "w"))
        if name == "m" and not wait_for(lambda: owned() == {"m": 2}, 10, interval=0.2):
            failures.append("max-commands: the limited worker alone owns %s, not 2 shards" % owned())
        time.sleep(2 if name == "m" else 0)  # a few scans: it must claim no more
    if not wait_for(lambda: owned() == {"m": 2, "n": 3}, 15, interval=0.2):
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
