#!/usr/bin/env python3
"""A shard consumer in Python, run by `baton table work` once per shard its worker owns.

    baton table work --store dynamodb://shards --worker "$(hostname)" -- \
        python3 examples/table_consumer.py INPUT_DIR OUTPUT_FILE [--step SECONDS]

It processes INPUT_DIR/<shard>.txt line by line, from the line after the shard's checkpoint on,
and follows the file as it grows (like `tail -f`). "Processing" a line appends
`MONOTONIC_NS SHARD FENCING_TOKEN LINE_NUMBER TEXT` to OUTPUT_FILE; then the consumer checkpoints
the line number by writing `checkpoint N` to the pipe baton gave it (BATON_CHECKPOINT_FD). baton
writes each checkpoint as the shard's fenced checkpoint, in order; when the shard moves to another
worker, the consumer there starts from the last checkpoint that was written.

Everything it needs comes from the environment baton sets: BATON_SHARD, BATON_FENCING_TOKEN,
BATON_CHECKPOINT (empty at first) and BATON_CHECKPOINT_FD. On SIGTERM (the shard is handed over,
or the worker stops) it finishes the line at hand, checkpoints it and exits 0. A real consumer
would also pass BATON_FENCING_TOKEN to the systems it writes to, so that they refuse a stale owner.
"""
import os, signal, sys, time


def main():
    args = sys.argv[1:]
    step = 0.0
    if "--step" in args:
        i = args.index("--step")
        step = float(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit("usage: table_consumer.py INPUT_DIR OUTPUT_FILE [--step SECONDS]")
    input_dir, output = args
    shard, token = os.environ["BATON_SHARD"], os.environ["BATON_FENCING_TOKEN"]
    done = int(os.environ.get("BATON_CHECKPOINT") or 0)  # lines already processed
    checkpoints = os.fdopen(int(os.environ["BATON_CHECKPOINT_FD"]), "w", buffering=1)
    out = os.open(output, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    stopping = False

    def stop(*_):
        nonlocal stopping
        stopping = True
    signal.signal(signal.SIGTERM, stop)

    path = os.path.join(input_dir, shard + ".txt")
    while not stopping:
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            lines = []
        if done >= len(lines):
            time.sleep(0.2)  # wait for more input
            continue
        text = lines[done]
        if step:
            time.sleep(step)
        # One write(2) per record: lines from several processes stay whole.
        os.write(out, ("%d %s %s %d %s\n" % (time.clock_gettime_ns(time.CLOCK_BOOTTIME), shard, token, done + 1,
                                              text)).encode())
        done += 1
        checkpoints.write("checkpoint %d\n" % done)
    checkpoints.close()
    os.close(out)


if __name__ == "__main__":
    main()
