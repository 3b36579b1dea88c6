// Survey of Azurite's Blob behaviour that baton's Azure backend depends on (AZURITE.md).
// Usage: eval "$(tests/servers/start.sh azurite)"; node survey.js [OUT_DIR]
// Prints a Markdown table row per case: id, request, result for each x-ms-version tried
// (SURVEY_VERSIONS, comma-separated); OUT_DIR gets sample List Blobs XML. SURVEY_ROUNDS
// sets the rounds of the concurrency cases (default 20). Needs only Node.js.
"use strict";
const fs = require("fs");
const { req, brief, enc, agent } = require("./lib");

const VERSIONS = (process.env.SURVEY_VERSIONS || "2021-12-02,2025-11-05").split(",");
const OUT = process.argv[2] || null;
const BB = { "x-ms-blob-type": "BlockBlob" };
const rnd = () => Math.random().toString(36).slice(2, 8);
const stale = '"0x8D0000000000000"';

async function put(c, name, body, headers = {}, v) {
  return req("PUT", `/${c}/${enc(name)}`, { body, headers: { ...BB, ...headers }, version: v });
}

// Each case returns a string; run() returns [[id, what, result]...].
async function run(v) {
  const rows = [];
  const row = (id, what, result) => rows.push([id, what, result]);
  const c = `s${v.replace(/-/g, "")}-${rnd()}`;
  row("0", "create container", brief(await req("PUT", `/${c}?restype=container`, { version: v })));

  // 1. If-None-Match: *
  let r = await put(c, "q1", "one", { "If-None-Match": "*" }, v);
  row("1a", "Put If-None-Match:* new blob", `${brief(r)} ETag=${r.headers.etag}`);
  const e1 = r.headers.etag;
  r = await put(c, "q1", "two", { "If-None-Match": "*" }, v);
  row("1b", "Put If-None-Match:* existing blob", brief(r));
  r = await put(c, "q1", "two", { "If-None-Match": e1 }, v);
  row("1c", "Put If-None-Match:<current etag> existing", brief(r));
  r = await put(c, "q1", "two", { "If-None-Match": stale }, v);
  row("1d", "Put If-None-Match:<other etag> existing", brief(r));
  const e1d = r.headers.etag;
  r = await req("GET", `/${c}/q1`, { version: v });
  row("1e", "content after 1a-1d", `${JSON.stringify(r.body)} ETag=${r.headers.etag} (1d ETag=${e1d})`);

  // 2. If-Match
  r = await put(c, "q2", "v1", {}, v);
  const a = r.headers.etag;
  r = await put(c, "q2", "v2", { "If-Match": a }, v);
  row("2a", "Put If-Match:<current, quoted>", `${brief(r)} new ETag differs: ${r.headers.etag !== a}`);
  const b = r.headers.etag;
  r = await put(c, "q2", "v3", { "If-Match": a }, v);
  row("2b", "Put If-Match:<stale etag>", brief(r));
  r = await put(c, "q2", "v3", { "If-Match": b.replace(/"/g, "") }, v);
  row("2c", "Put If-Match:<current, unquoted>", brief(r));
  const b2 = r.headers.etag || b;
  r = await put(c, "q2", "v4", { "If-Match": `W/${b2}` }, v);
  row("2d", "Put If-Match:W/<current>", brief(r));
  r = await put(c, "q2", "v5", { "If-Match": "*" }, v);
  row("2e", "Put If-Match:* existing", brief(r));
  r = await put(c, "q2-missing", "x", { "If-Match": a }, v);
  row("2f", "Put If-Match:<etag> missing blob", brief(r));
  r = await put(c, "q2-missing-star", "x", { "If-Match": "*" }, v);
  row("2g", "Put If-Match:* missing blob", brief(r));
  const cur = (await req("HEAD", `/${c}/q2`, { version: v })).headers.etag;
  r = await put(c, "q2", "v6", { "If-Match": `${cur}, ${stale}` }, v);
  row("2h", "Put If-Match:<current>, <other> (two etags)", brief(r));
  r = await put(c, "q2", "v6", { "If-Match": cur, "If-None-Match": "*" }, v);
  row("2i", "Put If-Match:<current> + If-None-Match:*", brief(r));
  r = await put(c, "q2", "v6", { "If-Match": cur.toLowerCase().replace("0x", "0X") }, v);
  row("2j", "Put If-Match:<current, case changed>", brief(r));

  // 3. Delete
  r = await put(c, "q3", "x", {}, v);
  let e3 = r.headers.etag;
  r = await req("DELETE", `/${c}/q3`, { headers: { "If-Match": stale }, version: v });
  row("3a", "Delete If-Match:<stale>", brief(r));
  r = await req("DELETE", `/${c}/q3`, { headers: { "If-Match": e3 }, version: v });
  row("3b", "Delete If-Match:<current>", brief(r));
  r = await req("DELETE", `/${c}/q3`, { headers: { "If-Match": e3 }, version: v });
  row("3c", "Delete If-Match:<etag> missing blob", brief(r));
  r = await req("DELETE", `/${c}/q3`, { headers: { "If-Match": "*" }, version: v });
  row("3d", "Delete If-Match:* missing blob", brief(r));
  r = await req("DELETE", `/${c}/q3`, { version: v });
  row("3e", "Delete missing blob, unconditional", `${brief(r)} body=${r.body.length}B`);
  r = await put(c, "q3", "x", {}, v);
  r = await req("DELETE", `/${c}/q3`, { headers: { "If-Match": r.headers.etag.replace(/"/g, "") }, version: v });
  row("3f", "Delete If-Match:<current, unquoted>", brief(r));
  r = await put(c, "q3", "x", {}, v);
  r = await req("DELETE", `/${c}/q3`, { headers: { "If-None-Match": "*" }, version: v });
  row("3g", "Delete If-None-Match:* existing", brief(r));

  // 4. Get
  r = await req("GET", `/${c}/nope`, { version: v });
  row("4a", "Get missing blob", `${brief(r)} body=${JSON.stringify(r.body.replace(/\n/g, " ").slice(0, 200))}`);
  r = await req("HEAD", `/${c}/nope`, { version: v });
  row("4b", "Head missing blob", `${brief(r)} body=${r.body.length}B`);
  r = await req("GET", `/nocontainer-${rnd()}/x`, { version: v });
  row("4c", "Get blob in missing container", brief(r));
  r = await put(c, "q4", "same", {}, v);
  const g1 = r.headers.etag;
  r = await put(c, "q4", "same", {}, v);
  const g2 = r.headers.etag;
  r = await req("GET", `/${c}/q4`, { version: v });
  row("4d", "Get ETag / Content-Length / Last-Modified / x-ms-version headers",
    `ETag=${r.headers.etag} Content-Length=${r.headers["content-length"]} Last-Modified=${r.headers["last-modified"]} x-ms-version=${r.headers["x-ms-version"]} Content-Type=${r.headers["content-type"]}`);
  row("4e", "Put identical bytes twice: ETag changes?", `${g1} then ${g2}: ${g1 !== g2 ? "changes" : "SAME"}`);
  r = await put(c, "q4-empty", "", {}, v);
  r = await req("GET", `/${c}/q4-empty`, { version: v });
  row("4f", "Get empty blob", `${brief(r)} Content-Length=${r.headers["content-length"]}`);
  r = await req("GET", `/${c}/nope`, { headers: { "If-Match": g2 }, version: v });
  row("4g", "Get missing blob with If-Match:<etag> (Azurite #2751)", brief(r));
  r = await req("GET", `/${c}/q4`, { headers: { "If-None-Match": g2 }, version: v });
  row("4h", "Get If-None-Match:<current>", brief(r));

  // 5. List Blobs
  for (let i = 1; i <= 5; i++) await put(c, `p/${i}`, `b${i}`, {}, v);
  let marker = "", page = 0;
  const pages = [];
  do {
    r = await req("GET", `/${c}?restype=container&comp=list&prefix=p%2F&maxresults=2` +
      (marker ? `&marker=${encodeURIComponent(marker)}` : ""), { version: v });
    page++;
    const names = [...r.body.matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1]);
    marker = (/<NextMarker>([^<]*)<\/NextMarker>/.exec(r.body) || [, ""])[1];
    pages.push(`[${names.join(",")}] NextMarker=${JSON.stringify(marker)}`);
    if (OUT && v === VERSIONS[0]) fs.writeFileSync(`${OUT}/list-page${page}.xml`, r.body);
  } while (marker && page < 10);
  row("5a", "List prefix=p/ maxresults=2 over 5 blobs", pages.join(" | "));
  const etagXml = (/<Etag>([^<]*)<\/Etag>/.exec(r.body) || [])[1];
  const head5 = (await req("HEAD", `/${c}/p/5`, { version: v })).headers.etag;
  row("5b", "<Etag> in listing vs ETag header", `listing ${etagXml}, header ${head5}`);
  r = await req("GET", `/${c}?restype=container&comp=list&prefix=p%2F&marker=${encodeURIComponent("p/3")}`, { version: v });
  row("5c", "List marker=p/3 (a made-up marker = a name)",
    `${brief(r)} [${[...r.body.matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1]).join(",")}]`);
  r = await req("GET", `/${c}?restype=container&comp=list&prefix=p%2F&marker=garbage!!`, { version: v });
  row("5d", "List marker=garbage!!", `${brief(r)} [${[...r.body.matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1]).join(",")}]`);
  r = await req("GET", `/${c}?restype=container&comp=list&maxresults=0`, { version: v });
  row("5e", "List maxresults=0", brief(r));
  r = await req("GET", `/${c}?restype=container&comp=list&maxresults=6000&prefix=p%2F`, { version: v });
  row("5f", "List maxresults=6000", `${brief(r)} MaxResults=${(/<MaxResults>([^<]*)</.exec(r.body) || [])[1]}`);

  // ordering and names that need encoding
  const odd = ["a", "a b", "a+b", "a%b", "a/b", "a.b", "a-b", "A", "ä", "z", "~", "\uff01", "\u{1F600}", "a\u00e9", "ae"];
  const putOdd = [];
  for (const n of odd) { r = await put(c, `o/${n}`, n, {}, v); putOdd.push(`${n}:${r.status}`); }
  if (putOdd.some((s) => !s.endsWith(":201"))) row("5g0", "Put odd names (encodeURIComponent per segment)", putOdd.join(" "));
  r = await req("GET", `/${c}?restype=container&comp=list&prefix=o%2F`, { version: v });
  const listed = [...r.body.matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1].slice(2));
  const utf8 = [...odd].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
  const utf16 = [...odd].sort();
  row("5g", "List order of o/{a, a b, a+b, a%b, a/b, a.b, a-b, A, ä, z, ~, U+FF01, U+1F600, aé, ae}",
    `${JSON.stringify(listed)}; = UTF-8 byte order: ${JSON.stringify(listed) === JSON.stringify(utf8)}; = UTF-16 order: ${JSON.stringify(listed) === JSON.stringify(utf16)}`);
  if (OUT && v === VERSIONS[0]) fs.writeFileSync(`${OUT}/list-odd-names.xml`, r.body);
  r = await req("GET", `/${c}?restype=container&comp=list&prefix=o%2F&delimiter=%2F`, { version: v });
  row("5h", "List prefix=o/ delimiter=/",
    `BlobPrefix=${JSON.stringify([...r.body.matchAll(/<BlobPrefix><Name>([^<]*)<\/Name>/g)].map((m) => m[1]))} Blobs=${[...r.body.matchAll(/<Blob><Name>/g)].length}`);
  // raw path forms: what name does each wire form give?
  const forms = [["e/a+b", "raw '+'"], ["e/a%2Bb", "%2B"], ["e/a%20b", "%20"], ["e/%C3%A4", "%C3%A4"],
    ["e/a%2Fb", "%2F"], ["e/a%25b", "%25"], ["e/a%7Eb", "%7E"], ["e/a~b", "raw '~'"], ["e/a!'()*b", "raw !'()*"],
    ["e/a%3Fb", "%3F"], ["e/a%23b", "%23"], ["e/a;b", "raw ';'"], ["e/a:b@c", "raw ':@'"], ["e/a%5Cb", "%5C (backslash)"]];
  const got = [];
  for (const [p, what] of forms) {
    r = await req("PUT", `/${c}/${p}`, { body: what, headers: BB, version: v });
    got.push(`${what} -> ${r.status}`);
  }
  r = await req("GET", `/${c}?restype=container&comp=list&prefix=e%2F`, { version: v });
  const eNames = [...r.body.matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1]);
  row("5i", "Put by raw path forms (status)", got.join("; "));
  row("5j", "names listed for those", JSON.stringify(eNames));
  r = await req("GET", `/${c}/e/a%2Bb`, { version: v });
  const r2 = await req("GET", `/${c}/e/a+b`, { version: v });
  row("5k", "Get e/a%2Bb vs e/a+b", `${brief(r)} ${JSON.stringify(r.body)} / ${brief(r2)} ${JSON.stringify(r2.body)}`);
  r = await req("GET", `/${c}/e/a%2Fb`, { version: v });
  const r3 = await req("GET", `/${c}/e/a/b`, { version: v });
  row("5l", "Get e/a%2Fb vs e/a/b", `${brief(r)} ${JSON.stringify(r.body)} / ${brief(r3)} ${JSON.stringify(r3.body)}`);
  r = await req("GET", `/${c}?restype=container&comp=list&prefix=${encodeURIComponent("o/a b")}`, { version: v });
  row("5m", "List prefix='o/a b' (%20 in query)", `[${[...r.body.matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1]).join(",")}]`);
  r = await req("GET", `/${c}?restype=container&comp=list&prefix=o/a+b`, { version: v });
  row("5n", "List prefix=o/a+b ('+' raw in query)", `[${[...r.body.matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1]).join(",")}]`);
  r = await req("GET", `/${c}?restype=container&comp=list&prefix=o%2Fa%2Bb`, { version: v });
  row("5o", "List prefix=o%2Fa%2Bb", `[${[...r.body.matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1]).join(",")}]`);

  // 6. names
  const long = (n) => "n/" + "x".repeat(n - 2);
  r = await put(c, long(1024), "x", {}, v);
  row("6a", "Put name of 1024 chars", brief(r));
  r = await put(c, long(1025), "x", {}, v);
  row("6b", "Put name of 1025 chars", brief(r));
  r = await put(c, "n/" + "ä".repeat(1022), "x", {}, v);
  row("6c", "Put name of 1024 chars = 2046 UTF-8 bytes", brief(r));
  const nameCases = [["n/dir/", "trailing /"], ["n/dot.", "trailing ."], ["n/dots..", "trailing .."], ["/n-lead", "leading / (path //)"],
    ["n/a//b", "a//b"], ["n/./x", "/./"], ["n/../x", "/../"], ["n/a\\b", "backslash (raw)"], ["n/%00x", "%00"],
    ["n/%01x", "%01"], ["n/%0Ax", "%0A"], ["n/%7Fx", "%7F"], ["n/%EF%BF%BFx", "U+FFFF"], ["n/%ED%A0%80x", "lone surrogate (bad UTF-8)"], ["n/%FFx", "%FF (bad UTF-8)"]];
  const res6 = [];
  for (const [p, what] of nameCases) {
    r = await req("PUT", `/${c}/${p}`, { body: what, headers: BB, version: v });
    res6.push(`${what} -> ${brief(r)}`);
  }
  row("6d", "Put odd names (raw path)", res6.join("; "));
  r = await req("GET", `/${c}?restype=container&comp=list&prefix=n`, { version: v });
  row("6e", "List prefix=n after those", `${brief(r)} ${JSON.stringify([...r.body.matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1]).filter((n) => n.length < 100))}`);
  for (const p of ["%00", "%01", "%0A", "%7F", "%EF%BF%BF", "%FF"]) await req("DELETE", `/${c}/n/${p}x`, { version: v });
  r = await req("GET", `/${c}?restype=container&comp=list&prefix=n`, { version: v });
  row("6f", "List prefix=n once the control-character names are deleted", `${brief(r)} ${JSON.stringify([...r.body.matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1]).filter((n) => n.length < 100))}`);
  const res6g = [];
  for (const p of ["%00", "%01", "%09", "%0A", "%0D", "%1F", "%7F", "%C2%81", "%EE%80%80", "%EF%BF%BE", "%EF%BF%BF"]) {
    const cc = `${c}-cc`;
    await req("PUT", `/${cc}?restype=container`, { version: v });
    const pr = await req("PUT", `/${cc}/x${p}y`, { body: "x", headers: BB, version: v });
    const lr = await req("GET", `/${cc}?restype=container&comp=list`, { version: v });
    const names = [...lr.body.matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1]);
    res6g.push(`${p}: Put ${pr.status}, List ${brief(lr)}${lr.status === 200 ? " " + JSON.stringify(names) : ""}`);
    await req("DELETE", `/${cc}?restype=container`, { version: v });
  }
  row("6g", "name x<char>y alone in a container: Put, then List", res6g.join("; "));
  r = await req("GET", `/${c}?restype=container&comp=list&prefix=%2F`, { version: v });
  row("6h", "List prefix=/", JSON.stringify([...r.body.matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1])));

  // 7. lease
  r = await put(c, "q7", "x", {}, v);
  const e7 = r.headers.etag;
  const lid = "11111111-2222-3333-4444-555555555555";
  r = await req("PUT", `/${c}/q7?comp=lease`, { headers: { "x-ms-lease-action": "acquire", "x-ms-lease-duration": "15", "x-ms-proposed-lease-id": lid }, version: v });
  row("7a", "Lease acquire 15 s", `${brief(r)} lease-id=${r.headers["x-ms-lease-id"]} ETag=${r.headers.etag} (blob ETag ${e7})`);
  r = await put(c, "q7", "y", {}, v);
  row("7b", "Put on leased blob, no x-ms-lease-id", brief(r));
  r = await put(c, "q7", "y", { "If-Match": e7 }, v);
  row("7c", "Put If-Match:<current>, no lease id", brief(r));
  r = await put(c, "q7", "y", { "If-Match": stale }, v);
  row("7d", "Put If-Match:<stale>, no lease id", brief(r));
  r = await put(c, "q7", "y", { "x-ms-lease-id": "99999999-2222-3333-4444-555555555555" }, v);
  row("7e", "Put with wrong lease id", brief(r));
  r = await put(c, "q7", "y", { "x-ms-lease-id": lid, "If-Match": stale }, v);
  row("7f", "Put with lease id, If-Match:<stale>", brief(r));
  r = await put(c, "q7", "y", { "x-ms-lease-id": lid }, v);
  row("7g", "Put with lease id", brief(r));
  r = await req("HEAD", `/${c}/q7`, { version: v });
  row("7h", "lease after that Put", `${r.headers["x-ms-lease-state"]}/${r.headers["x-ms-lease-status"]}`);
  r = await req("DELETE", `/${c}/q7`, { version: v });
  row("7i", "Delete leased blob, no lease id", brief(r));
  r = await req("PUT", `/${c}/q7?comp=lease`, { headers: { "x-ms-lease-action": "acquire", "x-ms-lease-duration": "15" }, version: v });
  row("7j", "Lease acquire again (held)", brief(r));
  r = await req("PUT", `/${c}/q7?comp=lease`, { headers: { "x-ms-lease-action": "release", "x-ms-lease-id": lid }, version: v });
  row("7k", "Lease release", brief(r));
  r = await put(c, "q7", "z", { "x-ms-lease-id": lid }, v);
  row("7l", "Put with the released lease id", brief(r));

  // 8. missing container
  const nc = `nocontainer-${rnd()}`;
  const m8 = [];
  m8.push(`Put ${brief(await put(nc, "x", "x", {}, v))}`);
  m8.push(`Put INM:* ${brief(await put(nc, "x", "x", { "If-None-Match": "*" }, v))}`);
  m8.push(`Put If-Match ${brief(await put(nc, "x", "x", { "If-Match": stale }, v))}`);
  m8.push(`Get ${brief(await req("GET", `/${nc}/x`, { version: v }))}`);
  m8.push(`Head ${brief(await req("HEAD", `/${nc}/x`, { version: v }))}`);
  m8.push(`Delete ${brief(await req("DELETE", `/${nc}/x`, { version: v }))}`);
  m8.push(`List ${brief(await req("GET", `/${nc}?restype=container&comp=list`, { version: v }))}`);
  m8.push(`Delete container ${brief(await req("DELETE", `/${nc}?restype=container`, { version: v }))}`);
  row("8", "missing container", m8.join("; "));
  r = await req("PUT", `/${c}?restype=container`, { version: v });
  row("8b", "create existing container", brief(r));
  r = await req("PUT", `/Bad_Name?restype=container`, { version: v });
  row("8c", "create container 'Bad_Name'", brief(r));

  // 9. auth
  const wrong = Buffer.alloc(64, 7).toString("base64");
  r = await req("GET", `/${c}/q4`, { key: wrong, version: v });
  row("9a", "Get signed with a wrong key", `${brief(r)} body=${JSON.stringify(r.body.replace(/\n/g, " ").slice(0, 160))}`);
  r = await req("PUT", `/${c}/q9`, { key: wrong, body: "x", headers: BB, version: v });
  row("9b", "Put signed with a wrong key", brief(r));
  r = await req("GET", `/${c}/q4`, { auth: "none", version: v });
  row("9c", "Get without Authorization (private container)", brief(r));
  r = await req("GET", `/${c}/q4`, { headers: { Authorization: "SharedKey devstoreaccount1:bad" }, auth: "none", version: v });
  row("9d", "Get with a garbage signature", brief(r));
  r = await req("GET", `/${c}/q4`, { headers: { "x-ms-date": "Mon, 01 Jan 2001 00:00:00 GMT" }, version: v });
  row("9e", "Get signed, x-ms-date 2001 (clock skew)", brief(r));

  // 10. headers in strict mode
  r = await put(c, "q10", "x", { "Content-Type": "text/plain; charset=utf-8", "x-ms-client-request-id": "abc" }, v);
  row("10a", "Put with Content-Type and x-ms-client-request-id", brief(r));
  r = await req("PUT", `/${c}/q10`, { body: "x", headers: { ...BB, "x-ms-date": undefined, Date: new Date().toUTCString() }, version: v });
  row("10b", "Put with Date instead of x-ms-date", brief(r));
  r = await put(c, "q10", "x", { "x-ms-content-crc64": "AAAAAAAAAAA=" }, v);
  row("10c", "Put with x-ms-content-crc64 (strict mode)", brief(r));
  r = await put(c, "q10", "x", { "Content-MD5": "AAAAAAAAAAAAAAAAAAAAAA==" }, v);
  row("10d", "Put with a wrong Content-MD5", brief(r));
  r = await req("PUT", `/${c}/q10`, { body: "x", version: v });
  row("10e", "Put without x-ms-blob-type", brief(r));
  r = await put(c, "q10", "x", { "x-ms-meta-k": "v", "Cache-Control": "no-cache" }, v);
  row("10f", "Put with x-ms-meta-k and Cache-Control", brief(r));
  r = await put(c, "q10", "x", { Expect: "100-continue" }, v);
  row("10g", "Put with Expect: 100-continue", brief(r));

  await req("DELETE", `/${c}?restype=container`, { version: v });
  return rows;
}

async function versions() {
  const rows = [];
  const c = `sver-${rnd()}`;
  await req("PUT", `/${c}?restype=container`);
  for (const v of ["2026-04-06", "2025-11-05", "2099-01-01", "2009-09-19", "2015-02-21", "bogus"]) {
    const r = await req("PUT", `/${c}/x`, { body: "x", headers: BB, version: v });
    rows.push(["10v", `Put x-ms-version ${v}`, `${brief(r)} resp x-ms-version=${r.headers["x-ms-version"]}`]);
  }
  const r = await req("PUT", `/${c}/x`, { body: "x", headers: BB, version: null });
  rows.push(["10v", "Put without x-ms-version", `${brief(r)} resp x-ms-version=${r.headers["x-ms-version"]}`]);
  await req("DELETE", `/${c}?restype=container`);
  return rows;
}

async function race() {
  const rows = [];
  const c = `srace-${rnd()}`;
  await req("PUT", `/${c}?restype=container`);
  const N = 20, ROUNDS = Number(process.env.SURVEY_ROUNDS || 20);
  const tally = (rs) => { const t = {}; for (const r of rs) t[brief(r)] = (t[brief(r)] || 0) + 1; return t; };
  const merge = (acc, t) => { for (const [k, n] of Object.entries(t)) acc[k] = (acc[k] || 0) + n; };
  let bad = 0, acc = {};
  for (let k = 0; k < ROUNDS; k++) {
    const e = (await put(c, "race", `base${k}`)).headers.etag;
    const rs = await Promise.all([...Array(N).keys()].map((i) => put(c, "race", `w${k}-${i}`, { "If-Match": e })));
    const wins = rs.filter((r) => r.status === 201);
    const now = await req("GET", `/${c}/race`);
    if (wins.length !== 1 || now.headers.etag !== wins[0].headers.etag || now.body !== `w${k}-${rs.indexOf(wins[0])}`) bad++;
    merge(acc, tally(rs));
  }
  rows.push(["11a", `${N} concurrent Put If-Match:<same etag>, ${ROUNDS} rounds`, `${JSON.stringify(acc)}; rounds without exactly one winner (or content not the winner's): ${bad}`]);
  bad = 0; acc = {};
  for (let k = 0; k < ROUNDS; k++) {
    const rs = await Promise.all([...Array(N).keys()].map((i) => put(c, `new${k}`, `w${i}`, { "If-None-Match": "*" })));
    const wins = rs.filter((r) => r.status === 201);
    const now = await req("GET", `/${c}/new${k}`);
    if (wins.length !== 1 || now.body !== `w${rs.indexOf(wins[0])}`) bad++;
    merge(acc, tally(rs));
  }
  rows.push(["11b", `${N} concurrent Put If-None-Match:* on a new blob, ${ROUNDS} rounds`, `${JSON.stringify(acc)}; bad rounds: ${bad}`]);
  bad = 0; acc = {};
  for (let k = 0; k < ROUNDS; k++) {
    const e = (await put(c, "del", `base${k}`)).headers.etag;
    const rs = await Promise.all([...Array(N).keys()].map(() => req("DELETE", `/${c}/del`, { headers: { "If-Match": e } })));
    if (rs.filter((r) => r.status === 202).length !== 1) bad++;
    merge(acc, tally(rs));
  }
  rows.push(["11c", `${N} concurrent Delete If-Match:<same etag>, ${ROUNDS} rounds`, `${JSON.stringify(acc)}; bad rounds: ${bad}`]);
  bad = 0; acc = {};
  for (let k = 0; k < ROUNDS; k++) {
    const e = (await put(c, "mix", `base${k}`)).headers.etag;
    const rs = await Promise.all([...Array(N).keys()].map((i) => (i % 2
      ? req("DELETE", `/${c}/mix`, { headers: { "If-Match": e } })
      : put(c, "mix", `w${i}`, { "If-Match": e }))));
    if (rs.filter((r) => r.status === 201 || r.status === 202).length !== 1) bad++;
    merge(acc, tally(rs));
  }
  rows.push(["11d", `${N} concurrent Put/Delete mixed If-Match:<same etag>, ${ROUNDS} rounds`, `${JSON.stringify(acc)}; bad rounds: ${bad}`]);
  // bigger bodies make the upload phase longer (the check and the write are further apart)
  bad = 0; acc = {};
  const big = Buffer.alloc(256 * 1024, 97);
  for (let k = 0; k < Math.min(ROUNDS, 10); k++) {
    const e = (await put(c, "bigrace", "base")).headers.etag;
    const rs = await Promise.all([...Array(N).keys()].map(() => put(c, "bigrace", big, { "If-Match": e })));
    if (rs.filter((r) => r.status === 201).length !== 1) bad++;
    merge(acc, tally(rs));
  }
  rows.push(["11e", `${N} concurrent 256 KiB Put If-Match:<same etag>, ${Math.min(ROUNDS, 10)} rounds`, `${JSON.stringify(acc)}; bad rounds: ${bad}`]);
  bad = 0; acc = {};
  for (let k = 0; k < Math.min(ROUNDS, 10); k++) {
    const rs = await Promise.all([...Array(N).keys()].map(() => put(c, `bignew${k}`, big, { "If-None-Match": "*" })));
    if (rs.filter((r) => r.status === 201).length !== 1) bad++;
    merge(acc, tally(rs));
  }
  rows.push(["11f", `${N} concurrent 256 KiB Put If-None-Match:* on a new blob, ${Math.min(ROUNDS, 10)} rounds`, `${JSON.stringify(acc)}; bad rounds: ${bad}`]);
  await req("DELETE", `/${c}?restype=container`);
  return rows;
}

(async () => {
  if (OUT) fs.mkdirSync(OUT, { recursive: true });
  const per = [];
  for (const v of VERSIONS) per.push(await run(v));
  console.log(`| id | request | ${VERSIONS.map((v) => `x-ms-version ${v}`).join(" | ")} |`);
  for (let i = 0; i < per[0].length; i++) {
    const [id, what] = per[0][i];
    const res = per.map((rows) => rows[i][2]);
    const same = res.every((x) => x.replace(/0x[0-9A-F]+/g, "0x…") === res[0].replace(/0x[0-9A-F]+/g, "0x…"));
    console.log(`| ${id} | ${what} | ${same ? res[0] + " (same for all)" : res.join(" | ")} |`);
  }
  for (const [id, what, res] of await versions()) console.log(`| ${id} | ${what} | ${res} |`);
  for (const [id, what, res] of await race()) console.log(`| ${id} | ${what} | ${res} |`);
  agent.destroy();
})().catch((e) => { console.error(e); process.exit(1); });
