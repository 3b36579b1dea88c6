#!/usr/bin/env python3
"""`baton --profile` with the profiles people have: roles, chains, credential_process, SSO, web identity.

A `~/.aws/config` of the kind most teams have is written in a fresh HOME; its profiles point at
scripted AWS services this script serves on 127.0.0.1 through a `[services local]` section (as
users point the AWS CLI at LocalStack):
  - STS: AssumeRole, whose SigV4 signature it checks with its own code against the secret of the
    key that signed (so a role is only granted to credentials that really are the source's), and
    AssumeRoleWithWebIdentity, which must carry the token file's content;
  - the IAM Identity Center portal (GetRoleCredentials, bearer token checked) and OIDC (CreateToken
    with the cached refresh token);
  - DynamoDB: a proxy in front of dynalite that checks every request's signature the same way and
    records whose key signed it (dynalite itself checks no signature).
Every credential the services hand out is known to the proxy, so `baton status --profile NAME` on
a dynamodb:// store succeeds only if the store's requests are signed with the credentials the
profile leads to. Checked for each kind of profile, the precedence against the environment,
`--profile` on a file:// store, the environment `baton run` gives its command, and the errors of
broken profiles (printed, so they can be read as a user reads them).

Skipped when BATON_DYNAMODB_ENDPOINT is not set (run under tests/servers/with-servers.sh dynalite).
Usage: cli_profiles.py BATON_BINARY
"""
import datetime, hashlib, hmac, http.server, json, os, subprocess, sys, tempfile, threading, time
import urllib.error, urllib.parse, urllib.request, uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from s3_request import dynamodb_call

if not os.environ.get("BATON_DYNAMODB_ENDPOINT"):
    print("skipped: BATON_DYNAMODB_ENDPOINT is not set (run under tests/servers/with-servers.sh dynalite)")
    sys.exit(0)

baton = sys.argv[1]
dynalite = os.environ["BATON_DYNAMODB_ENDPOINT"].rstrip("/")
failures, checks = [], 0
lock = threading.Lock()
issued = {}  # key id -> (secret, session token or None, who it was issued to)
signed_by = []  # (service, key id) of every request that reached a scripted service signed
calls = []  # (service, what)


def check(name, ok, detail=""):
    global checks
    checks += 1
    print(("PASS: " if ok else "FAIL: ") + name + ("" if ok else "\n      " + str(detail).replace("\n", "\n      ")))
    if not ok:
        failures.append(name)


def issue(who, long_term=False):
    key = ("AKID" if long_term else "ASIA") + uuid.uuid4().hex[:12].upper()
    secret, token = "secret-" + uuid.uuid4().hex, None if long_term else "token-" + uuid.uuid4().hex
    with lock:
        issued[key] = (secret, token, who)
    return key, secret, token


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def verify_sigv4(method, path, query, headers, body, service):
    """The key id that signed the request if its AWS4-HMAC-SHA256 signature is right, else (None, why)."""
    auth = headers.get("authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return None, "not signed"
    fields = dict(part.strip().split("=", 1) for part in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    key, day, region, svc, term = fields["Credential"].split("/")
    if svc != service or term != "aws4_request":
        return None, "scope %s" % fields["Credential"]
    with lock:
        known = issued.get(key)
    if known is None:
        return None, "unknown key %s" % key
    secret, token = known[0], known[1]
    if token is not None and headers.get("x-amz-security-token") != token:
        return None, "session token missing or wrong for %s" % key
    names = fields["SignedHeaders"].split(";")
    canonical_headers = "".join("%s:%s\n" % (n, " ".join(headers.get(n, "").split())) for n in names)
    pairs = sorted(urllib.parse.parse_qsl(query, keep_blank_values=True))
    canonical_query = "&".join("%s=%s" % (urllib.parse.quote(k, safe="-_.~"), urllib.parse.quote(v, safe="-_.~"))
                               for k, v in pairs)
    payload = headers.get("x-amz-content-sha256") or hashlib.sha256(body).hexdigest()
    canonical = "\n".join([method, urllib.parse.quote(path, safe="/-_.~"), canonical_query, canonical_headers,
                           fields["SignedHeaders"], payload])
    scope = "/".join([day, region, svc, term])
    to_sign = "\n".join(["AWS4-HMAC-SHA256", headers.get("x-amz-date", ""), scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    k = _hmac(_hmac(_hmac(_hmac(("AWS4" + secret).encode(), day), region), svc), "aws4_request")
    if hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest() != fields["Signature"]:
        return None, "SignatureDoesNotMatch for %s" % key
    return key, ""


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, ctype="application/json", headers=()):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def read(self):
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def lower_headers(self):
        return {k.lower(): v for k, v in self.headers.items()}

    def do_GET(self):
        self.server.route(self, "GET")

    def do_POST(self):
        self.server.route(self, "POST")


class Service(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, route):
        super().__init__(("127.0.0.1", 0), Handler)
        self.route = route
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]


def sts(h, method):
    body = h.read()
    form = dict(urllib.parse.parse_qsl(body.decode()))
    action = form.get("Action")
    if action == "AssumeRole":
        key, why = verify_sigv4(method, urllib.parse.urlsplit(h.path).path, "", h.lower_headers(), body, "sts")
        scope = h.headers.get("Authorization", "").split("Credential=")[-1].split("/")
        calls.append(("sts-scope", scope[2] if len(scope) > 2 else "?"))
        if key is None:
            calls.append(("sts", "refused: " + why))
            return h.reply(403, "<ErrorResponse><Error><Type>Sender</Type><Code>SignatureDoesNotMatch</Code>"
                                "<Message>%s</Message></Error><RequestId>r</RequestId></ErrorResponse>" % why,
                           "text/xml")
        signed_by.append(("sts", key))
        who = "role " + form["RoleArn"].rsplit("/", 1)[-1]
    elif action == "AssumeRoleWithWebIdentity":
        if form.get("WebIdentityToken") != "the-web-identity-token":
            return h.reply(400, "<ErrorResponse><Error><Code>InvalidIdentityToken</Code><Message>bad token</Message>"
                                "</Error></ErrorResponse>", "text/xml")
        who = "web identity " + form["RoleArn"].rsplit("/", 1)[-1]
    else:
        return h.reply(400, "<ErrorResponse><Error><Code>InvalidAction</Code></Error></ErrorResponse>", "text/xml")
    calls.append(("sts", action + " " + form["RoleArn"] + " " + form.get("RoleSessionName", "")))
    key, secret, token = issue(who)
    h.reply(200, "<%sResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><%sResult><Credentials>"
                 "<AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken>"
                 "<Expiration>%s</Expiration></Credentials></%sResult></%sResponse>"
            % (action, action, key, secret, token, iso(time.time() + 3600), action, action), "text/xml")


sso_tokens = {}  # valid bearer tokens -> who logged in


def portal(h, method):
    url = urllib.parse.urlsplit(h.path)
    q = dict(urllib.parse.parse_qsl(url.query))
    token = h.headers.get("x-amz-sso_bearer_token")
    if method != "GET" or url.path != "/federation/credentials":
        return h.reply(404, json.dumps({"message": "no such path"}))
    if token not in sso_tokens:
        calls.append(("sso", "refused"))
        return h.reply(401, json.dumps({"message": "Session token not found or invalid"}),
                       headers=[("x-amzn-ErrorType", "UnauthorizedException")])
    calls.append(("sso", "GetRoleCredentials %s %s" % (q.get("account_id"), q.get("role_name"))))
    key, secret, tok = issue("sso " + q.get("role_name", ""))
    h.reply(200, json.dumps({"roleCredentials": {"accessKeyId": key, "secretAccessKey": secret, "sessionToken": tok,
                                                 "expiration": int((time.time() + 3600) * 1000)}}))


def oidc(h, method):
    doc = json.loads(h.read() or b"{}")
    if method != "POST" or h.path != "/token" or doc.get("grantType") != "refresh_token" or \
            doc.get("refreshToken") != "the-refresh-token" or doc.get("clientSecret") != "the-client-secret":
        calls.append(("oidc", "refused"))
        return h.reply(400, json.dumps({"error": "invalid_grant"}))
    calls.append(("oidc", "CreateToken"))
    token = "refreshed-access-token-" + uuid.uuid4().hex
    sso_tokens[token] = "refreshed"
    h.reply(200, json.dumps({"accessToken": token, "tokenType": "Bearer", "expiresIn": 28800,
                             "refreshToken": "the-next-refresh-token"}))


def dynamodb(h, method):
    body = h.read()
    headers = h.lower_headers()
    key, why = verify_sigv4(method, urllib.parse.urlsplit(h.path).path, "", headers, body, "dynamodb")
    if key is None:
        calls.append(("dynamodb", "refused: " + why))
        return h.reply(400, json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#UnrecognizedClientException",
                                        "message": "The security token included in the request is invalid. " + why}),
                       "application/x-amz-json-1.0")
    signed_by.append(("dynamodb", key))
    req = urllib.request.Request(dynalite + "/", data=body, method="POST", headers={
        k: v for k, v in h.headers.items() if k.lower() not in ("host", "content-length", "connection")})
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            h.reply(res.status, res.read(), res.headers.get("Content-Type", "application/x-amz-json-1.0"))
    except urllib.error.HTTPError as e:
        h.reply(e.code, e.read(), e.headers.get("Content-Type", "application/x-amz-json-1.0"))


services = {name: Service(route) for name, route in
            [("sts", sts), ("sso", portal), ("oidc", oidc), ("dynamodb", dynamodb)]}

home = tempfile.mkdtemp(prefix="baton-profiles-")
table = "baton-profiles-" + uuid.uuid4().hex
dynamodb_call(dynalite, "CreateTable", {
    "TableName": table, "BillingMode": "PAY_PER_REQUEST",
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]})
store = "dynamodb://" + table

static_key, static_secret, _ = issue("static keys", long_term=True)
process_key, process_secret, process_token = issue("credential_process")
env_key, env_secret, _ = issue("environment", long_term=True)


def write(path, text, mode=0o600):
    full = os.path.join(home, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)
    os.chmod(full, mode)
    return full


process_script = write("bin/creds", "#!/usr/bin/env python3\nimport json, sys\n"
                                    "print(json.dumps({'Version': 1, 'AccessKeyId': sys.argv[1], "
                                    "'SecretAccessKey': sys.argv[2], 'SessionToken': sys.argv[3], "
                                    "'Expiration': '%s'}))\n" % iso(time.time() + 3600), 0o755)
failing_script = write("bin/fails", "#!/bin/sh\necho \"vault is sealed ($1 $2)\" >&2\nexit 3\n", 0o755)
write("token", "the-web-identity-token\n")
local = "services = local\nregion = us-east-1\n"
write(".aws/credentials", "[static]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (static_key, static_secret))
write(".aws/config", f"""[profile static]
{local}
[profile role]
role_arn = arn:aws:iam::111122223333:role/deploy
source_profile = static
role_session_name = nightly-job
{local}
[profile chain]
role_arn = arn:aws:iam::111122223333:role/chained
source_profile = role
{local}
[profile env-role]
role_arn = arn:aws:iam::111122223333:role/from-env
credential_source = Environment
{local}
[profile process]
credential_process = "{process_script}" {process_key} {process_secret} {process_token}
{local}
[profile process-role]
role_arn = arn:aws:iam::111122223333:role/after-process
source_profile = process
{local}
[profile sso]
sso_session = corp
sso_account_id = 111122223333
sso_role_name = ReadOnly
{local}
[profile sso-refresh]
sso_session = corp-refresh
sso_account_id = 111122223333
sso_role_name = Refreshed
{local}
[profile sso-legacy]
sso_start_url = https://d-legacy.awsapps.com/start
sso_region = us-east-1
sso_account_id = 111122223333
sso_role_name = Legacy
{local}
[profile web]
role_arn = arn:aws:iam::111122223333:role/web
web_identity_token_file = ~/token
{local}
[profile mfa]
role_arn = arn:aws:iam::111122223333:role/guarded
source_profile = static
mfa_serial = arn:aws:iam::111122223333:mfa/me
{local}
[profile orphan]
role_arn = arn:aws:iam::111122223333:role/orphan
source_profile = gone
{local}
[profile broken-process]
credential_process = {failing_script} --vault prod
{local}
[profile "team role"]
role_arn = arn:aws:iam::111122223333:role/quoted
source_profile = sso
{local}
[profile via-sso]
role_arn = arn:aws:iam::111122223333:role/after-sso
source_profile = sso-expired
{local}
[profile sso-expired]
sso_start_url = https://d-expired.awsapps.com/start
sso_region = us-east-1
sso_account_id = 111122223333
sso_role_name = Expired
{local}
[sso-session corp]
sso_start_url = https://d-corp.awsapps.com/start
sso_region = us-east-1
[sso-session corp-refresh]
sso_start_url = https://d-corp.awsapps.com/start
sso_region = us-east-1
[services local]
sts =
  endpoint_url = {services["sts"].url}
sso =
  endpoint_url = {services["sso"].url}
sso_oidc =
  endpoint_url = {services["oidc"].url}
dynamodb =
  endpoint_url = {services["dynamodb"].url}
""")


def sso_cache(name, token, expires_in, refresh=False):
    doc = {"startUrl": "https://d-corp.awsapps.com/start", "region": "us-east-1", "accessToken": token,
           "expiresAt": iso(time.time() + expires_in)}
    if refresh:
        doc.update({"clientId": "the-client-id", "clientSecret": "the-client-secret",
                    "registrationExpiresAt": iso(time.time() + 86400), "refreshToken": "the-refresh-token"})
    if token and expires_in > 0:
        sso_tokens[token] = name
    return write(".aws/sso/cache/%s.json" % hashlib.sha1(name.encode()).hexdigest(), json.dumps(doc))


sso_cache("corp", "corp-access-token", 3600)
refresh_cache = sso_cache("corp-refresh", "about-to-expire-token", 300, refresh=True)
sso_cache("https://d-legacy.awsapps.com/start", "legacy-access-token", 3600)
sso_cache("https://d-expired.awsapps.com/start", "expired-token", -60)

base_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
base_env["HOME"] = home


printed = []  # everything baton printed, checked for secrets at the end


def run(args, env=None, timeout=60):
    full = dict(base_env)
    full.update(env or {})
    p = subprocess.run([baton] + args, env=full, capture_output=True, text=True, timeout=timeout)
    printed.append(p.stdout + p.stderr)
    return p.returncode, p.stdout, p.stderr


def secrets():
    """Every secret the services and files hold: none may ever be printed."""
    with lock:
        known = [v[0] for v in issued.values()] + [v[1] for v in issued.values() if v[1]]
    return known + list(sso_tokens) + ["the-refresh-token", "the-next-refresh-token", "the-client-secret",
                                       "the-web-identity-token", "expired-token"]


def who_signed_the_store():
    keys = [k for service, k in signed_by if service == "dynamodb"]
    return issued[keys[-1]][2] if keys else "nobody"


# Each kind of profile: the store's requests are signed with the credentials the profile leads to.
sts_calls = {}  # profile -> the STS calls its status made
for profile, expected in [("static", "static keys"), ("role", "role deploy"), ("chain", "role chained"),
                          ("process", "credential_process"), ("process-role", "role after-process"),
                          ("sso", "sso ReadOnly"), ("sso-refresh", "sso Refreshed"), ("sso-legacy", "sso Legacy"),
                          ("web", "web identity web"), ("team role", "role quoted")]:
    del signed_by[:]
    before = len(calls)
    rc, out, err = run(["status", "--profile", profile, "--store", store, "--key", "jobs/nightly"])
    sts_calls[profile] = [c[1] for c in calls[before:] if c[0] == "sts"]
    check("status --profile %s: exit 0, the store's requests signed by %s" % (profile, expected),
          rc == 0 and who_signed_the_store() == expected,
          "exit %d, signed by %s, stderr %r" % (rc, who_signed_the_store(), err.strip()))

chain = sts_calls["chain"]
check("the chain assumed the inner role with the static keys, then the outer one with what that gave",
      len(chain) == 2 and chain[0] == "AssumeRole arn:aws:iam::111122223333:role/deploy nightly-job"
      and chain[1].startswith("AssumeRole arn:aws:iam::111122223333:role/chained baton-session-"), chain)
refreshed = json.load(open(refresh_cache))
check("an SSO login about to end was refreshed through OIDC and written back for the CLI",
      ("oidc", "CreateToken") in calls and refreshed["accessToken"].startswith("refreshed-access-token-")
      and refreshed["refreshToken"] == "the-next-refresh-token" and refreshed["clientSecret"] == "the-client-secret"
      and oct(os.stat(refresh_cache).st_mode & 0o777) == "0o600", refreshed)

# --region reaches STS as the AWS CLI's does: the role is asked for in that region.
del signed_by[:]
calls_before = len(calls)
rc, _, err = run(["status", "--profile", "role", "--region", "eu-north-1", "--store", store, "--key", "k"])
scopes = [c for c in calls[calls_before:] if c[0] == "sts-scope"]
check("--region signs the AssumeRole for that region", rc == 0 and scopes == [("sts-scope", "eu-north-1")],
      "exit %d, %s, %r" % (rc, scopes, err))

# Precedence against the environment, as the AWS CLI: keys in the environment win under AWS_PROFILE,
# a profile given with --profile wins over them, and credential_source = Environment uses them.
env_keys = {"AWS_ACCESS_KEY_ID": env_key, "AWS_SECRET_ACCESS_KEY": env_secret,
            "AWS_ENDPOINT_URL_DYNAMODB": services["dynamodb"].url, "AWS_REGION": "us-east-1"}
rc, _, err = run(["status", "--store", store, "--key", "k"], dict(env_keys, AWS_PROFILE="role"))
check("AWS_PROFILE=role with keys in the environment: the environment's keys sign",
      rc == 0 and who_signed_the_store() == "environment", "exit %d, %s, %r" % (rc, who_signed_the_store(), err))
rc, _, err = run(["status", "--profile", "role", "--store", store, "--key", "k"], env_keys)
check("--profile role with keys in the environment: the role's credentials sign",
      rc == 0 and who_signed_the_store() == "role deploy", "exit %d, %s, %r" % (rc, who_signed_the_store(), err))
rc, _, err = run(["status", "--profile", "env-role", "--store", store, "--key", "k"], env_keys)
check("credential_source = Environment: the environment's keys assume the role",
      rc == 0 and who_signed_the_store() == "role from-env" and ("sts", env_key) in signed_by,
      "exit %d, %s, %r" % (rc, who_signed_the_store(), err))

# --profile on a store that needs no credentials is accepted and ignored.
rc, _, err = run(["status", "--profile", "no-such-profile", "--store", "file://" + home + "/files", "--key", "k"])
check("--profile on a file:// store is accepted and ignored", rc == 0, "exit %d, %r" % (rc, err))

# baton run leaves the command's environment as the user set it: no credentials exported.
rc, out, err = run(["run", "--profile", "role", "--store", store, "--key", "jobs/env", "--",
                    "sh", "-c", "env | grep '^AWS_' | sort"], {"AWS_REGION": "us-east-1"})
check("baton run --profile: the command sees only the AWS_ variables the user set",
      rc == 0 and out.strip() == "AWS_REGION=us-east-1", "exit %d, stdout %r, stderr %r" % (rc, out, err))

# Broken profiles: one line each, exit 64, naming what to fix; no secret shown.
print("--- what a user reads for broken profiles ---")
for profile, expect in [("mfa", "needs an MFA code"), ("orphan", "the source profile 'gone' is not in the shared files"),
                        ("sso-expired", "aws sso login --profile sso-expired"),
                        ("via-sso", "aws sso login --profile sso-expired"),
                        ("broken-process", "vault is sealed"), ("ghost", "'ghost'")]:
    rc, out, err = run(["status", "--profile", profile, "--store", store, "--key", "k"])
    print("baton status --profile %s: exit %d\n  %s" % (profile, rc, err.strip()))
    check("--profile %s: exit 64 and a message that says %r" % (profile, expect),
          rc == 64 and expect in err and err.count("\n") == 1 and not [s for s in secrets() if s in err],
          "exit %d, %r" % (rc, err))

leaked = [secret for secret in secrets() for text in printed if secret in text]
check("no secret in anything baton printed (%d runs)" % len(printed), not leaked, leaked[:3])

for s in services.values():
    s.shutdown()
try:
    dynamodb_call(dynalite, "DeleteTable", {"TableName": table})
except Exception:
    pass
print("%d checks, %d failed" % (checks, len(failures)))
print("%d passed, %d failed" % (0 if failures else 1, 1 if failures else 0))
sys.exit(1 if failures else 0)
