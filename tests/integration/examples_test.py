#!/usr/bin/env python3
"""Runs the C++ examples (examples/*.cpp) against the local servers, as the
README tells a user to run them, and checks what they print and how they exit.

- s3_leader (Ceph RGW): A leads; B, started while A leads, reports A's address
  as the leader, then leads with the next token once A resigns.
- dynamodb_cron (dynalite): four processes start for one period at once: exactly
  one runs the job, the others wait and find it done; a later start for the
  same period finds it done; the next period runs again, with a higher token;
  a runner killed mid-job is taken over by the next start after ttl x 2.
- fenced_writer (RGW and dynalite): A acquires and is frozen (SIGSTOP) mid-work;
  B takes over after the lease's takeover window and writes; A resumes and its
  write is refused by the store, naming B's token (exit 4).

Usage: examples_test.py S3_LEADER DYNAMODB_CRON FENCED_WRITER
Needs BATON_S3_ENDPOINT and BATON_DYNAMODB_ENDPOINT (tests/servers/with-servers.sh rgw dynalite);
the part whose server is missing is skipped. Last line: "N passed, N failed" (checks).
"""
import os, signal, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_cross_process import dynamodb_store, s3_store  # fresh tables and buckets, and their AWS_* variables

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print("%s: %s" % ("ok" if ok else "FAILED", name))
    if not ok and detail:
        print("  " + str(detail).replace("\n", "\n  "))
    sys.stdout.flush()


def environment(env, removed=()):
    full = {k: v for k, v in os.environ.items() if k not in removed and not k.startswith("AWS_")}
    full.update(env)
    return full


def start(argv, env):
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def read_line_with(p, text, limit=60):
    """Reads p's stdout until a line containing `text` (or EOF / time out); returns it or None."""
    deadline = time.time() + limit
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            return None
        if text in line:
            return line.strip()
    return None


def finish(p, limit=60):
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        err += "\n(killed after %d s)" % limit
    return p.returncode, out, err


def leader_example(s3_leader):
    store, env, removed, _ = s3_store()
    bucket = store[len("s3://"):].split("/")[0]
    env = environment(env, removed)
    a = start([s3_leader, bucket, "http://a.example:8200", "10"], env)
    a_line = read_line_with(a, "leader:")
    check("s3_leader: A is elected with token 1", a_line == "leader: http://a.example:8200 serves with token 1", a_line)
    b = start([s3_leader, bucket, "http://b.example:8200", "1"], env)
    b_standby = read_line_with(b, "standby:")
    check("s3_leader: B, a standby, names A's address as the leader",
          b_standby == "standby: the leader is http://a.example:8200 (token 1)", b_standby)
    rc_a, out_a, err_a = finish(a)
    if rc_a == 3 and "lost leadership: stopped serving" in out_a:
        # Documented: renewals that fail past the renew deadline (a loaded machine) end the term early.
        print("note: s3_leader: A lost leadership before its time was up (renewals stalled); B takes over")
    else:
        check("s3_leader: A serves its time and resigns (exit 0)",
              rc_a == 0 and "resigned: http://a.example:8200" in out_a, (rc_a, out_a, err_a))
    rc_b, out_b, err_b = finish(b)
    check("s3_leader: B leads next with token 2, then resigns (exit 0)",
          rc_b == 0 and "leader: http://b.example:8200 serves with token 2" in out_b, (rc_b, out_b, err_b))


def cron_example(dynamodb_cron):
    store, env, removed, drop = dynamodb_store()
    table = store[len("dynamodb://"):]
    env = environment(env, removed)
    try:
        runs = [start([dynamodb_cron, table, "nightly", "2026-11-25", "2"], env) for _ in range(4)]
        outs = [finish(p) for p in runs]
        lines = [o[1].strip() for o in outs]
        ran = [l for l in lines if l.startswith("running: nightly for 2026-11-25 with token 1\nran: nightly for")]
        others_ok = all(l == "running: nightly for 2026-11-25 with token 1\nran: nightly for 2026-11-25 with token 1"
                        or l.startswith("running elsewhere: nightly")
                        or l == "done already: nightly for 2026-11-25 (token 1)" for l in lines)
        check("dynamodb_cron: four starts for one period: one runs it, the others wait and find it done, all exit 0",
              len(ran) == 1 and others_ok and all(o[0] == 0 for o in outs), outs)
        rc, out, err = finish(start([dynamodb_cron, table, "nightly", "2026-11-25"], env))
        check("dynamodb_cron: a later start for the same period finds it done",
              rc == 0 and out.strip() == "done already: nightly for 2026-11-25 (token 1)", (rc, out, err))
        rc, out, err = finish(start([dynamodb_cron, table, "nightly", "2026-11-26", "0"], env))
        # Every acquisition of the job's lease is a new term, so the token counts the starts that acquired.
        words = out.split()
        check("dynamodb_cron: the next period runs, with a higher token",
              rc == 0 and "\nran: nightly for 2026-11-26 with token " in out and int(words[-1]) > 1, (rc, out, err))
        last_token = int(words[-1]) if words and words[-1].isdigit() else 0
        # A runner killed mid-job leaves the lease unreleased: the next start takes it over after
        # ttl x 2 (20 s) and runs the job, with a higher token.
        crashed = start([dynamodb_cron, table, "nightly", "2026-11-27", "60"], env)
        line = read_line_with(crashed, "running:")
        crashed.kill()
        crashed.wait()
        t0 = time.time()
        rc, out, err = finish(start([dynamodb_cron, table, "nightly", "2026-11-27", "0"], env), limit=90)
        words = out.split()
        check("dynamodb_cron: after a runner is killed mid-job, the next start takes over and runs it",
              line is not None and rc == 0 and "\nran: nightly for 2026-11-27 with token " in out
              and int(words[-1]) > last_token + 1 and time.time() - t0 >= 19,
              (line, rc, out, err, "%.1f s" % (time.time() - t0)))
    finally:
        drop()


def fenced_example(fenced_writer, kind):
    if kind == "s3":
        store, env, removed, drop = s3_store()
        name = store[len("s3://"):].split("/")[0]
    else:
        store, env, removed, drop = dynamodb_store()
        name = store[len("dynamodb://"):]
    env = environment(env, removed)
    try:
        # A works 8 s; it is frozen well before that ends, and finishes the rest after it resumes.
        a = start([fenced_writer, kind, name, "A", "8", "2"], env)
        a_line = read_line_with(a, "acquired:")
        a.send_signal(signal.SIGSTOP)  # a pause mid-work: no renewals, no writes
        check("fenced_writer %s: A acquires token 1, then is frozen" % kind, a_line == "acquired: A has token 1", a_line)
        rc_b, out_b, err_b = finish(start([fenced_writer, kind, name, "B", "0", "2"], env))
        check("fenced_writer %s: B takes over with token 2 and writes (exit 0)" % kind,
              rc_b == 0 and "acquired: B has token 2" in out_b and "written: B with token 2" in out_b,
              (rc_b, out_b, err_b))
        a.send_signal(signal.SIGCONT)
        rc_a, out_a, err_a = finish(a)
        check("fenced_writer %s: A resumes and the store refuses its write, naming token 2 (exit 4)" % kind,
              rc_a == 4 and "refused: A's token 1 is below 2" in out_a, (rc_a, out_a, err_a))
    finally:
        if drop:
            drop()


def main():
    s3_leader, dynamodb_cron, fenced_writer = sys.argv[1:4]
    if os.environ.get("BATON_S3_ENDPOINT"):
        leader_example(s3_leader)
        fenced_example(fenced_writer, "s3")
    else:
        print("skipped: s3_leader and fenced_writer s3 (BATON_S3_ENDPOINT is not set)")
    if os.environ.get("BATON_DYNAMODB_ENDPOINT"):
        cron_example(dynamodb_cron)
        fenced_example(fenced_writer, "dynamodb")
    else:
        print("skipped: dynamodb_cron and fenced_writer dynamodb (BATON_DYNAMODB_ENDPOINT is not set)")
    failed = results.count(False)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
