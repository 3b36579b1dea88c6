#!/usr/bin/env python3
"""Cross-process test of `baton run`.

Four `baton run` processes contend for one key. Each command appends
`start TOKEN PID T` and `end TOKEN PID T` (T on the boot-time monotonic clock)
to a shared log while it holds the lease. Mid-run, the first holder is killed
with SIGKILL, and a later holder is frozen (SIGSTOP) past its TTL, then resumed.

Each command also writes its token to a kv key every half second with
`baton kv put --fence "$BATON_FENCING_TOKEN"`, logging `put TOKEN RC T0 T1`:
the frozen holder's command keeps writing while its supervisor is stopped and
another holder takes over.

Checks: tokens strictly increase in start order; holding intervals never
overlap, except where the frozen holder's command was still running; that
command is terminated promptly after its supervisor resumes; the killed
holder's command dies with it. Fenced writes: every put exits 0 or 4 (fenced;
1 after transient store errors is noted); no put with a lower token succeeds
after a put with a higher token had succeeded (the store refused every stale
one); the key ends with the highest token that succeeded, as its value.

On a loaded machine a holder whose renewal stalls past its renew deadline
loses the lease as documented: its command is terminated (`end ... term`) and
it exits 143. That is reported, not failed; the checks above still apply to
its interval.

Usage: cli_cross_process.py BATON_BINARY [file | dynamodb | s3 | azblob]
  file      a fresh directory (default)
  dynamodb  a fresh table on the dynalite at BATON_DYNAMODB_ENDPOINT (started by
            tests/servers/with-servers.sh dynalite); skipped when it is not set
  s3        a fresh bucket (and a key prefix) on the S3 store at BATON_S3_ENDPOINT
            (Ceph RGW, started by tests/servers/with-servers.sh rgw); skipped when
            it is not set

BATON_STRESS=N (N > 0) runs N independent rounds, each with its own store and
key, BATON_STRESS_PARALLEL (default 5) at a time; without it, one round. The
last line is "N passed, N failed", counting rounds (not printed when skipped).
"""
import concurrent.futures, json, os, shlex, shutil, signal, subprocess, sys, tempfile, threading, time, uuid
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from s3_request import create_bucket, create_container, dynamodb_call

HOLDERS = 4
ALL_DONE_WITHIN = 80  # seconds after the resume; a passing round needs about 25
PROMPT_AFTER_RESUME = 3.0  # seconds: the frozen holder's command ends this soon after its supervisor resumes

print_lock = threading.Lock()


def say(round_id, text):
    """Prints `text` with the round's prefix, whole lines at a time (rounds run in parallel)."""
    with print_lock:
        for line in str(text).splitlines() or [""]:
            print("[round %d] %s" % (round_id, line))
        sys.stdout.flush()


class RoundFailed(Exception):
    """A round cannot go on (a holder never started, processes hung): it fails, the others go on."""


def mono():
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def skip_without_server(kind):
    if kind == "dynamodb" and not os.environ.get("BATON_DYNAMODB_ENDPOINT"):
        print("skipped: BATON_DYNAMODB_ENDPOINT is not set (run under tests/servers/with-servers.sh dynalite)")
        sys.exit(0)
    if kind == "s3" and not os.environ.get("BATON_S3_ENDPOINT"):
        print("skipped: BATON_S3_ENDPOINT is not set (run under tests/servers/with-servers.sh rgw)")
        sys.exit(0)
    if kind == "azblob" and not os.environ.get("BATON_AZURITE_ENDPOINT"):
        print("skipped: BATON_AZURITE_ENDPOINT is not set (run under tests/servers/with-servers.sh azurite)")
        sys.exit(0)
    if kind == "composed" and not (os.environ.get("BATON_S3RVER_ENDPOINT") and os.environ.get("BATON_DYNAMODB_ENDPOINT")):
        print("skipped: BATON_S3RVER_ENDPOINT or BATON_DYNAMODB_ENDPOINT is not set "
              "(run under tests/servers/with-servers.sh s3rver dynalite)")
        sys.exit(0)


def dynamodb_store():
    """A fresh table: its store URL, the variables `baton` needs, and how to drop the table."""
    endpoint = os.environ["BATON_DYNAMODB_ENDPOINT"]
    table = "baton-xproc-" + uuid.uuid4().hex
    dynamodb_call(endpoint, "CreateTable", {
        "TableName": table, "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]})
    # ACTIVE at once under with-servers.sh (--createTableMs 0); waiting costs nothing and holds elsewhere.
    deadline = time.time() + 30
    while dynamodb_call(endpoint, "DescribeTable", {"TableName": table})["Table"]["TableStatus"] != "ACTIVE":
        if time.time() > deadline:
            raise RoundFailed("table %s did not become ACTIVE within 30 s" % table)
        time.sleep(0.1)
    env = {"AWS_ENDPOINT_URL_DYNAMODB": endpoint,
           "AWS_REGION": os.environ.get("BATON_DYNAMODB_REGION", "us-east-1"),
           "AWS_ACCESS_KEY_ID": os.environ.get("BATON_DYNAMODB_ACCESS_KEY", "baton"),
           "AWS_SECRET_ACCESS_KEY": os.environ.get("BATON_DYNAMODB_SECRET_KEY", "baton")}

    def drop():
        dynamodb_call(endpoint, "DeleteTable", {"TableName": table})
    return "dynamodb://" + table, env, (), drop


def s3_store():
    """A fresh bucket: its store URL, the variables `baton` needs, and the ones it must not see."""
    endpoint = os.environ["BATON_S3_ENDPOINT"]
    region = os.environ.get("BATON_S3_REGION", "us-east-1")
    access_key, secret_key = os.environ["BATON_S3_ACCESS_KEY"], os.environ["BATON_S3_SECRET_KEY"]
    bucket = "baton-xproc-" + uuid.uuid4().hex
    create_bucket(endpoint, region, access_key, secret_key, bucket)
    # The store is found the way users find it: the service's endpoint variable, not --endpoint.
    removed = ("AWS_ENDPOINT_URL", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION")
    env = {"AWS_ENDPOINT_URL_S3": endpoint, "AWS_REGION": region, "AWS_ACCESS_KEY_ID": access_key,
           "AWS_SECRET_ACCESS_KEY": secret_key}
    return "s3://%s/xproc" % bucket, env, removed, None


def azblob_store():
    """A fresh container in Azurite: its store URL, the variables `baton` needs (the Azure CLI's),
    and the ones it must not see."""
    endpoint, account = os.environ["BATON_AZURITE_ENDPOINT"], os.environ["BATON_AZURITE_ACCOUNT"]
    key = os.environ["BATON_AZURITE_KEY"]
    container = "baton-xproc-" + uuid.uuid4().hex[:16]
    create_container(endpoint, account, key, container)
    removed = ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_SAS_TOKEN")
    env = {"AZURE_STORAGE_ACCOUNT": account, "AZURE_STORAGE_KEY": key, "AZURE_STORAGE_SERVICE_ENDPOINT": endpoint}
    return "azblob://%s/xproc" % container, env, removed, None


def check_fenced_puts(baton, store, env, data_key, puts, errors_path, note):
    """The fenced writes of a round: only exit 0 or 4 (1 noted: transient store errors); no stale
    token landed after a higher one had; the key ends with the highest token that succeeded."""
    failures = []
    ok, refused, transient = [], 0, 0
    for _, tok, rc, t0, t1 in puts:
        tok, rc, t0, t1 = int(tok), int(rc), float(t0), float(t1)
        if rc == 0:
            ok.append((tok, t0, t1))
        elif rc == 4:
            refused += 1
        elif rc == 1:
            transient += 1
        else:
            failures.append("kv put --fence %d exited %d" % (tok, rc))
    if failures or transient:
        try:
            with open(errors_path) as f:
                note("kv put errors:\n  " + f.read().strip().replace("\n", "\n  "))
        except OSError:
            pass
    # A put that succeeded ran between t0 and t1; one with a lower token that started after a higher one
    # had finished succeeding landed on top of it: the store must have refused it.
    for a_tok, a0, a1 in ok:
        for b_tok, b0, b1 in ok:
            if a_tok < b_tok and a0 > b1 + 0.02:  # /proc/uptime counts in 10 ms steps
                failures.append("kv put with token %d succeeded after one with token %d had" % (a_tok, b_tok))
    if ok:
        got = subprocess.run([baton, "kv", "get", "--store", store, data_key, "--json"], env=env,
                             capture_output=True, text=True, timeout=60)
        if got.returncode != 0:
            failures.append("kv get exited %d: %s" % (got.returncode, got.stderr.strip()))
        else:
            final = json.loads(got.stdout)
            high = max(t for t, _, _ in ok)
            # A put killed with its holder (no log line) may have landed too, with a token not below the fence.
            if final["fence"] < high or final["value"] != str(final["fence"]):
                failures.append("the key ended with value %s and fence %d; the highest token that succeeded was %d"
                                % (final["value"], final["fence"], high))
    note("fenced puts: %d succeeded, %d refused by the store (stale token), %d failed transiently"
         % (len(ok), refused, transient))
    return failures


def run_round(baton, kind, round_id):
    """One round on a fresh store and key. Returns its failures (none: passed)."""
    def note(text):
        say(round_id, text)

    temp_dirs = []
    procs = []  # (Popen, file with its stdout and stderr)
    drop = None
    failures = []
    try:
        if kind == "dynamodb":
            store, store_env, removed, drop = dynamodb_store()
        elif kind == "s3":
            store, store_env, removed, drop = s3_store()
        elif kind == "azblob":
            store, store_env, removed, drop = azblob_store()
        else:
            temp_dirs.append(tempfile.mkdtemp(prefix="baton-xproc-%d-" % round_id))
            store, store_env, removed = "file://" + temp_dirs[-1], {}, ()
        env = {k: v for k, v in os.environ.items() if k not in removed}
        env.update(store_env)
        work = tempfile.mkdtemp(prefix="baton-xproc-log-%d-" % round_id)
        temp_dirs.append(work)
        log = os.path.join(work, "log")
        open(log, "w").close()
        key = "xproc/" + uuid.uuid4().hex
        data_key = key + ".data"
        q = shlex.quote(log)
        put_errors = os.path.join(work, "put-errors")
        # A fenced write of the holder's token, logged with its exit status and when it ran.
        put = ('put() { read t0 _ < /proc/uptime; %s kv put --store %s --fence "$BATON_FENCING_TOKEN" %s '
               '--value "$BATON_FENCING_TOKEN" >/dev/null 2>>%s; rc=$?; read t1 _ < /proc/uptime; '
               'echo "put $BATON_FENCING_TOKEN $rc $t0 $t1" >> %s; }; ') % (
                   shlex.quote(baton), shlex.quote(store), shlex.quote(data_key), shlex.quote(put_errors), q)
        # Ten seconds of writes: the frozen holder's command is surely still running when its supervisor
        # resumes, and writes with its old token meanwhile. Puts and sleeps run in the background so
        # that a TERM is handled at once; the trap ends the sleep too, so that no orphan outlives the round.
        child = (put + 'read up _ < /proc/uptime; echo "start $BATON_FENCING_TOKEN $PPID $up" >> %s; '
                 'trap \'read up _ < /proc/uptime; echo "end $BATON_FENCING_TOKEN $PPID $up term" >> %s; '
                 'kill $! 2>/dev/null; exit 143\' TERM; '
                 'i=0; while [ $i -lt 20 ]; do put & wait $!; sleep 0.5 & wait $!; i=$((i+1)); done; '
                 'read up _ < /proc/uptime; echo "end $BATON_FENCING_TOKEN $PPID $up" >> %s') % (q, q, q)
        for i in range(HOLDERS):
            out_path = os.path.join(work, "holder-%d.out" % i)
            with open(out_path, "w") as out:
                procs.append((subprocess.Popen([baton, "run", "--store", store, "--key", key, "--ttl", "1s",
                                                "--grace", "1s", "--", "sh", "-c", child],
                                               stdout=out, stderr=subprocess.STDOUT, env=env), out_path))
            time.sleep(0.05)

        def output_of(pid):
            for p, path in procs:
                if p.pid == pid:
                    with open(path) as f:
                        return f.read().strip()
            return ""

        def starts():
            with open(log) as f:
                return [l.split() for l in f if l.startswith("start ")]

        def wait_for_starts(n, limit=30):
            end = time.time() + limit
            while time.time() < end:
                s = starts()
                if len(s) >= n:
                    return s
                time.sleep(0.02)
            raise RoundFailed("only %d holders started within %d s, expected %d" % (len(starts()), limit, n))

        s = wait_for_starts(1)
        time.sleep(0.5)
        killed_pid = int(s[0][2])
        os.kill(killed_pid, signal.SIGKILL)
        killed_at = mono()

        s = wait_for_starts(2)
        time.sleep(0.3)
        frozen_pid = int(s[1][2])
        os.kill(frozen_pid, signal.SIGSTOP)
        time.sleep(3.5)  # past ttl x skew (2 s) plus polling: someone else takes over meanwhile
        resumed_at = mono()
        os.kill(frozen_pid, signal.SIGCONT)

        codes = {}
        deadline = time.time() + ALL_DONE_WITHIN
        for p, _ in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                raise RoundFailed("baton processes did not finish within %d s of the resume" % ALL_DONE_WITHIN)
            codes[p.pid] = p.returncode

        with open(log) as f:
            all_lines = [l.split() for l in f if l.strip()]
        lines = [l for l in all_lines if l[0] in ("start", "end")]
        failures.extend(check_fenced_puts(baton, store, env, data_key, [l for l in all_lines if l[0] == "put"],
                                          put_errors, note))
        intervals = {}  # token -> [pid, start, end, ended by the TERM trap]
        order = []
        for l in lines:
            tok, pid, t = int(l[1]), int(l[2]), float(l[3])
            if l[0] == "start":
                intervals[tok] = [pid, t, None, False]
                order.append(tok)
            else:
                intervals.setdefault(tok, [pid, None, None, False])
                intervals[tok][2] = t
                intervals[tok][3] = len(l) > 4
        if order != sorted(order) or len(set(order)) != len(order):
            failures.append("tokens not strictly increasing in start order: %s" % order)
        def lost_unstarted(p):
            """A holder whose supervisor acquired the lease and lost it (documented under load: a renewal
            stalled past the renew deadline) before its command wrote its start line: the supervisor
            terminated the command and exited 143 (or 137 when the command did not end within --grace
            and got SIGKILL, as documented), having said so."""
            started = any(v[0] == p.pid for v in intervals.values())
            return (not started and p.pid not in (killed_pid, frozen_pid) and codes.get(p.pid) in (143, 137)
                    and "lost; terminating the command" in output_of(p.pid))

        unstarted = [p for p, _ in procs if lost_unstarted(p)]
        if len(order) != HOLDERS - len(unstarted):
            failures.append("expected %d holders, saw %d: %s" % (HOLDERS - len(unstarted), len(order), order))
        if any(v[1] is None for v in intervals.values()):
            failures.append("an end line without a start line: %s" % lines)
            return failures

        def lost_before(tok, when):
            """The holder's command was terminated (its TERM trap ran) by `when`: the supervisor lost the lease
            on its own, as documented under load. Only the supervisor sends TERM, and a killed or frozen one
            cannot (a killed one's command gets SIGKILL, which runs no trap)."""
            _, _, en, termed = intervals[tok]
            return termed and en is not None and en <= when

        notes = []
        killed_tok = next((t for t, v in intervals.items() if v[0] == killed_pid), None)
        if killed_tok is not None:
            # Any TERM came before the kill; its trap may run a moment after (hence the margin).
            if lost_before(killed_tok, killed_at + 1.0):
                notes.append("the first holder (token %d) lost its lease before it was killed (documented under "
                             "load): the kill was not exercised this round" % killed_tok)
            elif intervals[killed_tok][2] is not None:
                failures.append("the killed holder's command (token %d) kept running to its end" % killed_tok)
            else:
                intervals[killed_tok][2] = killed_at + 0.05  # died with its supervisor
        frozen_tok = next((t for t, v in intervals.items() if v[0] == frozen_pid), None)
        frozen_holding = True  # frozen while it held the lease (not lost before)
        fz = intervals.get(frozen_tok, [frozen_pid, None, None, False])
        # Frozen for 3.5 s: a TERM sent before the freeze ran its trap well before the resume (margin:
        # /proc/uptime counts in 10 ms steps, and a trap after the resume can read a time just before it).
        if frozen_tok is not None and lost_before(frozen_tok, resumed_at - 1.0):
            frozen_holding = False
            notes.append("the frozen holder (token %d) lost its lease before it was frozen (documented under load): "
                         "the freeze was not exercised this round" % frozen_tok)
        elif fz[2] is None or not fz[3]:
            failures.append("the frozen holder's command was not terminated")
        elif fz[2] - resumed_at > PROMPT_AFTER_RESUME:
            failures.append("the frozen holder's command ended %.2fs after its supervisor resumed" % (fz[2] - resumed_at))
        if codes.get(frozen_pid) != 143:
            failures.append("the frozen holder exited %s, expected 143 (command terminated)" % codes.get(frozen_pid))

        toks = sorted(intervals)
        overlap_with_frozen = False
        for i, a in enumerate(toks):
            for b in toks[i + 1:]:
                pa, sa, ea, _ = intervals[a]
                pb, sb, eb, _ = intervals[b]
                if ea is None or eb is None:
                    continue
                if sa < eb and sb < ea:
                    if frozen_holding and frozen_pid in (pa, pb):
                        overlap_with_frozen = True
                    else:
                        failures.append("tokens %d and %d held at once" % (a, b))
        for p, _ in procs:
            if p.pid in (killed_pid, frozen_pid) or codes[p.pid] == 0:
                continue
            tok = next((t for t, v in intervals.items() if v[0] == p.pid), None)
            out = output_of(p.pid)
            # Lost as documented: its renewal stalled past the renew deadline (--ttl 1s leaves ~330 ms), so baton
            # terminated the command and exited with its status; nobody else signalled it.
            if codes[p.pid] == 143 and tok is not None and intervals[tok][3] and "lost; terminating the command" in out:
                notes.append("holder %d (token %d) lost its lease under load (documented), command terminated:\n  %s"
                             % (p.pid, tok, out.replace("\n", "\n  ")))
            elif p in unstarted:
                notes.append("holder %d lost its lease under load (documented) before its command started:\n  %s"
                             % (p.pid, out.replace("\n", "\n  ")))
            else:
                failures.append("holder %d exited %d: %s" % (p.pid, codes[p.pid], out))
        for n in notes:
            note("note: " + n)
        note("holders in order: %s; killed pid %d, frozen pid %d (token %s, terminated %.2fs after resume); "
             "overlap only with the frozen holder: %s" % (order, killed_pid, frozen_pid, frozen_tok,
                                                          (fz[2] or 0) - resumed_at, overlap_with_frozen))
        return failures
    except (Exception, SystemExit) as e:  # SystemExit: create_bucket's way to fail
        failures.append("round aborted: %s" % (e,))
        return failures
    finally:
        for p, _ in procs:
            if p.poll() is None:
                p.kill()  # only our own `baton run` processes
                p.wait()
        if drop:
            try:
                drop()
            except Exception as e:
                note("could not delete the table: %s" % e)
        if failures:
            note("kept for inspection: %s" % " ".join(temp_dirs))
        else:
            for d in temp_dirs:
                shutil.rmtree(d, ignore_errors=True)


def main():
    if len(sys.argv) < 2 or (len(sys.argv) > 2 and sys.argv[2] not in ("file", "dynamodb", "s3", "azblob")):
        sys.exit("usage: cli_cross_process.py BATON_BINARY [file | dynamodb | s3 | azblob]")
    baton = sys.argv[1]
    kind = sys.argv[2] if len(sys.argv) > 2 else "file"
    skip_without_server(kind)
    rounds = int(os.environ.get("BATON_STRESS") or 0)
    parallel = int(os.environ.get("BATON_STRESS_PARALLEL") or 5)
    if rounds <= 0:
        rounds = 1
    parallel = max(1, min(parallel, rounds))

    def one(round_id):
        failures = run_round(baton, kind, round_id)
        for f in failures:
            say(round_id, "FAIL: " + f)
        say(round_id, "cross-process lease test on %s: %s" % (kind, "OK" if not failures else
                                                                 "FAILED (%d)" % len(failures)))
        return failures

    ids = list(range(1, rounds + 1))
    # Each round's orchestration is sleeps and waits on its own processes: threads suffice.
    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        results = dict(zip(ids, pool.map(one, ids)))
    failed = [r for r in ids if results[r]]
    if rounds > 1:
        print("%s: %d rounds, %d at a time; failed rounds: %s" % (kind, rounds, parallel, failed or "none"))
    print("%d passed, %d failed" % (rounds - len(failed), len(failed)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
