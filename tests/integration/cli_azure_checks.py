#!/usr/bin/env python3
"""`baton` on azblob:// stores: how it finds the account, and what it says when it cannot work.

No server:
  - azblob store URLs it cannot use, no account configured, a key that is not
    base64, a malformed connection string, a bad --endpoint: one line each,
    exit 64, no secret in it.
Azurite (BATON_AZURITE_*), each configuration as the Azure CLI reads it:
  - AZURE_STORAGE_ACCOUNT + AZURE_STORAGE_KEY + AZURE_STORAGE_SERVICE_ENDPOINT:
    `probe` supports leases and names where the endpoint came from;
  - --endpoint wins over AZURE_STORAGE_SERVICE_ENDPOINT (set to a dead port), and
    serves an account whose endpoint would otherwise be Azure's;
  - AZURE_STORAGE_CONNECTION_STRING with AccountName, AccountKey and BlobEndpoint:
    `run` then `status` under a prefix, the record under that prefix; it wins
    over the account variables (set to a wrong key);
  - AZURE_STORAGE_CONNECTION_STRING=UseDevelopmentStorage=true: the development
    account and key are Azurite's, so with --endpoint (Azurite's port is picked
    at start) it works; without, it goes to 127.0.0.1:10000, checked through a
    relay to Azurite when that port is free;
  - a missing container (probe, status, run): one line naming the container, the
    endpoint, ContainerNotFound and how to create it, exit 64, the command never run;
  - AZURE_STORAGE_SAS_TOKEN (an account SAS made here, as `az storage account
    generate-sas` makes them): `run` works with the account variables, and with
    --endpoint alone, which then names the account;
  - a wrong key (in AZURE_STORAGE_KEY or in the connection string), a wrong SAS
    token and a read-only one: one line naming the account and the variables to
    check, exit 64, the key or signature never shown, the command never run.

Usage: cli_azure_checks.py BATON_BINARY
"""
import base64, hashlib, hmac, json, os, socket, subprocess, sys, tempfile, threading, time, urllib.parse, uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from s3_request import create_container

# with-servers.sh exports Azurite's connection string: every check sets what it means to test.
AZURE_VARS = ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN",
              "AZURE_STORAGE_SERVICE_ENDPOINT")
DEV_ACCOUNT = "devstoreaccount1"
# Valid base64, 64 bytes like a real key, and not Azurite's.
WRONG_KEY = "d3Jvbmcga2V5IHdyb25nIGtleSB3cm9uZyBrZXkgd3Jvbmcga2V5IHdyb25nIGtleQ=="
CREDENTIAL_VARS = "check AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or " \
                  "AZURE_STORAGE_SAS_TOKEN"

baton = sys.argv[1] if len(sys.argv) > 1 else sys.exit("usage: cli_azure_checks.py BATON_BINARY")
failures = []
checks = 0


def run(args, env, timeout=60):
    full = {k: v for k, v in os.environ.items() if k not in AZURE_VARS}
    full.update(env)
    p = subprocess.run([baton] + args, env=full, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def check(name, ok, detail=""):
    global checks
    checks += 1
    print(("PASS: " if ok else "FAIL: ") + name + ("" if ok else "\n      " + detail.replace("\n", "\n      ")))
    sys.stdout.flush()
    if not ok:
        failures.append(name)


def one_line(stderr):
    lines = [l for l in stderr.splitlines() if l.strip()]
    return lines[0] if len(lines) == 1 else None


def expect_refusal(name, args, env, *parts, secrets=()):
    """The command exits 64 with exactly one stderr line containing every part, and none of `secrets`."""
    rc, out, err = run(args, env)
    line = one_line(err)
    ok = rc == 64 and line is not None and all(p in line for p in parts)
    ok = ok and not any(s in err or s in out for s in secrets)
    check(name, ok, "exit %d, stdout %r, stderr %r" % (rc, out, err))


def marker_command(work):
    marker = os.path.join(work, "ran-%d" % checks)
    return marker, ["--", "sh", "-c", "touch " + marker]


def account_sas(account, key, permissions):
    """An account SAS for the Blob service (version 2019-12-12, no start, any protocol), as the
    portal and `az storage account generate-sas` make them."""
    version, expiry = "2019-12-12", "2099-01-01T00:00:00Z"
    to_sign = "\n".join([account, permissions, "b", "sco", "", expiry, "", "", version]) + "\n"
    sig = base64.b64encode(hmac.new(base64.b64decode(key), to_sign.encode(), hashlib.sha256).digest()).decode()
    return "sv=%s&ss=b&srt=sco&sp=%s&se=%s&sig=%s" % (version, permissions, urllib.parse.quote(expiry, safe=""),
                                                      urllib.parse.quote(sig, safe=""))


def offline_checks():
    for url, why in (("azblob://", "an azblob URL names a container"),
                     ("azblob:///locks", "an azblob URL names a container"),
                     ("azblob://c/p?sig=x", "an azblob URL takes no query (credentials come from the environment)"),
                     ("AZBLOB://c", "unknown scheme 'AZBLOB' (schemes are lower case)")):
        expect_refusal("store URL %r: one line, exit 64" % url, ["status", "--store", url, "--key", "k"], {},
                       "--store '%s': %s" % (url, why), "azblob://container[/prefix]")
    expect_refusal("no Azure account configured: one line naming the variables, exit 64",
                   ["status", "--store", "azblob://c", "--key", "k"], {},
                   "azblob: no Azure Storage account is configured: set AZURE_STORAGE_CONNECTION_STRING, or "
                   "AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN")
    expect_refusal("AZURE_STORAGE_ACCOUNT without a key or SAS token: one line, exit 64",
                   ["status", "--store", "azblob://c", "--key", "k"], {"AZURE_STORAGE_ACCOUNT": DEV_ACCOUNT},
                   "AZURE_STORAGE_ACCOUNT is set, but neither AZURE_STORAGE_KEY nor AZURE_STORAGE_SAS_TOKEN")
    not_base64 = "not-base64-secret!"
    expect_refusal("a key that is not base64: named, never shown, exit 64",
                   ["status", "--store", "azblob://c", "--key", "k"],
                   {"AZURE_STORAGE_ACCOUNT": DEV_ACCOUNT, "AZURE_STORAGE_KEY": not_base64},
                   "AZURE_STORAGE_KEY is not a base64 account key", secrets=(not_base64,))
    # A key cut in two by a stray ';': the piece after it is not shown as a setting's name.
    expect_refusal("a malformed connection string: the segment named, the key never shown, exit 64",
                   ["status", "--store", "azblob://c", "--key", "k"],
                   {"AZURE_STORAGE_CONNECTION_STRING": "AccountName=%s;AccountKey=%s;%s" % (DEV_ACCOUNT, WRONG_KEY[:20],
                                                                                          WRONG_KEY[20:])},
                   "AZURE_STORAGE_CONNECTION_STRING: connection string: segment 3 is not a known setting", secrets=(WRONG_KEY[20:],))
    expect_refusal("UseDevelopmentStorage=true with an AccountKey: one line, exit 64",
                   ["status", "--store", "azblob://c", "--key", "k"],
                   {"AZURE_STORAGE_CONNECTION_STRING": "UseDevelopmentStorage=true;AccountKey=" + WRONG_KEY},
                   "UseDevelopmentStorage=true takes no AccountKey", secrets=(WRONG_KEY,))
    expect_refusal("--endpoint with a query (a SAS token pasted into it): one line, exit 64",
                   ["status", "--store", "azblob://c", "--key", "k", "--endpoint",
                    "http://127.0.0.1:10000/devstoreaccount1?sig=abc"],
                   {"AZURE_STORAGE_ACCOUNT": DEV_ACCOUNT, "AZURE_STORAGE_KEY": WRONG_KEY},
                   "--endpoint: the Blob endpoint must not carry a query or fragment")


class Relay:
    """Forwards 127.0.0.1:10000 (the development storage's Blob port) to Azurite, and counts the
    connections it carried."""

    def __init__(self, target_port):
        self.target = target_port
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 10000))  # OSError when taken
        self.server.listen(16)
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.server.close()


def azurite_checks(work):
    endpoint, account = os.environ["BATON_AZURITE_ENDPOINT"], os.environ["BATON_AZURITE_ACCOUNT"]
    key = os.environ["BATON_AZURITE_KEY"]
    container = "baton-cli-" + uuid.uuid4().hex[:16]
    create_container(endpoint, account, key, container)
    store = "azblob://%s/locks" % container
    env = {"AZURE_STORAGE_ACCOUNT": account, "AZURE_STORAGE_KEY": key, "AZURE_STORAGE_SERVICE_ENDPOINT": endpoint}

    rc, out, err = run(["probe", "--store", store], env)
    check("azurite: probe with the account variables supports leases, naming the container, prefix and endpoint",
          rc == 0 and ("store: %s (container '%s', prefix 'locks/' at %s (endpoint from the environment))"
                       % (store, container, endpoint)) in out
          and "conditional create (put if absent): honoured" in out
          and "conditional replace (put if matching): honoured" in out
          and "conditional erase (delete if matching): honoured" in out and out.rstrip().endswith("leases: supported"),
          "exit %d\nstdout:\n%s\nstderr:\n%s" % (rc, out, err))

    # --endpoint, as --help offers it for Azurite.
    dead = "http://127.0.0.1:9/" + account
    rc, out, err = run(["probe", "--store", store, "--endpoint", endpoint],
                       dict(env, AZURE_STORAGE_SERVICE_ENDPOINT=dead))
    check("azurite: --endpoint wins over AZURE_STORAGE_SERVICE_ENDPOINT",
          rc == 0 and "at %s (endpoint from --endpoint)" % endpoint in out and "leases: supported" in out,
          "exit %d, stdout %r, stderr %r" % (rc, out, err))
    no_endpoint = {k: v for k, v in env.items() if k != "AZURE_STORAGE_SERVICE_ENDPOINT"}
    rc, out, err = run(["run", "--store", store, "--key", "jobs/endpoint", "--no-wait", "--endpoint", endpoint + "/",
                        "--", "sh", "-c", 'echo "$BATON_FENCING_TOKEN"'], no_endpoint)
    check("azurite: --endpoint (with a trailing '/') serves an account whose endpoint would be Azure's",
          rc == 0 and out.strip() == "1", "exit %d, stdout %r, stderr %r" % (rc, out, err))

    # A connection string, as the portal gives it; it wins over the account variables.
    cs = "DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;" % (account, key, endpoint)
    cs_env = {"AZURE_STORAGE_CONNECTION_STRING": cs, "AZURE_STORAGE_ACCOUNT": account, "AZURE_STORAGE_KEY": WRONG_KEY}
    rc, out, err = run(["run", "--store", store, "--key", "jobs/nightly", "--no-wait", "--ttl", "3s", "--",
                        "sh", "-c", 'echo "$BATON_LEASE_KEY $BATON_FENCING_TOKEN"'], cs_env)
    check("azurite: run with AZURE_STORAGE_CONNECTION_STRING (over a wrong AZURE_STORAGE_KEY) gives the command "
          "its key and token 1", rc == 0 and out.strip() == "jobs/nightly 1",
          "exit %d, stdout %r, stderr %r" % (rc, out, err))
    rc, out, err = run(["status", "--store", store, "--key", "jobs/nightly", "--json"], cs_env)
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    check("azurite: status --json through the connection string reads the released record, token 1",
          rc == 0 and doc is not None and doc.get("state") == "released" and doc.get("token") == 1,
          "exit %d, stdout %r, stderr %r" % (rc, out, err))
    rc, out, err = run(["status", "--store", "azblob://" + container, "--key", "locks/jobs/nightly", "--json"], cs_env)
    rc2, out2, err2 = run(["status", "--store", "azblob://%s/other" % container, "--key", "jobs/nightly", "--json"],
                          cs_env)
    check("azurite: the record lives under the store's prefix",
          rc == 0 and '"token":1' in out and rc2 == 0 and '"state":"free"' in out2,
          "exits %d %d, stdout %r %r, stderr %r %r" % (rc, rc2, out, out2, err, err2))

    # UseDevelopmentStorage=true: the emulator's well-known account and key, at 127.0.0.1:10000.
    dev = {"AZURE_STORAGE_CONNECTION_STRING": "UseDevelopmentStorage=true"}
    rc, out, err = run(["probe", "--store", store, "--endpoint", endpoint], dev)
    check("azurite: UseDevelopmentStorage=true with --endpoint: the development account's key is accepted",
          rc == 0 and "leases: supported" in out, "exit %d, stdout %r, stderr %r" % (rc, out, err))
    port = urllib.parse.urlsplit(endpoint).port
    try:
        relay = Relay(port) if port != 10000 else None
    except OSError as e:
        relay = None
        print("skipped UseDevelopmentStorage=true without --endpoint: 127.0.0.1:10000 is taken (%s)" % e)
    if relay or port == 10000:
        try:
            rc, out, err = run(["probe", "--store", store], dev)
        finally:
            if relay:
                relay.close()
        check("azurite: UseDevelopmentStorage=true alone goes to http://127.0.0.1:10000/devstoreaccount1",
              rc == 0 and "at http://127.0.0.1:10000/devstoreaccount1 (endpoint from " in out
              and "leases: supported" in out and (relay is None or relay.connections > 0),
              "exit %d, stdout %r, stderr %r" % (rc, out, err))

    # A missing container: named, with the command that creates it; waiting cannot help.
    missing = "baton-missing-" + uuid.uuid4().hex[:16]
    for command in ("probe", "status", "run"):
        marker, cmd = marker_command(work)
        args = [command, "--store", "azblob://%s/locks" % missing]
        if command != "probe":
            args += ["--key", "k"]
        if command == "run":
            args += cmd
        expect_refusal("azurite: %s on a missing container: one line naming it and ContainerNotFound, exit 64" % command,
                       args, env, "container '%s', prefix 'locks/' does not exist at %s (endpoint from the environment)"
                       % (missing, endpoint), "ContainerNotFound",
                       "create it (az storage container create --name %s), or check --store and the endpoint" % missing)
        if command == "run":
            check("azurite: the command did not run for a missing container", not os.path.exists(marker))

    # Wrong credentials: the account and the variables to check are named; the secret never is.
    wrong = dict(env, AZURE_STORAGE_KEY=WRONG_KEY)
    for command in ("probe", "run"):
        marker, cmd = marker_command(work)
        args = [command, "--store", store] + (["--key", "k"] + cmd if command == "run" else [])
        expect_refusal("azurite: %s with a wrong key: one line, exit 64, the key never shown" % command, args, wrong,
                       "the store at %s (endpoint from the environment) refused the credentials (account %s) of "
                       "Shared Key" % (endpoint, account), "HTTP 403", CREDENTIAL_VARS, secrets=(WRONG_KEY,))
        if command == "run":
            check("azurite: the command did not run with a wrong key", not os.path.exists(marker))
    wrong_cs = cs.replace(key, WRONG_KEY)
    expect_refusal("azurite: a wrong key in the connection string: one line, exit 64, neither key shown",
                   ["status", "--store", store, "--key", "k"], {"AZURE_STORAGE_CONNECTION_STRING": wrong_cs},
                   "refused the credentials (account %s) of Shared Key" % account, CREDENTIAL_VARS,
                   secrets=(WRONG_KEY, key))
    sig = "c2lnbmF0dXJlIHRoYXQgbmV2ZXIgbWF0Y2hlcyBhbnl0aGluZw%3D%3D"
    sas = "sv=2021-12-02&ss=b&srt=sco&sp=rwdlac&se=2099-01-01T00:00:00Z&spr=http&sig=" + sig
    expect_refusal("azurite: a wrong SAS token: one line naming the SAS token, exit 64, the signature never shown",
                   ["status", "--store", store, "--key", "k"],
                   {"AZURE_STORAGE_ACCOUNT": account, "AZURE_STORAGE_SAS_TOKEN": sas,
                    "AZURE_STORAGE_SERVICE_ENDPOINT": endpoint},
                   "refused the credentials (account %s) of SAS token" % account, CREDENTIAL_VARS,
                   secrets=(sig, urllib.parse.unquote(sig)))

    # SAS tokens that work: with the account variables, and with --endpoint alone naming the account.
    sas = account_sas(account, key, "rwdlac")
    rc, out, err = run(["run", "--store", store, "--key", "jobs/sas", "--no-wait", "--",
                        "sh", "-c", 'echo "$BATON_FENCING_TOKEN"'],
                       {"AZURE_STORAGE_ACCOUNT": account, "AZURE_STORAGE_SAS_TOKEN": sas,
                        "AZURE_STORAGE_SERVICE_ENDPOINT": endpoint})
    check("azurite: run with AZURE_STORAGE_SAS_TOKEN gives the command token 1", rc == 0 and out.strip() == "1",
          "exit %d, stdout %r, stderr %r" % (rc, out, err))
    rc, out, err = run(["status", "--store", store, "--key", "jobs/sas", "--endpoint", endpoint],
                       {"AZURE_STORAGE_SAS_TOKEN": sas})
    check("azurite: a SAS token with --endpoint and no other variable: the endpoint names the account",
          rc == 0 and "state:  released" in out and "token:  1" in out, "exit %d, stdout %r, stderr %r" % (rc, out, err))
    read_only = account_sas(account, key, "rl")
    marker, cmd = marker_command(work)
    ro_sig = read_only.split("sig=")[1]
    expect_refusal("azurite: run with a read-only SAS token: one line naming the missing permission, exit 64",
                   ["run", "--store", store, "--key", "jobs/ro"] + cmd,
                   {"AZURE_STORAGE_ACCOUNT": account, "AZURE_STORAGE_SAS_TOKEN": read_only,
                    "AZURE_STORAGE_SERVICE_ENDPOINT": endpoint},
                   "refused the credentials (account %s) of SAS token" % account, "AuthorizationPermissionMismatch",
                   CREDENTIAL_VARS, secrets=(ro_sig, urllib.parse.unquote(ro_sig)))
    check("azurite: the command did not run with a read-only SAS token", not os.path.exists(marker))


def main():
    started = time.time()
    work = tempfile.mkdtemp(prefix="baton-cli-azure-")
    offline_checks()
    ran = ["no server"]
    if os.environ.get("BATON_AZURITE_ENDPOINT"):
        azurite_checks(work)
        ran.append("Azurite")
    else:
        print("skipped Azurite: BATON_AZURITE_ENDPOINT is not set (run under tests/servers/with-servers.sh azurite)")
    for f in os.listdir(work):
        os.remove(os.path.join(work, f))
    os.rmdir(work)
    print("CLI checks on %s: %d checks, %d failed (%.1f s)" % (", ".join(ran), checks, len(failures),
                                                             time.time() - started))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
