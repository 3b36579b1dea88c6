#!/usr/bin/env python3
"""`baton` on real S3 stores: what it says and how it exits when a store cannot work.

s3rver (BATON_S3RVER_*), which ignores preconditions:
  - `probe` prints what failed and says leases are refused (exit 1);
  - `run` refuses with one line (exit 64) and never starts the command;
  - `status` (reads only) still works.
Ceph RGW (BATON_S3_*):
  - `probe` reports the quirks (unquoted If-Match, DELETE ignoring If-Match, so
    release by marker) and supports leases; `run` then `status` under a prefix;
  - a missing bucket, a wrong secret, a bad endpoint variable and impossible
    addressing: one clear line each, exit 64, the command never started;
  - endpoint precedence: AWS_ENDPOINT_URL_S3 over AWS_ENDPOINT_URL, --endpoint over
    both, AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true ignores them.
dynalite (BATON_DYNAMODB_*): a missing table is one line, exit 64.
s3rver + dynalite, the commit protocol (s3://bucket/prefix?lock=dynamodb://table, and
?lock=file:///dir): `probe` on the bare s3rver URL suggests the composed form; on the
composed URL it reports leases supported; `run`, `status` and `kv` work through it; a lock
URL of another kind is a usage error; a missing lock table is named as such (not as the
bucket; `kv get` included, whose recipe keeps no diagnostics), a missing bucket as the bucket.
No server: every malformed store URL is one line, exit 64, listing the accepted forms.

Sections whose server variables are missing are skipped (run under
tests/servers/with-servers.sh rgw dynalite s3rver).

Usage: cli_s3_checks.py BATON_BINARY
"""
import json, os, subprocess, sys, tempfile, time, urllib.request, uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from s3_request import create_bucket, dynamodb_call, s3_request

AWS_VARS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
            "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
            "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
            "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI")

baton = sys.argv[1]
failures = []
checks = 0


def run(args, env, timeout=60):
    full = {k: v for k, v in os.environ.items() if k not in AWS_VARS}
    full.update(env)
    p = subprocess.run([baton] + args, env=full, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def unique(prefix):
    """A bucket or table name no other run (or parallel run) uses."""
    return prefix + uuid.uuid4().hex


def check(name, ok, detail=""):
    global checks
    checks += 1
    print(("PASS: " if ok else "FAIL: ") + name + ("" if ok else "\n      " + detail.replace("\n", "\n      ")))
    if not ok:
        failures.append(name)


def json_document(text):
    """The one JSON document `text` holds, or None."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def one_line(stderr):
    lines = [l for l in stderr.splitlines() if l.strip()]
    return lines[0] if len(lines) == 1 else None


def expect_refusal(name, args, env, *parts, code=64, secret=None):
    """The command exits `code` with exactly one stderr line containing every part."""
    rc, out, err = run(args, env)
    line = one_line(err)
    ok = rc == code and line is not None and all(p in line for p in parts)
    if secret:
        ok = ok and secret not in err and secret not in out
    check(name, ok, "exit %d, stdout %r, stderr %r" % (rc, out, err))


def marker_command(work):
    marker = os.path.join(work, "ran-%d" % checks)
    return marker, ["--", "sh", "-c", "touch " + marker]


def s3_store(prefix):
    """A fresh bucket on the server named by the BATON_<prefix>_* variables, the CLI's environment
    for it, and its s3:// store URL with the prefix 'locks/'."""
    endpoint = os.environ["BATON_%s_ENDPOINT" % prefix]
    region = os.environ.get("BATON_%s_REGION" % prefix, "us-east-1")
    ak, sk = os.environ["BATON_%s_ACCESS_KEY" % prefix], os.environ["BATON_%s_SECRET_KEY" % prefix]
    bucket = unique("baton-cli-")
    create_bucket(endpoint, region, ak, sk, bucket)
    env = {"AWS_ENDPOINT_URL_S3": endpoint, "AWS_REGION": region, "AWS_ACCESS_KEY_ID": ak,
           "AWS_SECRET_ACCESS_KEY": sk}
    return endpoint, region, ak, sk, bucket, env, "s3://%s/locks" % bucket


def s3rver_checks(work):
    endpoint, region, ak, sk, bucket, env, store = s3_store("S3RVER")

    rc, out, err = run(["probe", "--store", store], env)
    check("s3rver: probe exits 1 and refuses leases, naming what failed",
          rc == 1 and "leases: REFUSED: leases need conditional create and replace; failed:" in out
          and "check: put if absent on an existing key: accepted" in out
          and "conditional create (put if absent): NOT honoured" in out
          and "conditional replace (put if matching): NOT honoured" in out,
          "exit %d\nstdout:\n%s\nstderr:\n%s" % (rc, out, err))

    rc, out, err = run(["probe", "--store", store, "--json"], env)
    doc = json_document(out)
    check("s3rver: probe --json exits 1: leases refused, with the reason and neither condition honoured",
          rc == 1 and doc is not None and doc.get("leases") == "refused" and doc.get("reason")
          and doc.get("conditional_create") is False and doc.get("conditional_replace") is False,
          "exit %d, stdout %r, stderr %r" % (rc, out, err))

    marker, cmd = marker_command(work)
    expect_refusal("s3rver: run refuses with one line, exit 64",
                   ["run", "--store", store, "--key", "jobs/nightly", "--no-wait"] + cmd, env,
                   "baton: cannot acquire lease 'jobs/nightly': bucket '%s', prefix 'locks/' at %s" % (bucket, endpoint),
                   "cannot hold leases safely: conditional create refused",
                   "'baton probe --store %s' shows what it honours" % store)
    check("s3rver: the refused command never ran", not os.path.exists(marker))

    # Waiting would not help either: the refusal is immediate.
    marker, cmd = marker_command(work)
    expect_refusal("s3rver: run without --no-wait refuses at once too",
                   ["run", "--store", store, "--key", "jobs/other"] + cmd, env, "cannot hold leases safely")
    check("s3rver: that command never ran either", not os.path.exists(marker))

    rc, out, err = run(["status", "--store", store, "--key", "jobs/nightly"], env)
    check("s3rver: status still reads (no preconditions needed)",
          rc == 0 and "state:  free" in out, "exit %d, stdout %r, stderr %r" % (rc, out, err))

    rc, out, err = run(["probe", "--store", store], env)
    check("s3rver: probe suggests the commit protocol's composed store URL",
          rc == 1 and ("hint: coordinate through a lock store that has conditional writes (the commit protocol): "
                       "--store '%s?lock=dynamodb://TABLE'" % store) in out, "exit %d\nstdout:\n%s" % (rc, out))


def commit_checks(work):
    endpoint, region, ak, sk, bucket, env, s3_url = s3_store("S3RVER")
    dynamo = os.environ["BATON_DYNAMODB_ENDPOINT"]
    table = unique("baton-commit-")
    dynamodb_call(dynamo, "CreateTable", {
        "TableName": table, "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]})
    deadline = time.time() + 30
    while dynamodb_call(dynamo, "DescribeTable", {"TableName": table})["Table"]["TableStatus"] != "ACTIVE":
        if time.time() > deadline:
            raise RuntimeError("table %s did not become ACTIVE within 30 s" % table)
        time.sleep(0.1)
    env = dict(env, AWS_ENDPOINT_URL_DYNAMODB=dynamo)
    for kind, lock in (("dynamodb", "dynamodb://" + table), ("file", "file://" + os.path.join(work, "commit-locks"))):
        store = "%s-%s?lock=%s" % (s3_url, kind, lock)
        rc, out, err = run(["probe", "--store", store], env)
        check("commit (%s): probe on the composed store reports leases supported" % kind,
              rc == 0 and "leases: supported" in out and "check: lock store: " in out
              and "check: object store: write, read and delete of a scratch object: ok" in out
              and ("commits in table '%s'" % table if kind == "dynamodb" else "commits in directory") in out,
              "exit %d\nstdout:\n%s\nstderr:\n%s" % (rc, out, err))
        marker = os.path.join(work, "commit-ran-" + kind)
        rc, out, err = run(["run", "--store", store, "--key", "jobs/nightly", "--no-wait", "--",
                            "sh", "-c", 'echo "$BATON_FENCING_TOKEN" > ' + marker], env)
        token = open(marker).read().strip() if os.path.exists(marker) else None
        check("commit (%s): run holds the lease and runs the command with token 1" % kind,
              rc == 0 and token == "1", "exit %d, token %r, stderr %r" % (rc, token, err))
        rc, out, err = run(["status", "--store", store, "--key", "jobs/nightly", "--json"], env)
        doc = json_document(out)
        check("commit (%s): status reads the released lease and its token through the protocol" % kind,
              rc == 0 and doc is not None and doc.get("state") == "released" and doc.get("token") == 1,
              "exit %d, stdout %r, stderr %r" % (rc, out, err))
        rc1, out1, err1 = run(["kv", "put", "--store", store, "_log/00000.json", "--value", "first", "--if-absent"], env)
        rc2, out2, err2 = run(["kv", "put", "--store", store, "_log/00000.json", "--value", "second", "--if-absent"], env)
        rc3, out3, err3 = run(["kv", "get", "--store", store, "_log/00000.json", "--json"], env)
        doc = json_document(out3)
        check("commit (%s): kv put --if-absent wins once; the second is refused; get returns the first" % kind,
              rc1 == 0 and rc2 != 0 and rc3 == 0 and doc is not None and doc.get("value") == "first",
              "exits %d %d %d\n%s\n%s\n%s\n%s" % (rc1, rc2, rc3, err1, err2, out3, err3))
    expect_refusal("commit: a lock store of another kind is a usage error, exit 64",
                   ["probe", "--store", s3_url + "?lock=s3://other"], env,
                   "the lock store must be dynamodb://TABLE or file:///DIR")

    # A missing part of the composed store: the headline names the part that is missing.
    missing_table = unique("baton-missing-")
    store = "%s?lock=dynamodb://%s" % (s3_url, missing_table)
    lock_line = "lock table '%s' does not exist at %s (endpoint from AWS_ENDPOINT_URL_DYNAMODB)" % (missing_table, dynamo)
    for command in ("probe", "status", "run", "table"):
        marker, cmd = marker_command(work)
        args = {"probe": ["probe", "--store", store], "status": ["status", "--store", store, "--key", "k"],
                "run": ["run", "--store", store, "--key", "k"] + cmd, "table": ["table", "status", "--store", store]}[command]
        rc, out, err = run(args, env)
        line = one_line(err)
        check("commit: %s with a missing lock table names the table, not the bucket, exit 64" % command,
              rc == 64 and line is not None and lock_line in line and "ResourceNotFoundException" in line
              and "check the table in ?lock=" in line and "prefix 'locks/' does not exist" not in line,
              "exit %d, stdout %r, stderr %r" % (rc, out, err))
        if command == "run":
            check("commit: the command did not run for a missing lock table", not os.path.exists(marker))
    # kv's reads keep no diagnostics: baton reads the key again from the store to name the part.
    rc, out, err = run(["kv", "get", "--store", store, "k"], env)
    line = one_line(err)
    check("commit: kv get with a missing lock table names the table, not the bucket, exit 64",
          rc == 64 and line is not None and line.startswith("baton: cannot kv get 'k': " + lock_line)
          and "ResourceNotFoundException" in line and "check the table in ?lock=" in line
          and "bucket '" not in line, "exit %d, stdout %r, stderr %r" % (rc, out, err))
    missing_bucket = unique("baton-missing-")
    expect_refusal("commit: probe with a missing bucket (and the lock table there) names the bucket, exit 64",
                   ["probe", "--store", "s3://%s/locks?lock=dynamodb://%s" % (missing_bucket, table)], env,
                   "bucket '%s', prefix 'locks/' does not exist at %s" % (missing_bucket, endpoint), "NoSuchBucket")


def rgw_checks(work):
    endpoint, region, ak, sk, bucket, env, store = s3_store("S3")

    rc, out, err = run(["probe", "--store", store], env)
    check("rgw: probe reports the quirks and supports leases",
          rc == 0 and ("store: %s (bucket '%s', prefix 'locks/' at %s (endpoint from AWS_ENDPOINT_URL_S3), path-style)"
                       % (store, bucket, endpoint)) in out
          and "quirk: If-Match matches only the unquoted ETag here; baton sends it unquoted" in out
          and "conditional erase (delete if matching): NOT honoured; leases release by writing a marker" in out
          and "conditional create (put if absent): honoured" in out
          and "conditional replace (put if matching): honoured" in out
          and out.rstrip().endswith("leases: supported"),
          "exit %d\nstdout:\n%s\nstderr:\n%s" % (rc, out, err))

    # --ttl 3s: should the release fail, the record can be taken over 6 s later (the default would take 40 s).
    rc, out, run_err = run(["run", "--store", store, "--key", "jobs/nightly", "--no-wait", "--ttl", "3s", "--",
                            "sh", "-c", 'echo "$BATON_LEASE_KEY $BATON_FENCING_TOKEN"'], env)
    check("rgw: run gives the command its key and token 1", rc == 0 and out.strip() == "jobs/nightly 1",
          "exit %d, stdout %r, stderr %r" % (rc, out, run_err))
    # A release that fails (RGW 5xx or timeouts through every retry) is documented: baton says so on
    # stderr, exits with the command's status, and the record stays held until it is taken over.
    release_failed = "baton: release failed" in run_err
    rc, out, err = run(["status", "--store", store, "--key", "jobs/nightly"], env)
    released = rc == 0 and "state:  released" in out
    check("rgw: status shows the released record (or the held one, when the release was reported failed) "
          "and its token", rc == 0 and "token:  1" in out and (released or (release_failed and "state:  held" in out)),
          "exit %d, stdout %r, stderr %r; the run's stderr %r" % (rc, out, err, run_err))
    if not released:
        print("NOTE: the first holder's release failed (%s); the next holder takes the record over after "
              "ttl x 2 instead of at once" % run_err.strip().replace("\n", " | "))
    status_in, _ = s3_request("GET", endpoint, region, ak, sk, "/%s/locks/jobs/nightly" % bucket)
    status_out, _ = s3_request("GET", endpoint, region, ak, sk, "/%s/jobs/nightly" % bucket)
    check("rgw: the record lives under the store's prefix", status_in == 200 and status_out == 404,
          "GET under the prefix %d, outside %d" % (status_in, status_out))
    # Released: in at once (--no-wait); not released: a takeover after ttl x 2, with the same token.
    wait = ["--no-wait"] if released else ["--wait", "30s"]
    rc, out, err = run(["run", "--store", store, "--key", "jobs/nightly"] + wait + ["--",
                        "sh", "-c", 'echo "$BATON_FENCING_TOKEN"'], env, timeout=90)
    check("rgw: the next holder gets token 2", rc == 0 and out.strip() == "2",
          "exit %d, stdout %r, stderr %r" % (rc, out, err))

    # --json: one document each, with what the text output says.
    rc, out, err = run(["status", "--store", store, "--key", "jobs/nightly", "--json"], env)
    doc = json_document(out)
    check("rgw: status --json is one document with the holder's token and state",
          rc == 0 and doc is not None and doc.get("key") == "jobs/nightly" and doc.get("token") == 2
          and doc.get("state") in ("released", "held") and doc.get("ttl_ms", 0) > 0 and doc.get("holder"),
          "exit %d, stdout %r, stderr %r" % (rc, out, err))
    rc, out, err = run(["probe", "--store", store, "--json"], env)
    doc = json_document(out)
    check("rgw: probe --json: conditional create and replace honoured, leases supported, the checks listed",
          rc == 0 and doc is not None and doc.get("conditional_create") is True
          and doc.get("conditional_replace") is True and doc.get("leases") == "supported"
          and "unquoted_if_match" in doc and len(doc.get("checks", [])) >= 3,
          "exit %d, stdout %r, stderr %r" % (rc, out, err))
    rc, out, err = run(["status", "--store", store, "--key", "never/held", "--json"], env)
    check("rgw: status --json of a key never held: state free", rc == 0 and out.strip() == '{"key":"never/held","state":"free"}',
          "exit %d, stdout %r, stderr %r" % (rc, out, err))

    # --metrics-file and --verbose: the figures of one run, and its events on stderr.
    metrics = os.path.join(work, "baton.prom")
    # ttl 6s: renewals every ~2 s, so the 4.5 s command sees at least one unless an answer takes over 2 s.
    rc, out, err = run(["run", "--store", store, "--key", "metrics/k", "--ttl", "6s", "--metrics-file", metrics,
                        "--verbose", "--", "sleep", "4.5"], env)
    text = open(metrics).read() if os.path.exists(metrics) else ""
    renewals = [l for l in text.splitlines() if l.startswith('baton_lease_renewals_total{key="metrics/k"} ')]
    if rc == 143 and "baton: event: lost 'metrics/k'" in err:
        # Documented: renewals stalled past the renew deadline on a loaded machine; the loss is what is counted.
        print("NOTE: the metrics run lost its lease (renewals stalled); checking that the loss was counted")
        check("rgw: run --metrics-file counts a loss by its reason",
              'baton_lease_losses_total{key="metrics/k",reason=' in text, "metrics:\n%s" % text)
    else:
        check("rgw: run --metrics-file writes Prometheus text: created once, renewed, released, no longer held",
              rc == 0 and 'baton_lease_acquisitions_total{key="metrics/k",how="created"} 1\n' in text
              and len(renewals) == 1 and int(renewals[0].split()[-1]) >= 1
              and 'baton_lease_releases_total{key="metrics/k",result="ok"} 1\n' in text
              and 'baton_lease_held{key="metrics/k"} 0\n' in text
              and 'baton_lease_requests_total{key="metrics/k",lane="acquire",request="write",outcome="ok"} 1\n' in text
              and "# TYPE baton_lease_renewal_latency_seconds histogram" in text
              and not [f for f in os.listdir(work) if f.startswith("baton.prom.tmp")],
              "exit %d, stderr %r, metrics:\n%s" % (rc, err, text))
        check("rgw: run --verbose prints the acquisition, each renewal with latency and margin, and the release",
              "baton: event: acquired 'metrics/k' with token 1 (record created)" in err
              and "baton: event: renewed 'metrics/k' (token 1) in " in err and " before the renew deadline" in err
              and "baton: event: renew write: ok in " in err and "baton: event: released 'metrics/k' (token 1): ok" in err
              and sk not in err, "stderr %r" % err)
    expect_refusal("rgw: run --metrics-file in a missing directory: one line, exit 64",
                   ["run", "--store", store, "--key", "metrics/k", "--metrics-file", os.path.join(work, "no", "m.prom"),
                    "--", "true"], env, "--metrics-file " + os.path.join(work, "no", "m.prom"), "No such file or directory")

    missing = unique("baton-missing-")
    for command in ("probe", "status", "run"):
        marker, cmd = marker_command(work)
        args = [command, "--store", "s3://" + missing]
        if command != "probe":
            args += ["--key", "k"]
        if command == "run":
            args += cmd
        expect_refusal("rgw: %s on a missing bucket: one line naming NoSuchBucket, exit 64" % command, args, env,
                       "bucket '%s' does not exist at %s (endpoint from AWS_ENDPOINT_URL_S3)" % (missing, endpoint),
                       "NoSuchBucket",
                       "create it, or check --store, --endpoint and --region")
        if command == "run":
            check("rgw: the command did not run for a missing bucket", not os.path.exists(marker))

    wrong = dict(env, AWS_SECRET_ACCESS_KEY="definitely-not-the-secret")
    for command in ("probe", "run"):
        marker, cmd = marker_command(work)
        args = [command, "--store", store] + (["--key", "k"] + cmd if command == "run" else [])
        expect_refusal("rgw: %s with a wrong secret: one line, exit 64, secret never shown" % command, args, wrong,
                       "refused the credentials (access key id %s, long-term, secret ***)" % ak,
                       "SignatureDoesNotMatch", "check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY",
                       secret="definitely-not-the-secret")
        if command == "run":
            check("rgw: the command did not run with wrong credentials", not os.path.exists(marker))

    # Endpoint precedence, through the CLI.
    dead = "http://127.0.0.1:9"
    rc, out, err = run(["probe", "--store", store], dict(env, AWS_ENDPOINT_URL=dead))
    check("rgw: AWS_ENDPOINT_URL_S3 wins over AWS_ENDPOINT_URL", rc == 0, "exit %d, stderr %r" % (rc, err))
    only_general = {k: v for k, v in env.items() if k != "AWS_ENDPOINT_URL_S3"}
    rc, out, err = run(["probe", "--store", store], dict(only_general, AWS_ENDPOINT_URL=endpoint))
    check("rgw: AWS_ENDPOINT_URL serves S3 when it has no variable of its own",
          rc == 0 and "(endpoint from AWS_ENDPOINT_URL)" in out, "exit %d, stdout %r, stderr %r" % (rc, out, err))
    bad = dict(env, AWS_ENDPOINT_URL_S3=endpoint + "/" + bucket)
    expect_refusal("rgw: a bad AWS_ENDPOINT_URL_S3 is named, exit 64", ["probe", "--store", store], bad,
                   "AWS_ENDPOINT_URL_S3: invalid endpoint URL: it must not have a path")
    rc, out, err = run(["probe", "--store", store, "--endpoint", endpoint], bad)
    check("rgw: --endpoint wins over the variables (and they are not even read)",
          rc == 0 and "(endpoint from --endpoint)" in out, "exit %d, stdout %r, stderr %r" % (rc, out, err))
    ignored = {k: v for k, v in env.items() if k != "AWS_REGION"}
    expect_refusal("rgw: AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true falls back to AWS (which needs a region)",
                   ["probe", "--store", store], dict(ignored, AWS_IGNORE_CONFIGURED_ENDPOINT_URLS="true"),
                   "no region: pass --region or set AWS_REGION (it names the AWS S3 endpoint)")
    expect_refusal("rgw: --virtual-hosted on an IP endpoint is refused, exit 64",
                   ["probe", "--store", store, "--virtual-hosted"], env,
                   "virtual-hosted addressing needs a host name")
    expect_refusal("cli: --path-style applies to s3:// only", ["probe", "--store", "dynamodb://t1x", "--path-style"],
                   env, "--path-style and --virtual-hosted apply to s3:// stores only")


def dynamodb_checks(work):
    endpoint = os.environ["BATON_DYNAMODB_ENDPOINT"]
    env = {"AWS_ENDPOINT_URL_DYNAMODB": endpoint,
           "AWS_REGION": os.environ.get("BATON_DYNAMODB_REGION", "us-east-1"),
           "AWS_ACCESS_KEY_ID": os.environ.get("BATON_DYNAMODB_ACCESS_KEY", "baton"),
           "AWS_SECRET_ACCESS_KEY": os.environ.get("BATON_DYNAMODB_SECRET_KEY", "baton")}
    table = unique("baton-missing-")
    marker, cmd = marker_command(work)
    expect_refusal("dynalite: run on a missing table: one line, exit 64",
                   ["run", "--store", "dynamodb://" + table, "--key", "k"] + cmd, env,
                   "table '%s' does not exist at %s (endpoint from AWS_ENDPOINT_URL_DYNAMODB)" % (table, endpoint))
    check("dynalite: the command did not run for a missing table", not os.path.exists(marker))

    # Credentials and region from a profile (the default chain), nothing in the environment.
    with open(os.path.join(work, "config"), "w") as f:
        f.write("[profile ci]\nregion = %s\n" % env["AWS_REGION"])
    with open(os.path.join(work, "credentials"), "w") as f:
        f.write("[ci]\naws_access_key_id = %s\naws_secret_access_key = %s\n"
                % (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]))
    profile_env = {"AWS_ENDPOINT_URL_DYNAMODB": endpoint, "AWS_PROFILE": "ci",
                   "AWS_CONFIG_FILE": os.path.join(work, "config"),
                   "AWS_SHARED_CREDENTIALS_FILE": os.path.join(work, "credentials")}
    expect_refusal("dynalite: region and credentials from a profile reach the store",
                   ["status", "--store", "dynamodb://" + table, "--key", "k"], profile_env,
                   "table '%s' does not exist" % table)
    expect_refusal("dynalite: status on a missing table names the service's ResourceNotFoundException, exit 64",
                   ["status", "--store", "dynamodb://" + table, "--key", "k"], env,
                   "table '%s' does not exist" % table, "ResourceNotFoundException")

    # No credentials anywhere: one line naming every source tried, before anything is sent.
    bare_env = {"AWS_ENDPOINT_URL_DYNAMODB": endpoint, "AWS_REGION": env["AWS_REGION"],
                "HOME": os.path.join(work, "no-home"), "AWS_EC2_METADATA_DISABLED": "true"}
    expect_refusal("dynalite: no credentials: one line listing the sources tried, exit 64",
                   ["status", "--store", "dynamodb://" + table, "--key", "k"], bare_env,
                   "no AWS credentials found; tried: environment (AWS_ACCESS_KEY_ID not set)",
                   "web identity", "profile 'default'", "container", "instance metadata (AWS_EC2_METADATA_DISABLED")


STORE_FORMS = ("accepted forms: file:///dir, s3://bucket[/prefix], "
               "s3://bucket[/prefix]?lock=dynamodb://table|file:///dir, dynamodb://table")


def store_url_checks():
    """No server: every store URL error is one line, exit 64, naming the accepted forms."""
    for url, why in (("s3:/bucket", "not a URL"), ("s3//bucket", "not a URL"), ("bucket", "not a URL"),
                     ("S3://bucket", "unknown scheme 'S3' (schemes are lower case)"),
                     ("dynamo://t", "unknown scheme 'dynamo'"), ("s3://", "an s3 URL names a bucket"),
                     ("file://relative/dir", "a file URL needs an absolute path"),
                     ("dynamodb://a/b", "a dynamodb URL names one table"),
                     ("s3://b/p?x=1", "the only query is ?lock="),
                     ("s3://b/p?lock=dynamo://t", "unknown scheme 'dynamo'"),
                     ("s3://b/p?lock=s3://c", "the lock store must be dynamodb://TABLE or file:///DIR")):
        expect_refusal("store URL %r: one line naming the accepted forms, exit 64" % url,
                       ["status", "--store", url, "--key", "k"], {}, "--store '%s': %s" % (url, why), STORE_FORMS)
    expect_refusal("no --store: one line naming the accepted forms, exit 64", ["status", "--key", "k"], {},
                   "--store is required; " + STORE_FORMS)


def main():
    work = tempfile.mkdtemp(prefix="baton-cli-s3-")
    store_url_checks()
    ran = ["store URLs"]
    for name, var, fn in (("s3rver", "BATON_S3RVER_ENDPOINT", s3rver_checks), ("rgw", "BATON_S3_ENDPOINT", rgw_checks),
                          ("dynalite", "BATON_DYNAMODB_ENDPOINT", dynamodb_checks)):
        if os.environ.get(var):
            fn(work)
            ran.append(name)
        else:
            print("skipped %s: %s is not set" % (name, var))
    if os.environ.get("BATON_S3RVER_ENDPOINT") and os.environ.get("BATON_DYNAMODB_ENDPOINT"):
        commit_checks(work)
        ran.append("s3rver + dynalite (commit protocol)")
    else:
        print("skipped the commit protocol: it needs s3rver and dynalite")
    if ran == ["store URLs"]:
        print("skipped the servers: no server variables (run under tests/servers/with-servers.sh rgw dynalite s3rver)")
    if failures:
        print("%d of %d checks failed" % (len(failures), checks))
        sys.exit(1)
    print("CLI checks on %s: %d passed" % (", ".join(ran), checks))


if __name__ == "__main__":
    main()
