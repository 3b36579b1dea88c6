#!/usr/bin/env python3
"""Self-test of fault_proxy.py: each fault kind does what it says.

    python3 tests/robustness/fault_proxy_test.py

Runs a small threaded HTTP/1.1 keep-alive server on 127.0.0.1 that counts
the requests it received per path, starts the proxy as a subprocess per
scenario (most with the hidden --force KIND), and checks what a client and
the server see. Prints one line per case and, last, "N passed, N failed";
exits 0 only when every case passed.
"""
import http.client
import http.server
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
PROXY = os.path.join(HERE, "fault_proxy.py")
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import fault_proxy  # noqa: E402  (for its pure draw(), to recompute decisions)

TIMEOUT = 5
TMP = tempfile.mkdtemp(prefix="fault_proxy_test.")
results = []


def case(name, ok, detail=""):
    results.append(bool(ok))
    print(f"{'PASS' if ok else 'FAIL'} {name}" + ("" if ok else f": {detail}"), flush=True)


# ---- the upstream server ---------------------------------------------------

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def read_body(self):
        """The body, or None if the connection ended inside it."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while (size := int(self.rfile.readline().split(b";")[0], 16)):
                data += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b""):
                pass
            return data
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length)
        return body if len(body) == length else None

    def answer(self):
        if (body := self.read_body()) is None:
            self.close_connection = True
            return
        self.server.record(self.path)
        reply = b"%s %s %d:" % (self.command.encode(), self.path.encode(), len(body)) + body
        if self.path == "/nocontent":
            self.send_response(204)
            self.end_headers()
        elif self.path.startswith("/chunked"):
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (reply[:5], reply[5:]):
                self.wfile.write(b"%x;ext=1\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\nX-Trailer: yes\r\n\r\n")
        else:
            self.send_response(200)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

    do_GET = do_PUT = do_POST = do_DELETE = answer

    def do_HEAD(self):
        self.server.record(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "1234")  # and no body: HEAD
        self.end_headers()


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.lock = threading.Lock()
        self.arrivals = {}  # path -> monotonic times, once the body was read

    def record(self, path):
        with self.lock:
            self.arrivals.setdefault(path, []).append(time.monotonic())

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):  # faults cause these
            super().handle_error(request, client_address)

    def count(self, path):
        with self.lock:
            return len(self.arrivals.get(path, ()))


SERVER = Server()
threading.Thread(target=SERVER.serve_forever, daemon=True).start()
UPSTREAM = f"127.0.0.1:{SERVER.server_address[1]}"


# ---- the proxy under test --------------------------------------------------

stops = []  # (returncode, stderr) of every proxy stopped


class Proxy:
    runs = 0

    def __init__(self, *args, upstream=UPSTREAM):
        Proxy.runs += 1
        self.log = os.path.join(TMP, f"proxy{Proxy.runs}.jsonl")
        self.p = subprocess.Popen(
            [sys.executable, PROXY, "--upstream", upstream, "--seed", "1",
             "--log", self.log, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.p.stdout], [], [], TIMEOUT)
        line = self.p.stdout.readline() if ready else ""
        self.t0 = time.monotonic()
        if not line.startswith("PORT "):
            self.p.kill()
            raise RuntimeError(f"proxy did not start: {line!r} {self.p.communicate()[1]}")
        self.port = int(line.split()[1])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self.p.returncode is not None:
            return
        self.p.send_signal(signal.SIGTERM)
        try:
            err = self.p.communicate(timeout=TIMEOUT)[1]
        except subprocess.TimeoutExpired:
            self.p.kill()
            err = "killed after SIGTERM timed out\n" + self.p.communicate()[1]
        stops.append((self.p.returncode, err))

    def lines(self):
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def decisions(self):
        return [r for r in self.lines() if "fault" in r]

    def events(self, name):
        return [r for r in self.lines() if r.get("event") == name]

    def http(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)


def request(conn, method, path, body=None, **kw):
    conn.request(method, path, body=body, **kw)
    resp = conn.getresponse()
    return resp.status, resp.read()


def raw(port, data, timeout=TIMEOUT, half_close=False):
    """Sends data on a new connection (then shuts down its sending side if
    half_close) and reads until the connection ends:
    ("eof" | "reset" | "timeout", the bytes received)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                return "reset", got
            except socket.timeout:
                return "timeout", got
            if not chunk:
                return "eof", got
            got += chunk


def put(path, body=b"hello"):
    return b"PUT %s HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n%s" % (
        path.encode(), len(body), body)


# ---- scenarios -------------------------------------------------------------

def test_pass():
    with Proxy("--force", "pass") as px:
        c = px.http()
        case("pass: the client gets the answer",
             request(c, "GET", "/p") == (200, b"GET /p 0:") and SERVER.count("/p") == 1)
        sock = c.sock
        big = os.urandom(300_000)
        got = [request(c, "PUT", "/ka", body=big),
               request(c, "HEAD", "/ka"),
               request(c, "GET", "/nocontent"),
               request(c, "GET", "/ka2")]
        case("keep-alive: Content-Length, HEAD, 204 and more on one connection",
             got == [(200, b"PUT /ka %d:" % len(big) + big), (200, b""), (204, b""),
                     (200, b"GET /ka2 0:")] and c.sock is sock,
             f"{[(s, b[:40]) for s, b in got]} same socket: {c.sock is sock}")
        pieces = [b"chunk-one,", b"", b"x" * 70_000, b",last"]
        status, body = request(c, "PUT", "/chunked", body=iter(pieces), encode_chunked=True)
        whole = b"".join(pieces)
        after = request(c, "GET", "/after-trailer")
        case("chunked request and chunked response (extensions, trailer) intact",
             (status, body) == (200, b"PUT /chunked %d:" % len(whole) + whole)
             and after == (200, b"GET /after-trailer 0:") and c.sock is sock,
             f"{status} {body[:60]!r} {after}")
        c.close()
        raw(px.port, b"GARBAGE\r\n\r\n")
        raw(px.port, b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n")
        raw(px.port, put("/half", b"0123456789")[:-5], half_close=True)  # leaves mid-body
        c = px.http()
        survived = request(c, "GET", "/survivor") == (200, b"GET /survivor 0:")
        c.close()
        time.sleep(0.2)
        errors = px.events("error")
        case("malformed HTTP and a client leaving mid-body: logged, closed, proxy lives",
             survived and len(errors) == 3 and SERVER.count("/half") == 0,
             f"survived={survived} errors={errors}")
        ds = px.decisions()
        want = [(0, 0, "GET", "/p")] + [(0, j, m, p) for j, (m, p) in enumerate(
            [("PUT", "/ka"), ("HEAD", "/ka"), ("GET", "/nocontent"), ("GET", "/ka2"),
             ("PUT", "/chunked"), ("GET", "/after-trailer")], start=1)] + [
            (3, 0, "PUT", "/half"), (4, 0, "GET", "/survivor")]
        got = [(d["conn"], d["req"], d["method"], d["target"]) for d in ds]
        case("the log has one decision line per request, with (conn, req)",
             got == want and all(d["fault"] == "pass" for d in ds), f"{got}")


def test_delays():
    with Proxy("--force", "delay_request", "--delay-ms", "300:300") as px:
        c = px.http()
        t = time.monotonic()
        got = request(c, "PUT", "/dreq", body=b"abc")
        took = time.monotonic() - t
        arrived = SERVER.arrivals.get("/dreq", [0])[0] - t
        case("delay_request: forwarded after >= the delay, answered",
             got == (200, b"PUT /dreq 3:abc") and arrived >= 0.29 and took >= 0.29,
             f"{got} arrived after {arrived:.3f}s, took {took:.3f}s")
        c.close()
    with Proxy("--force", "delay_response", "--delay-ms", "300:300") as px:
        c = px.http()
        t = time.monotonic()
        got = [request(c, "PUT", "/dresp", body=b"abc"), request(c, "GET", "/chunked-d")]
        took = time.monotonic() - t
        arrived = SERVER.arrivals.get("/dresp", [99])[0] - t
        case("delay_response: forwarded at once, answered after >= the delay",
             got == [(200, b"PUT /dresp 3:abc"), (200, b"GET /chunked-d 0:")]
             and arrived < 0.25 and took >= 0.59,
             f"{got} arrived after {arrived:.3f}s, took {took:.3f}s")
        c.close()
        ds = px.decisions()
        case("delay_response: the log shows the delay",
             [(d["fault"], d["delay_ms"]) for d in ds] == [("delay_response", 300)] * 2, f"{ds}")


def test_drop_and_resets():
    with Proxy("--force", "drop_response") as px:
        outcome = raw(px.port, put("/drop"))
        case("drop_response: applied by the server, client gets EOF and no byte",
             outcome == ("eof", b"") and SERVER.count("/drop") == 1,
             f"{outcome} count={SERVER.count('/drop')}")
    with Proxy("--force", "reset_after") as px:
        outcome = raw(px.port, put("/ra"))
        case("reset_after: applied by the server, client gets a reset",
             outcome == ("reset", b"") and SERVER.count("/ra") == 1,
             f"{outcome} count={SERVER.count('/ra')}")
    with Proxy("--force", "reset_before") as px:
        outcome = raw(px.port, put("/rb"))
        time.sleep(0.2)
        case("reset_before: not forwarded, client gets a reset",
             outcome == ("reset", b"") and SERVER.count("/rb") == 0,
             f"{outcome} count={SERVER.count('/rb')}")
    with Proxy("--force", "reset_before", "--quiet-first", "0.5") as px:
        c = px.http()
        early = request(c, "GET", "/quiet")
        c.close()
        time.sleep(max(0.0, px.t0 + 0.6 - time.monotonic()))
        late = raw(px.port, put("/loud"))
        case("quiet-first: no fault at first, faults after",
             early == (200, b"GET /quiet 0:") and late == ("reset", b"")
             and [d.get("drawn") for d in px.decisions()] == ["reset_before", None],
             f"{early} {late}")
    with Proxy("--force", "reset_before", "--only-methods", "PUT,DELETE") as px:
        c = px.http()
        get = request(c, "GET", "/only")
        c.close()
        case("only-methods: a GET passes, a PUT is reset",
             get == (200, b"GET /only 0:") and raw(px.port, put("/only")) == ("reset", b""))


def test_calm():
    with Proxy("--force", "reset_before") as px:
        loud = raw(px.port, put("/loud"))
        px.p.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + TIMEOUT
        while not px.events("calm") and time.monotonic() < deadline:
            time.sleep(0.02)
        c = px.http()
        calm = request(c, "GET", "/calm")
        c.close()
        case("SIGUSR1 calms the network: a forced reset before, a plain pass after",
             loud == ("reset", b"") and calm == (200, b"GET /calm 0:"), f"{loud} {calm}")


def test_blackhole():
    with Proxy("--profile", "none", "--blackhole-every", "1.5", "--blackhole-for", "1") as px:
        c = px.http()
        before = request(c, "GET", "/before-bh")
        c.close()
        time.sleep(max(0.0, px.t0 + 1.9 - time.monotonic()))  # window [1.5, 2.5) s
        t = time.monotonic()
        outcome = raw(px.port, put("/bh"))
        held = time.monotonic() - t
        time.sleep(0.1)
        c = px.http()
        after = request(c, "GET", "/after-bh")
        c.close()
        faults = [d["fault"] for d in px.decisions()]
        case("blackhole: held, never forwarded, then closed; traffic resumes after",
             before == (200, b"GET /before-bh 0:") and outcome == ("eof", b"")
             and 0.3 <= held <= 1.2 and SERVER.count("/bh") == 0
             and after == (200, b"GET /after-bh 0:")
             and faults == ["pass", "blackhole", "pass"],
             f"{before} {outcome} held {held:.2f}s count={SERVER.count('/bh')} {faults}")


def test_upstream_refused():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    with Proxy("--profile", "none", upstream=dead) as px:
        outcome = raw(px.port, put("/refused"))
        time.sleep(0.1)
        case("upstream refusing: client connection closed, logged",
             outcome == ("eof", b"") and len(px.events("upstream_error")) == 1,
             f"{outcome} {px.events('upstream_error')}")


MIX = ["--p-delay-request", ".15", "--p-delay-response", ".15", "--p-drop-response", ".2",
       "--p-reset-before", ".15", "--p-reset-after", ".15", "--delay-ms", "1:20"]


def schedule(seed):
    """A fixed client program: 5 connections of up to 4 requests each, a
    connection given up at its first failure. Returns the logged decisions."""
    with Proxy("--seed", str(seed), *MIX) as px:
        for i in range(5):
            c = px.http()
            try:
                for j in range(4):
                    request(c, "PUT", f"/sched/{i}/{j}", body=b"v")
            except (OSError, http.client.HTTPException):
                pass
            c.close()
    return [(d["conn"], d["req"], d["fault"], d["delay_ms"]) for d in px.decisions()]


def test_determinism():
    a, b, other = schedule(7), schedule(7), schedule(8)
    args = fault_proxy.parse_args(["--upstream", UPSTREAM, "--seed", "7", "--log", "-", *MIX])
    recomputed = [(c, r, *fault_proxy.draw(7, c, r, fault_proxy.weights(args), (1, 20)))
                  for c, r, _, _ in a]
    case("same seed, same decisions for the same (conn, req) sequence",
         a == b and a == recomputed and len({f for _, _, f, _ in a}) >= 3 and a != other,
         f"\n  {a}\n  {b}\n  {other}")


def main():
    began = time.monotonic()
    for test in (test_pass, test_delays, test_drop_and_resets, test_blackhole, test_calm,
                 test_upstream_refused, test_determinism):
        try:
            test()
        except Exception:
            case(test.__name__, False, traceback.format_exc())
    case("every proxy exits 0 on SIGTERM with a summary on stderr",
         stops and all(rc == 0 and "requests: pass=" in err for rc, err in stops),
         f"{[(rc, err[-300:]) for rc, err in stops if rc != 0 or 'requests: pass=' not in err]}")
    if all(results):
        shutil.rmtree(TMP, ignore_errors=True)
    print(f"({time.monotonic() - began:.1f}s" + ("" if all(results) else f", logs in {TMP}") + ")")
    print(f"{results.count(True)} passed, {results.count(False)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
