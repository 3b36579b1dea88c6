#!/usr/bin/env python3
"""Cross-process test of `baton run` (issue 4, item 7).

Four `baton run` processes contend for one key. Each command appends
`start TOKEN PID T` and `end TOKEN PID T` (T on the boot-time monotonic clock)
to a shared log while it holds the lease. Mid-run, the first holder is killed
with SIGKILL, and a later holder is frozen (SIGSTOP) past its TTL, then resumed.

Checks: tokens strictly increase in start order; holding intervals never
overlap, except where the frozen holder's command was still running; that
command is terminated promptly after its supervisor resumes; the killed
holder's command dies with it.

Usage: cli_cross_process.py BATON_BINARY [file | dynamodb | s3]
  file      a fresh directory (default)
  dynamodb  a fresh table on the dynalite at BATON_DYNAMODB_ENDPOINT (started by
            tests/servers/with-servers.sh dynalite); skipped when it is not set
  s3        a fresh bucket (and a key prefix) on the S3 store at BATON_S3_ENDPOINT
            (Ceph RGW, started by tests/servers/with-servers.sh rgw); skipped when
            it is not set
"""
import json, os, signal, subprocess, sys, tempfile, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from s3_request import create_bucket

def mono():
    return time.clock_gettime(time.CLOCK_BOOTTIME)

def dynamodb_store():
    endpoint = os.environ.get("BATON_DYNAMODB_ENDPOINT")
    if not endpoint:
        print("skipped: BATON_DYNAMODB_ENDPOINT is not set (run under tests/servers/with-servers.sh dynalite)")
        sys.exit(0)
    table = "baton-xproc-%d" % os.getpid()
    body = json.dumps({"TableName": table, "BillingMode": "PAY_PER_REQUEST",
                       "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                       "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}).encode()
    # dynalite checks that a signature is present, not that it is right.
    req = urllib.request.Request(endpoint, data=body, method="POST", headers={
        "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.CreateTable",
        "X-Amz-Date": "20260101T000000Z",
        "Authorization": "AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/dynamodb/aws4_request, "
                         "SignedHeaders=host, Signature=00"})
    urllib.request.urlopen(req, timeout=10).read()
    os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = endpoint
    os.environ["AWS_REGION"] = os.environ.get("BATON_DYNAMODB_REGION", "us-east-1")
    os.environ["AWS_ACCESS_KEY_ID"] = os.environ.get("BATON_DYNAMODB_ACCESS_KEY", "baton")
    os.environ["AWS_SECRET_ACCESS_KEY"] = os.environ.get("BATON_DYNAMODB_SECRET_KEY", "baton")
    return "dynamodb://" + table

def s3_store():
    endpoint = os.environ.get("BATON_S3_ENDPOINT")
    if not endpoint:
        print("skipped: BATON_S3_ENDPOINT is not set (run under tests/servers/with-servers.sh rgw)")
        sys.exit(0)
    region = os.environ.get("BATON_S3_REGION", "us-east-1")
    access_key, secret_key = os.environ["BATON_S3_ACCESS_KEY"], os.environ["BATON_S3_SECRET_KEY"]
    bucket = "baton-xproc-%d" % os.getpid()
    create_bucket(endpoint, region, access_key, secret_key, bucket)
    # The store is found the way users find it: the service's endpoint variable, not --endpoint.
    for name in ("AWS_ENDPOINT_URL", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"):
        os.environ.pop(name, None)
    os.environ["AWS_ENDPOINT_URL_S3"] = endpoint
    os.environ["AWS_REGION"] = region
    os.environ["AWS_ACCESS_KEY_ID"] = access_key
    os.environ["AWS_SECRET_ACCESS_KEY"] = secret_key
    return "s3://%s/xproc" % bucket

def main():
    baton = sys.argv[1]
    kind = sys.argv[2] if len(sys.argv) > 2 else "file"
    if kind == "dynamodb":
        store = dynamodb_store()
    elif kind == "s3":
        store = s3_store()
    else:
        store = "file://" + tempfile.mkdtemp(prefix="baton-xproc-")
    work = tempfile.mkdtemp(prefix="baton-xproc-log-")
    log = os.path.join(work, "log")
    open(log, "w").close()
    key = "xproc/%d" % os.getpid()
    child = ('read up _ < /proc/uptime; echo "start $BATON_FENCING_TOKEN $PPID $up" >> %s; '
             'trap \'read up _ < /proc/uptime; echo "end $BATON_FENCING_TOKEN $PPID $up term" >> %s; exit 143\' TERM; '
             'sleep 5 & wait; read up _ < /proc/uptime; echo "end $BATON_FENCING_TOKEN $PPID $up" >> %s') % (log, log, log)
    procs = []
    for _ in range(4):
        procs.append(subprocess.Popen([baton, "run", "--store", store, "--key", key, "--ttl", "1s",
                                       "--grace", "1s", "--", "sh", "-c", child],
                                      stderr=subprocess.PIPE, text=True))
        time.sleep(0.05)

    def starts():
        return [l.split() for l in open(log) if l.startswith("start ")]

    def wait_for_starts(n, limit=20):
        end = time.time() + limit
        while time.time() < end:
            s = starts()
            if len(s) >= n:
                return s
            time.sleep(0.02)
        sys.exit("FAIL: only %d holders started, expected %d" % (len(starts()), n))

    events = {}
    s = wait_for_starts(1)
    time.sleep(0.5)
    killed_pid = int(s[0][2])
    os.kill(killed_pid, signal.SIGKILL)
    events["killed"] = (killed_pid, mono())

    s = wait_for_starts(2)
    time.sleep(0.3)
    frozen_pid = int(s[1][2])
    os.kill(frozen_pid, signal.SIGSTOP)
    time.sleep(3.5)  # past ttl x skew (2 s) plus polling: someone else takes over meanwhile
    resumed_at = mono()
    os.kill(frozen_pid, signal.SIGCONT)
    events["frozen"] = (frozen_pid, resumed_at)

    codes = {}
    for p in procs:
        try:
            p.wait(timeout=40)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            sys.exit("FAIL: baton processes did not finish")
        codes[p.pid] = p.returncode

    lines = [l.split() for l in open(log)]
    intervals = {}
    order = []
    for l in lines:
        tok, pid, t = int(l[1]), int(l[2]), float(l[3])
        if l[0] == "start":
            intervals[tok] = [pid, t, None, False]
            order.append(tok)
        else:
            intervals[tok][2] = t
            intervals[tok][3] = len(l) > 4
    failures = []
    if order != sorted(order) or len(set(order)) != len(order):
        failures.append("tokens not strictly increasing in start order: %s" % order)
    if len(order) != 4:
        failures.append("expected 4 holders, saw %d: %s" % (len(order), order))
    for tok, (pid, st, en, termed) in intervals.items():
        if pid == killed_pid:
            if en is not None:
                failures.append("the killed holder's command (token %d) kept running to its end" % tok)
            intervals[tok][2] = events["killed"][1] + 0.05  # died with its supervisor
    frozen_tok = next(t for t, v in intervals.items() if v[0] == frozen_pid)
    fz = intervals[frozen_tok]
    if fz[2] is None or not fz[3]:
        failures.append("the frozen holder's command was not terminated")
    elif fz[2] - resumed_at > 1.0:
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
                if pa == frozen_pid or pb == frozen_pid:
                    overlap_with_frozen = True
                else:
                    failures.append("tokens %d and %d held at once" % (a, b))
    for p in procs:
        if p.pid not in (killed_pid, frozen_pid) and codes[p.pid] != 0:
            failures.append("holder %d exited %d: %s" % (p.pid, codes[p.pid], p.stderr.read()))
    print("holders in order: %s; killed pid %d, frozen pid %d (token %d, terminated %.2fs after resume); "
          "overlap only with the frozen holder: %s" % (order, killed_pid, frozen_pid, frozen_tok,
                                                        (fz[2] or 0) - resumed_at, overlap_with_frozen))
    if failures:
        for f in failures:
            print("FAIL:", f)
        sys.exit(1)
    print("cross-process lease test on %s: OK" % kind)

if __name__ == "__main__":
    main()
