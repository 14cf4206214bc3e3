// ---------------------------------------------------------------------------- the room page
// The client above (clients/js/seckill.js, inlined as is by the gateway: no CDN) speaks the
// whole protocol, the kit gives the words; this code only shows the states, in sentences.
// The elements it fills are found by id (sk-*), so a shop's template may place them as it
// likes (docs/room.md, "The shop's own page"); a missing one is skipped. The demo identity is
// ?user=<id>, sent as X-User-ID; behind real authentication the page's cookies do it.
const { t, $ } = kit;
const sale = kit.data.sale;
const client = kit.client();
const title = document.title;
let ticket = "";
let visit = new AbortController(); // leaving aborts the visit and its poll

// The page's state, in <body data-state>: a shop's stylesheet may show or hide its own parts
// by it (body[data-state="admitted"] .banner { ... }); the states are the JSON mode's
// (docs/DESIGN.md) plus entering, bought, full, retry and turn_over.
const state = (s) => { document.body.dataset.state = s; };
const say = (text) => { if ($("status").textContent !== text) $("status").textContent = text; };
const detail = (id, text) => { $(id).textContent = text || ""; };
const problem = (text) => { $("problem").textContent = text || ""; };
const bar = (id, fraction) => kit.bar($(id), fraction);
const show = (id, on) => { $(id).hidden = !on; };
const clearDetails = () => { for (const id of ["detail", "wait", "units", "retry"]) detail(id, ""); };

// "try again in N seconds", counted down in a line of its own (not a live region: the
// sentence in the alert is said once).
async function retryIn(sentence, seconds, signal, why = "retry") {
  state(why);
  problem(sentence);
  for (let s = Math.max(1, Math.round(seconds)); s > 0; s--) {
    detail("retry", t("common.retry_in", { seconds: kit.duration(s) }));
    await kit.sleep(1000, signal);
  }
  detail("retry", "");
}

// The proof of work, in the client's Web Worker: "Checking your browser — 60 %". The work is
// random (about 2^difficulty attempts expected), so the bar stops at 99 % until it is done.
client.addEventListener("progress", (e) => {
  const { tried, expected, done } = e.detail;
  const f = done ? 1 : Math.min(tried / expected, 0.99);
  bar("work", f);
  say(t("common.checking", { percent: kit.pct.format(f) }));
  detail("detail", t("common.checking_help"));
  if (done) setTimeout(() => kit.barDone($("work")), 600);
});

// The queue's bar moves with the admission rate between polls: from the first answer's
// place to the front, at ahead / estimated_wait_s places a second, never past the place the
// last answer gave (the number shown is always the room's). It moves only while the page
// waits: once the turn comes (or the buyer leaves, or the sale ends) the bar is gone for
// good, and bringing it back would push the Buy button down under the buyer's finger.
let firstAhead = 0, last = null, lastAt = 0;
setInterval(() => {
  if (!last || document.body.dataset.state !== "waiting" || !firstAhead) return;
  const rate = last.estimated_wait_s > 0 ? last.ahead / last.estimated_wait_s : 0;
  const guess = Math.max(last.ahead - rate * ((Date.now() - lastAt) / 1000), last.ahead > 0 ? 0.5 : 0);
  bar("queue", (firstAhead - guess) / firstAhead);
}, 1000);

function onAnswer(a) {
  if (a.entry_id) $("entry").textContent = a.entry_id;
  if (typeof a.units_left === "number") detail("units", t("room.units_left", { units: a.units_left }));
  const queued = a.state === "waiting" || a.state === "paused";
  show("leave", queued);
  if (queued) state(a.state);
  if (a.state === "waiting") {
    problem("");
    last = a; lastAt = Date.now();
    if (!firstAhead || a.ahead + 1 > firstAhead) firstAhead = a.ahead + 1;
    bar("queue", (firstAhead - a.ahead) / firstAhead);
    say(a.ahead > 0 ? t("room.waiting", { position: a.position }) : t("room.front"));
    detail("detail", a.ahead > 0 ? t("room.ahead", { ahead: a.ahead }) : "");
    const r = a.estimated_wait_range_s || [a.estimated_wait_s, a.estimated_wait_s];
    detail("wait", t("room.wait_range", { range: kit.range(r[0], r[1]) }));
    document.title = t("room.title_waiting", { position: a.position, title });
  }
  if (a.state === "paused") {
    say(t("room.paused"));
    detail("wait", "");
  }
}

// A sentence for each refusal; never its code.
const refusalText = (e) => {
  if (!(e instanceof SeckillError)) return t("common.unreachable");
  switch (e.code) {
    case "queue_full": return t("room.full");
    case "paused": return t("room.paused");
    case "sold_out": return t("room.sold_out");
    case "ended": return t("room.ended");
    case "not_started": return t("room.not_started");
    case "unknown_sale": return t("room.unknown");
    case "already_bought": return t("room.already_bought", { order: e.body.order_id || "" });
    case "limit_reached": return t("room.limit");
    case "not_admitted": case "invalid_token": case "token_expired": case "token_used": return t("room.turn_over");
    default: return e.status === 429 || e.status === 503 ? t("common.busy") : t("common.unreachable");
  }
};
const final = (e) => e instanceof SeckillError && ["sold_out", "ended", "unknown_sale"].includes(e.code);

// takePlace enters with the client (challenge, work, POST /queue). An expired challenge (a
// slow device) is a step of the work: the page simply enters again with a fresh one.
async function takePlace(signal) {
  for (;;) {
    say(t("room.entering"));
    state("entering");
    try {
      const challengeToken = await kit.challengeToken(signal);
      const a = await client.enter(sale, { signal, challengeToken }).finally(kit.challengeSpent);
      ticket = a.ticket;
      problem("");
      return a;
    } catch (e) {
      if (signal.aborted) throw e;
      if (e instanceof SeckillError && ["challenge_expired", "too_many_challenges", "invalid_challenge"].includes(e.code)) {
        await kit.sleep(((e.retryAfter || 0) * 1000) || 200, signal);
        continue;
      }
      if (final(e)) return { refused: e };
      say(refusalText(e));
      await retryIn(refusalText(e), e.retryAfter || 2, signal, e instanceof SeckillError && e.code === "queue_full" ? "full" : "retry");
    }
  }
}

function countdown(until, onEnd) {
  kit.countdown($("timer"), until, (time) => t("common.time_left", { time }), onEnd);
}

function over(sentence, s) {
  if (s) state(s);
  kit.stopCountdown();
  show("timer", false); show("buy", false); show("leave", false); show("queue", false); show("notify", false); show("help", false);
  clearDetails();
  say(sentence);
  document.title = title;
}

async function admitted(a) {
  show("queue", false); show("notify", false); show("help", false);
  clearDetails();
  state("admitted");
  say(t("room.admitted"));
  document.title = t("room.title_turn", { title });
  const left = (Date.parse(a.admitted_until) - Date.now()) / 1000;
  kit.notify(t("room.notify_title"), t("room.notify_body", { time: kit.duration(left) }));
  countdown(a.admitted_until, () => { over(t("room.turn_over"), "turn_over"); show("rejoin", true); });
  let tok;
  try { tok = await client.token(sale); } catch (e) { problem(refusalText(e)); return; }
  const buy = $("buy");
  buy.hidden = false;
  buy.disabled = false;
  buy.focus();
  buy.onclick = async () => {
    buy.disabled = true;
    say(t("room.buying"));
    let b;
    try { b = await client.buy(sale, { token: tok.token }); } catch (e) {
      over(refusalText(e), e instanceof SeckillError ? e.code : "retry");
      return;
    }
    over(t("room.bought", { order: b.order_id }), "bought");
    $("order").textContent = b.order_id;
    try {
      const o = await client.waitOrder(b.order_id, { signal: AbortSignal.timeout(60000) });
      if (o.status === "created" || o.status === "paid") detail("detail", t("room.order_confirmed"));
      if (o.status === "failed" || o.status === "cancelled") detail("detail", t("room.order_failed"));
    } catch { /* no written order within a minute: the page keeps "placed" */ }
  };
}

// Leaving gives the place up in the room (DELETE /queue); joining again is a new place.
$("leave").onclick = async () => {
  $("leave").disabled = true;
  try { await client.leave(sale, ticket); } catch (e) { problem(refusalText(e)); return; } finally { $("leave").disabled = false; }
  visit.abort();
  last = null; firstAhead = 0;
  over(t("room.left"), "left");
  show("rejoin", true);
};
$("rejoin").onclick = () => { show("rejoin", false); problem(""); main(); };

// "Check this queue": the room's seed commitment (and the seed once revealed), asked for only
// when the buyer opens it (GET /room: no request on load beyond the protocol's own).
$("check").addEventListener("toggle", async () => {
  if (!$("check").open) return;
  try {
    const r = await client.room(sale);
    $("commitment").textContent = r.seed_commitment || "–";
    $("seed").textContent = r.seed || "–";
  } catch { /* the values stay "–" */ }
});

kit.notifyButton($("notify"), $("notify-note"));

async function main() {
  const my = (visit = new AbortController());
  /** @type {any} */
  let place;
  try { place = await takePlace(my.signal); } catch { return; }
  for (;;) {
    if (my.signal.aborted) return;
    if (place.refused) { over(refusalText(place.refused), place.refused.code); return; }
    if (typeof place !== "string") onAnswer(place);
    try {
      // The client polls at refresh_s (honouring Retry-After on 429 / 503), with the kit's
      // sleep (a background tab keeps its pace), and keeps the newest ticket.
      const a = await client.waitForAdmission(sale, place, {
        signal: my.signal,
        onUpdate: (u) => { if (u.ticket) ticket = u.ticket; if (!my.signal.aborted) onAnswer(u); },
      });
      if (my.signal.aborted) return;
      onAnswer(a);
      if (a.state === "admitted") { await admitted(a); return; }
      if (a.state === "sold_out") { over(t("room.sold_out"), "sold_out"); return; }
      if (a.state === "ended") { over(t(a.reason === "lapsed" ? "room.lapsed" : "room.ended"), a.reason === "lapsed" ? "lapsed" : "ended"); if (a.reason === "lapsed") show("rejoin", true); return; }
      if (a.state === "left") { over(t("room.left"), "left"); show("rejoin", true); return; }
      return;
    } catch (e) {
      if (my.signal.aborted) return;
      if (e instanceof SeckillError && e.code === "invalid_ticket") {
        try { place = await takePlace(my.signal); } catch { return; }
        continue;
      }
      if (final(e)) { over(refusalText(e), e.code); return; }
      try { await retryIn(refusalText(e), (e instanceof SeckillError && e.retryAfter) || 2, my.signal); } catch { return; }
      place = ticket;
    }
  }
}
main();
