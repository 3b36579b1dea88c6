#!/usr/bin/env python3
"""Seeded, HTTP-aware TCP fault proxy for baton's robustness tests.

Sits on 127.0.0.1 between an HTTP/1.1 client and one plain-HTTP upstream
server and injects one fault per request, also on kept-alive connections:
it follows HTTP/1.1 message framing (Content-Length; chunked with trailers;
bodiless HEAD, 1xx, 204 and 304 responses; responses read until the server
closes). Bytes are forwarded unchanged.

    fault_proxy.py --upstream 127.0.0.1:8000 --seed 7 --log proxy.jsonl
        [--listen-port 0] [--profile default|none|heavy]
        [--p-pass X --p-delay-request X --p-delay-response X
         --p-drop-response X --p-reset-before X --p-reset-after X]
        [--delay-ms MIN:MAX] [--blackhole-every S --blackhole-for S]
        [--quiet-first S] [--only-methods PUT,POST,DELETE]

Faults, one drawn per request:
  pass            forward the request, then the response
  delay_request   wait D ms, then as pass
  delay_response  forward the request, read the whole response, wait D ms,
                  send it
  drop_response   forward the request, read the whole response (the store
                  applied it), close the client connection (FIN) unanswered
  reset_before    reset the client connection (RST); nothing forwarded
  reset_after     forward the request, read the response, reset the client
                  connection unanswered
  blackhole       scheduled, not drawn: a request arriving in a window
                  [k*every, k*every + for) s after start (k >= 1) is never
                  forwarded; it is held until the window ends, then its
                  client connection is closed unanswered.

D is uniform in --delay-ms (default 100:2500). The decision for request j of
the i-th accepted connection depends only on (seed, i, j), so a run's fault
schedule is reproducible though the OS's scheduling is not. --p-* override
the profile's probabilities one by one; pass takes the rest unless --p-pass
is given (then the weights are normalised). --quiet-first S: no faults in
the first S seconds (setup traffic); --only-methods: drawn faults only for
these methods. A draw overridden by either is logged as pass with "drawn".

Prints one line "PORT <n>" on stdout once listening. --log gets JSON lines:
one per request decision {"t", "conn", "req", "method", "target", "fault",
"delay_ms"}, and events {"t", "conn", "event": listen|open|close|
upstream_error|error, ...}. "t" is time.monotonic_ns() (CLOCK_MONOTONIC).
SIGUSR1: no faults from then on (a test's closing checks need a calm
network); logged as event "calm". SIGTERM/SIGINT: close everything, print
the counts per fault to stderr, exit 0. Not supported (the connection is closed): protocol upgrades;
Expect: 100-continue would stall until the client sends the body anyway.
"""
import argparse
import asyncio
import itertools
import json
import random
import re
import signal
import socket
import struct
import sys
import time
from collections import Counter

KINDS = ("pass", "delay_request", "delay_response", "drop_response",
         "reset_before", "reset_after")
PROFILES = {
    "none": {},
    "default": dict(delay_request=.03, delay_response=.05, drop_response=.03,
                    reset_before=.02, reset_after=.02),
    "heavy": dict(delay_request=.06, delay_response=.10, drop_response=.06,
                  reset_before=.04, reset_after=.04),
}
HEAD_LIMIT = 64 * 1024            # longest head or chunk-size line accepted
CHUNK = 64 * 1024                 # bodies are streamed in pieces this big
MAX_HELD = 64 * 1024 * 1024       # a response held back for delay/drop/reset
HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
DIGITS = re.compile(r"[0-9]{1,18}")


class HttpError(Exception):
    """Malformed or unsupported HTTP: log it and close the connection."""


async def read_head(reader):
    """The head through CRLFCRLF, or None on EOF before its first byte."""
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if e.partial:
            raise HttpError("EOF inside a message head") from None
        return None
    except asyncio.LimitOverrunError:
        raise HttpError("message head too long") from None


def parse_head(head):
    lines = head[:-4].decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise HttpError(f"bad header line {line[:80]!r}")
        headers.setdefault(name.lower(), []).append(value.strip())
    return lines[0].split(" ", 2), headers


def tokens(headers, name):
    return [t.strip().lower() for v in headers.get(name, ())
            for t in v.split(",") if t.strip()]


def framing(headers, is_request):
    """How the body ends: ("length", n), ("chunked", 0) or ("eof", 0)."""
    te = tokens(headers, "transfer-encoding")
    if te:
        if te[-1] == "chunked":
            return "chunked", 0
        if is_request:  # RFC 9112 6.3: the server could not frame it either
            raise HttpError(f"request transfer-encoding {te}")
        return "eof", 0
    lengths = set(headers.get("content-length", ()))
    if len(lengths) > 1 or not all(DIGITS.fullmatch(v) for v in lengths):
        raise HttpError(f"bad content-length {sorted(lengths)}")
    if lengths:
        return "length", int(lengths.pop())
    return ("length", 0) if is_request else ("eof", 0)


async def copy_exact(reader, n, out):
    while n > 0:
        data = await reader.read(min(n, CHUNK))
        if not data:
            raise HttpError("EOF inside a body")
        n -= len(data)
        await out(data)


async def copy_body(reader, how, out):
    kind, n = how
    if kind == "length":
        await copy_exact(reader, n, out)
    elif kind == "eof":
        while data := await reader.read(CHUNK):
            await out(data)
    else:
        while True:
            line = await reader.readuntil(b"\r\n")
            size = line[:-2].split(b";", 1)[0].strip()
            if not HEX.fullmatch(size):
                raise HttpError(f"bad chunk size line {line[:80]!r}")
            await out(line)
            if int(size, 16) == 0:
                break
            await copy_exact(reader, int(size, 16), out)
            if (crlf := await reader.readexactly(2)) != b"\r\n":
                raise HttpError("chunk data not followed by CRLF")
            await out(crlf)
        while True:  # trailer fields, then the empty line
            line = await reader.readuntil(b"\r\n")
            await out(line)
            if line == b"\r\n":
                break


async def copy_response(reader, method, out):
    """Copies one response, after any 1xx; True if the connection ends."""
    while True:
        head = await read_head(reader)
        if head is None:
            raise HttpError("upstream closed before responding")
        start, headers = parse_head(head)
        if (len(start) < 2 or not start[0].startswith("HTTP/1.")
                or not re.fullmatch(r"[1-5][0-9][0-9]", start[1])):
            raise HttpError(f"bad status line {start!r}")
        status = int(start[1])
        await out(head)
        if status == 101:
            raise HttpError("protocol upgrade not supported")
        if status >= 200:
            break
    bodiless = method == "HEAD" or status in (204, 304)
    how = ("length", 0) if bodiless else framing(headers, is_request=False)
    await copy_body(reader, how, out)
    conn = tokens(headers, "connection")
    return (how[0] == "eof" or "close" in conn
            or (start[0] == "HTTP/1.0" and "keep-alive" not in conn))


def sink(writer):
    async def out(data):
        writer.write(data)
        await writer.drain()  # backpressure: never buffer a whole body
    return out


async def discard(data):
    pass


class Held:
    """Collects a response that is to be delayed, dropped or reset."""

    def __init__(self):
        self.parts, self.size = [], 0

    async def __call__(self, data):
        self.size += len(data)
        if self.size > MAX_HELD:
            raise HttpError("response too large to hold back")
        self.parts.append(data)


def reset(writer):
    # SO_LINGER {on, 0 s}: close() sends RST and discards unsent data
    writer.get_extra_info("socket").setsockopt(
        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def draw(seed, conn, req, weights, delay_ms):
    """The fault for request req of connection conn: a pure function, so
    that a run's schedule is reproducible and tests can recompute it."""
    rng = random.Random(f"{seed}:{conn}:{req}")  # str seeds hash stably
    u, acc = rng.random(), 0.0
    for kind, w in weights:
        acc += w
        if u < acc:
            break
    else:
        kind = "pass"  # rounding left u above the last boundary
    return kind, (rng.randint(*delay_ms) if kind.startswith("delay") else 0)


def weights(args):
    p = dict(PROFILES[args.profile])
    for kind in KINDS:
        if (v := getattr(args, "p_" + kind)) is not None:
            p[kind] = v
    if args.force:
        p = {args.force: 1.0}
    p.setdefault("pass", max(0.0, 1.0 - sum(p.values())))
    total = sum(p.values())
    if total <= 0 or min(p.values()) < 0:
        sys.exit(f"fault_proxy: bad probabilities {p}")
    return [(k, p.get(k, 0.0) / total) for k in KINDS]


class Proxy:
    def __init__(self, args):
        self.args = args
        self.host, port = args.upstream.rsplit(":", 1)
        self.port = int(port)
        self.weights = weights(args)
        lo, _, hi = args.delay_ms.partition(":")
        self.delay = (int(lo), int(hi or lo))
        self.only = {m for m in args.only_methods.upper().split(",") if m}
        self.log_file = open(args.log, "w")
        self.conn_ids = itertools.count()
        self.counts = Counter()
        self.tasks = set()
        self.start = time.monotonic()
        self.calm = False

    def write(self, rec):
        # flushed per line: tests read the log after SIGTERM or SIGKILL
        self.log_file.write(json.dumps({"t": time.monotonic_ns(), **rec}) + "\n")
        self.log_file.flush()

    def event(self, conn, event, **fields):
        self.write({"conn": conn, "event": event, **fields})

    def blackhole_end(self, now):
        every, length = self.args.blackhole_every, self.args.blackhole_for
        if every <= 0 or length <= 0:
            return None
        k = int((now - self.start) // every)
        end = self.start + k * every + length
        return end if k >= 1 and now < end else None

    def choose(self, conn, req, method, target):
        now = time.monotonic()
        drawn = draw(self.args.seed, conn, req, self.weights, self.delay)
        fault, delay = drawn
        end = self.blackhole_end(now)
        if self.calm or now - self.start < self.args.quiet_first:
            fault, delay = "pass", 0
        elif end is not None:  # a partition hits every method
            fault, delay = "blackhole", round((end - now) * 1000)
        elif self.only and method not in self.only:
            fault, delay = "pass", 0
        rec = dict(conn=conn, req=req, method=method, target=target[:200],
                   fault=fault, delay_ms=delay)
        if fault != drawn[0]:
            rec["drawn"] = drawn[0]
        self.write(rec)
        self.counts[fault] += 1
        return fault, delay

    async def handle(self, creader, cwriter):
        conn = next(self.conn_ids)
        self.tasks.add(asyncio.current_task())
        self.event(conn, "open", peer=str(cwriter.get_extra_info("peername")))
        upstream, why, phase = None, "client closed", "request"
        try:
            for req in itertools.count():
                phase = "request"
                if (head := await read_head(creader)) is None:
                    break
                start, headers = parse_head(head)
                if len(start) != 3 or not start[2].startswith("HTTP/1."):
                    raise HttpError(f"bad request line {start!r}")
                method, target = start[0], start[1]
                body = framing(headers, is_request=True)
                fault, delay = self.choose(conn, req, method, target)
                if fault == "blackhole":
                    # read it all: closing with unread input would send RST
                    await copy_body(creader, body, discard)
                    await asyncio.sleep(delay / 1000)
                    why = fault
                    break
                if fault == "reset_before":
                    reset(cwriter)
                    why = fault
                    break
                if fault == "delay_request":
                    await asyncio.sleep(delay / 1000)
                if (upstream is None or upstream[0].at_eof()
                        or upstream[1].is_closing()):
                    # the server may close an idle connection; reconnecting
                    # rather than failing keeps faults to those drawn
                    if upstream:
                        upstream[1].close()
                    try:
                        upstream = await asyncio.open_connection(
                            self.host, self.port, limit=HEAD_LIMIT)
                    except OSError as e:
                        self.event(conn, "upstream_error", req=req, detail=str(e))
                        why = "upstream unreachable"
                        break
                to_upstream = sink(upstream[1])
                await to_upstream(head)
                await copy_body(creader, body, to_upstream)
                phase = "response"
                if fault in ("pass", "delay_request"):
                    ends = await copy_response(upstream[0], method, sink(cwriter))
                else:
                    held = Held()
                    ends = await copy_response(upstream[0], method, held)
                    if fault == "drop_response":
                        why = fault
                        break
                    if fault == "reset_after":
                        reset(cwriter)
                        why = fault
                        break
                    await asyncio.sleep(delay / 1000)
                    await sink(cwriter)(b"".join(held.parts))
                if ends:
                    why = "connection ends after response"
                    break
        except asyncio.CancelledError:
            why = "proxy shutdown"
            raise
        except (HttpError, ValueError, OSError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError) as e:
            why = f"{type(e).__name__}: {e}"
            self.event(conn, "error", phase=phase, detail=why)
        finally:
            if upstream:
                upstream[1].close()
            cwriter.close()  # FIN, unless reset() aborted it already
            self.event(conn, "close", why=why)
            self.tasks.discard(asyncio.current_task())


async def serve(args):
    proxy = Proxy(args)
    server = await asyncio.start_server(
        proxy.handle, "127.0.0.1", args.listen_port, limit=HEAD_LIMIT)
    port = server.sockets[0].getsockname()[1]
    proxy.event(None, "listen", port=port, upstream=args.upstream, seed=args.seed)
    print(f"PORT {port}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)

    def calm():
        proxy.calm = True
        proxy.event(None, "calm")
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, calm)
    await stop.wait()
    server.close()
    tasks = list(proxy.tasks)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    proxy.log_file.close()
    counts = " ".join(f"{k}={proxy.counts[k]}" for k in (*KINDS, "blackhole"))
    print(f"fault_proxy: {next(proxy.conn_ids)} connections, "
          f"{sum(proxy.counts.values())} requests: {counts}", file=sys.stderr)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--upstream", required=True, help="HOST:PORT")
    p.add_argument("--listen-port", type=int, default=0)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--profile", choices=sorted(PROFILES), default="default")
    for kind in KINDS:
        p.add_argument("--p-" + kind.replace("_", "-"), type=float,
                       dest="p_" + kind, metavar="X")
    p.add_argument("--delay-ms", default="100:2500", metavar="MIN:MAX")
    p.add_argument("--blackhole-every", type=float, default=0, metavar="S")
    p.add_argument("--blackhole-for", type=float, default=0, metavar="S")
    p.add_argument("--quiet-first", type=float, default=0, metavar="S")
    p.add_argument("--only-methods", default="", metavar="M,M")
    p.add_argument("--force", choices=KINDS, help=argparse.SUPPRESS)  # tests
    return p.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(serve(parse_args()))
