"""What the cross-process lease-table tests share: waiting for every shard's last checkpoint, and
stopping the workers the way an operator does (SIGTERM; each must exit 0)."""
import os, shutil, signal, subprocess, time


def wait_all_checkpoints(sample, last, within, failures, unit="record"):
    """Samples the table until every shard's checkpoint is `last`; a failure after `within` s."""
    deadline = time.time() + within
    while True:
        st = sample()
        if all(s["checkpoint"] == str(last) for s in st["shards"]):
            return
        if time.time() > deadline:
            failures.append("not every shard reached %s %d within %d s: %s" % (
                unit, last, within, {s["shard"]: s["checkpoint"] for s in st["shards"]}))
            return
        time.sleep(0.25)


def stop_workers(procs, scratch, failures):
    """SIGTERM to every worker still running (SIGCONT first: one may be frozen); each must exit 0
    (or have been SIGKILLed by the test) within 30 s. Its stderr is in SCRATCH/NAME.err."""
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)
            p.send_signal(signal.SIGTERM)
    for name, p in procs.items():
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
            failures.append("%s did not exit within 30 s of SIGTERM" % name)
        if rc not in (0, -signal.SIGKILL):
            err = open(os.path.join(scratch, name + ".err")).read().strip()
            failures.append("%s exited %d: %s" % (name, rc, err[-500:]))


def finish(failures, scratch, drop, kept):
    """Drops the store (`drop`, if any), keeps SCRATCH only when something failed (saying what it
    holds: `kept`), prints the failures and the one summary line; returns the exit status."""
    if drop:
        try:
            drop()
        except Exception:
            pass
    if failures:
        print("%s kept in %s" % (kept, scratch))
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    for f in failures:
        print("FAIL: " + f)
    print("%d passed, %d failed" % (0 if failures else 1, 1 if failures else 0))
    return 1 if failures else 0
