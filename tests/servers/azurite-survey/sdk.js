// What the official SDK (@azure/storage-blob) sees, and whether SAS tokens work on Azurite.
// The SDK is not part of tests/servers; install it in a scratch dir (12.32.0 is the last
// release for Node.js 20):
//   npm install --prefix /tmp/azsdk @azure/storage-blob@12.32.0
//   eval "$(tests/servers/start.sh azurite)"; NODE_PATH=/tmp/azsdk/node_modules node sdk.js
// SAS_VERSIONS (comma-separated) are the sv of the tokens; the raw requests send x-ms-version 2021-12-02.
"use strict";
const sdk = require("@azure/storage-blob");
const { req, brief, account, key, agent } = require("./lib");

const rnd = () => Math.random().toString(36).slice(2, 8);
const cred = new sdk.StorageSharedKeyCredential(account, key);
const svc = sdk.BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING);
const err = (e) => `${e.statusCode} ${e.code || e.details?.errorCode || ""}`.trim();
const out = (id, what, res) => console.log(`| ${id} | ${what} | ${res} |`);

async function sdkCases() {
  const c = svc.getContainerClient(`sdk-${rnd()}`);
  try { await c.create(); out("S0", "SDK create container (default x-ms-version)", "ok"); }
  catch (e) { out("S0", "SDK create container (default x-ms-version)", err(e)); return; }
  const b = c.getBlockBlobClient("k");
  const r1 = await b.upload("a", 1, { conditions: { ifNoneMatch: "*" } });
  out("S1", "SDK upload ifNoneMatch:* new", `ok etag=${r1.etag}`);
  try { await b.upload("b", 1, { conditions: { ifNoneMatch: "*" } }); out("S2", "SDK upload ifNoneMatch:* existing", "ok?!"); }
  catch (e) { out("S2", "SDK upload ifNoneMatch:* existing", err(e)); }
  try { await b.upload("b", 1, { conditions: { ifMatch: '"0x8D0000000000000"' } }); out("S3", "SDK upload ifMatch stale", "ok?!"); }
  catch (e) { out("S3", "SDK upload ifMatch stale", err(e)); }
  const r4 = await b.upload("c", 1, { conditions: { ifMatch: r1.etag } });
  out("S4", "SDK upload ifMatch current", `ok etag=${r4.etag}`);
  try { await b.delete({ conditions: { ifMatch: r1.etag } }); out("S5", "SDK delete ifMatch stale", "ok?!"); }
  catch (e) { out("S5", "SDK delete ifMatch stale", err(e)); }
  const names = [];
  for await (const it of c.listBlobsFlat()) names.push(`${it.name} ${it.properties.etag}`);
  out("S6", "SDK listBlobsFlat etag form", names.join(", "));
  await c.delete();
}

async function sasCases(sv) {
  const cname = `sas-${rnd()}`;
  await req("PUT", `/${cname}?restype=container`);
  const now = new Date(Date.now() - 5 * 60e3), exp = new Date(Date.now() + 3600e3);
  const tokens = {
    account: sdk.generateAccountSASQueryParameters({ version: sv, startsOn: now, expiresOn: exp,
      services: "b", resourceTypes: "sco", permissions: sdk.AccountSASPermissions.parse("rwdlac") }, cred).toString(),
    container: sdk.generateBlobSASQueryParameters({ version: sv, containerName: cname, startsOn: now, expiresOn: exp,
      permissions: sdk.ContainerSASPermissions.parse("racwdl") }, cred).toString(),
    "container read-only": sdk.generateBlobSASQueryParameters({ version: sv, containerName: cname, startsOn: now, expiresOn: exp,
      permissions: sdk.ContainerSASPermissions.parse("rl") }, cred).toString(),
    "container expired": sdk.generateBlobSASQueryParameters({ version: sv, containerName: cname, startsOn: new Date(Date.now() - 7200e3),
      expiresOn: new Date(Date.now() - 3600e3), permissions: sdk.ContainerSASPermissions.parse("racwdl") }, cred).toString(),
  };
  out("T", `container SAS token form (sv=${sv})`, tokens.container.replace(/sig=[^&]*/, "sig=…"));
  for (const [kind, sas] of Object.entries(tokens)) {
    const res = [];
    let r = await req("PUT", `/${cname}/${kind.replace(/ /g, "-")}`, { sas, body: "x", headers: { "x-ms-blob-type": "BlockBlob", "If-None-Match": "*" } });
    res.push(`Put INM:* ${brief(r)}`);
    const et = r.headers.etag;
    r = await req("PUT", `/${cname}/${kind.replace(/ /g, "-")}`, { sas, body: "y", headers: { "x-ms-blob-type": "BlockBlob", "If-Match": et || '"0x1"' } });
    res.push(`Put If-Match ${brief(r)}`);
    r = await req("GET", `/${cname}/${kind.replace(/ /g, "-")}`, { sas });
    res.push(`Get ${brief(r)}`);
    r = await req("GET", `/${cname}?restype=container&comp=list`, { sas });
    res.push(`List ${brief(r)}`);
    r = await req("DELETE", `/${cname}/${kind.replace(/ /g, "-")}`, { sas });
    res.push(`Delete ${brief(r)}`);
    out("9s", `${kind} SAS (sv=${sv}), no Authorization`, res.join("; "));
  }
  const bad = tokens.container.replace(/sig=[^&]*/, "sig=AAAA");
  const r = await req("GET", `/${cname}?restype=container&comp=list`, { sas: bad });
  out("9s", `container SAS with a wrong sig (sv=${sv})`, brief(r));
  const r2 = await req("GET", `/${cname}?restype=container&comp=list`, { sas: tokens.container, version: "2099-01-01" });
  out("9s", `container SAS, x-ms-version 2099-01-01 header`, brief(r2));
  await req("DELETE", `/${cname}?restype=container`);
}

(async () => {
  await sdkCases();
  for (const sv of (process.env.SAS_VERSIONS || "2021-12-02,2025-11-05,2026-04-06").split(",")) await sasCases(sv);
  agent.destroy();
})().catch((e) => { console.error(e); process.exit(1); });
