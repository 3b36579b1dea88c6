"use strict";
// The lease cycle of `store_bench azure-cycle`, hand-rolled with the official Azure Storage SDK
// (@azure/storage-blob, pinned in package-lock.json), as a user of that SDK would write a lock:
// one blob per lock, taken by a conditional upload and given back under the ETag it returned.
//
//   --release delete  (default) acquire: upload(If-None-Match: *); release: delete(If-Match: etag).
//                     The usual hand-rolled blob lock: 2 requests per cycle.
//   --release marker  acquire: upload(If-Match: the released marker's etag; If-None-Match: * the
//                     first time); release: upload a released marker (If-Match: etag). What
//                     baton's lease sends (two conditional Put Blob, a token kept across holders):
//                     2 requests per cycle.
//
// The client is the SDK's default (BlobServiceClient.fromConnectionString: its retry policy,
// keep-alive agent, telemetry and request-id headers). Requests and new connections are counted
// on Node's own HTTP client (diagnostics_channel), so retries would count too.
// Prints one JSON line with the fields of store_bench's cycle figures.
//
//   node sdk_cycle.js [--release delete|marker] [--n 1000] [--warmup 50] [--max-seconds 30] [--container NAME]
//
// The account: AZURE_STORAGE_CONNECTION_STRING, else BATON_AZURITE_ENDPOINT/_ACCOUNT/_KEY
// (both set by tests/servers/with-servers.sh azurite). Loopback endpoints only. Azurite 3.35.0
// refuses this SDK's x-ms-version (2026-04-06) unless started with --skipApiVersionCheck.
const dc = require("diagnostics_channel");
const crypto = require("crypto");
const { BlobServiceClient } = require("@azure/storage-blob");
const { version: sdkVersion } = require("@azure/storage-blob/package.json");

function args(defaults) {
  const out = Object.assign({}, defaults);
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i += 2) {
    const m = /^--(.+)$/.exec(a[i]);
    if (!m || !(m[1] in defaults) || i + 1 >= a.length) throw new Error(`bad argument ${a[i]} (options: --name value)`);
    out[m[1]] = typeof defaults[m[1]] === "number" ? Number(a[i + 1]) : a[i + 1];
  }
  return out;
}

const rand = () => crypto.randomBytes(4).toString("hex");
const o = args({ release: "delete", n: 1000, warmup: 50, "max-seconds": 30, container: `sdk-${process.pid}-${rand()}` });
if (!["delete", "marker"].includes(o.release)) throw new Error("--release must be delete or marker");

function connectionString() {
  if (process.env.AZURE_STORAGE_CONNECTION_STRING) return process.env.AZURE_STORAGE_CONNECTION_STRING;
  const ep = process.env.BATON_AZURITE_ENDPOINT, acct = process.env.BATON_AZURITE_ACCOUNT, key = process.env.BATON_AZURITE_KEY;
  if (!ep || !acct || !key) throw new Error("set AZURE_STORAGE_CONNECTION_STRING or BATON_AZURITE_* (tests/servers/with-servers.sh azurite)");
  return `DefaultEndpointsProtocol=http;AccountName=${acct};AccountKey=${key};BlobEndpoint=${ep};`;
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
// Nearest-rank percentile, as store_bench and the peers compute it.
function pct(samples, p) {
  if (!samples.length) return 0;
  const s = Float64Array.from(samples).sort();
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

// Every request Node's HTTP client starts, and every socket it opens (a retry is a request).
const wire = { on: false, requests: 0, byMethod: {}, connections: 0 };
dc.subscribe("http.client.request.start", ({ request }) => {
  if (!wire.on) return;
  wire.requests++;
  wire.byMethod[request.method] = (wire.byMethod[request.method] || 0) + 1;
});
let connections = 0;
dc.subscribe("net.client.socket", () => connections++);

(async () => {
  const service = BlobServiceClient.fromConnectionString(connectionString());
  const host = new URL(service.url).hostname;
  if (!["127.0.0.1", "localhost", "[::1]", "::1"].includes(host)) throw new Error(`refusing non-loopback endpoint ${service.url}`);
  const container = service.getContainerClient(o.container);
  await container.create(); // fresh name: fails loudly if it exists
  const blob = container.getBlockBlobClient("bench/cycle/" + process.pid + "-" + rand());

  // The lock record: who holds it, a fencing token, how long it is good for. Both variants write
  // the same holder body; the marker variant keeps the token in the released marker.
  const owner = "sdk-" + process.pid;
  let token = 0;
  let markerEtag = null; // marker variant: the ETag of the released marker this client wrote
  const record = (state) => Buffer.from(JSON.stringify({ owner, token, state, ttl_ms: 20000, at: Date.now() }));

  const cycle = async () => {
    token++;
    const held = record("held");
    const acquired = await blob.upload(held, held.length, {
      conditions: o.release === "marker" && markerEtag ? { ifMatch: markerEtag } : { ifNoneMatch: "*" },
    });
    if (o.release === "delete") {
      await blob.delete({ conditions: { ifMatch: acquired.etag } });
    } else {
      const released = record("released");
      markerEtag = (await blob.upload(released, released.length, { conditions: { ifMatch: acquired.etag } })).etag;
    }
  };

  // Sanity: the lock excludes. While held, a second acquire must be refused (409 BlobAlreadyExists
  // for If-None-Match: *, 412 for a stale If-Match).
  {
    const b = record("held");
    const first = await blob.upload(b, b.length, { conditions: { ifNoneMatch: "*" } });
    for (const conditions of [{ ifNoneMatch: "*" }, { ifMatch: '"0x1"' }]) {
      let refused = false;
      try { await blob.upload(b, b.length, { conditions }); } catch (e) { refused = e.statusCode === 409 || e.statusCode === 412; }
      if (!refused) throw new Error("a conditional upload on a held lock was not refused: " + JSON.stringify(conditions));
    }
    await blob.delete({ conditions: { ifMatch: first.etag } });
  }

  for (let i = 0; i < o.warmup; i++) await cycle();
  wire.on = true;
  const lat = [];
  const cpu0 = process.cpuUsage();
  const t0 = nowMs(), deadline = t0 + o["max-seconds"] * 1000;
  for (let i = 0; i < o.n && nowMs() < deadline; i++) {
    const s = nowMs();
    await cycle();
    lat.push(nowMs() - s);
  }
  const elapsed = nowMs() - t0;
  const cpu = process.cpuUsage(cpu0);
  wire.on = false;
  const n = lat.length;
  process.stdout.write(JSON.stringify({
    harness: "azure_sdk_js",
    variant: o.release,
    n,
    secs: +(elapsed / 1000).toFixed(3),
    ops_per_s: +((n * 1000) / elapsed).toFixed(1),
    p50_ms: +pct(lat, 50).toFixed(3),
    p99_ms: +pct(lat, 99).toFixed(3),
    max_ms: +pct(lat, 100).toFixed(3),
    // The whole process (its main thread and Node's helper threads: GC, libuv).
    client_cpu_us_per_op: +((cpu.user + cpu.system) / n).toFixed(1),
    client_user_us_per_op: +(cpu.user / n).toFixed(1),
    requests_per_cycle: +(wire.requests / n).toFixed(2),
    put: wire.byMethod.PUT || 0,
    get: (wire.byMethod.GET || 0) + (wire.byMethod.HEAD || 0),
    delete: wire.byMethod.DELETE || 0,
    record_bytes: record("released").length,
    connections_opened: connections,
    sdk: "@azure/storage-blob " + sdkVersion,
    node: process.version,
  }) + "\n");
  process.exit(0);
})().catch((e) => { console.error(e && e.stack ? e.stack : e); process.exit(1); });
