"""Fault proxies in front of a test's AWS services (fault_proxy.py), for the Python runners.

start(workdir, service_env, seed, profile, ...) puts one proxy before each service endpoint named in
`service_env` (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_DYNAMODB, AZURE_STORAGE_SERVICE_ENDPOINT) and returns the proxies and the
variables that send a process's requests through them; calm() stops every fault (the closing
checks of a test need a calm network); stop() ends them and counts the faults they injected.
"""
import collections, json, os, signal, subprocess, sys, urllib.parse

here = os.path.dirname(os.path.abspath(__file__))
SERVICES = (("AWS_ENDPOINT_URL_S3", "s3"), ("AWS_ENDPOINT_URL_DYNAMODB", "dynamodb"),
            ("AZURE_STORAGE_SERVICE_ENDPOINT", "azblob"))


class Proxy:
    def __init__(self, workdir, name, upstream_url, seed, profile, delay_ms, blackhole_for):
        # A path (Azurite's /devstoreaccount1) stays in the URL the clients are given.
        parts = urllib.parse.urlsplit(upstream_url)
        hostport, path = parts.netloc, parts.path.rstrip("/")
        self.name = name
        self.log = os.path.join(workdir, "proxy-%s.jsonl" % name)
        self.err = os.path.join(workdir, "proxy-%s.err" % name)
        self.popen = subprocess.Popen(
            [sys.executable, os.path.join(here, "fault_proxy.py"), "--upstream", hostport, "--seed", str(seed),
             "--log", self.log, "--profile", profile, "--delay-ms", delay_ms,
             "--blackhole-every", "15", "--blackhole-for", str(blackhole_for)],
            stdout=subprocess.PIPE, stderr=open(self.err, "w"), text=True)
        line = self.popen.stdout.readline().split()
        if len(line) != 2 or line[0] != "PORT":
            self.popen.kill()
            raise SystemExit("fault proxy %s did not start: see %s" % (name, self.err))
        self.url = "http://127.0.0.1:%s%s" % (line[1], path)


def start(workdir, service_env, seed, profile="default", delay_ms="100:2500", blackhole_for=2):
    """Delays are drawn in `delay_ms` ("MIN:MAX"); a blackhole of `blackhole_for` s every 15 s."""
    proxies, env = [], {}
    for var, name in SERVICES:
        if var in service_env:
            p = Proxy(workdir, name, service_env[var], seed * 10 + len(proxies), profile, delay_ms, blackhole_for)
            proxies.append(p)
            env[var] = p.url
    return proxies, env


def calm(proxies):
    for p in proxies:
        p.popen.send_signal(signal.SIGUSR1)


def stop(proxies):
    """Ends the proxies; the faults they injected, by kind."""
    injected = collections.Counter()
    for p in proxies:
        p.popen.send_signal(signal.SIGTERM)
        try:
            p.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.popen.kill()
        with open(p.log) as f:
            for line in f:
                d = json.loads(line)
                if "fault" in d:
                    injected[d["fault"]] += 1
    return injected


def describe(injected):
    return ", ".join("%s %d" % kv for kv in sorted(injected.items())) or "none"
