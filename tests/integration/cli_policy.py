#!/usr/bin/env python3
"""`baton probe --policy`: the bucket policy it prints, and that baton's own requests pass it.

Without a server:
  - the policy for s3://example-bucket/locks is data/s3-policy-example-bucket-locks.json byte for
    byte, parses as JSON, and stdout holds nothing else (the notes go to stderr);
  - the Resource follows the prefix (none: the whole bucket) and the region's partition;
  - --policy is refused, one line, exit 64: on ?lock= stores, on file:// and dynamodb://
    stores, with --json, on other commands, and with a prefix holding wildcard characters.
Ceph RGW (BATON_S3_*; skipped with one line without them):
  - probe, run, kv put (plain, --if-absent, --fence), kv rm, the lease table (register,
    retire, a worker) and a probe that fails midway (the proxy answers its writes after the
    first with a 500) through a recording proxy: every PUT and DELETE under the prefix carries
    If-None-Match or If-Match, so the policy, which exempts nothing, would let all of them
    through; the failed probe deleted its scratch object all the same; no CopyObject, no POST;
  - what RGW 16.2 makes of the policy (for docs/stores.md): it accepts it, lets an
    unconditional PUT through, and refuses a DELETE even with If-Match.

Usage: cli_policy.py BATON_BINARY
"""
import http.client, http.server, json, os, signal, subprocess, sys, tempfile, threading, time, uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
from s3_request import create_bucket, s3_request  # noqa: E402

GOLDEN = os.path.join(HERE, "data", "s3-policy-example-bucket-locks.json")
baton = sys.argv[1]
failures = []
checks = 0
home = tempfile.mkdtemp(prefix="baton-cli-policy-")


def run(args, env=None, timeout=60):
    """baton with no AWS setting but `env` (and an empty home: no shared files)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    full.update({"HOME": home, "AWS_EC2_METADATA_DISABLED": "true"})
    full.update(env or {})
    p = subprocess.run([baton] + args, env=full, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def check(name, ok, detail=""):
    global checks
    checks += 1
    print(("PASS: " if ok else "FAIL: ") + name + ("" if ok else "\n      " + detail.replace("\n", "\n      ")))
    if not ok:
        failures.append(name)


def refused(name, args, *parts):
    rc, out, err = run(args)
    lines = [l for l in err.splitlines() if l.strip()]
    check(name, rc == 64 and out == "" and len(lines) == 1 and all(p in lines[0] for p in parts),
          "exit %d, stdout %r, stderr %r" % (rc, out, err))


def resources(doc):
    return [s.get("Resource") for s in doc.get("Statement", [])]


def offline_checks():
    rc, out, err = run(["probe", "--store", "s3://example-bucket/locks", "--policy"])
    golden = open(GOLDEN).read()
    check("policy: stdout is the golden file, byte for byte, and exit 0", rc == 0 and out == golden,
          "exit %d, stdout:\n%s\nstderr:\n%s" % (rc, out, err))
    try:
        doc = json.loads(out)
    except ValueError as e:
        doc = {}
        print("      (not JSON: %s)" % e)
    statements = doc.get("Statement", [])
    put = next((s for s in statements if s.get("Action") == "s3:PutObject"), {})
    delete = next((s for s in statements if s.get("Action") == "s3:DeleteObject"), {})
    check("policy: parses; Deny to everyone, PutObject without either header, DeleteObject without If-Match",
          doc.get("Version") == "2012-10-17" and len(statements) == 2
          and all(s.get("Effect") == "Deny" and s.get("Principal") == "*" for s in statements)
          and put.get("Condition") == {"Null": {"s3:if-none-match": "true", "s3:if-match": "true"},
                                       "Bool": {"s3:ObjectCreationOperation": "true"}}
          and delete.get("Condition") == {"Null": {"s3:if-match": "true"}}
          and resources(doc) == ["arn:aws:s3:::example-bucket/locks/*"] * 2, out)
    check("policy: stderr says how to apply it, that it replaces a policy, and what it does not cover",
          "aws s3api put-bucket-policy --bucket example-bucket --policy file://policy.json" in err
          and "REPLACES the bucket's policy" in err and "not covered:" in err
          and "s3:DeleteObjectVersion" in err and "s3:PutBucketPolicy" in err
          and "locks/.baton-probe/" in err and "Ceph RGW 16.2" in err
          and "deleted with If-Match on the ETag read back" in err and "unconditional DELETE" not in err
          and "https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes-enforce.html" in err
          and "note: the endpoint" not in err, err)

    rc, out, err = run(["probe", "--store", "s3://example-bucket", "--policy"])
    check("policy: without a prefix, the whole bucket", rc == 0 and resources(json.loads(out or "{}"))
          == ["arn:aws:s3:::example-bucket/*"] * 2, "exit %d, stdout %r" % (rc, out))
    rc, out, err = run(["probe", "--store", "s3://example-bucket/a/b/", "--policy", "--region", "cn-north-1"])
    check("policy: a China region names the aws-cn partition", rc == 0 and resources(json.loads(out or "{}"))
          == ["arn:aws-cn:s3:::example-bucket/a/b/*"] * 2, "exit %d, stdout %r" % (rc, out))
    rc, out, err = run(["probe", "--store", "s3://example-bucket/locks", "--policy"],
                       {"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9"})
    check("policy: with a custom endpoint, a note that it may not be AWS S3 (and the same policy)",
          rc == 0 and out == golden and "note: the endpoint http://127.0.0.1:9 (from AWS_ENDPOINT_URL_S3) may not be AWS S3"
          in err, "exit %d, stderr %r" % (rc, err))

    refused("policy: refused on a composed store", ["probe", "--store", "s3://b/p?lock=dynamodb://t", "--policy"],
            "--policy: the composed store ('?lock=') writes its objects without preconditions")
    for store in ("dynamodb://t", "file:///tmp/x"):
        refused("policy: refused on %s" % store, ["probe", "--store", store, "--policy"],
                "--policy applies to s3:// stores only")
    refused("policy: refused with --json", ["probe", "--store", "s3://b", "--policy", "--json"],
            "--policy prints JSON already")
    refused("policy: an option of probe only", ["status", "--store", "s3://b", "--key", "k", "--policy"],
            "unknown option '--policy' for 'baton status'")
    refused("policy: refused for a prefix with wildcard characters", ["probe", "--store", "s3://b/a*", "--policy"],
            "holds '*', '?' or '$'")


class Recorder(http.server.BaseHTTPRequestHandler):
    """Forwards each request to the upstream unchanged (Host included: the signature covers it) and
    records its method, target and headers. Under `failing` (a path prefix), every PUT after the
    first is answered 500 InternalError without reaching the upstream."""
    protocol_version = "HTTP/1.1"
    upstream = None
    seen = []
    failing, failing_puts = None, 0

    def log_message(self, *args):
        pass

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        Recorder.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        if Recorder.failing and self.command == "PUT" and self.path.startswith(Recorder.failing):
            Recorder.failing_puts += 1
            if Recorder.failing_puts > 1:
                error = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code>'
                         b'<Message>injected by cli_policy.py</Message></Error>')
                self.send_response_only(500, "Internal Server Error")
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(error)))
                self.end_headers()
                self.wfile.write(error)
                return
        conn = http.client.HTTPConnection(Recorder.upstream, timeout=30)
        conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in self.headers.items():
            conn.putheader(k, v)
        conn.endheaders(body or None)
        res = conn.getresponse()
        data = res.read()
        self.send_response_only(res.status, res.reason)
        for k, v in res.getheaders():
            if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()

    do_GET = do_PUT = do_DELETE = do_HEAD = do_POST = forward


def rgw_checks():
    endpoint = os.environ["BATON_S3_ENDPOINT"]
    region = os.environ.get("BATON_S3_REGION", "us-east-1")
    ak, sk = os.environ["BATON_S3_ACCESS_KEY"], os.environ["BATON_S3_SECRET_KEY"]
    bucket = "baton-policy-" + uuid.uuid4().hex[:20]
    create_bucket(endpoint, region, ak, sk, bucket)

    Recorder.upstream = endpoint.split("://", 1)[1]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:%d" % server.server_address[1], "AWS_REGION": region,
           "AWS_ACCESS_KEY_ID": ak, "AWS_SECRET_ACCESS_KEY": sk}
    store = "s3://%s/locks" % bucket
    steps = [
        ("probe", ["probe", "--store", store], (0,)),
        ("run", ["run", "--store", store, "--key", "jobs/nightly", "--no-wait", "--ttl", "3s", "--", "true"], (0,)),
        ("kv put", ["kv", "put", "--store", store, "cfg/a", "--value", "1"], (0,)),
        ("kv put again", ["kv", "put", "--store", store, "cfg/a", "--value", "2"], (0,)),
        ("kv put --if-absent", ["kv", "put", "--store", store, "cfg/b", "--value", "1", "--if-absent"], (0,)),
        ("kv put --fence 5", ["kv", "put", "--store", store, "fenced/k", "--value", "a", "--fence", "5"], (0,)),
        ("kv put --fence 3 (fenced)", ["kv", "put", "--store", store, "fenced/k", "--value", "b", "--fence", "3"], (4,)),
        ("kv rm", ["kv", "rm", "--store", store, "cfg/a"], (0,)),
        ("table register", ["table", "register", "--store", store + "/table", "s1", "s2"], (0,)),
        ("table retire", ["table", "retire", "--store", store + "/table", "s2"], (0,)),
    ]
    for name, args, codes in steps:
        rc, out, err = run(args, env)
        check("rgw through the proxy: %s exits %s" % (name, "/".join(map(str, codes))), rc in codes,
              "exit %d, stdout %r, stderr %r" % (rc, out, err))
    # A worker: claims the shard, checkpoints, hands it over on SIGTERM (worker, shard and marker writes).
    full = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    full.update(env, HOME=home)
    worker = subprocess.Popen([baton, "table", "work", "--store", store + "/table", "--worker", "w1", "--records", "3",
                               "--step", "50ms", "--ttl", "3s"], env=full, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    time.sleep(2.5)
    worker.send_signal(signal.SIGTERM)
    try:
        out, err = worker.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        worker.kill()
        out, err = worker.communicate()
    check("rgw through the proxy: a table worker runs and exits 0 on SIGTERM", worker.returncode == 0,
          "exit %s, stderr %r" % (worker.returncode, err))
    rc, out, err = run(["table", "status", "--store", store + "/table", "--json"], env)
    shards = {s.get("shard"): s for s in json.loads(out or "{}").get("shards", [])}
    check("rgw through the proxy: the worker checkpointed shard s1", rc == 0 and shards.get("s1", {}).get("checkpoint"),
          "exit %d, stdout %r, stderr %r" % (rc, out, err))
    # A probe that fails midway (its second write answered 500): its cleanup is one more DELETE,
    # on the ETag it reads back, and the scratch object is gone.
    Recorder.failing = "/%s/locks/failing/.baton-probe/" % bucket
    rc, out, err = run(["probe", "--store", store + "/failing"], env)
    Recorder.failing = None
    check("rgw through the proxy: a probe whose second write gets a 500 fails, naming it",
          rc != 0 and "InternalError" in err and Recorder.failing_puts >= 2,
          "exit %d, %d PUTs under the failing prefix, stdout %r, stderr %r" % (rc, Recorder.failing_puts, out, err))
    cleanup = [(m, h) for m, p, h in Recorder.seen if m == "DELETE" and p.startswith("/%s/locks/failing/" % bucket)]
    status, listing = s3_request("GET", endpoint, region, ak, sk, "/" + bucket,
                                 query="list-type=2&prefix=locks%2Ffailing%2F")
    check("rgw through the proxy: the failed probe deleted its scratch object with If-Match",
          len(cleanup) == 1 and "if-match" in cleanup[0][1] and status == 200 and "<Key>" not in listing,
          "DELETEs %r, listing HTTP %d %s" % (cleanup, status, listing[:500]))
    # The checker's own check: a PUT without a header, sent through the proxy, must be the one flagged.
    self_test = "/%s/locks/checker-self-test" % bucket
    s3_request("PUT", env["AWS_ENDPOINT_URL_S3"], region, ak, sk, self_test, b"v")
    server.shutdown()

    under = "/%s/locks/" % bucket
    writes = [(m, p, h) for m, p, h in Recorder.seen if m in ("PUT", "DELETE") and p.startswith(under)]
    bare = [(m, p) for m, p, h in writes if "if-none-match" not in h and "if-match" not in h]
    check("rgw: the checker flags a PUT without a header (its own, sent through the proxy)",
          ("PUT", self_test) in bare, "flagged: %r" % bare)
    bare = [b for b in bare if b != ("PUT", self_test)]
    writes = [w for w in writes if w[1] != self_test]
    puts = sum(1 for m, p, h in writes if m == "PUT")
    deletes = sum(1 for m, p, h in writes if m == "DELETE")
    check("rgw: every PUT and DELETE baton sent under the prefix carries If-None-Match or If-Match "
          "(%d PUTs, %d DELETEs)" % (puts, deletes), puts >= 20 and deletes >= 1 and not bare,
          "without a header: %r" % bare)
    probe_keys = [p for m, p, h in writes if ".baton-probe/" in p]
    check("rgw: the probe's scratch writes are among them", len(probe_keys) >= 5, "%r" % probe_keys)
    other = [(m, p) for m, p, h in Recorder.seen if m not in ("GET", "HEAD", "PUT", "DELETE") or "x-amz-copy-source" in h
             or (m in ("PUT", "DELETE") and not p.startswith(under))]
    check("rgw: no other write (no CopyObject, POST, or request outside the prefix)", not other, "%r" % other)
    chunked = [(m, p) for m, p, h in Recorder.seen if "chunked" in h.get("transfer-encoding", "")]
    check("rgw: no chunked request bodies (the proxy reads Content-Length)", not chunked, "%r" % chunked)

    # What RGW 16.2 makes of the policy, on a bucket of its own.
    policed = "baton-policed-" + uuid.uuid4().hex[:20]
    create_bucket(endpoint, region, ak, sk, policed)
    rc, policy, err = run(["probe", "--store", "s3://%s/locks" % policed, "--policy"])
    status, text = s3_request("PUT", endpoint, region, ak, sk, "/" + policed, policy.encode(), query="policy=")
    check("rgw: put-bucket-policy accepts the policy", status in (200, 204), "HTTP %d %s" % (status, text[:300]))
    path = "/%s/locks/k" % policed
    plain = s3_request("PUT", endpoint, region, ak, sk, path, b"v")[0]
    check("rgw: the PUT statement is not evaluated: an unconditional PUT under the prefix passes", plain == 200,
          "HTTP %d" % plain)
    etag = None  # the object's current ETag, from a listing (s3_request returns no headers)
    listing = s3_request("GET", endpoint, region, ak, sk, "/" + policed, query="list-type=2&prefix=locks%2F")[1]
    if "<ETag>" in listing:
        etag = listing.split("<ETag>", 1)[1].split("</ETag>", 1)[0].replace("&quot;", "")
    conditional = s3_request("DELETE", endpoint, region, ak, sk, path, extra_headers={"If-Match": etag or "*"})[0]
    check("rgw: the DELETE statement refuses even a DELETE with If-Match (RGW does not know s3:if-match)",
          conditional == 403, "HTTP %d (etag %r)" % (conditional, etag))


def main():
    offline_checks()
    if os.environ.get("BATON_S3_ENDPOINT"):
        started = time.time()
        rgw_checks()
        print("RGW part: %.1f s" % (time.time() - started))
    else:
        print("skipped the RGW part: BATON_S3_ENDPOINT is not set (run under tests/servers/with-servers.sh rgw)")
    if failures:
        print("%d of %d checks failed" % (len(failures), checks))
        sys.exit(1)
    print("policy checks: %d passed" % checks)


if __name__ == "__main__":
    main()
