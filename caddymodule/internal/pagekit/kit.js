// ------------------------------------------------------------------------- the page kit
// What the room's page and the draw's share (caddymodule/internal/pagekit): the page's data
// (written by the gateway in #seckill-page's attributes, not in this script, so the script's
// hash is fixed), its messages in the page's language, numbers, durations and dates
// formatted for that language with Intl, a sleep that survives a background tab, and the
// "tell me when it is my turn" notification.
const kit = (() => {
  const el = document.getElementById("seckill-page");
  const data = el ? el.dataset : {};
  const lang = data.lang || document.documentElement.lang || "en";
  /** A text, or a count's plural forms ({count: placeholder, one: ..., other: ...}). @type {Record<string, any>} */
  const msgs = JSON.parse(data.messages || "{}");
  const plurals = new Intl.PluralRules(lang);
  const num = new Intl.NumberFormat(lang);
  const pct = new Intl.NumberFormat(lang, { style: "percent", maximumFractionDigits: 0 });
  const unit = (u) => new Intl.NumberFormat(lang, { style: "unit", unit: u, unitDisplay: "long", maximumFractionDigits: 0 });
  const secs = unit("second"), mins = unit("minute"), hours = unit("hour");
  const two = new Intl.NumberFormat(lang, { minimumIntegerDigits: 2 });
  const dates = new Intl.DateTimeFormat(lang, { dateStyle: "medium", timeStyle: "short" });

  /** A message with its {name} placeholders filled (numbers formatted for the language); a
   * plural message in the form CLDR's rules give its count (Intl.PluralRules). */
  const text = (m, vars) => {
    if (m === undefined || typeof m === "string") return m;
    const n = vars[m.count];
    return (typeof n === "number" ? m[plurals.select(n)] : undefined) ?? m.other;
  };
  const t = (key, vars = {}) =>
    (text(msgs[key], vars) ?? key).replace(/\{(\w+)\}/g, (m, k) => (k in vars ? (typeof vars[k] === "number" ? num.format(vars[k]) : String(vars[k])) : m));

  /** A duration in words: seconds under two minutes, then minutes, then hours. */
  const duration = (s) => {
    s = Math.max(0, Math.round(s));
    if (s < 120) return secs.format(s);
    if (s < 7200) return mins.format(Math.round(s / 60));
    return hours.format(Math.round(s / 3600));
  };
  /** A range of durations in one unit ("30–45 seconds", "2–4 minutes"). */
  const range = (lo, hi) => {
    if (Math.round(lo) === Math.round(hi)) return duration(hi);
    const [f, d] = hi < 120 ? [secs, 1] : hi < 7200 ? [mins, 60] : [hours, 3600];
    const a = Math.round(lo / d), b = Math.max(Math.round(hi / d), a);
    if (a === b) return f.format(a);
    return typeof f.formatRange === "function" ? f.formatRange(a, b) : num.format(a) + "–" + f.format(b);
  };
  /** A countdown: m:ss (h:mm:ss past an hour). */
  const clock = (s) => {
    s = Math.max(0, Math.floor(s));
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    return (h ? num.format(h) + ":" + two.format(m) : num.format(m)) + ":" + two.format(r);
  };
  /** A countdown to until (an ISO time) shown in timer, each second's text line(the clock's);
   * onEnd when it runs out. One at a time: a new one, or stopCountdown, ends the last. */
  let ticking = 0;
  const countdown = (timer, until, line, onEnd) => {
    clearInterval(ticking);
    const end = Date.parse(until);
    timer.hidden = false;
    const tick = () => {
      const left = (end - Date.now()) / 1000;
      timer.textContent = line(clock(left));
      if (left <= 0) { clearInterval(ticking); onEnd(); }
    };
    tick();
    ticking = setInterval(tick, 1000);
  };
  const stopCountdown = () => clearInterval(ticking);

  /** A progress bar (.sk-bar) filled to fraction (0 to 1), shown. */
  const bar = (b, fraction) => {
    const v = Math.round(Math.max(0, Math.min(1, fraction)) * 100);
    b.hidden = false;
    b.style.visibility = "";
    b.setAttribute("aria-valuenow", String(v));
    if (b.firstElementChild) b.firstElementChild.style.width = v + "%";
  };
  /** A finished bar, out of sight but keeping its place: it goes a moment after the work
   * ends, when the buyer is about to press the next button, and the buttons under it must
   * not move under the finger (a tap where a button was lands between two). */
  const barDone = (b) => { b.style.visibility = "hidden"; };

  // A background tab's timers are throttled (Chrome: once a minute after five minutes
  // hidden); a dedicated worker's are not, so the page's waits are timed there as well, and
  // whichever fires first ends the wait. Back in view, a wait already due ends at once. No
  // wait ever ends early: the page polls no more often than the room's refresh_s says.
  let seq = 0;
  const pending = new Map();
  let ticker = null;
  try {
    const src = "onmessage = (e) => setTimeout(() => postMessage(e.data.id), e.data.ms);";
    ticker = new Worker(URL.createObjectURL(new Blob([src], { type: "text/javascript" })));
    ticker.onmessage = (e) => pending.get(e.data)?.();
  } catch {
    ticker = null; // no worker: the page's own timers only
  }
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) return;
    for (const [, wake] of pending) wake(true);
  });
  /** @param {number} ms @param {AbortSignal} [signal] */
  const sleep = (ms, signal) =>
    new Promise((resolve, reject) => {
      signal?.throwIfAborted();
      const id = ++seq, due = Date.now() + ms;
      const done = () => { pending.delete(id); clearTimeout(timer); resolve(undefined); };
      pending.set(id, (visible) => { if (!visible || Date.now() >= due) done(); });
      const timer = setTimeout(done, ms);
      ticker?.postMessage({ id, ms });
      signal?.addEventListener("abort", () => { pending.delete(id); clearTimeout(timer); reject(signal.reason); }, { once: true });
    });

  // "Tell me when it is my turn": the Notification API, asked for only when the buyer
  // presses the button (never on load), and a short tone (the press also lets the page play
  // sound). No push service: the page itself shows it.
  let audio = null;
  const notifyButton = (button, note) => {
    if (!button) return;
    if (typeof Notification !== "function") { button.hidden = true; return; }
    button.hidden = Notification.permission !== "default";
    if (Notification.permission === "granted") note.textContent = t("common.notify_on");
    button.addEventListener("click", async () => {
      try { audio = audio || new AudioContext(); } catch { audio = null; }
      const p = await Notification.requestPermission();
      button.hidden = true;
      note.textContent = t(p === "granted" ? "common.notify_on" : "common.notify_blocked");
    });
  };
  const notify = (title, body) => {
    if (typeof Notification === "function" && Notification.permission === "granted") {
      try { new Notification(title, { body, tag: "seckill-" + (data.sale || "") }); } catch { /* some browsers allow it from a worker only */ }
    }
    if (audio) {
      const o = audio.createOscillator(), g = audio.createGain();
      o.frequency.value = 880; g.gain.value = 0.1;
      o.connect(g).connect(audio.destination);
      o.start(); o.stop(audio.currentTime + 0.3);
    }
  };

  /** The page's element #sk-<id>: a shop's template places them as it likes, and a missing
   * one is a detached element, so the page skips it. */
  const $ = (id) => document.getElementById("sk-" + id) || document.createElement("div");
  /** The page's client (clients/js/seckill.js, above), at the edge's routes where the gateway
   * says (its prefix and orders_prefix, in the page's data). The demo identity is ?user=<id>,
   * sent as X-User-ID; behind real authentication the page's cookies do it. */
  const client = () => {
    const user = new URLSearchParams(location.search).get("user");
    return new Client({ prefix: data.prefix, ordersPrefix: data.orders, headers: user ? { "X-User-ID": user } : {}, sleep });
  };

  /** The bot challenge widget's token (#sk-widget, shown when the site has a CAPTCHA
   * provider): waits until the provider's script filled its field; undefined without a widget.
   * @param {AbortSignal} [signal] @returns {Promise<string | undefined>} */
  const challengeToken = async (signal) => {
    const box = document.getElementById("sk-widget");
    if (!box) return undefined;
    for (;;) {
      const f = /** @type {HTMLInputElement | null} */ (box.querySelector(`[name="${box.dataset.field}"]`));
      if (f && f.value) return f.value;
      await sleep(200, signal);
    }
  };
  /** A token is single use: after an entry, the widget is reset for the next one. */
  const challengeSpent = () => {
    const box = document.getElementById("sk-widget");
    if (!box) return;
    const f = /** @type {HTMLInputElement | null} */ (box.querySelector(`[name="${box.dataset.field}"]`));
    if (f) f.value = "";
    for (const p of [globalThis.turnstile, globalThis.hcaptcha, globalThis.grecaptcha]) {
      try { p?.reset?.(); } catch { /* not rendered */ }
    }
  };
  return { data, lang, t, num, pct, duration, range, clock, countdown, stopCountdown, bar, barDone, date: (iso) => dates.format(new Date(iso)), sleep, notifyButton, notify, $, client, challengeToken, challengeSpent };
})();
