#!/usr/bin/env python3
"""`baton watch` following the terms of `baton run` holders in other processes.

Without servers (usage checks): `--interval` refuses nonsense with one line and
exit 64; `--json` lines parse, with every field; a record that is not a lease's,
or a reader gone while SIGPIPE is ignored, ends the watch with one line and
exit 1; a store that refuses connections is retried and said on stderr after
5 s (with --log-format json, as one read_failing event), and SIGINT still exits
0. With servers, a missing table, bucket or container ends the watch with one
line and exit 64 (with --log-format json, one error event).

On each store (a fresh directory; a fresh table on dynalite, BATON_DYNAMODB_*;
a fresh bucket on Ceph RGW, BATON_S3_*; s3rver objects with commits in dynalite,
BATON_S3RVER_* and BATON_DYNAMODB_*, when both are there; a fresh container on
Azurite, BATON_AZURITE_*), one watcher runs
`baton watch --json --interval 100ms` while five `baton run --ttl 1s` holders
follow each other, each holding 0.6 s: the first two and the last two release,
the third is killed with SIGKILL and its lease expires (the fourth takes over
after ttl x 2). A text watcher started during the second term prints it first.
Checks: the watcher saw every term, in order, with its holder (tokens 1 to 5,
each one more than the last) and reported no gap. Then the watcher is paused
(SIGSTOP) while two more terms pass: its next line reports the one token it
never saw ("skipped": [6, 6]). SIGTERM ends it with exit 0.

On the file store also: with --wall-clock-tokens, the same pause is reported as
"skipped": "unknown" (the count is not knowable); a record deleted and created
again while the watcher was paused (the token went back) is "unknown" too.

A store whose server variables are missing is skipped with one line (run under
tests/servers/with-servers.sh dynalite rgw [s3rver] [azurite]).

Usage: cli_watch.py BATON_BINARY
"""
import json, os, re, shutil, signal, socket, subprocess, sys, tempfile, threading, time, uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from s3_request import create_bucket, create_container, dynamodb_call

AWS_VARS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
            "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
            "AWS_PROFILE", "AWS_DEFAULT_PROFILE")
# with-servers.sh exports Azurite's connection string, which would win over the account variables.
AZURE_VARS = ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN",
              "AZURE_STORAGE_SERVICE_ENDPOINT")
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
FIELDS = {"key", "holder", "token", "state", "value", "at"}

baton = sys.argv[1] if len(sys.argv) > 1 else sys.exit("usage: cli_watch.py BATON_BINARY")
failures = []
checks = 0


def check(name, ok, detail=""):
    global checks
    checks += 1
    print(("PASS: " if ok else "FAIL: ") + name + ("" if ok else "\n      " + str(detail).replace("\n", "\n      ")))
    sys.stdout.flush()
    if not ok:
        failures.append(name)


def environment(extra):
    env = {k: v for k, v in os.environ.items() if k not in AWS_VARS and k not in AZURE_VARS}
    env.update(extra)
    return env


class Watcher:
    """A `baton watch` process whose stdout lines are collected as they come."""

    def __init__(self, store, key, env, *args):
        self.p = subprocess.Popen([baton, "watch", "--store", store, "--key", key] + list(args), env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.err = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, args=(self.p.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self.p.stderr, self.err), daemon=True).start()

    def _read(self, stream, into):
        for line in stream:
            with self.cond:
                into.append(line.rstrip("\n"))
                self.cond.notify_all()

    def objects(self):
        """The JSON lines so far; a line that does not parse is a failure of its own."""
        out = []
        with self.cond:
            lines = list(self.lines)
        for l in lines:
            try:
                out.append(json.loads(l))
            except ValueError:
                out.append({"unparsed": l})
        return out

    def wait_for(self, pred, limit=20):
        """Waits until `pred(lines)` holds; returns whether it did within `limit` seconds."""
        end = time.time() + limit
        with self.cond:
            while not pred(list(self.lines)):
                left = end - time.time()
                if left <= 0 or self.p.poll() is not None:
                    return pred(list(self.lines))
                self.cond.wait(min(left, 0.1))
            return True

    def wait_for_token(self, token, state=None, limit=20, since=0):
        """Waits for a line with `token` (and `state`) among the lines from index `since` on."""
        def seen(lines):
            for l in lines[since:]:
                try:
                    o = json.loads(l)
                except ValueError:
                    continue
                if o.get("token") == token and (state is None or o.get("state") == state):
                    return True
            return False
        return self.wait_for(seen, limit)

    def stop(self, sig=signal.SIGTERM):
        """Sends `sig` and returns the exit status (None if it did not exit within 5 s: killed)."""
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            return self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return None


def run_holder(store, key, env, owner, hold, *extra):
    """One `baton run` holding `key` for `hold` seconds, then releasing; its exit status and stderr."""
    p = subprocess.run([baton, "run", "--store", store, "--key", key, "--ttl", "1s", "--owner", owner] + list(extra) +
                       ["--", "sleep", str(hold)], env=env, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr


def holder_name(obj):
    """The --owner part of a record's holder (`owner#suffix`)."""
    return (obj.get("holder") or "").split("#")[0]


def usage_checks(work):
    store = "file://" + work
    env = environment({})
    for bad in ("0", "5ms", "abc", "-1s", "1x", ""):
        p = subprocess.run([baton, "watch", "--store", store, "--key", "k", "--interval", bad], env=env,
                           capture_output=True, text=True, timeout=10)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        check("--interval %r refused: exit 64, one line naming it" % bad,
              p.returncode == 64 and len(lines) == 1 and "--interval" in lines[0] and not p.stdout,
              "exit %d, stdout %r, stderr %r" % (p.returncode, p.stdout, p.stderr))
    p = subprocess.run([baton, "watch", "--store", store, "--key", "k", "--interval"], env=env, capture_output=True,
                       text=True, timeout=10)
    check("--interval without a value refused", p.returncode == 64 and "--interval needs a value" in p.stderr,
          "exit %d, stderr %r" % (p.returncode, p.stderr))
    p = subprocess.run([baton, "watch", "--help"], capture_output=True, text=True, timeout=10)
    check("watch --help names --interval and --json", p.returncode == 0 and "--interval" in p.stdout and
          "--json" in p.stdout, "exit %d, stdout %r" % (p.returncode, p.stdout))

    w = Watcher(store, "fresh", env, "--json", "--interval", "50ms")
    got = w.wait_for(lambda lines: len(lines) >= 1, 10)
    rc = w.stop(signal.SIGINT)
    objs = w.objects()
    first = objs[0] if objs else {}
    check("--json: the first line parses, every field there, null for no record, 'at' in ISO-8601 UTC",
          got and set(first) == FIELDS and first["state"] == "free" and first["holder"] is None and
          first["token"] is None and first["value"] is None and first["key"] == "fresh" and
          ISO_UTC.match(first["at"] or "") is not None, "lines %r" % w.lines)
    check("SIGINT: exit 0, one line only (nothing changed), nothing on stderr",
          rc == 0 and len(w.lines) == 1 and not w.err, "exit %s, lines %r, stderr %r" % (rc, w.lines, w.err))

    # The reader went away and SIGPIPE is ignored (inherited so, as restore_signals=False leaves
    # Python's): the next line cannot be written, and the watch ends instead of polling forever.
    p = subprocess.Popen([baton, "watch", "--store", store, "--key", "gone", "--interval", "50ms"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, restore_signals=False)
    p.stdout.readline()
    p.stdout.close()
    rc_run, _ = run_holder(store, "gone", env, "g1", 0)
    try:
        rc = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    err = p.stderr.read()
    check("a reader gone with SIGPIPE ignored: exit 1, one line on stderr",
          rc_run == 0 and rc == 1 and "cannot write to standard output" in err and len(err.splitlines()) == 1,
          "exit %s, stderr %r" % (rc, err))

    # A record that is not a lease's: the same key written by the key-value store is another
    # record, so a lease record is overwritten here with something else.
    w = Watcher(store, "foreign", env)
    w.wait_for(lambda lines: len(lines) >= 1, 10)
    with open(os.path.join(work, "r.foreign"), "w") as f:
        f.write("not a lease record")
    try:
        rc = w.p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        rc = w.stop(signal.SIGKILL)
    time.sleep(0.1)
    check("a record that is not a lease's: exit 1, one line on stderr",
          rc == 1 and len(w.err) == 1 and "cannot read lease 'foreign'" in w.err[0],
          "exit %s, stdout %r, stderr %r" % (rc, w.lines, w.err))


def refused_store_watcher(*extra):
    """A watcher of a DynamoDB endpoint where nothing listens: connections refused, retried."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    env = environment({"AWS_ACCESS_KEY_ID": "baton", "AWS_SECRET_ACCESS_KEY": "baton", "AWS_REGION": "us-east-1",
                       "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:%d" % port})
    return Watcher("dynamodb://baton-nowhere", "k", env, "--interval", "100ms", *extra)


def check_refused_store(w):
    said = w.wait_for(lambda _: any("still trying" in l for l in w.err), 10)
    running = w.p.poll() is None
    rc = w.stop(signal.SIGINT)
    check("connections refused: still polling, said once on stderr after 5 s; SIGINT exits 0",
          said and running and rc == 0 and not w.lines and len(w.err) == 1 and "cannot read lease 'k'" in w.err[0],
          "exit %s, stdout %r, stderr %r" % (rc, w.lines, w.err))


def check_refused_store_json(w):
    """The same with --log-format json: the one stderr line is a read_failing event."""
    w.wait_for(lambda _: len(w.err) >= 1, 10)
    rc = w.stop(signal.SIGINT)
    try:
        events = [json.loads(l) for l in w.err]
    except ValueError:
        events = None
    e = events[0] if events else {}
    check("connections refused, --log-format json: one read_failing event on stderr with the key, the reads "
          "and 5 s of failures; SIGINT exits 0",
          rc == 0 and not w.lines and events is not None and len(events) == 1 and e.get("event") == "read_failing" and
          e.get("key") == "k" and isinstance(e.get("reads"), int) and e["reads"] >= 2 and
          isinstance(e.get("failing_ms"), int) and e["failing_ms"] >= 5000 and e.get("error") and
          ISO_UTC.match(e.get("at") or "") is not None, "exit %s, stdout %r, stderr %r" % (rc, w.lines, w.err))


def azurite_env():
    """The Azure CLI's variables that reach Azurite's account, or None without Azurite."""
    endpoint = os.environ.get("BATON_AZURITE_ENDPOINT")
    if not endpoint:
        return None
    return {"AZURE_STORAGE_ACCOUNT": os.environ["BATON_AZURITE_ACCOUNT"],
            "AZURE_STORAGE_KEY": os.environ["BATON_AZURITE_KEY"], "AZURE_STORAGE_SERVICE_ENDPOINT": endpoint}


def missing_containers():
    """A missing table or bucket: one line, exit 64, as `baton status` (waiting cannot fix it)."""
    cases = []
    dyn, s3 = os.environ.get("BATON_DYNAMODB_ENDPOINT"), os.environ.get("BATON_S3_ENDPOINT")
    if dyn:
        cases.append(("dynamodb", "dynamodb://baton-watch-missing-" + uuid.uuid4().hex, {
            "AWS_ENDPOINT_URL_DYNAMODB": dyn, "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": os.environ.get("BATON_DYNAMODB_ACCESS_KEY", "baton"),
            "AWS_SECRET_ACCESS_KEY": os.environ.get("BATON_DYNAMODB_SECRET_KEY", "baton")}))
    if s3:
        cases.append(("s3", "s3://baton-watch-missing-" + uuid.uuid4().hex, {
            "AWS_ENDPOINT_URL_S3": s3, "AWS_REGION": os.environ.get("BATON_S3_REGION", "us-east-1"),
            "AWS_ACCESS_KEY_ID": os.environ["BATON_S3_ACCESS_KEY"],
            "AWS_SECRET_ACCESS_KEY": os.environ["BATON_S3_SECRET_KEY"]}))
    for kind, store, env in cases:
        p = subprocess.run([baton, "watch", "--store", store, "--key", "k", "--interval", "100ms"],
                           env=environment(env), capture_output=True, text=True, timeout=30)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        check("%s: a missing %s ends the watch: exit 64, one line" % (kind, "table" if kind == "dynamodb" else "bucket"),
              p.returncode == 64 and len(lines) == 1 and "does not exist" in lines[0] and not p.stdout,
              "exit %d, stdout %r, stderr %r" % (p.returncode, p.stdout, p.stderr))
    # Azurite: the container's name is made up (never created); --log-format json makes the line
    # an error event.
    env = azurite_env()
    if env:
        missing = "baton-watch-missing-" + uuid.uuid4().hex[:16]
        p = subprocess.run([baton, "watch", "--store", "azblob://" + missing, "--key", "k", "--interval", "100ms",
                            "--log-format", "json"], env=environment(env), capture_output=True, text=True, timeout=30)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        try:
            e = json.loads(lines[0]) if len(lines) == 1 else {}
        except ValueError:
            e = {}
        check("azblob: a missing container ends the watch: exit 64, one error event naming the container",
              p.returncode == 64 and set(e) == {"event", "message"} and e["event"] == "error" and
              ("container '%s' does not exist" % missing) in e["message"] and not p.stdout,
              "exit %d, stdout %r, stderr %r" % (p.returncode, p.stdout, p.stderr))


def stores():
    """(kind, store URL, environment, cleanup) for each store whose server is there."""
    out = []
    work = tempfile.mkdtemp(prefix="baton-watch-")
    out.append(("file", "file://" + work, environment({}), lambda: shutil.rmtree(work, ignore_errors=True)))
    dyn = os.environ.get("BATON_DYNAMODB_ENDPOINT")

    def table():
        name = "baton-watch-" + uuid.uuid4().hex
        dynamodb_call(dyn, "CreateTable", {
            "TableName": name, "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]})
        deadline = time.time() + 30
        while dynamodb_call(dyn, "DescribeTable", {"TableName": name})["Table"]["TableStatus"] != "ACTIVE":
            if time.time() > deadline:
                raise SystemExit("FAIL: table %s did not become ACTIVE within 30 s" % name)
            time.sleep(0.1)
        return name, lambda: dynamodb_call(dyn, "DeleteTable", {"TableName": name})

    if dyn:
        name, drop = table()
        out.append(("dynamodb", "dynamodb://" + name, environment({
            "AWS_ENDPOINT_URL_DYNAMODB": dyn, "AWS_REGION": os.environ.get("BATON_DYNAMODB_REGION", "us-east-1"),
            "AWS_ACCESS_KEY_ID": os.environ.get("BATON_DYNAMODB_ACCESS_KEY", "baton"),
            "AWS_SECRET_ACCESS_KEY": os.environ.get("BATON_DYNAMODB_SECRET_KEY", "baton")}), drop))
    else:
        print("skipped dynamodb: BATON_DYNAMODB_ENDPOINT is not set (run under tests/servers/with-servers.sh dynalite)")
    for prefix, kind in (("S3", "s3"), ("S3RVER", "composed")):
        endpoint = os.environ.get("BATON_%s_ENDPOINT" % prefix)
        if not endpoint or (kind == "composed" and not dyn):
            print("skipped %s: BATON_%s_ENDPOINT%s is not set (run under tests/servers/with-servers.sh %s)"
                  % (kind, prefix, "" if kind == "s3" else " or BATON_DYNAMODB_ENDPOINT",
                     "rgw" if kind == "s3" else "s3rver dynalite"))
            continue
        region = os.environ.get("BATON_%s_REGION" % prefix, "us-east-1")
        ak, sk = os.environ["BATON_%s_ACCESS_KEY" % prefix], os.environ["BATON_%s_SECRET_KEY" % prefix]
        bucket = "baton-watch-" + uuid.uuid4().hex
        create_bucket(endpoint, region, ak, sk, bucket)
        env = {"AWS_ENDPOINT_URL_S3": endpoint, "AWS_REGION": region, "AWS_ACCESS_KEY_ID": ak,
               "AWS_SECRET_ACCESS_KEY": sk}
        url, cleanup = "s3://%s/watch" % bucket, None
        if kind == "composed":
            name, cleanup = table()
            env["AWS_ENDPOINT_URL_DYNAMODB"] = dyn
            url += "?lock=dynamodb://" + name
        out.append((kind, url, environment(env), cleanup))
    az = azurite_env()
    if az:
        container = "baton-watch-" + uuid.uuid4().hex[:16]
        create_container(az["AZURE_STORAGE_SERVICE_ENDPOINT"], az["AZURE_STORAGE_ACCOUNT"], az["AZURE_STORAGE_KEY"],
                         container)
        out.append(("azblob", "azblob://%s/watch" % container, environment(az), None))
    else:
        print("skipped azblob: BATON_AZURITE_ENDPOINT is not set (run under tests/servers/with-servers.sh azurite)")
    return out


def terms_seen(objs):
    """(token, holder name) of each term in the order the watcher first saw it."""
    out = []
    for o in objs:
        if o.get("token") is not None and (not out or out[-1][0] != o["token"]):
            out.append((o["token"], holder_name(o)))
    return out


def follow_terms(kind, store, env):
    key = "watch/" + uuid.uuid4().hex
    w = Watcher(store, key, env, "--json", "--interval", "100ms")
    notes = []
    try:
        if not w.wait_for(lambda lines: len(lines) >= 1, 15):
            check("%s: the watcher printed the record at start" % kind, False, "stderr %r" % w.err)
            return
        for i, name in enumerate(("h1", "h2")):
            if i == 1:
                # A second watcher, in text, started during h2's term prints it first.
                p = subprocess.Popen([baton, "run", "--store", store, "--key", key, "--ttl", "1s", "--owner", name,
                                      "--", "sleep", "0.6"], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
                w.wait_for_token(2, "held", 15)
                t = Watcher(store, key, env, "--interval", "100ms")
                t.wait_for(lambda lines: len(lines) >= 1, 15)
                trc = t.stop(signal.SIGINT)
                first = t.lines[0] if t.lines else ""
                check("%s: a text watcher started during a term prints it first, then SIGINT exits 0" % kind,
                      re.match(r"^\S+Z held     token 2  holder h2#[0-9a-f]+$", first) is not None and trc == 0,
                      "exit %s, lines %r, stderr %r" % (trc, t.lines, t.err))
                _, err = p.communicate(timeout=60)
                rc = p.returncode
            else:
                rc, err = run_holder(store, key, env, name, 0.6)
            if rc != 0:
                notes.append("%s exited %d: %s" % (name, rc, err.strip()))
        # h3 is killed while it holds; h4 takes over once its record stayed unchanged for ttl x 2.
        p3 = subprocess.Popen([baton, "run", "--store", store, "--key", key, "--ttl", "1s", "--owner", "h3", "--",
                               "sleep", "30"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            w.wait_for_token(3, "held", 15)
            time.sleep(0.5)
        finally:
            p3.kill()  # its command dies with it (baton run's rule)
            p3.wait()
        for name in ("h4", "h5"):
            rc, err = run_holder(store, key, env, name, 0.6)
            if rc != 0:
                notes.append("%s exited %d: %s" % (name, rc, err.strip()))
        w.wait_for_token(5, "released", 10)
        objs = w.objects()
        unparsed = [o for o in objs if "unparsed" in o or set(o) - {"skipped"} != FIELDS]
        check("%s: every line is one JSON object with the documented fields" % kind, not unparsed, unparsed)
        seen = terms_seen(objs)
        expected = [(1, "h1"), (2, "h2"), (3, "h3"), (4, "h4"), (5, "h5")]
        check("%s: every term seen, in order, with its holder (tokens strictly increasing)" % kind,
              seen == expected, "saw %r\n%s" % (seen, "\n".join(w.lines + notes)))
        gaps = [o for o in objs if "skipped" in o]
        check("%s: no gap reported when no term was missed" % kind, not gaps, gaps)
        states = [o.get("state") for o in objs]
        check("%s: states as baton status names them; the last one released" % kind,
              set(states) <= {"free", "held", "released"} and states[-1:] == ["released"] and states[0] == "free",
              states)

        # Paused while two terms pass: the next line names the token it never saw.
        n = len(w.lines)
        w.p.send_signal(signal.SIGSTOP)
        try:
            for name in ("p6", "p7"):
                rc, err = run_holder(store, key, env, name, 0)
                if rc != 0:
                    notes.append("%s exited %d: %s" % (name, rc, err.strip()))
        finally:
            w.p.send_signal(signal.SIGCONT)
        w.wait_for_token(7, None, 10)
        after = w.objects()[n:]
        line7 = next((o for o in after if o.get("token") == 7), {})
        check("%s: a watcher paused while two terms passed reports the one it missed: \"skipped\": [6, 6]" % kind,
              line7.get("skipped") == [6, 6] and holder_name(line7) == "p7" and
              all(o.get("token") in (5, 7) for o in after), "after the pause: %r\n%s" % (after, "\n".join(notes)))
        for n_ in notes:
            print("note: " + n_)
    finally:
        rc = w.stop(signal.SIGTERM)
        check("%s: SIGTERM ends the watch with exit 0, nothing on stderr" % kind, rc == 0 and not w.err,
              "exit %s, stderr %r" % (rc, w.err))


def unknown_gaps(work):
    """File store: the gaps whose size cannot be known."""
    store, env = "file://" + work, environment({})
    key = "wallclock"
    w = Watcher(store, key, env, "--json", "--interval", "100ms")
    try:
        w.wait_for(lambda lines: len(lines) >= 1, 10)
        run_holder(store, key, env, "w1", 0.3, "--wall-clock-tokens")
        first = [o for o in w.objects() if o.get("token") is not None]
        n = len(w.lines)
        w.p.send_signal(signal.SIGSTOP)
        try:
            run_holder(store, key, env, "w2", 0)
            run_holder(store, key, env, "w3", 0)
        finally:
            w.p.send_signal(signal.SIGCONT)
        w.wait_for(lambda lines: any(holder_name(json.loads(l)) == "w3" for l in lines[n:]), 10)
        after = w.objects()[n:]
        w3 = next((o for o in after if holder_name(o) == "w3"), {})
        check("file: wall-clock tokens: a missed term is reported as \"skipped\": \"unknown\"",
              first and first[0]["token"] > 10 ** 15 and w3.get("skipped") == "unknown" and
              w3.get("token") == first[0]["token"] + 2, "before %r, after %r" % (first, after))
    finally:
        w.stop()

    key = "wentback"
    w = Watcher(store, key, env, "--json", "--interval", "100ms")
    try:
        w.wait_for(lambda lines: len(lines) >= 1, 10)
        run_holder(store, key, env, "b1", 0.3)
        # Seen released, so that an earlier line also has token 1 and state released.
        w.wait_for_token(1, "released", 10)
        run_holder(store, key, env, "b2", 0.3)
        w.wait_for_token(2, "released", 10)
        n = len(w.lines)
        w.p.send_signal(signal.SIGSTOP)
        try:
            os.remove(os.path.join(work, "r." + key))  # deleted outside baton (a lifecycle rule, say)
            run_holder(store, key, env, "b3", 0)
        finally:
            w.p.send_signal(signal.SIGCONT)
        # Only the lines printed after the pause: b1's term also had token 1.
        w.wait_for_token(1, "released", 10, since=n)
        after = w.objects()[n:]
        check("file: a token that went back (record deleted and created again) is \"skipped\": \"unknown\"",
              len(after) == 1 and after[0].get("token") == 1 and after[0].get("skipped") == "unknown", after)
    finally:
        w.stop()


def main():
    started = time.time()
    work = tempfile.mkdtemp(prefix="baton-watch-usage-")
    # Run alongside the checks below: they need 5 s of refusals, and are stopped before they
    # would say it again (every 30 s), however long the stores take.
    refused = refused_store_watcher()
    refused_json = refused_store_watcher("--log-format", "json")
    try:
        usage_checks(work)
        unknown_gaps(work)
        missing_containers()
        made = stores()  # buckets and tables: the refusals' 5 s pass meanwhile
        check_refused_store(refused)
        check_refused_store_json(refused_json)
        for kind, store, env, cleanup in made:
            try:
                follow_terms(kind, store, env)
            finally:
                if cleanup:
                    try:
                        cleanup()
                    except Exception as e:
                        print("note: could not clean up %s: %s" % (kind, e))
    finally:
        for w in (refused, refused_json):
            if w.p.poll() is None:
                w.stop(signal.SIGKILL)
        shutil.rmtree(work, ignore_errors=True)
    print("%d checks, %d failed (%.1f s)" % (checks, len(failures), time.time() - started))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
