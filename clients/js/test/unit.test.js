// Pure tests of the client: the proof of work against node:crypto's SHA-256, and the polling
// loop's pace (refresh_s, Retry-After, backoff) with a fetch and a sleep of the test's own.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Client, SeckillError, solve } from "../seckill.js";

/** Leading zero bits of SHA-256(s), by node:crypto. */
function zeroBits(s) {
  const d = createHash("sha256").update(s).digest();
  let z = 0;
  for (const b of d) {
    if (b === 0) { z += 8; continue; }
    return z + Math.clz32(b) - 24;
  }
  return z;
}

test("solve finds a counter node:crypto agrees on, in a worker and inline, with progress", async () => {
  for (const inline of [false, true]) {
    for (const [challenge, bits] of [["abc.def", 8], ["a-much-longer-challenge-".repeat(4), 12], ["x", 1]]) {
      const seen = [];
      const n = await solve(challenge, bits, { inline, onProgress: (p) => seen.push(p) });
      assert.match(n, /^[0-9]+$/);
      assert.ok(zeroBits(`${challenge}:${n}`) >= bits, `${challenge}:${n} has fewer than ${bits} zero bits`);
      // And it is the first such counter: the search misses none.
      for (let i = 0; i < Number(n); i++) assert.ok(zeroBits(`${challenge}:${i}`) < bits, `counter ${i} already solved it`);
      assert.ok(seen.length > 0 && seen.at(-1).tried === Number(n) + 1, "progress ends at the counter found");
      assert.ok(seen.at(-1).done && seen.slice(0, -1).every((p) => !p.done), "only the last progress event says done");
      assert.equal(seen[0].expected, 2 ** bits);
    }
  }
});

test("solve stops when aborted", async () => {
  const ac = new AbortController();
  const p = solve("never", 40, { signal: ac.signal });
  setTimeout(() => ac.abort(new Error("stop")), 20);
  await assert.rejects(p, /stop/);
});

/** A fetch that answers from a script, and records what it was asked. */
function scripted(answers) {
  const asked = [];
  const fetch = async (url, init) => {
    asked.push({ url, init });
    const [status, body, headers = {}] = answers.shift();
    return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
  };
  return { fetch, asked };
}

test("waitForAdmission polls at refresh_s, waits Retry-After on 503 and backs off on repeats", async () => {
  const { fetch, asked } = scripted([
    [200, { state: "waiting", position: 3, refresh_s: 2, ticket: "t2" }],
    [503, { code: "unavailable", message: "m" }, { "Retry-After": "3" }],
    [429, { code: "rate_limited", message: "m" }, { "Retry-After": "3" }],
    [200, { state: "paused", refresh_s: 1 }],
    [200, { state: "admitted", refresh_s: 5, admitted_until: "2030-01-01T00:00:00Z" }],
  ]);
  const waits = [];
  const c = new Client({ baseURL: "http://gw", fetch, sleep: async (ms) => { waits.push(ms); } });
  const updates = [];
  c.addEventListener("update", (e) => updates.push(e.detail.state));
  const a = await c.waitForAdmission("s1", { state: "waiting", ticket: "t1", refresh_s: 4 });
  assert.equal(a.state, "admitted");
  assert.equal(a.ticket, "t2", "the newest ticket is kept");
  assert.deepEqual(updates, ["waiting", "paused", "admitted"]);
  // The ticket of each poll: the entry's, then the one the first poll handed out.
  assert.deepEqual(asked.map((x) => x.init.headers["X-Seckill-Ticket"]), ["t1", "t2", "t2", "t2", "t2"]);
  assert.equal(waits.length, 5);
  assert.equal(waits[0], 4000, "first wait: the entry's refresh_s");
  assert.equal(waits[1], 2000, "then the poll's refresh_s");
  assert.ok(waits[2] >= 3000 && waits[2] <= 3750, `503: Retry-After with jitter, got ${waits[2]}`);
  assert.ok(waits[3] >= 6000 && waits[3] <= 7500, `429 again: doubled, got ${waits[3]}`);
  assert.equal(waits[4], 1000, "a success resets the backoff");
});

test("a refusal other than 429 / 503 ends the wait with its code", async () => {
  const { fetch } = scripted([[403, { code: "invalid_ticket", message: "m" }]]);
  const c = new Client({ fetch, sleep: async () => {} });
  await assert.rejects(c.waitForAdmission("s1", "t1"), (e) => e instanceof SeckillError && e.status === 403 && e.code === "invalid_ticket");
});

test("buy sends the token and the body; refusals carry their fields", async () => {
  const { fetch, asked } = scripted([[409, { code: "already_bought", message: "m", order_id: "o1" }]]);
  const c = new Client({ baseURL: "http://gw/", fetch, headers: { "X-User-ID": "u1" } });
  await assert.rejects(c.buy("s1", { token: "tk", variant: "red", quantity: 2 }), (e) => e.code === "already_bought" && e.body.order_id === "o1");
  assert.equal(asked[0].url, "http://gw/seckill/s1/buy");
  assert.equal(asked[0].init.headers["X-Seckill-Token"], "tk");
  assert.equal(asked[0].init.headers["X-User-ID"], "u1");
  assert.deepEqual(JSON.parse(asked[0].init.body), { variant: "red", quantity: 2 });
  assert.throws(() => c.token("bad id"), TypeError);
});

test("enter, enterDraw and token send the bot challenge's token when given one, and no header without", async () => {
  const { fetch, asked } = scripted([
    [200, { challenge: "c", difficulty: 0, expires_at: "2030-01-01T00:00:00Z" }],
    [200, { ticket: "t1", state: "waiting", position: 1, refresh_s: 1 }],
    [200, { entry_id: "e1", state: "entered", variant: "red" }],
    [200, { token: "t", expires_at: "2030-01-01T00:00:00Z" }],
    [200, { token: "t", expires_at: "2030-01-01T00:00:00Z" }],
  ]);
  const c = new Client({ fetch });
  await c.enter("s1", { challengeToken: "turnstile-1" });
  await c.enterDraw("s1", "red", { challengeToken: "turnstile-2" });
  await c.token("s1", { challengeToken: "PrivateToken token=\"AAEC\"" });
  await c.token("s1");
  const sent = asked.map((a) => `${a.init.method} ${a.url} ${a.init.headers["X-Seckill-Challenge-Token"] ?? "-"}`);
  assert.deepEqual(sent, ["GET /seckill/s1/challenge -", "POST /seckill/s1/queue turnstile-1",
    "POST /seckill/s1/draw turnstile-2", "POST /seckill/s1/token PrivateToken token=\"AAEC\"", "POST /seckill/s1/token -"]);
});

test("the routes follow the prefix and the orders prefix; the defaults are /seckill and /orders", async () => {
  const answers = () => [[200, { token: "t", expires_at: "2030-01-01T00:00:00Z" }], [202, { order_id: "o1", status: "queued" }],
    [200, { order_id: "o1", sale_id: "s1", status: "created" }], [200, { state: "open" }]];
  const run = async (opts) => {
    const { fetch, asked } = scripted(answers());
    const c = new Client({ fetch, ...opts });
    await c.token("s1");
    await c.buy("s1", { token: "t" });
    await c.order("o1");
    await c.room("s1");
    return asked.map((a) => `${a.init.method} ${a.url}`);
  };
  assert.deepEqual(await run({}), ["POST /seckill/s1/token", "POST /seckill/s1/buy", "GET /orders/o1", "GET /seckill/s1/room"]);
  assert.deepEqual(await run({ baseURL: "https://edge.example/", prefix: "/shop-api/drop/", ordersPrefix: "/shop-api/drop/orders" }), [
    "POST https://edge.example/shop-api/drop/s1/token", "POST https://edge.example/shop-api/drop/s1/buy",
    "GET https://edge.example/shop-api/drop/orders/o1", "GET https://edge.example/shop-api/drop/s1/room"]);
});

test("the pre-queue is read page by page, one lane's with lane", async () => {
  const { fetch, asked } = scripted([[200, { seed: "ab", entries: ["e1"], total: 1 }],
    [200, { seed: "ab", lane: "members", entries: ["e2"], total: 3, next: "1" }]]);
  const c = new Client({ fetch });
  assert.deepEqual((await c.prequeue("s1")).entries, ["e1"]);
  const page = await c.prequeue("s1", { lane: "members", after: 0, limit: 1 });
  assert.equal(page.lane, "members");
  assert.equal(page.next, "1");
  assert.deepEqual(asked.map((a) => `${a.init.method} ${a.url}`),
    ["GET /seckill/s1/room/prequeue", "GET /seckill/s1/room/prequeue?lane=members&after=0&limit=1"]);
});

test("a prefix the edge would refuse throws at construction", () => {
  for (const prefix of ["seckill", "/a//b", "/a/../b", "/a b", "/{x}", "/*"]) {
    assert.throws(() => new Client({ prefix }), TypeError, prefix);
    assert.throws(() => new Client({ ordersPrefix: prefix }), TypeError, prefix);
  }
});
