"use strict";
// The failover figures' peer: one participant holding or waiting for a lock with
// dynamodb-lock-client (the version pinned in package-lock.json), on the dynalite of
// tests/servers/with-servers.sh. bench/failover/driver.py starts it, as it starts
// bench/failover_bench for baton, and reads the same events.
//
//   node lockclient.js hold|contend --key KEY [--mode failopen|failclosed] [--lease-ms 2000]
//        [--heartbeat-ms 667] [--retry-ms 100] [--table baton-failover]
//
// hold:    acquire; release when stdin says "release" (EOF: exit holding it, as a crash would)
// contend: acquire, waiting while someone else holds it
// Every event is one JSON line on stdout whose "t" is process.hrtime.bigint(): libuv's
// uv_hrtime, CLOCK_MONOTONIC on Linux, the clock of the driver and of failover_bench.
//   ready         the first GetItem (FailOpen) or conditional PutItem (FailClosed) was answered
//   held          acquired, with the fencing token (FailOpen)
//   release_call  just before lock.release is called
//   released      the release completed
//
// FailOpen is the client's lease: a lock with leaseDurationMs, renewed by heartbeats every
// heartbeatPeriodMs (a conditional put with a new guid). A waiter reads the lock (GetItem),
// sleeps the leaseDurationMs stored in it, then puts conditional on the guid and fencing
// token it read: the put succeeds if the lock did not change in between (the holder is
// silent, or released it: a release rewrites the lock with the same guid and
// leaseDurationMs 1), else it reads again and sleeps again. So a waiter takes over a lock
// whose guid stayed the same for leaseDurationMs on its own clock (skew factor 1), and a
// waiter reads once per leaseDurationMs: the client has no separate poll interval.
// FailClosed has no lease: a waiter retries its conditional create every acquirePeriodMs
// (--retry-ms), and a crashed holder's lock is never taken over.
const http = require("http");
const readline = require("readline");
const AWS = require("aws-sdk");
const DynamoDBLockClient = require("dynamodb-lock-client");

process.env.AWS_EC2_METADATA_DISABLED = "true";
const endpoint = process.env.BATON_DYNAMODB_ENDPOINT;
if (!endpoint) { console.error("BATON_DYNAMODB_ENDPOINT is not set: run under tests/servers/with-servers.sh"); process.exit(2); }
if (!["127.0.0.1", "localhost"].includes(new URL(endpoint).hostname)) { console.error("refusing non-loopback endpoint " + endpoint); process.exit(2); }

const role = process.argv[2];
const o = { key: "", mode: "failopen", "lease-ms": 2000, "heartbeat-ms": 667, "retry-ms": 100, table: "baton-failover" };
for (let i = 3; i + 1 < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, "");
  if (!(k in o)) { console.error("unknown option " + process.argv[i]); process.exit(2); }
  o[k] = typeof o[k] === "number" ? Number(process.argv[i + 1]) : process.argv[i + 1];
}
if (!o.key || !["hold", "contend"].includes(role)) { console.error("usage: lockclient.js hold|contend --key KEY ..."); process.exit(2); }

const now = () => process.hrtime.bigint().toString();
const event = (ev, extra) => process.stdout.write(`{"ev":"${ev}","t":${now()}${extra || ""}}\n`);

const doc = new AWS.DynamoDB.DocumentClient({
  endpoint, region: process.env.BATON_DYNAMODB_REGION || "us-east-1", maxRetries: 0,
  credentials: new AWS.Credentials(process.env.BATON_DYNAMODB_ACCESS_KEY, process.env.BATON_DYNAMODB_SECRET_KEY),
  httpOptions: { agent: new http.Agent({ keepAlive: true }) },
});
// The client's DynamoDB calls, with the first answered read (or, for FailClosed, which never
// reads, the first refused create) reported as "ready", as failover_bench reports its first read.
let ready = role === "contend";
const firstAnswer = () => { if (ready) { ready = false; event("ready"); } };
const dynamodb = {
  get: (p, cb) => doc.get(p, (e, d) => { if (!e) firstAnswer(); cb(e, d); }),
  put: (p, cb) => doc.put(p, (e, d) => { if (e && e.code === "ConditionalCheckFailedException") firstAnswer(); cb(e, d); }),
  delete: (p, cb) => doc.delete(p, cb),
};
const common = { dynamodb, lockTable: o.table, partitionKey: "pk", retryCount: 1e9, owner: role + "-" + process.pid };
const client = o.mode === "failopen"
  ? new DynamoDBLockClient.FailOpen(Object.assign({ leaseDurationMs: o["lease-ms"], heartbeatPeriodMs: o["heartbeat-ms"] }, common))
  : new DynamoDBLockClient.FailClosed(Object.assign({ acquirePeriodMs: o["retry-ms"] }, common));

client.acquireLock(o.key, (err, lock) => {
  if (err) { process.stdout.write(`{"ev":"error","what":${JSON.stringify(String(err))}}\n`); process.exit(1); }
  event("held", lock.fencingToken !== undefined ? `,"token":${lock.fencingToken}` : "");
  lock.on("error", () => {}); // a heartbeat refused after a takeover: the holder is gone by then
  if (role === "contend") process.exit(0); // every run uses a key of its own
  const rl = readline.createInterface({ input: process.stdin });
  rl.on("line", (line) => {
    if (line !== "release") return;
    event("release_call");
    lock.release((e) => {
      if (e) { process.stdout.write(`{"ev":"error","what":${JSON.stringify(String(e))}}\n`); process.exit(1); }
      event("released");
      process.exit(0);
    });
  });
  rl.on("close", () => process.exit(0));
});
