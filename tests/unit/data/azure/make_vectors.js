// Computes shared_key_vectors.json with the Azure SDK for JavaScript's own Shared Key policy,
// the one @azure/storage-blob puts in every pipeline built on a StorageSharedKeyCredential, so
// that baton's signer (azure/shared_key.hpp) is checked against an implementation it shares no
// code with. Run from a scratch directory, never from the tree:
//
//   mkdir -p /tmp/azsdk && cd /tmp/azsdk && npm init -y && npm install @azure/storage-blob@12.32.0
//   node /path/to/baton/tests/unit/data/azure/make_vectors.js > /path/to/baton/tests/unit/data/azure/shared_key_vectors.json
//
// The cases stay inside what the SDK, Azurite and the service agree on; where they differ the
// unit test checks baton's rule by hand instead: the SDK signs trailing white space in a header
// value that HTTP drops, keeps a raw '+' in a query value that Azurite and the C++ SDK read as a
// space, drops query parameters with an empty value, and swaps Content-Encoding and
// Content-Language in the string to sign.
"use strict";

const crypto = require("node:crypto");
const fromCwd = (name) => require(require.resolve(name, { paths: [process.cwd()] }));
const common = fromCwd("@azure/storage-common");
const pipeline = fromCwd("@azure/core-rest-pipeline");
const sdkVersion = fromCwd("@azure/storage-blob/package.json").version;

// The policy stamps x-ms-date with `new Date()`: pin it.
const fixed = Date.UTC(2026, 6, 14, 9, 41, 7);
const RealDate = Date;
global.Date = class extends RealDate {
  constructor(...args) {
    super(...(args.length ? args : [fixed]));
  }
  static now() {
    return fixed;
  }
};

// The string to sign is what the policy hands to HMAC.
let lastStringToSign = null;
const realCreateHmac = crypto.createHmac;
crypto.createHmac = (algorithm, key) => {
  const hmac = realCreateHmac(algorithm, key);
  const update = hmac.update.bind(hmac);
  hmac.update = (data, encoding) => {
    lastStringToSign = data;
    return update(data, encoding);
  };
  return hmac;
};

const accounts = {
  // The emulator's account, path style (the account is also the first path segment).
  emulator: {
    name: "devstoreaccount1",
    key: "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
    origin: "http://127.0.0.1:10000",
  },
  // A production-style account with a made-up 64-byte key.
  production: {
    name: "batonvectors",
    key: realCreateHmac("sha512", "baton").update("azure shared key vectors").digest("base64"),
    origin: "https://batonvectors.blob.core.windows.net",
  },
};

const version = "2021-12-02";
const body = "{\"holder\":\"a\"}";
const cases = [
  {
    name: "put blob if none match, emulator, encoded slash in the blob name",
    account: "emulator", method: "PUT", target: "/devstoreaccount1/locks/leases%2Fjob-1",
    headers: [["x-ms-version", version], ["x-ms-blob-type", "BlockBlob"], ["If-None-Match", "*"],
              ["Content-Type", "application/octet-stream"], ["Content-Length", String(body.length)]],
    body,
  },
  {
    name: "put blob if match, production style",
    account: "production", method: "PUT", target: "/locks/leases/job-1",
    headers: [["x-ms-version", version], ["x-ms-blob-type", "BlockBlob"], ["If-Match", "\"0x8DE2F6A1B2C3D4E\""],
              ["Content-Type", "application/octet-stream"], ["Content-Length", String(body.length)]],
    body,
  },
  {
    name: "get blob, emulator, non-ASCII and space in the blob name",
    account: "emulator", method: "GET", target: "/devstoreaccount1/locks/caf%C3%A9%20menu",
    headers: [["x-ms-version", version], ["x-ms-client-request-id", "7c2a9e4e-1d2b-4f0e-9a51-0b3c2d1e4f5a"]],
    body: "",
  },
  {
    name: "get blob range, production style",
    account: "production", method: "GET", target: "/locks/leases/job-1",
    headers: [["x-ms-version", version], ["x-ms-range", "bytes=0-1023"], ["Range", "bytes=0-1023"]],
    body: "",
  },
  {
    name: "delete blob if match, emulator",
    account: "emulator", method: "DELETE", target: "/devstoreaccount1/locks/leases/job-1",
    headers: [["x-ms-version", version], ["If-Match", "\"0x8DE2F6A1B2C3D4E\""]],
    body: "",
  },
  {
    name: "list blobs with prefix, marker and maxresults, emulator",
    account: "emulator", method: "GET",
    target: "/devstoreaccount1/locks?restype=container&comp=list&prefix=leases%2Fcaf%C3%A9%20x%2F" +
            "&marker=2%21120%21MDAwMDE2IWxlYXNlcy9qb2ItMSEwMDAwMjghOTk5OS0xMi0zMVQyMzo1OTo1OS45OTk5OTk5WiE%3D" +
            "&maxresults=100",
    headers: [["x-ms-version", version]],
    body: "",
  },
  {
    name: "list blobs, production style, raw slash in the prefix, parameters out of order",
    account: "production", method: "GET",
    target: "/locks?maxresults=5000&prefix=leases/sub%20dir/&comp=list&restype=container",
    headers: [["x-ms-version", version]],
    body: "",
  },
  {
    name: "list containers at the root, production style",
    account: "production", method: "GET", target: "/?comp=list",
    headers: [["x-ms-version", version]],
    body: "",
  },
  {
    name: "create container, Content-Length 0, emulator",
    account: "emulator", method: "PUT", target: "/devstoreaccount1/locks?restype=container",
    headers: [["x-ms-version", version], ["Content-Length", "0"]],
    body: "",
  },
  {
    name: "metadata with runs of white space, and names that sort by the service's collation",
    account: "production", method: "PUT", target: "/locks/notes",
    headers: [["x-ms-version", version], ["x-ms-blob-type", "BlockBlob"],
              ["x-ms-meta-note", "  two  spaces,\tand   three"], ["x-ms-meta-a-c", "dash"],
              ["x-ms-meta-ab", "plain"], ["X-MS-Meta-Upper", "Case Kept"],
              ["Content-Length", String(body.length)]],
    body,
  },
];

async function sign(c) {
  const account = accounts[c.account];
  const credential = new common.StorageSharedKeyCredential(account.name, account.key);
  const policy = common.storageSharedKeyCredentialPolicy({
    accountName: credential.accountName,
    accountKey: credential.accountKey,
  });
  const headers = pipeline.createHttpHeaders();
  for (const [name, value] of c.headers) headers.set(name, value);
  const request = pipeline.createPipelineRequest({
    url: account.origin + c.target, method: c.method, headers, body: c.body === "" ? undefined : c.body,
  });
  lastStringToSign = null;
  let sent = null;
  await policy.sendRequest(request, async (r) => {
    sent = r;
    return { request: r, status: 200, headers: pipeline.createHttpHeaders() };
  });
  const url = new URL(sent.url);
  return {
    name: c.name,
    account: account.name,
    method: c.method,
    // What the SDK sends and signs: the URL's path and query after its own parsing.
    target: url.pathname + url.search,
    headers: c.headers,
    body: c.body,
    x_ms_date: sent.headers.get("x-ms-date"),
    string_to_sign: lastStringToSign,
    authorization: sent.headers.get("authorization"),
  };
}

(async () => {
  const out = {
    generator: "tests/unit/data/azure/make_vectors.js",
    sdk: "@azure/storage-blob " + sdkVersion + " (storage-common storageSharedKeyCredentialPolicy)",
    accounts: Object.fromEntries(Object.values(accounts).map((a) => [a.name, a.key])),
    cases: [],
  };
  for (const c of cases) out.cases.push(await sign(c));
  process.stdout.write(JSON.stringify(out, null, 2) + "\n");
})();
