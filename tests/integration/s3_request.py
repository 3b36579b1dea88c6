"""Minimal signed requests for the CLI tests (standard library only): SigV4 for S3, Shared Key for
Azure Blob.

The tests need to create buckets and containers before `baton` can use them, and nothing else:
baton itself never creates them. Signing here is independent of baton's own signers, so a
bucket or container that exists proves nothing about them.
"""
import base64, datetime, email.utils, hashlib, hmac, json, urllib.error, urllib.parse, urllib.request


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def s3_request(method, endpoint, region, access_key, secret_key, path, body=b"", query="", extra_headers=None):
    """Sends one signed request; returns (status, body text). `path` is already URI-encoded; `query`
    is the canonical query string (e.g. "policy="); `extra_headers` are sent unsigned (If-Match...)."""
    host = urllib.parse.urlsplit(endpoint).netloc
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload = hashlib.sha256(body).hexdigest()
    headers = {"host": host, "x-amz-content-sha256": payload, "x-amz-date": amz_date}
    signed = ";".join(sorted(headers))
    canonical = "\n".join([method, path, query, "".join("%s:%s\n" % (k, headers[k]) for k in sorted(headers)),
                           signed, payload])
    scope = "%s/%s/s3/aws4_request" % (day, region)
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(("AWS4" + secret_key).encode(), day), region), "s3"), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    req = urllib.request.Request(endpoint + path + ("?" + query if query else ""), data=body if body else None,
                                 method=method, headers=dict(extra_headers or {}, **{
        "x-amz-content-sha256": payload, "x-amz-date": amz_date,
        "Authorization": "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s"
                         % (access_key, scope, signed, signature)}))
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, res.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def create_bucket(endpoint, region, access_key, secret_key, bucket):
    status, text = s3_request("PUT", endpoint, region, access_key, secret_key, "/" + bucket)
    if status != 200:
        raise SystemExit("FAIL: could not create bucket %s: HTTP %d %s" % (bucket, status, text[:300]))


def dynamodb_call(endpoint, target, body):
    """One DynamoDB JSON call. dynalite checks that a signature is present, not that it is right."""
    req = urllib.request.Request(endpoint, data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810." + target,
        "X-Amz-Date": "20260101T000000Z",
        "Authorization": "AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/dynamodb/aws4_request, "
                         "SignedHeaders=host, Signature=00"})
    with urllib.request.urlopen(req, timeout=30) as res:
        return json.loads(res.read() or b"{}")


def create_container(endpoint, account, key, container):
    """Creates an Azure Blob container with Shared Key (`endpoint` as http://host:port/account for
    Azurite). The string to sign of a PUT without body or conditions: the verb, the eleven standard
    headers (all empty but Content-Type), the x-ms- headers, then /account + the URL path and the
    sorted query."""
    path = urllib.parse.urlsplit(endpoint).path.rstrip("/") + "/" + container
    headers = {"x-ms-date": email.utils.formatdate(usegmt=True), "x-ms-version": "2021-12-02"}
    # Content-Type is set, as urllib would add one of its own to a request with a body.
    content_type = "application/octet-stream"
    to_sign = "PUT\n" + "\n" * 4 + content_type + "\n" + "\n" * 6 + \
        "".join("%s:%s\n" % (k, headers[k]) for k in sorted(headers)) + "/%s%s\nrestype:container" % (account, path)
    signature = base64.b64encode(hmac.new(base64.b64decode(key), to_sign.encode(), hashlib.sha256).digest()).decode()
    origin = endpoint[:len(endpoint) - len(urllib.parse.urlsplit(endpoint).path)]
    req = urllib.request.Request(origin + path + "?restype=container", data=b"", method="PUT", headers=dict(
        headers, Authorization="SharedKey %s:%s" % (account, signature), **{"Content-Type": content_type}))
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            status = res.status
    except urllib.error.HTTPError as e:
        status = e.code
    if status != 201:
        raise RuntimeError("creating container %s answered HTTP %d" % (container, status))
