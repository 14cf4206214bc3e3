// @ts-check
/**
 * seckill: a client for the flash-sale edge's buyer protocol (docs/client.md; the wire format
 * is docs/openapi.yaml). One ES module, no dependencies, no build step: it runs in browsers
 * (the proof of work in a Web Worker) and in Node 20.19+ or 22.12+ (in a worker_threads thread; `require()` of this module works from those versions).
 *
 *   import { Client } from "@seckill/client";
 *   const c = new Client({ baseURL: "https://shop.example" });
 *   const place = await c.enter("drop-1", { onProgress: (p) => bar(p.tried / p.expected) });
 *   const admitted = await c.waitForAdmission("drop-1", place, { onUpdate: show });
 *   const { token } = await c.token("drop-1");
 *   const { order_id } = await c.buy("drop-1", { token });
 *   const order = await c.waitOrder(order_id);
 *
 * @module seckill
 */

/**
 * @typedef {object} ClientOptions
 * @property {string} [baseURL] The gateway's origin ("" or absent: the page's own origin). A page
 *   on another origin than the gateway needs it, the gateway's `seckill_cors` allow list, and
 *   credentials "include" for the shop's session cookie (docs/DESIGN.md, "URL space").
 * @property {string} [prefix] The path prefix of the gateway's buyer routes (the seckill app's
 *   `prefix`; default "/seckill"): token, buy, room, challenge, queue and draw are under it.
 * @property {string} [ordersPrefix] The path prefix of the order status route (the app's
 *   `orders_prefix`; default "/orders").
 * @property {Record<string, string>} [headers] Headers sent with every request (e.g. X-User-ID
 *   where the gateway believes it; production gateways read the shop's session cookie instead).
 * @property {RequestCredentials} [credentials] fetch's credentials (default "same-origin", so
 *   the shop's session cookie goes along).
 * @property {typeof fetch} [fetch] The fetch to use (default globalThis.fetch).
 * @property {(ms: number, signal?: AbortSignal) => Promise<void>} [sleep] How to wait between
 *   polls (default a timer; tests pass their own).
 * @property {number} [maxBackoffMs] The longest wait after repeated 429 / 503 (default 30000).
 * @property {DeviceKey} [deviceKey] The device's key (DeviceKey.open()): the token issue, the
 *   room's entry, polls and leave, and the purchase then carry a DPoP proof of it, so the token
 *   and the ticket are bound to this device (device_binding, docs/DESIGN.md "Device-bound tokens
 *   and tickets"). Absent: bearer tokens, until a gateway answers proof_required: the client
 *   then opens the device's key (DeviceKey.open()) and asks again once, so a page works with
 *   any device_binding unchanged.
 */

/**
 * @typedef {object} Refusal
 * @property {string} code A stable code (docs/openapi.yaml lists them by status).
 * @property {string} message
 * @property {string} [order_id] The existing order (already_bought).
 * @property {string} [variant] The variant a sold_out is about.
 * @property {number} [held] The units held already (limit_reached).
 */

/**
 * @typedef {object} QueueAnswer
 * @property {string} [ticket] Send it back with each poll (an answer may hand out a new one).
 * @property {string} [entry_id]
 * @property {"waiting"|"admitted"|"sold_out"|"ended"|"paused"|"left"} state
 * @property {number} [position]
 * @property {number} [ahead]
 * @property {number} [estimated_wait_s]
 * @property {number[]} [estimated_wait_range_s]
 * @property {number} refresh_s Poll again after this many seconds.
 * @property {string} [admitted_until]
 * @property {number} [units_left]
 */

/**
 * @typedef {object} Progress
 * @property {number} tried Hashes tried so far.
 * @property {number} expected Hashes expected on average (2^difficulty).
 * @property {number} difficulty
 * @property {boolean} done The work is finished: the last event of a solve (tried is then
 *   the counter found plus one).
 */

/**
 * @typedef {object} Order
 * @property {string} order_id
 * @property {string} sale_id
 * @property {"queued"|"created"|"failed"|"paid"|"cancelled"} status
 * @property {string} [reason]
 * @property {string} [variant]
 * @property {number} [quantity]
 */

/** A refusal of the edge: its HTTP status, its stable code, and Retry-After when given. */
export class SeckillError extends Error {
  /**
   * @param {number} status
   * @param {Refusal} body
   * @param {number | undefined} retryAfter seconds
   */
  constructor(status, body, retryAfter) {
    super(`${status} ${body.code}: ${body.message}`);
    this.name = "SeckillError";
    /** @type {number} */
    this.status = status;
    /** @type {string} */
    this.code = body.code;
    /** @type {Refusal} */
    this.body = body;
    /** @type {number | undefined} */
    this.retryAfter = retryAfter;
  }
}

// ---------------------------------------------------------------------------- device key

/** @param {Uint8Array} bytes */
function b64url(bytes) {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** @param {string} s */
const utf8 = (s) => new TextEncoder().encode(s);

/** @param {string} s */
async function sha256b64(s) {
  return b64url(new Uint8Array(await crypto.subtle.digest("SHA-256", utf8(s))));
}

const IDB_NAME = "seckill";
const IDB_STORE = "device-keys";

/** @param {string} mode @returns {Promise<IDBObjectStore>} */
function idbStore(mode) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(IDB_NAME, 1);
    open.onupgradeneeded = () => open.result.createObjectStore(IDB_STORE);
    open.onerror = () => reject(open.error);
    open.onsuccess = () => resolve(open.result.transaction(IDB_STORE, /** @type {IDBTransactionMode} */ (mode)).objectStore(IDB_STORE));
  });
}

/** @param {IDBRequest} req */
const idbDone = (req) => new Promise((resolve, reject) => {
  req.onsuccess = () => resolve(req.result);
  req.onerror = () => reject(req.error);
});

/**
 * The device's P-256 key for proofs of possession (RFC 9449 style). Its private half is a
 * WebCrypto key created with extractable false: the page signs with it but cannot read it,
 * nor can any script of the page, so a token or ticket bound to it is worth nothing copied
 * elsewhere. In a browser it is kept in IndexedDB (the CryptoKey itself, structured-cloned,
 * still not extractable) and found again on the next visit; in Node, in memory.
 */
export class DeviceKey {
  /** @type {CryptoKeyPair} */ #pair;
  /** @type {{ crv: string, kty: string, x: string, y: string }} */ #jwk;
  /** The gateway's clock minus ours (ms), learnt from answers' Date header. */
  skewMs = 0;

  /** @param {CryptoKeyPair} pair @param {JsonWebKey} jwk */
  constructor(pair, jwk) {
    this.#pair = pair;
    this.#jwk = { crv: String(jwk.crv), kty: String(jwk.kty), x: String(jwk.x), y: String(jwk.y) };
  }

  /**
   * The device's key named name: the one kept in IndexedDB, or a new one (kept there).
   * @param {string} [name]
   * @returns {Promise<DeviceKey>}
   */
  static async open(name = "default") {
    const hasIDB = typeof indexedDB !== "undefined";
    /** @type {CryptoKeyPair | undefined} */
    let pair = hasIDB ? await idbDone((await idbStore("readonly")).get(name)) : undefined;
    if (!pair) {
      pair = /** @type {CryptoKeyPair} */ (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]));
      if (hasIDB) await idbDone((await idbStore("readwrite")).put(pair, name));
    }
    return new DeviceKey(pair, await crypto.subtle.exportKey("jwk", pair.publicKey));
  }

  /** The key's RFC 7638 thumbprint (what tokens are sealed with). @returns {Promise<string>} */
  thumbprint() {
    const j = this.#jwk;
    return sha256b64(`{"crv":"${j.crv}","kty":"${j.kty}","x":"${j.x}","y":"${j.y}"}`);
  }

  /**
   * A fresh DPoP proof for one request: a compact JWS (typ dpop+jwt, ES256, the public jwk)
   * over htm, htu (the URL without query or fragment), iat (the gateway's clock, as far as
   * its Date header told), a random jti, and ath, the token's or ticket's hash ("" for none).
   * @param {string} method @param {string} url an absolute URL @param {string} [token]
   * @returns {Promise<string>}
   */
  async proof(method, url, token = "") {
    const u = new URL(url);
    /** @type {{ htm: string, htu: string, iat: number, jti: string, ath?: string }} */
    const claims = {
      htm: method,
      htu: u.origin + u.pathname,
      iat: Math.floor((Date.now() + this.skewMs) / 1000),
      jti: b64url(crypto.getRandomValues(new Uint8Array(16))),
    };
    if (token) claims.ath = await sha256b64(token);
    const head = b64url(utf8(JSON.stringify({ typ: "dpop+jwt", alg: "ES256", jwk: this.#jwk })));
    const input = head + "." + b64url(utf8(JSON.stringify(claims)));
    // WebCrypto's ECDSA signature is r || s, 64 bytes: JWS's ES256 form (RFC 7518, 3.4).
    const sig = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, this.#pair.privateKey, utf8(input));
    return input + "." + b64url(new Uint8Array(sig));
  }
}

// ---------------------------------------------------------------------------- proof of work

/**
 * The solver, as one self-contained function: it runs as is in this thread, and its source
 * is what a Web Worker or a worker_threads thread evaluates (so it may use nothing outside).
 * SHA-256 is written out because crypto.subtle is asynchronous (a promise per hash costs more
 * than the hash of a short string), and node:crypto is not in browsers.
 * @param {string} challenge
 * @param {number} difficulty
 * @param {number} from the first counter to try
 * @param {number} count how many to try
 * @returns {number} the counter that solves it, or -1 when none of these does
 */
function searchCounters(challenge, difficulty, from, count) {
  const K = new Uint32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
  ]);
  const prefix = new TextEncoder().encode(challenge + ":");
  const W = new Uint32Array(64);
  const buf = new Uint8Array(prefix.length + 32 + 72);
  buf.set(prefix);
  const view = new DataView(buf.buffer);
  /** @param {number} n @returns {boolean} */
  const solves = (n) => {
    // The message: prefix, the counter's decimal digits, SHA-256's padding.
    const digits = String(n);
    let len = prefix.length;
    for (let i = 0; i < digits.length; i++) buf[len++] = digits.charCodeAt(i);
    const total = Math.ceil((len + 9) / 64) * 64;
    buf[len] = 0x80;
    buf.fill(0, len + 1, total);
    view.setUint32(total - 4, len * 8);
    let h0 = 0x6a09e667, h1 = 0xbb67ae85, h2 = 0x3c6ef372, h3 = 0xa54ff53a;
    let h4 = 0x510e527f, h5 = 0x9b05688c, h6 = 0x1f83d9ab, h7 = 0x5be0cd19;
    for (let off = 0; off < total; off += 64) {
      for (let i = 0; i < 16; i++) W[i] = view.getUint32(off + i * 4);
      for (let i = 16; i < 64; i++) {
        const a = W[i - 15], b = W[i - 2];
        const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
        const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
        W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
      }
      let a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7;
      for (let i = 0; i < 64; i++) {
        const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
        const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
        const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
        const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
        h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      h0 = (h0 + a) | 0; h1 = (h1 + b) | 0; h2 = (h2 + c) | 0; h3 = (h3 + d) | 0;
      h4 = (h4 + e) | 0; h5 = (h5 + f) | 0; h6 = (h6 + g) | 0; h7 = (h7 + h) | 0;
    }
    // Leading zero bits of the digest, word by word.
    const words = [h0, h1, h2, h3, h4, h5, h6, h7];
    let zeros = 0;
    for (const w of words) {
      const z = Math.clz32(w);
      zeros += z;
      if (z < 32 || zeros >= difficulty) break;
    }
    return zeros >= difficulty;
  };
  for (let n = from; n < from + count; n++) if (solves(n)) return n;
  return -1;
}

/** How many counters a slice tries before reporting progress (a few milliseconds' work). */
const SLICE = 1 << 14;

/** The worker's program: slices of the search, a progress message after each. */
const workerMain = `
const search = ${searchCounters.toString()};
const SLICE = ${SLICE};
function run(msg, post) {
  const { challenge, difficulty } = msg;
  for (let from = 0; ; from += SLICE) {
    const n = search(challenge, difficulty, from, SLICE);
    if (n >= 0) { post({ done: String(n), tried: n + 1 }); return; }
    post({ tried: from + SLICE });
  }
}
`;

/**
 * Solves a proof-of-work challenge: the decimal counter such that SHA-256 of
 * `<challenge>:<counter>` has at least `difficulty` leading zero bits. It runs in a Web Worker
 * (browsers) or a worker_threads thread (Node), else in this thread in slices that yield.
 * @param {string} challenge
 * @param {number} difficulty bits
 * @param {{ onProgress?: (p: Progress) => void, signal?: AbortSignal, inline?: boolean }} [opts]
 *   inline: run in this thread even where a worker is available.
 * @returns {Promise<string>}
 */
export async function solve(challenge, difficulty, opts = {}) {
  const { onProgress, signal, inline } = opts;
  const expected = 2 ** difficulty;
  /** @param {number} tried @param {boolean} [done] */
  const progress = (tried, done = false) => onProgress && onProgress({ tried, expected, difficulty, done });
  if (difficulty <= 0) return "0";
  signal?.throwIfAborted();
  if (!inline && typeof Worker === "function" && typeof Blob === "function" && typeof URL?.createObjectURL === "function") {
    return inBrowserWorker(challenge, difficulty, progress, signal);
  }
  if (!inline && typeof process === "object" && process.versions?.node) {
    try {
      return await inNodeWorker(challenge, difficulty, progress, signal);
    } catch (e) {
      if (signal?.aborted) throw e;
      // No worker_threads (a sandbox): fall through to this thread.
    }
  }
  for (let from = 0; ; from += SLICE) {
    signal?.throwIfAborted();
    const n = searchCounters(challenge, difficulty, from, SLICE);
    if (n >= 0) {
      progress(n + 1, true);
      return String(n);
    }
    progress(from + SLICE);
    await new Promise((r) => setTimeout(r, 0));
  }
}

/**
 * @param {string} challenge @param {number} difficulty
 * @param {(tried: number, done?: boolean) => void} progress @param {AbortSignal | undefined} signal
 * @returns {Promise<string>}
 */
function inBrowserWorker(challenge, difficulty, progress, signal) {
  const src = workerMain + "onmessage = (e) => run(e.data, (m) => postMessage(m));";
  const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
  const w = new Worker(url);
  return new Promise((resolve, reject) => {
    const end = () => { w.terminate(); URL.revokeObjectURL(url); };
    signal?.addEventListener("abort", () => { end(); reject(signal.reason); }, { once: true });
    w.onmessage = (e) => {
      progress(e.data.tried, e.data.done !== undefined);
      if (e.data.done !== undefined) { end(); resolve(e.data.done); }
    };
    w.onerror = (e) => { end(); reject(new Error("proof of work: " + e.message)); };
    w.postMessage({ challenge, difficulty });
  });
}

/**
 * @param {string} challenge @param {number} difficulty
 * @param {(tried: number, done?: boolean) => void} progress @param {AbortSignal | undefined} signal
 * @returns {Promise<string>}
 */
async function inNodeWorker(challenge, difficulty, progress, signal) {
  const { Worker: NodeWorker } = await import("node:worker_threads");
  const src = workerMain + `
const { parentPort, workerData } = require("node:worker_threads");
run(workerData, (m) => parentPort.postMessage(m));`;
  const w = new NodeWorker(src, { eval: true, workerData: { challenge, difficulty } });
  return new Promise((resolve, reject) => {
    signal?.addEventListener("abort", () => { void w.terminate(); reject(signal.reason); }, { once: true });
    w.on("message", (m) => {
      progress(m.tried, m.done !== undefined);
      if (m.done !== undefined) { void w.terminate(); resolve(m.done); }
    });
    w.on("error", reject);
  });
}

// ---------------------------------------------------------------------------------- client

/** @param {number} ms @param {AbortSignal} [signal] @returns {Promise<void>} */
function timer(ms, signal) {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const id = setTimeout(() => resolve(), ms);
    signal?.addEventListener("abort", () => { clearTimeout(id); reject(signal.reason); }, { once: true });
  });
}

/** Path segments the edge takes as ids: ^[A-Za-z0-9_-]{1,64}$. */
const ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The header that carries a bot challenge's token ({} without one).
 * @param {{ challengeToken?: string }} o
 * @returns {Record<string, string>}
 */
function challengeHeader(o) {
  return o.challengeToken ? { "X-Seckill-Challenge-Token": o.challengeToken } : {};
}

/** @param {string} sale */
function saleSegment(sale) {
  if (!ID.test(sale)) throw new TypeError(`sale id ${JSON.stringify(sale)}: want 1-64 of [A-Za-z0-9_-]`);
  return sale;
}

/** A route prefix the edge accepts (its CheckPrefix): /a or /a/b, segments of [A-Za-z0-9._~-]. */
const PREFIX = /^(\/[A-Za-z0-9._~-]+)+$/;

/**
 * The prefix option (absent or "": the default; a trailing slash dropped), or a TypeError
 * for one the edge would refuse.
 * @param {string | undefined} p @param {string} def @param {string} name
 */
function routePrefix(p, def, name) {
  const v = (p || def).replace(/\/+$/, "");
  if (!PREFIX.test(v) || v.split("/").some((s) => s === "." || s === "..")) {
    throw new TypeError(`${name} ${JSON.stringify(p)}: want a path such as /seckill or /shop-api/drop`);
  }
  return v;
}

/**
 * A buyer's client of one gateway. It is an EventTarget: "progress" (detail: Progress) while
 * a proof of work runs, "update" (detail: QueueAnswer) at each poll of the waiting room.
 */
export class Client extends EventTarget {
  /** Sales whose last challenge had difficulty 0. */
  #noWork = new Set();

  /** @param {ClientOptions} [opts] */
  constructor(opts = {}) {
    super();
    this.baseURL = (opts.baseURL ?? "").replace(/\/+$/, "");
    this.prefix = routePrefix(opts.prefix, "/seckill", "prefix");
    this.ordersPrefix = routePrefix(opts.ordersPrefix, "/orders", "ordersPrefix");
    this.headers = { ...(opts.headers ?? {}) };
    this.credentials = opts.credentials ?? "same-origin";
    this.fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.sleep = opts.sleep ?? timer;
    this.maxBackoffMs = opts.maxBackoffMs ?? 30000;
    this.deviceKey = opts.deviceKey;
  }

  /**
   * The headers of a device-bound request: a DPoP proof of the device key for method and
   * path over token ({} without a device key).
   * @param {string} method @param {string} path @param {string} [token]
   * @returns {Promise<Record<string, string>>}
   */
  async #dpop(method, path, token) {
    if (!this.deviceKey) return {};
    const base = this.baseURL || globalThis.location?.origin || "";
    return { DPoP: await this.deviceKey.proof(method, new URL(base + path).href, token) };
  }

  /**
   * send(headers) with the DPoP headers of method and path over token; on proof_required
   * without a device key, opens the device's key and sends once more.
   * @template T
   * @param {string} method @param {string} path @param {string} token
   * @param {(headers: Record<string, string>) => Promise<T>} send
   * @returns {Promise<T>}
   */
  async #bound(method, path, token, send) {
    try {
      return await send(await this.#dpop(method, path, token));
    } catch (e) {
      if (this.deviceKey || !(e instanceof SeckillError) || e.code !== "proof_required") throw e;
      this.deviceKey = await DeviceKey.open();
      return send(await this.#dpop(method, path, token));
    }
  }

  /**
   * One request: the decoded JSON answer, or a SeckillError for a refusal.
   * @param {string} method @param {string} path
   * @param {{ headers?: Record<string, string>, body?: any, signal?: AbortSignal }} [o]
   * @returns {Promise<any>}
   */
  async request(method, path, o = {}) {
    /** @type {Record<string, string>} */
    const headers = { Accept: "application/json", ...this.headers, ...(o.headers ?? {}) };
    /** @type {RequestInit} */
    const init = { method, headers, credentials: this.credentials, signal: o.signal };
    if (o.body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(o.body);
    }
    const resp = await this.fetch(this.baseURL + path, init);
    const date = Date.parse(resp.headers.get("Date") ?? "");
    // A proof's iat must be the gateway's time give or take a minute: a device whose clock is
    // off follows the gateway's (Date has whole seconds: good enough for that window).
    if (this.deviceKey && Number.isFinite(date)) this.deviceKey.skewMs = date - Date.now();
    const text = await resp.text();
    let body;
    try {
      body = text ? JSON.parse(text) : {};
    } catch {
      body = { code: "bad_answer", message: text.slice(0, 200) };
    }
    if (!resp.ok) {
      const ra = Number.parseInt(resp.headers.get("Retry-After") ?? "", 10);
      throw new SeckillError(resp.status, body, Number.isFinite(ra) ? ra : undefined);
    }
    return body;
  }

  // -- purchase

  /**
   * A one-time purchase token (POST {prefix}/{sale}/token). challengeToken is the token of
   * the site's bot challenge, when it has one (sent as X-Seckill-Challenge-Token; single use).
   * @param {string} sale @param {{ signal?: AbortSignal, challengeToken?: string }} [o]
   * @returns {Promise<{ token: string, expires_at: string }>}
   */
  token(sale, o = {}) {
    const path = `${this.prefix}/${saleSegment(sale)}/token`; // a bad sale id throws here, at once
    return this.#bound("POST", path, "", (headers) =>
      this.request("POST", path, { ...o, headers: { ...headers, ...challengeHeader(o) } }));
  }

  /**
   * Buys (POST {prefix}/{sale}/buy): 202 with the order id, or a SeckillError (sold_out,
   * already_bought with its order_id, limit_reached with held, ...).
   * @param {string} sale
   * @param {{ token?: string, variant?: string, quantity?: number, signal?: AbortSignal }} [o]
   * @returns {Promise<{ order_id: string, status: "queued", variant?: string, quantity?: number }>}
   */
  buy(sale, o = {}) {
    const path = `${this.prefix}/${saleSegment(sale)}/buy`; // a bad sale id throws here, at once
    /** @type {Record<string, string>} */
    const headers = {};
    if (o.token) headers["X-Seckill-Token"] = o.token;
    /** @type {{ variant?: string, quantity?: number } | undefined} */
    let body;
    if (o.variant !== undefined || o.quantity !== undefined) {
      body = {};
      if (o.variant !== undefined) body.variant = o.variant;
      if (o.quantity !== undefined) body.quantity = o.quantity;
    }
    const send = (/** @type {Record<string, string>} */ proof) =>
      this.request("POST", path, { headers: { ...headers, ...proof }, body, signal: o.signal });
    return o.token ? this.#bound("POST", path, o.token, send) : send({});
  }

  /**
   * The buyer's order (GET {ordersPrefix}/{id}).
   * @param {string} orderId @param {{ signal?: AbortSignal }} [o]
   * @returns {Promise<Order>}
   */
  order(orderId, o = {}) {
    return this.request("GET", `${this.ordersPrefix}/${encodeURIComponent(orderId)}`, o);
  }

  /**
   * Polls the order until it leaves "queued" (written by the backend, or failed), backing off
   * on 429 / 503 as the gateway asks.
   * @param {string} orderId
   * @param {{ intervalMs?: number, signal?: AbortSignal }} [o] intervalMs: between polls (default 1000)
   * @returns {Promise<Order>}
   */
  async waitOrder(orderId, o = {}) {
    const interval = o.intervalMs ?? 1000;
    return this.#loop(async () => {
      const ord = await this.order(orderId, o);
      return ord.status === "queued" ? { again: interval } : { done: ord };
    }, o.signal);
  }

  // -- waiting room

  /**
   * The room's public state (GET {prefix}/{sale}/room).
   * @param {string} sale @param {{ signal?: AbortSignal }} [o]
   * @returns {Promise<{ sale: string, state: string, starts_at: string, prequeue_from: string, seed_commitment: string, seed?: string, units_left?: number }>}
   */
  room(sale, o = {}) {
    return this.request("GET", `${this.prefix}/${saleSegment(sale)}/room`, o);
  }

  /**
   * One page of the room's pre-queue in admission order (GET {prefix}/{sale}/room/prequeue),
   * public once the sale has ended, to check against the revealed seed. lane: one lane's
   * pre-queue, in a room with lanes (ranked by the same seed).
   * @param {string} sale @param {{ lane?: string, after?: number|string, limit?: number, signal?: AbortSignal }} [o]
   * @returns {Promise<{ seed: string, lane?: string, entries: string[], total?: number, next?: string }>}
   */
  prequeue(sale, o = {}) {
    const q = new URLSearchParams();
    if (o.lane) q.set("lane", o.lane);
    if (o.after != null && o.after !== "") q.set("after", String(o.after));
    if (o.limit) q.set("limit", String(o.limit));
    const qs = q.toString();
    return this.request("GET", `${this.prefix}/${saleSegment(sale)}/room/prequeue${qs ? "?" + qs : ""}`, o);
  }

  /**
   * A proof-of-work challenge (GET {prefix}/{sale}/challenge; a draw sale's is the draw's).
   * @param {string} sale @param {{ signal?: AbortSignal }} [o]
   * @returns {Promise<{ challenge: string, difficulty: number, expires_at: string }>}
   */
  challenge(sale, o = {}) {
    return this.request("GET", `${this.prefix}/${saleSegment(sale)}/challenge`, o);
  }

  /**
   * Solves the sale's current challenge; the headers that carry the solution ({} when the
   * sale asks for no work).
   * @param {string} sale
   * @param {{ onProgress?: (p: Progress) => void, signal?: AbortSignal, inline?: boolean }} o
   * @returns {Promise<Record<string, string>>}
   */
  async #proof(sale, o) {
    const ch = await this.challenge(sale, o);
    if (!ch.difficulty) {
      this.#noWork.add(sale);
      return {};
    }
    this.#noWork.delete(sale);
    const onProgress = (/** @type {Progress} */ p) => {
      o.onProgress?.(p);
      this.dispatchEvent(new CustomEvent("progress", { detail: p }));
    };
    const counter = await solve(ch.challenge, ch.difficulty, { ...o, onProgress });
    return { "X-Seckill-Challenge": ch.challenge, "X-Seckill-Solution": counter };
  }

  /**
   * Runs a request that may need a proof of work: solved first, and solved again once when the
   * answer is invalid_challenge (the difficulty rose while it ran, the challenge expired, or
   * a sale that asked for none now asks for some).
   * @param {string} sale @param {(h: Record<string, string>) => Promise<any>} send
   * @param {{ onProgress?: (p: Progress) => void, signal?: AbortSignal, inline?: boolean }} o
   */
  async #withProof(sale, send, o) {
    for (let attempt = 0; ; attempt++) {
      // A sale whose last challenge asked for no work is asked without one (half the
      // requests); if it asks for work now, the answer is invalid_challenge and we solve.
      const headers = attempt === 0 && this.#noWork.has(sale) ? {} : await this.#proof(sale, o);
      try {
        return await send(headers);
      } catch (e) {
        if (attempt > 0 || !(e instanceof SeckillError) || e.code !== "invalid_challenge") throw e;
      }
    }
  }

  /**
   * Takes a place in the waiting room (POST {prefix}/{sale}/queue), with the proof of work
   * the room asks for, and the token of its bot challenge when it has one (challengeToken:
   * single use, so entering again needs a new one). Entering again returns the same place.
   * invitation: a code of the sale's invitation lane (X-Seckill-Invitation); refused with
   * invitation_unknown or invitation_exhausted (its cap of uses reached).
   * @param {string} sale
   * @param {{ onProgress?: (p: Progress) => void, signal?: AbortSignal, inline?: boolean, challengeToken?: string, invitation?: string }} [o]
   * @returns {Promise<QueueAnswer>}
   */
  enter(sale, o = {}) {
    const path = `${this.prefix}/${saleSegment(sale)}/queue`;
    /** @type {Record<string, string>} */
    const invitation = o.invitation ? { "X-Seckill-Invitation": o.invitation } : {};
    return this.#withProof(sale, (headers) => this.#bound("POST", path, "", (proof) =>
      this.request("POST", path, { headers: { ...headers, ...proof, ...challengeHeader(o), ...invitation }, signal: o.signal })), o);
  }

  /**
   * One poll of the place (GET {prefix}/{sale}/queue with the ticket).
   * @param {string} sale @param {string} ticket @param {{ signal?: AbortSignal }} [o]
   * @returns {Promise<QueueAnswer>}
   */
  poll(sale, ticket, o = {}) {
    const path = `${this.prefix}/${saleSegment(sale)}/queue`;
    return this.#bound("GET", path, ticket, (proof) =>
      this.request("GET", path, { headers: { "X-Seckill-Ticket": ticket, ...proof }, signal: o.signal }));
  }

  /**
   * Gives the place up (DELETE {prefix}/{sale}/queue).
   * @param {string} sale @param {string} ticket @param {{ signal?: AbortSignal }} [o]
   * @returns {Promise<QueueAnswer>}
   */
  leave(sale, ticket, o = {}) {
    const path = `${this.prefix}/${saleSegment(sale)}/queue`;
    return this.#bound("DELETE", path, ticket, (proof) =>
      this.request("DELETE", path, { headers: { "X-Seckill-Ticket": ticket, ...proof }, signal: o.signal }));
  }

  /**
   * Polls the place at the room's refresh_s until the state is no longer waiting or paused,
   * and returns that answer (admitted: buy now; sold_out or ended: the sale is over for this
   * user). A 429 or 503 waits Retry-After, doubled at each repeat up to maxBackoffMs, with
   * jitter, so that refused clients do not all come back in the same second.
   * @param {string} sale
   * @param {QueueAnswer | string} place the entry's answer, or its ticket
   * @param {{ onUpdate?: (a: QueueAnswer) => void, signal?: AbortSignal }} [o]
   * @returns {Promise<QueueAnswer>}
   */
  async waitForAdmission(sale, place, o = {}) {
    let ticket = typeof place === "string" ? place : place.ticket ?? "";
    if (typeof place !== "string" && !["waiting", "paused"].includes(place.state)) return place;
    let refresh = typeof place === "string" ? 0 : place.refresh_s;
    return this.#loop(async (first) => {
      if (first && refresh > 0) return { again: refresh * 1000 };
      const a = await this.poll(sale, ticket, o);
      if (a.ticket) ticket = a.ticket;
      o.onUpdate?.(a);
      this.dispatchEvent(new CustomEvent("update", { detail: a }));
      if (a.state === "waiting" || a.state === "paused") return { again: Math.max(a.refresh_s, 1) * 1000 };
      return { done: { ...a, ticket } };
    }, o.signal);
  }

  /**
   * The polling loop: step says when to ask again or what it found; a 429 / 503 refusal waits
   * (Retry-After, then doubling, at most maxBackoffMs, with up to 25% jitter) and asks again;
   * any other refusal ends the loop.
   * @template T
   * @param {(first: boolean) => Promise<{ again?: number, done?: T }>} step
   * @param {AbortSignal} [signal]
   * @returns {Promise<T>}
   */
  async #loop(step, signal) {
    let backoff = 0;
    for (let first = true; ; first = false) {
      signal?.throwIfAborted();
      let wait;
      try {
        const r = await step(first);
        if (r.done !== undefined) return r.done;
        wait = r.again ?? 1000;
        backoff = 0;
      } catch (e) {
        if (!(e instanceof SeckillError) || (e.status !== 429 && e.status !== 503)) throw e;
        const asked = (e.retryAfter ?? 1) * 1000;
        backoff = Math.min(this.maxBackoffMs, backoff ? backoff * 2 : asked);
        wait = Math.max(asked, backoff) * (1 + Math.random() * 0.25);
      }
      await this.sleep(wait, signal);
    }
  }

  // -- draw

  /**
   * Enters the draw for a variant (POST {prefix}/{sale}/draw), with the proof of work it asks
   * for and the token of its bot challenge when it has one (challengeToken, single use);
   * entering again before the close changes the variant and keeps the entry id.
   * @param {string} sale @param {string} [variant] (absent: the sale's only variant)
   * @param {{ onProgress?: (p: Progress) => void, signal?: AbortSignal, inline?: boolean, challengeToken?: string }} [o]
   * @returns {Promise<{ entry_id: string, state: "entered", variant: string }>}
   */
  enterDraw(sale, variant, o = {}) {
    const body = variant === undefined ? {} : { variant };
    return this.#withProof(sale, (headers) =>
      this.request("POST", `${this.prefix}/${saleSegment(sale)}/draw`, { headers: { ...headers, ...challengeHeader(o) }, body, signal: o.signal }), o);
  }

  /**
   * Changes the entry's variant before the close (the same request as enterDraw).
   * @param {string} sale @param {string} variant
   * @param {{ onProgress?: (p: Progress) => void, signal?: AbortSignal, inline?: boolean, challengeToken?: string }} [o]
   */
  changeDraw(sale, variant, o = {}) {
    return this.enterDraw(sale, variant, o);
  }

  /**
   * Withdraws the entry before the close (DELETE {prefix}/{sale}/draw).
   * @param {string} sale @param {{ signal?: AbortSignal }} [o]
   * @returns {Promise<{ state: "withdrawn" }>}
   */
  withdrawDraw(sale, o = {}) {
    return this.request("DELETE", `${this.prefix}/${saleSegment(sale)}/draw`, o);
  }

  /**
   * The user's entry and its fate (GET {prefix}/{sale}/draw): entered, withdrawn, won (with
   * claim_until: buy before it), lost, waiting, claimed, expired.
   * @param {string} sale @param {{ signal?: AbortSignal }} [o]
   * @returns {Promise<{ entry_id: string, state: string, variant: string, rank?: number, wave?: number, claim_until?: string, variants: string[] }>}
   */
  drawStatus(sale, o = {}) {
    return this.request("GET", `${this.prefix}/${saleSegment(sale)}/draw`, o);
  }

  /**
   * The draw's public result (GET {prefix}/{sale}/draw/result).
   * @param {string} sale @param {{ signal?: AbortSignal }} [o]
   * @returns {Promise<{ state: "open"|"closed"|"drawn"|"done", seed_commitment: string, opens_at?: string, closes_at?: string, entries?: number, entries_root?: string, seed?: string, waves?: Array<{ wave: number, variant: string, at: string, claim_until: string, from: number, to: number, winners: string[] }> }>}
   */
  drawResult(sale, o = {}) {
    return this.request("GET", `${this.prefix}/${saleSegment(sale)}/draw/result`, o);
  }

  /**
   * One page of the fixed entries (GET {prefix}/{sale}/draw/entries), after the close.
   * @param {string} sale @param {{ after?: string, limit?: number, signal?: AbortSignal }} [o]
   * @returns {Promise<{ entries: Array<{ entry_id: string, variant: string }>, next?: string }>}
   */
  drawEntries(sale, o = {}) {
    const q = new URLSearchParams();
    if (o.after) q.set("after", o.after);
    if (o.limit) q.set("limit", String(o.limit));
    const qs = q.toString();
    return this.request("GET", `${this.prefix}/${saleSegment(sale)}/draw/entries${qs ? "?" + qs : ""}`, o);
  }

  /**
   * The user's inclusion proof (GET {prefix}/{sale}/draw/proof), after the close.
   * @param {string} sale @param {{ signal?: AbortSignal }} [o]
   * @returns {Promise<{ entry_id: string, variant: string, index: number, leaf: string, path: string[], root: string, proof_version: number, randomness: string, beacon: object|null, rank?: number }>}
   */
  drawProof(sale, o = {}) {
    return this.request("GET", `${this.prefix}/${saleSegment(sale)}/draw/proof`, o);
  }
}
