// ---------------------------------------------------------------------------- the draw page
// The client above (clients/js/seckill.js, inlined as is by the gateway: no CDN) speaks the
// draw's protocol, the kit gives the words; this code only shows the states, in sentences.
// The elements it fills are found by id (sk-*), so a shop's template may place them as it
// likes; a missing one is skipped. The demo identity is ?user=<id>, sent as X-User-ID;
// behind real authentication the page's cookies do it.
const { t, $ } = kit;
const sale = kit.data.sale;
const client = kit.client();
const title = document.title;
let busy = false;
let shown = "";
let said = ""; // a sentence that outranks the state's own until the state changes

const say = (text) => { if ($("status").textContent !== text) $("status").textContent = text; };
const show = (id, on) => { $(id).hidden = !on; };
const bar = (id, fraction) => kit.bar($(id), fraction);

client.addEventListener("progress", (e) => {
  const { tried, expected, done } = e.detail;
  const f = done ? 1 : Math.min(tried / expected, 0.99);
  bar("work", f);
  say(t("common.checking", { percent: kit.pct.format(f) }));
  if (done) setTimeout(() => kit.barDone($("work")), 600);
});

// The sizes come with the page (and with every answer of GET /draw).
function sizes(list) {
  const sel = /** @type {HTMLSelectElement} */ ($("size"));
  if (!list || sel.options.length === list.length) return;
  const keep = sel.value;
  sel.textContent = "";
  for (const v of list) {
    const o = document.createElement("option");
    o.value = v; o.textContent = v;
    sel.appendChild(o);
  }
  if (keep) sel.value = keep;
}

function countdown(until, onEnd) {
  kit.countdown($("timer"), until, (time) => t("draw.claim_left", { time }), onEnd);
}

function stopCountdown() { kit.stopCountdown(); show("timer", false); }

function showState(a) {
  if (a.entry_id) $("entry").textContent = a.entry_id;
  $("rank").textContent = a.rank ? kit.num.format(a.rank) : "–";
  $("wave").textContent = a.wave ? kit.num.format(a.wave) : "–";
  if (a.variants) sizes(a.variants);
  const sel = /** @type {HTMLSelectElement} */ ($("size"));
  if (a.state === "entered" && a.variant && !busy) sel.value = a.variant;
  const open = a.state === "entered" || a.state === "withdrawn" || a.state === "none";
  const multi = sel.options.length > 1;
  show("picker", open && sel.options.length > 0);
  show("enter", a.state === "withdrawn" || a.state === "none");
  show("change", a.state === "entered" && multi);
  show("withdraw", a.state === "entered");
  document.body.dataset.state = a.state; // a hook for a shop's stylesheet, as the room's
  const changed = a.state !== shown;
  shown = a.state;
  if (changed) said = "";
  switch (a.state) {
    case "none": say(said || t("draw.none")); break;
    case "entered": say(said || t("draw.entered", { size: a.variant })); break;
    case "withdrawn": say(t("draw.withdrawn")); break;
    case "won":
      say(t("draw.won", { size: a.variant, deadline: kit.date(a.claim_until) }));
      if (changed) {
        document.title = t("draw.title_won", { title });
        kit.notify(t("draw.notify_title"), t("draw.won", { size: a.variant, deadline: kit.date(a.claim_until) }));
        countdown(a.claim_until, () => { say(t("draw.expired")); document.title = title; });
      }
      break;
    case "claimed": stopCountdown(); say(t("draw.claimed")); break;
    case "expired": stopCountdown(); say(t("draw.expired")); document.title = title; break;
    case "lost": stopCountdown(); say(t("draw.lost")); break;
    case "waiting": say(t("draw.waiting")); break;
    default: say(t("draw.loading"));
  }
  show("notify", a.state === "entered" || a.state === "waiting");
  if (!$("notify").hidden && typeof Notification === "function" && Notification.permission !== "default") show("notify", false);
}

// refresh shows where the entry stands. The background's refresh (background) drops its answer
// when an entry, a change or a withdrawal began while it was asked: that action shows its own
// outcome, and an older answer shown meanwhile would offer buttons the busy page ignores.
async function refresh(background) {
  try {
    const a = await client.drawStatus(sale);
    if (background && busy) return;
    showState(a);
    $("problem").textContent = "";
  } catch (e) {
    if (background && busy) return;
    if (e instanceof SeckillError && e.code === "not_entered") { showState({ state: "none" }); return; }
    $("problem").textContent = t(e instanceof SeckillError && (e.status === 429 || e.status === 503) ? "common.busy" : "common.unreachable");
  }
}

async function enter() {
  if (busy) return;
  busy = true;
  $("problem").textContent = "";
  const size = /** @type {HTMLSelectElement} */ ($("size")).value || undefined;
  const was = shown;
  try {
    // An expired challenge (a slow device) is a step of the work, not a refusal: the page
    // works on a fresh one. Entering again before the close changes the size and keeps the
    // entry id.
    for (let tries = 0; ; tries++) {
      try {
        const challengeToken = await kit.challengeToken();
        const a = await client.enterDraw(sale, size, { challengeToken }).finally(kit.challengeSpent);
        if (was === "entered") said = t("draw.changed", { size: a.variant });
      } catch (e) {
        if (e instanceof SeckillError && e.code === "challenge_expired" && tries < 3) continue;
        $("problem").textContent = t("draw.refused");
      }
      break;
    }
    shown = "";
    const keep = said;
    await refresh();
    if (keep && shown === "entered") { said = keep; say(keep); }
  } finally { busy = false; }
}

$("enter").onclick = enter;
$("change").onclick = enter;
$("withdraw").onclick = async () => {
  if (busy) return;
  busy = true;
  try {
    try { await client.withdrawDraw(sale); } catch { $("problem").textContent = t("draw.refused"); }
    await refresh();
  } finally { busy = false; }
};

// The draw's public result, once at load (as before): when it closes, how many entered, and
// behind "Check this draw" the values that let a buyer check the ranking (docs/draw.md).
async function result() {
  /** @type {any} */
  let r;
  try { r = await client.drawResult(sale); } catch { return; }
  if (r.closes_at && r.state === "open") $("closes").textContent = t("draw.closes", { date: kit.date(r.closes_at) });
  else if (typeof r.entries === "number") $("closes").textContent = t("draw.entries", { entries: r.entries });
  $("commitment").textContent = r.seed_commitment || "–";
  $("root").textContent = r.entries_root || "–";
  if (r.randomness) {
    $("randomness").textContent = r.beacon ? t("draw.beacon", { round: r.beacon.round }) : t("draw.commit_only");
    $("randomness").dataset.randomness = r.randomness;
  }
}

kit.notifyButton($("notify"), $("notify-note"));
sizes((kit.data.variants || "").split(",").filter(Boolean));
result();
refresh();
// The state changes at the draw and at each wave: look again now and then (the kit's sleep
// keeps the pace in a background tab).
(async () => { for (;;) { await kit.sleep(10000); if (!busy) await refresh(true); } })();
