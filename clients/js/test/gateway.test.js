// The client against the real gateway and backend: `go test ./clients/js/` starts them
// (internal/harness, the root Caddyfile) with three sales and runs this file with their
// addresses in the environment. Run alone, it fails: it needs that stack.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { Client, SeckillError } from "../seckill.js";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set: run these tests with go test ./clients/js/ (it starts the stack)`);
  return v;
};
const gateway = env("SECKILL_GATEWAY");
const id = (p) => p + randomBytes(6).toString("hex");
// The root Caddyfile's user zone takes 5 calls a second per user: keep each user under it.
const pace = () => new Promise((r) => setTimeout(r, 400));
const buyer = (u) => new Client({ baseURL: gateway, headers: { "X-User-ID": u } });

test("a purchase: token, buy, the order written", async () => {
  const sale = env("SECKILL_SALE");
  const c = buyer(id("p"));
  const { token } = await c.token(sale);
  await pace();
  const accepted = await c.buy(sale, { token });
  assert.equal(accepted.status, "queued");
  const order = await c.waitOrder(accepted.order_id, { intervalMs: 300 });
  assert.equal(order.status, "created");
  assert.equal(order.sale_id, sale);
  await pace();
  await assert.rejects(c.buy(sale, { token }), (e) => e instanceof SeckillError && e.status === 409 && e.code === "already_bought" && e.body.order_id === accepted.order_id);
});

test("the waiting room: proof of work with progress, admission, leave, buy, sold out", async () => {
  const sale = env("SECKILL_ROOM_SALE");
  const room = await buyer(id("r")).room(sale);
  assert.equal(room.sale, sale);

  // A enters with the proof of work (in a worker thread) and is admitted: one unit, one
  // live admission per unit.
  const a = buyer(id("a"));
  const progress = [];
  a.addEventListener("progress", (e) => progress.push(e.detail));
  const place = await a.enter(sale);
  assert.ok(progress.length > 0, "no progress event during the proof of work");
  assert.ok(progress.at(-1).difficulty >= 6);
  assert.ok(place.ticket, "the entry's answer has a ticket");
  const admitted = await a.waitForAdmission(sale, place);
  assert.equal(admitted.state, "admitted");

  // B waits behind A's live admission, and gives the place up.
  const b = buyer(id("b"));
  const waiting = await b.enter(sale);
  assert.equal(waiting.state, "waiting");
  assert.ok(waiting.refresh_s >= 1);
  await pace();
  const polled = await b.poll(sale, waiting.ticket);
  assert.equal(polled.state, "waiting");
  await pace();
  const left = await b.leave(sale, polled.ticket ?? waiting.ticket);
  assert.equal(left.state, "left");

  // A buys the unit.
  await pace();
  const { token } = await a.token(sale);
  await pace();
  const { order_id } = await a.buy(sale, { token });
  assert.equal((await a.waitOrder(order_id, { intervalMs: 300 })).status, "created");

  // C comes too late: the wait ends at sold_out.
  const c = buyer(id("c"));
  const late = await c.enter(sale);
  const end = await c.waitForAdmission(sale, late);
  assert.equal(end.state, "sold_out");
});

/** The Merkle path of a proof, recomputed with node:crypto (docs/draw.md; proof version 2:
 * a node is SHA-256(0x01 || left || right)). */
const LEAF = Buffer.from([0]), NODE = Buffer.from([1]);
function rootOf(leafHex, path) {
  let cur = Buffer.from(leafHex, "hex");
  for (const step of path) {
    const [side, hex] = step.split(":");
    const sib = Buffer.from(hex, "hex");
    cur = createHash("sha256").update(Buffer.concat(side === "L" ? [NODE, sib, cur] : [NODE, cur, sib])).digest();
  }
  return cur.toString("hex");
}

test("a draw: enter, change, withdraw, enter again, the result, the proof, the fate", async () => {
  const sale = env("SECKILL_DRAW_SALE");
  const d = buyer(id("d"));
  const pub = new Client({ baseURL: gateway }); // the draw's public reads need no user
  const e1 = await d.enterDraw(sale, "m");
  assert.equal(e1.state, "entered");
  await pace();
  const e2 = await d.changeDraw(sale, "l");
  assert.equal(e2.entry_id, e1.entry_id, "a change keeps the entry id");
  assert.equal(e2.variant, "l");
  await pace();
  assert.equal((await d.drawStatus(sale)).state, "entered");
  await pace();
  assert.equal((await d.withdrawDraw(sale)).state, "withdrawn");
  await pace();
  const e3 = await d.enterDraw(sale, "m");
  assert.equal(e3.entry_id, e1.entry_id);
  await pace();
  await assert.rejects(d.drawProof(sale), (e) => e.status === 409 && e.code === "not_closed");
  assert.equal((await pub.drawResult(sale)).state, "open");

  // The operator runs the draw now (the admin API; not the client's business).
  const run = await fetch(env("SECKILL_ADMIN") + `/admin/sales/${sale}/draw`, {
    method: "POST", headers: { Authorization: "Bearer " + env("SECKILL_ADMIN_TOKEN") },
  });
  assert.equal(run.status, 200, await run.text());

  const result = await pub.drawResult(sale);
  assert.ok(["drawn", "done"].includes(result.state), result.state);
  assert.equal(createHash("sha256").update(Buffer.from(result.seed, "hex")).digest("hex"), result.seed_commitment);
  const page = await pub.drawEntries(sale, { limit: 10 });
  assert.ok(page.entries.some((x) => x.entry_id === e1.entry_id && x.variant === "m"));
  await pace();
  const proof = await d.drawProof(sale);
  assert.equal(proof.entry_id, e1.entry_id);
  assert.equal(proof.proof_version, 2);
  assert.equal(createHash("sha256").update(Buffer.concat([LEAF, Buffer.from(`${proof.entry_id}\n${proof.variant}`)])).digest("hex"), proof.leaf);
  assert.equal(rootOf(proof.leaf, proof.path), result.entries_root, "the proof leads to the published root");
  await pace();
  // One entry for one unit of "m": a win, to buy before claim_until.
  const fate = await d.drawStatus(sale);
  assert.equal(fate.state, "won");
  assert.ok(fate.claim_until);
});
