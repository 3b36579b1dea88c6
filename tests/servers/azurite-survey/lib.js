// Raw Azure Blob requests with Shared Key signing, for surveying Azurite.
// Environment: BATON_AZURITE_ENDPOINT (http://127.0.0.1:PORT/devstoreaccount1),
// BATON_AZURITE_ACCOUNT, BATON_AZURITE_KEY (as printed by tests/servers/start.sh azurite).
"use strict";
const http = require("http");
const crypto = require("crypto");

const endpoint = new URL(process.env.BATON_AZURITE_ENDPOINT);
const account = process.env.BATON_AZURITE_ACCOUNT;
const key = process.env.BATON_AZURITE_KEY;
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

// Shared Key string-to-sign (version 2009-09-19+). `path` is the encoded path as sent
// (it starts with /devstoreaccount1 in path-style URLs, so the account appears twice).
function stringToSign(method, path, query, headers) {
  const h = {};
  for (const [k, v] of Object.entries(headers)) h[k.toLowerCase()] = String(v);
  const get = (n) => (h[n] === undefined ? "" : h[n]);
  const cl = get("content-length") === "0" ? "" : get("content-length");
  const xms = Object.keys(h).filter((k) => k.startsWith("x-ms-")).sort()
    .map((k) => `${k}:${h[k].replace(/\s+/g, " ").trim()}\n`).join("");
  let res = `/${account}${path}`;
  const q = [...query.entries()].map(([k, v]) => [k.toLowerCase(), v]);
  const names = [...new Set(q.map(([k]) => k))].sort();
  for (const n of names) res += `\n${n}:${q.filter(([k]) => k === n).map(([, v]) => v).sort().join(",")}`;
  return [method, get("content-encoding"), get("content-language"), cl, get("content-md5"),
    get("content-type"), get("date"), get("if-modified-since"), get("if-match"),
    get("if-none-match"), get("if-unmodified-since"), get("range")].join("\n") + "\n" + xms + res;
}

// req(method, rel, opts): rel is the encoded path below the account ("/c/b") plus an
// optional "?query". opts: headers, body (string|Buffer), version (x-ms-version, or null
// to omit), key (signing key), auth ("sharedkey" | "none"), sas (token appended to the query).
function req(method, rel, opts = {}) {
  const body = opts.body === undefined ? null : Buffer.from(opts.body);
  const qpos = rel.indexOf("?");
  const relPath = qpos < 0 ? rel : rel.slice(0, qpos);
  let rawQuery = qpos < 0 ? "" : rel.slice(qpos + 1);
  if (opts.sas) rawQuery = rawQuery ? `${rawQuery}&${opts.sas}` : opts.sas;
  const path = endpoint.pathname.replace(/\/$/, "") + relPath;
  const headers = { "x-ms-date": new Date().toUTCString() };
  if (opts.version !== null) headers["x-ms-version"] = opts.version || "2021-12-02";
  if (body !== null || method === "PUT") headers["Content-Length"] = String(body ? body.length : 0);
  Object.assign(headers, opts.headers || {});
  for (const k of Object.keys(headers)) if (headers[k] === undefined) delete headers[k];
  const auth = opts.auth || (opts.sas ? "none" : "sharedkey");
  if (auth === "sharedkey") {
    const sts = stringToSign(method, path, new URLSearchParams(rawQuery), headers);
    const sig = crypto.createHmac("sha256", Buffer.from(opts.key || key, "base64")).update(sts, "utf8").digest("base64");
    headers.Authorization = `SharedKey ${account}:${sig}`;
  }
  return new Promise((resolve, reject) => {
    const r = http.request({ host: endpoint.hostname, port: endpoint.port, method, agent,
      path: path + (rawQuery ? `?${rawQuery}` : ""), headers }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers,
        code: res.headers["x-ms-error-code"], body: Buffer.concat(chunks).toString("utf8") }));
    });
    r.on("error", reject);
    if (body) r.write(body);
    r.end();
  });
}

// A short, stable description of a response: status, x-ms-error-code, <Code> of the body.
function brief(r) {
  const m = /<Code>([^<]*)<\/Code>/.exec(r.body);
  let s = `${r.status}`;
  if (r.code) s += ` ${r.code}`;
  if (m && m[1] !== r.code) s += ` (body Code ${m[1]})`;
  if (!r.code && !m && r.status >= 400) s += r.body ? ` body=${JSON.stringify(r.body.slice(0, 80))}` : " (no body)";
  return s;
}

const enc = (name) => name.split("/").map(encodeURIComponent).join("/");

module.exports = { req, brief, enc, stringToSign, account, key, endpoint, agent };
