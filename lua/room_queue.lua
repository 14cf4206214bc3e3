-- room_queue.lua: one buyer's visit to a sale's waiting room, in one round trip: enter (once
-- per user; again returns the same place), poll, leave (give the place up), or tick (a
-- gateway's periodic look at the room: it admits and returns the room's summary,
-- so waiters far from the front are answered from the gateway's memory). Enter, poll and tick
-- first let the room admit the next in line, so admission needs no background job and is
-- exact across gateways.
-- Time is Redis TIME.
--
-- KEYS[1]  seckill:{sale:<id>}:meta        hash: stock, starts_ms, ends_ms, state (preheat);
--                                          reserved and "o:<user>" (the waitlist,
--                                          room_offer.lua): the room admits for stock -
--                                          reserved only. Once that is 0, a user with a live
--                                          offer is answered "admitted", and while the
--                                          backend runs the waitlist (room hash waitlist = 1)
--                                          and a unit may come back (reserved > 0, or the
--                                          buyers hash holds more users than the room hash's
--                                          paid) the waiters are answered "waiting" and a
--                                          tick "open", not "sold_out"
-- KEYS[2]  seckill:{sale:<id>}:room        hash: seed, ekey, commitment, settings (room_setup),
--                                          counters cursor, allow, last_ms, seq, entries,
--                                          admitted, lapsed, and the entry rate rate_s,
--                                          rate_cur, rate_prev (this script)
-- KEYS[3]  seckill:{sale:<id>}:room:q      zset, the queue. Member: 32 bytes of rank
--                                          (HMAC-SHA256(seed, entry id)) .. 16 bytes of entry
--                                          id .. user id. Score 0 for the pre-queue (equal
--                                          scores sort by member bytes, i.e. by rank, big-endian
--                                          ascending: exactly the published order), 1, 2, ...
--                                          for arrivals after the start, in arrival order
-- KEYS[4]  seckill:{sale:<id>}:room:live   zset: user -> admitted_until_ms (live admissions)
-- KEYS[5]  seckill:{sale:<id>}:room:spent  zset: proof-of-work nonce -> its expiry (ms)
-- KEYS[6]  seckill:{sale:<id>}:buyers      hash written by the gate (users who bought)
-- ARGV[1]  "enter", "poll", "leave", "tick" or "revoke" (ARGV[15...] are pairs
--          (queue member, banned until ms) of users the throttle bans; each live admission
--          among them ends now and is logged "r:<now_ms>:<banned_until_ms>:<user>")
-- ARGV[2]  the user's member (computed by the gateway from the seed and the entry key); tick:
--          the admission decisions the gateway has read so far (the room hash's "decided" as
--          its last tick returned it, "0" for none), or "" for no decisions (KEYS[16])
-- ARGV[3]  rate (admissions per second, > 0)
-- ARGV[4]  oversubscribe (live admissions per remaining unit, >= 1)
-- ARGV[5]  session_ms
-- ARGV[6]  prequeue_ms
-- ARGV[7]  enter: the proof-of-work nonce to spend, "" when the room asks for none
-- ARGV[8]  enter: the nonce's expiry (unix ms)
-- ARGV[9]  optional max_waiters: the most places the queue holds (admitted ones included: the
--          sorted set keeps them for the published order); a new entry beyond it is refused
--          "queue_full", a user who has a place keeps it. Absent, "" or 0: no bound
-- ARGV[10] optional, enter: the highest entry rate (entries per second, as counted below) at
--          which the proof's difficulty is still the one in force; above it the entry is
--          refused "too_easy". Absent, "" or negative: any rate (no proof, or the maximum
--          difficulty)
-- ARGV[11] optional: "0" skips the admission step (lapses, the buyers' check, new admissions):
--          a gateway asks for it at most once per sale per interval, not on every poll; a
--          number above 1 is that interval (ms), a lease: the step runs only when no step ran
--          for the sale within it, on any gateway (the room hash's last_ms, Redis time), so a
--          sale runs one step per interval however many gateways ask; "1", anything else, or
--          absent: admit. The answer is exact either way: a live admission whose time is up
--          is answered "lapsed" even before the step removes it. The step's commands are
--          bounded: its writes are batched, and the walk reads 100 places at a time with their
--          presence in one ZMSCORE, whatever the number of absent waiters
-- ARGV[12] optional presence (ms): with KEYS[8..10], the admission step admits only waiters
--          present now (docs/DESIGN.md, "Admission goes to waiters who are there"); an absent
--          waiter's place is passed and kept (room:away), and when he is seen again he is
--          admitted before anyone behind. The value is how long this visit's user counts as
--          present from now (the refresh_s he is told plus a grace, or the
--          presence_window); on a tick any positive value (the users of ARGV[15...] carry
--          their own). Absent, "" or 0: every waiter is admitted in turn, present or not
-- ARGV[13] optional claim window (ms), with KEYS[11..13]: conversion-aware admission
--          (docs/room.md, "Admission"). An admission whose user has taken no token within the
--          window after his presence deadline (the poll that tells him) is judged a no-show: it
--          stays live (he may still buy until the session ends: the gate's stock guard is the
--          last word), but no longer holds capacity, and the log gets
--          "n:<now_ms>:<admitted_until_ms>:<user>". Capacity counts the admissions that took a
--          token, and those not judged yet at the room's observed conversion (tokens taken per
--          admission judged). Absent, "" or 0: every live admission holds capacity (the older
--          rule)
-- ARGV[14] optional oversubscribe_max (>= ARGV[4]): with ARGV[13], the live admissions, no-shows
--          included, never exceed floor(stock x this)
-- ARGV[15...] tick: pairs (user, ms) of the users the gateway answered from memory since its
--          last tick, each present for ms from now
-- KEYS[8]  optional seckill:{sale:<id>}:room:seen  zset: user -> present until (ms, Redis
--                                          time; never shortened): polls and enters record
--                                          their user, ticks the users of ARGV[13...].
--                                          Presence, for admission to go to waiters who are
--                                          there
-- KEYS[9]  optional seckill:{sale:<id>}:room:away  zset: user -> queue index: waiters whose
--                                          place the cursor passed while they were absent
-- KEYS[10] optional seckill:{sale:<id>}:room:back  zset: user -> queue index: the away ones
--                                          seen again, admitted first, best-ranked first
-- KEYS[7]  optional seckill:{sale:<id>}:room:log   list: the room's history, for the verifier
--                                          (bench/verify, docs/room.md): one element
--                                          "a:<now_ms>:<stock>:<user>" per admission, in
--                                          admission order, "s:<now_ms>:<present_until_ms>:<user>"
--                                          per absent waiter whose place was passed (0: never
--                                          seen; the room hash's presence = "until" says the
--                                          field is a deadline), in
--                                          admission order, "l:<now_ms>:<position>:<user>" per
--                                          place given up (leave; position as it stood, 1-based
--                                          among those not yet admitted); token_issue.lua
--                                          appends "t:" ones; with ARGV[13], "n:" per no-show
--                                          judged and "p:<now_ms>:<1|0>:-" when an admission
--                                          step first finds the sale paused (1) and first runs
--                                          again after it (0): a pause is no idle sale
-- KEYS[11] optional seckill:{sale:<id>}:tokens     hash: the unused purchase tokens
--                                          (token_issue.lua): a user holding one is acting on
--                                          his admission
-- KEYS[12] optional seckill:{sale:<id>}:room:claim zset: user -> when his admission is judged
--                                          (ms): the admissions not judged yet
-- KEYS[13] optional seckill:{sale:<id>}:room:idle  zset: user -> admitted until (ms): the live
--                                          admissions judged no-shows
-- KEYS[14] optional seckill:{sale:<id>}:room:keys  hash: user -> the RFC 7638 thumbprint of
--                                          the device key his first bound entry proved
--                                          (device_binding). The place is that key's: a
--                                          re-entry with another key, or without one, is
--                                          refused "key_mismatch", and token_issue.lua and
--                                          gate.lua refuse another key as well. Leaving (with
--                                          that key's proof) forgets it
-- ARGV[15] enter, with KEYS[14]: the thumbprint of the entry's proof key ("" for none)
-- KEYS[15] optional seckill:{sale:<id>}:room:flagged  set: the flagged users (a bot
--                                          challenge's verdict, a throttle ban, a rule on the
--                                          request; docs/room.md "The queue bots never
--                                          leave"). A flagged user holds his place and is
--                                          answered as any waiter at it, but the admission
--                                          step never admits him: the walk passes his place
--                                          ("f:<now_ms>:0:<user>" in the log) and, once
--                                          passed, he is answered "waiting" first in line
--                                          until the sale sells out or ends
-- ARGV[16] optional, enter, with KEYS[15]: "1" flags the user (for good: a later entry
--          without a flag does not clear it)
-- KEYS[16] optional, a room without lanes: seckill:{sale:<id>}:room:decided  list: the recent
--                                          admission decisions, for the gateways to answer
--                                          the polls of the places the cursor passed from
--                                          memory (docs/room.md, "Answers from memory"). One element
--                                          per admission step or revoke that decided anything:
--                                          "<admitted_until_ms> <kind><user> ...", kind "a"
--                                          admitted (until admitted_until_ms), "s" passed while
--                                          absent, "f" passed because flagged, "x" a live
--                                          admission ended before its time (its buyer's, by the
--                                          step; a ban's, by a revoke: "0" then), in the order
--                                          they happened. The room hash's "decided" counts the
--                                          elements ever pushed; the list keeps the last 256 or
--                                          so. A room with lanes records none (KEYS[16] is its
--                                          codes hash there, and its polls ask Redis)
--
-- Returns  {outcome, position, ahead, admitted_until_ms, now_ms, stock, depth, starts_ms,
--           admitted_now, lapsed_now, entry_rate, admitted, cursor, checks, revoked}
--          outcome "waiting" | "admitted" | "sold_out" | "ended" | "paused": the user's state;
--                  "lapsed": admitted once, the admission ran out unused (the place is gone);
--                  "used": admitted once, and bought;
--                  "not_entered" (poll): the user holds no place;
--                  "not_started" (enter): before the pre-queue opens;
--                  "key_mismatch" (enter): the user's place is bound to another key than
--                  ARGV[15] (KEYS[14]); nothing written;
--                  "replayed" (enter): the nonce was spent already, nothing written;
--                  "too_easy" (enter): the entry rate is above ARGV[10], nothing written;
--                  "queue_full" (enter): no place and the queue holds ARGV[9] places (the
--                  nonce is spent and the entry counted: every try costs a proof);
--                  "left" (leave): the user holds no waiting place any more (given up now, or
--                  held none: leaving twice is leaving once);
--                  "not_waiting" (leave): admitted once (live, lapsed or used): the place was
--                  passed and stays in the admission history, nothing written;
--                  "prequeue" / "open" (tick): the room takes entries before / after the
--                  start (depth: the pre-queue's size / the places not yet admitted);
--                  "unknown_sale" / "no_room": no meta / no room hash.
--          position is 1-based among those not yet admitted (before the start: the pre-queue's
--          size, since the order is only drawn then), ahead = position - 1, depth = places not
--          yet admitted, admitted_now / lapsed_now = admissions this call made / saw lapse,
--          entry_rate = entries per second across every gateway (the higher of this second's
--          and the last one's, Redis time) as an enter saw it before counting itself; -1 when
--          the call did not read it (polls, refusals before the proof), admitted = the room's
--          admissions so far (the counter, after this call): the gateways measure the
--          admission rate from it for the estimate's range; cursor = the places the admission
--          step walked past (admitted, or passed while absent): a waiting place's index in the
--          queue is cursor + position - 1; checks = when the admission step ran: the users it
--          admitted and up to 16 random live admissions, for the gateway to check against the
--          throttle's bans (empty otherwise); revoked = the admissions a revoke
--          ended. Outcome "revoked": a revoke's answer.
--          A tick of a room without lanes that finds it open, with ARGV[2] not "", returns a
--          16th value: {decided, gap, waitlist, element...}: the room hash's "decided" after the
--          call, 1 when the list no longer held every element after ARGV[2] (or the count went
--          back: the gateway's memory of decisions is not whole), 1 when the backend runs the
--          room's waitlist (room_offer.lua admits and passes outside the steps, unrecorded),
--          and the elements after ARGV[2] that the list holds, oldest first (at most 512)
-- Lanes (docs/room.md, "Lanes"): when the room hash has the field "lanes"
-- ("<mode>,<name>:<kind>:<share>:<claim>,...", room_setup.lua), the room keeps one queue per
-- lane and the admission step apportions each step's admissions across them (mode "share":
-- each lane its share, kept exact by a credit per lane in the room hash, "lane:<name>:credit";
-- what a step's shares leave goes to the lane with waiters and the most credit, so a lane
-- with nobody to admit passes its part on; mode "priority": the lanes in order). Each lane is
-- walked as the one queue is, with its own cursor ("cursor" for the public lane,
-- "lane:<name>:cursor" for the others) and its counters "lane:<name>:entries" and
-- "lane:<name>:admitted". Without the field, nothing below reads the keys or arguments of lanes.
-- KEYS[16] seckill:{sale:<id>}:room:codes       hash: SHA-256 of an invitation code -> its cap
-- KEYS[17] seckill:{sale:<id>}:room:codes:used  hash: SHA-256 of a code -> entries it made
-- KEYS[18...] per lane, in the field's order: its queue, its away and its back set (the
--          public lane's are KEYS[3], KEYS[9] and KEYS[10])
-- ARGV[17] enter: the lane the gateway placed the entry in (its verified claim, its
--          invitation code, else the public lane); a user who holds a place keeps his lane
-- ARGV[18] enter into the invitation lane: the SHA-256 (hex) of the code; the entry spends one
--          use of it, refused "invitation_unknown" (no such code) or "invitation_exhausted"
--          (its cap reached): nothing else is written then but the spent proof
local meta, room, q, live, spent, buyers = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local away, back = KEYS[9], KEYS[10]
local curfield = "cursor"
local op, member = ARGV[1], ARGV[2]
local rate, over = tonumber(ARGV[3]), tonumber(ARGV[4])
local session, pre = tonumber(ARGV[5]), tonumber(ARGV[6])
if (op ~= "enter" and op ~= "poll" and op ~= "leave" and op ~= "tick" and op ~= "revoke")
  or (op ~= "tick" and op ~= "revoke" and #member < 49) or rate == nil or rate <= 0 or over == nil
  or over < 1 or session == nil or session <= 0 or pre == nil or pre < 0 then
  return redis.error_reply("ERR room_queue: bad arguments")
end
local user = string.sub(member, 49)

local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local erate = -1
local checks, revoked = {}, 0
-- The room hash's counters, read once: the admission step keeps them current, and the reply
-- returns them as they stand after the call.
local rh = redis.call("HMGET", room, "seed", "admitted", "cursor", "allow", "last_ms", "lanes", "decided", "waitlist")
local admitted_total, cursor_now = tonumber(rh[2]) or 0, tonumber(rh[3]) or 0
-- The tick's decisions (KEYS[16]): the 16th value of its reply, when it has one.
local decisions
local function reply(outcome, pos, ahead, untl, stock, depth, starts, adm, lap)
  return {outcome, pos or 0, ahead or 0, untl or 0, now, stock or 0, depth or 0, starts or 0, adm or 0, lap or 0, erate,
    admitted_total, cursor_now, checks, revoked, decisions}
end
-- The sale's keys live as long as its meta: its expiry, read at most once per call.
local expiry_ms
local function expire(key)
  if expiry_ms == nil then
    expiry_ms = redis.call("PEXPIRETIME", meta)
  end
  if expiry_ms > 0 then
    redis.call("PEXPIREAT", key, expiry_ms)
  end
end
-- One command over a list of arguments, in chunks of at most `per` (Lua's unpack is bounded):
-- a step's writes cost a command per chunk, not one per user.
local function batch(prefix, list, per)
  per = per or 1000
  for i = 1, #list, per do
    local a = {unpack(prefix)}
    for j = i, math.min(i + per - 1, #list) do
      a[#a + 1] = list[j]
    end
    redis.call(unpack(a))
  end
end
-- The scores of users in a sorted set (false where absent), one ZMSCORE per 1000 users.
local function scores(key, users)
  local out = {}
  for i = 1, #users, 1000 do
    local r = redis.call("ZMSCORE", key, unpack(users, i, math.min(i + 999, #users)))
    for j = 1, #r do
      out[#out + 1] = tonumber(r[j]) or false
    end
  end
  return out
end
-- Which of users are flagged (KEYS[15]; never admitted): one SMISMEMBER per 1000 users, none
-- when the sale has no flagged user (one SCARD per step).
local nflagged
local function flags(users)
  local out = {}
  if nflagged == nil then
    nflagged = KEYS[15] and redis.call("SCARD", KEYS[15]) or 0
  end
  if nflagged == 0 or #users == 0 then
    return out
  end
  for i = 1, #users, 1000 do
    local r = redis.call("SMISMEMBER", KEYS[15], unpack(users, i, math.min(i + 999, #users)))
    for j = 1, #r do
      out[#out + 1] = r[j] == 1
    end
  end
  return out
end

local m = redis.call("HMGET", meta, "stock", "starts_ms", "ends_ms", "state", "reserved", "o:" .. user)
local stock, starts, ends = tonumber(m[1]), tonumber(m[2]), tonumber(m[3])
if stock == nil or starts == nil or ends == nil then
  return reply("unknown_sale")
end
-- Units held for the waitlist (room_offer.lua) are not the room's to admit for.
local held = tonumber(m[5]) or 0
stock = stock - held
if not rh[1] then
  return reply("no_room")
end
local lanes, mylane = nil, nil
if rh[6] then
  lanes = {}
  for part in string.gmatch(rh[6], "[^,]+") do
    if not lanes.mode then
      lanes.mode = part
    else
      local name, kind, share = string.match(part, "^([^:]+):([^:]+):([^:]*):")
      local k = 18 + #lanes * 3
      if not name or not KEYS[k + 2] then
        return redis.error_reply("ERR room_queue: the room has lanes: give their keys")
      end
      lanes[#lanes + 1] = {name = name, kind = kind, share = tonumber(share) or 0, q = KEYS[k], away = KEYS[k + 1],
        back = KEYS[k + 2], cf = kind == "public" and "cursor" or ("lane:" .. name .. ":cursor")}
      if kind == "public" then
        mylane = lanes[#lanes]
      end
    end
  end
  if op ~= "tick" and op ~= "revoke" then
    -- The user's lane: the one whose queue holds his place, else (enter) the gateway's choice.
    local found = false
    for i = 1, #lanes do
      if redis.call("ZSCORE", lanes[i].q, member) then
        mylane, found = lanes[i], true
        break
      end
    end
    if not found and op == "enter" then
      for i = 1, #lanes do
        if lanes[i].name == ARGV[17] then
          mylane, found = lanes[i], true
        end
      end
      if not found then
        return redis.error_reply("ERR room_queue: no such lane")
      end
    end
  end
  q, away, back, curfield = mylane.q, mylane.away, mylane.back, mylane.cf
  cursor_now = tonumber(redis.call("HGET", room, curfield)) or 0
end
-- The recent decisions (KEYS[16], a room without lanes): what a step or a revoke decided is
-- gathered in `decided_now` (tokens "<kind><user>") and pushed as one element by
-- push_decisions, which returns the count the caller writes to the room hash's "decided".
local decided = not lanes and KEYS[16] or nil
local decided_n = tonumber(rh[7]) or 0
local decided_now = {}
local function push_decisions(untl)
  if not decided or #decided_now == 0 then
    return decided_n
  end
  local el = tostring(untl) .. " " .. table.concat(decided_now, " ")
  if redis.call("RPUSH", decided, el) == 1 then
    expire(decided)
  end
  -- Trimmed every 32 elements, to the last 256: a command per 32 steps, not per step.
  if decided_n % 32 == 31 then
    redis.call("LTRIM", decided, -256, -1)
  end
  decided_n = decided_n + 1
  decided_now = {}
  return decided_n
end
if now >= ends then
  return reply("ended", 0, 0, 0, stock, 0, starts)
end
if op == "leave" then
  -- Giving a place up needs no open sale (paused, sold out): it only shortens the queue.
  local rank = redis.call("ZRANK", q, member)
  local cursor = cursor_now
  local total = redis.call("ZCARD", q)
  if not rank then
    return reply("left", 0, 0, 0, stock, total - cursor, starts)
  end
  if rank < cursor then
    -- The cursor passed it: removing it would shift every admitted place and break the
    -- published order's evidence (invariants 6 and 9). An unused admission lapses by itself.
    return reply("not_waiting", 0, 0, 0, stock, total - cursor, starts)
  end
  -- Everyone behind moves up by one: the cursor counts places before it, and this one is
  -- after it. Entering again later is a new arrival (after the start: the back of the queue).
  redis.call("ZREM", q, member)
  redis.call("HINCRBY", room, "left", 1)
  if KEYS[14] then
    redis.call("HDEL", KEYS[14], user)
  end
  if KEYS[7] then
    -- The verifier accounts for a place that left the queue without being admitted.
    redis.call("RPUSH", KEYS[7], string.format("l:%d:%d:%s", now, rank - cursor + 1, user))
    expire(KEYS[7])
  end
  return reply("left", 0, 0, 0, stock, total - cursor - 1, starts)
end
if op == "revoke" then
  -- The throttle bans these users (the gateway read its ban keys, which live in other slots):
  -- a ban makes an admission useless, so it ends now and its capacity goes to the next
  -- present waiter at the next step. The place is spent, as by a lapse: the
  -- waiter is not admitted again.
  for i = 15, #ARGV - 1, 2 do
    local u, banned = string.sub(ARGV[i], 49), tonumber(ARGV[i + 1]) or 0
    local untl = tonumber(redis.call("ZSCORE", live, u))
    if untl and untl > now and redis.call("HEXISTS", buyers, u) == 0 then
      redis.call("ZREM", live, u)
      if KEYS[13] then
        redis.call("ZREM", KEYS[12], u)
        redis.call("ZREM", KEYS[13], u)
      end
      revoked = revoked + 1
      decided_now[#decided_now + 1] = "x" .. u
      if KEYS[7] then
        redis.call("RPUSH", KEYS[7], string.format("r:%d:%d:%s", now, banned, u))
      end
    end
  end
  if revoked > 0 then
    redis.call("HINCRBY", room, "revoked", revoked)
    if decided then
      redis.call("HSET", room, "decided", push_decisions(0))
    end
  end
  return reply("revoked", 0, 0, 0, stock, 0, starts)
end
local claim_ms = tonumber(ARGV[13] or "") or 0
local tokens, claims, idle = KEYS[11], KEYS[12], KEYS[13]
local aware = claim_ms > 0 and tokens and claims and idle
if m[4] == "paused" then
  if aware and ARGV[11] ~= "0" and KEYS[7] and redis.call("HSETNX", room, "paused_ms", now) == 1 then
    -- The evidence that the sale was paused, not idle (invariant 6): once per pause.
    redis.call("RPUSH", KEYS[7], string.format("p:%d:1:-", now))
  end
  return reply("paused", 0, 0, 0, stock, 0, starts)
end
if aware and ARGV[11] ~= "0" and KEYS[7] and redis.call("HDEL", room, "paused_ms") == 1 then
  redis.call("RPUSH", KEYS[7], string.format("p:%d:0:-", now))
end

if op == "enter" then
  if now < starts - pre then
    return reply("not_started", 0, 0, 0, stock, 0, starts)
  end
  -- A place bound to a device key stays that key's: another key (or none) cannot take it
  -- over, whoever holds the account's session.
  local jkt = ARGV[15] or ""
  local bound = KEYS[14] and redis.call("HGET", KEYS[14], user)
  if bound and bound ~= jkt then
    return reply("key_mismatch", 0, 0, 0, stock, 0, starts)
  end
  -- The entry rate that drives the proof-of-work difficulty is counted here, per second of
  -- Redis time, so every gateway sees the same one (a gateway's own count let a
  -- rush spread over gateways stay at the minimum).
  local sec = math.floor(now / 1000)
  local e = redis.call("HMGET", room, "rate_s", "rate_cur", "rate_prev")
  local rs, rcur, rprev = tonumber(e[1]) or 0, tonumber(e[2]) or 0, tonumber(e[3]) or 0
  if rs ~= sec then
    if rs == sec - 1 then rprev = rcur else rprev = 0 end
    rcur = 0
  end
  erate = math.max(rcur, rprev)
  local nonce = ARGV[7]
  local limit = tonumber(ARGV[10] or "")
  if nonce ~= "" and limit and limit >= 0 and erate > limit then
    -- The challenge was sealed at a lower difficulty than the rate asks for now.
    return reply("too_easy", 0, 0, 0, stock, 0, starts)
  end
  if nonce ~= "" then
    -- A nonce is remembered only while its challenge lives: memory follows the entry rate,
    -- not the queue.
    redis.call("ZREMRANGEBYSCORE", spent, "-inf", now)
    if redis.call("ZSCORE", spent, nonce) then
      return reply("replayed", 0, 0, 0, stock, 0, starts)
    end
    redis.call("ZADD", spent, tonumber(ARGV[8]), nonce)
    redis.call("PEXPIREAT", spent, ends + 120000)
  end
  -- Counted once the proof is spent: a replayed nonce costs nothing, so it must not raise the
  -- difficulty for everyone else.
  redis.call("HSET", room, "rate_s", sec, "rate_cur", rcur + 1, "rate_prev", rprev)
  if not redis.call("ZSCORE", q, member) then
    local cap = tonumber(ARGV[9] or "")
    if cap and cap > 0 then
      local card = redis.call("ZCARD", q)
      if lanes then
        card = 0
        for i = 1, #lanes do
          card = card + redis.call("ZCARD", lanes[i].q)
        end
      end
      if card >= cap then
        return reply("queue_full", 0, 0, 0, stock, card - cursor_now, starts)
      end
    end
    if lanes and mylane.kind == "invitation" then
      -- The code is spent here, in the entry's own script: its cap holds across gateways.
      local h = ARGV[18] or ""
      local ccap = h ~= "" and tonumber(redis.call("HGET", KEYS[16], h))
      if not ccap then
        return reply("invitation_unknown", 0, 0, 0, stock, 0, starts)
      end
      if (tonumber(redis.call("HGET", KEYS[17], h)) or 0) >= ccap then
        return reply("invitation_exhausted", 0, 0, 0, stock, 0, starts)
      end
      redis.call("HINCRBY", KEYS[17], h, 1)
      expire(KEYS[17])
    end
    if now < starts then
      redis.call("ZADD", q, 0, member)
    else
      redis.call("ZADD", q, redis.call("HINCRBY", room, "seq", 1), member)
    end
    redis.call("HINCRBY", room, "entries", 1)
    if lanes then
      redis.call("HINCRBY", room, "lane:" .. mylane.name .. ":entries", 1)
    end
    expire(q)
    expire(live)
  end
  if KEYS[15] and ARGV[16] == "1" then
    redis.call("SADD", KEYS[15], user)
    expire(KEYS[15])
  end
  if KEYS[14] and jkt ~= "" and not bound then
    -- The first bound entry binds the place (and so its admission) to its key.
    redis.call("HSET", KEYS[14], user, jkt)
    expire(KEYS[14])
  end
end


local seen = KEYS[8]
local admit = ARGV[11] ~= "0"
local lease = tonumber(ARGV[11] or "") or 0
local presence = tonumber(ARGV[12] or "") or 0
local gated = presence > 0 and seen and away and back
-- Away waiters seen again go to the back set: the next admission step takes them first. One
-- ZMSCORE per 1000 users finds them, however many a tick brings.
local function returned(users)
  if not gated or #users == 0 then
    return
  end
  local idx = scores(away, users)
  local zs = {}
  for i = 1, #users do
    if idx[i] then
      zs[#zs + 1] = idx[i]
      zs[#zs + 1] = users[i]
    end
  end
  batch({"ZADD", back}, zs)
end
if seen and op == "tick" and #ARGV > 15 then
  -- GT: a deadline is never shortened (a waiter told 30 s who polls early is still told 30 s).
  local zs, users = {}, {}
  for j = 15, #ARGV - 1, 2 do
    zs[#zs + 1] = now + (tonumber(ARGV[j + 1]) or 0)
    zs[#zs + 1] = ARGV[j]
    users[#users + 1] = ARGV[j]
  end
  batch({"ZADD", seen, "GT"}, zs)
  if lanes then
    -- The users may wait in any lane: each lane's away set is looked at.
    local aw, bk = away, back
    for i = 1, #lanes do
      away, back = lanes[i].away, lanes[i].back
      returned(users)
    end
    away, back = aw, bk
  else
    returned(users)
  end
  expire(seen)
end
local rank = false
-- The user's live admission as read before the step (a passed place only; nil: not read).
local live_until
if op ~= "tick" then
  rank = redis.call("ZRANK", q, member)
  if seen and rank and redis.call("ZADD", seen, "GT", now + math.max(presence, 0), user) == 1 then
    expire(seen)
  end
  -- Only a place the cursor passed can be away (a leave takes only places not passed yet), and
  -- never one with a live admission (admitted, he was not passed).
  if rank and rank < cursor_now then
    live_until = tonumber(redis.call("ZSCORE", live, user)) or false
    if not (live_until and live_until > now) then
      returned({user})
    end
  end
end
if now < starts then
  local n = redis.call("ZCOUNT", q, 0, 0)
  if op == "tick" and lanes then
    n = 0
    for i = 1, #lanes do
      n = n + redis.call("ZCOUNT", lanes[i].q, 0, 0)
    end
  end
  if op == "tick" then
    return reply("prequeue", n, 0, 0, stock, n, starts)
  end
  if not rank then
    return reply("not_entered", 0, 0, 0, stock, n, starts)
  end
  return reply("waiting", n, n - 1, 0, stock, n, starts)
end

local cursor, allow, last = cursor_now, tonumber(rh[4]) or 0, tonumber(rh[5]) or starts
local cursor0 = cursor
local total = redis.call("ZCARD", q)
if stock <= 0 then
  -- Invariant: nobody is admitted once sold out, until units come back. The waitlist
  -- (room_offer.lua) admits an offered waiter itself; while a unit may still come back
  -- (one is held, or buyers hold units not paid yet) the waiters keep their places.
  local offer = tonumber(m[6])
  if rank and offer and offer > now then
    return reply("admitted", 0, 0, offer, 0, total - cursor, starts)
  end
  local wl = redis.call("HMGET", room, "waitlist", "paid")
  if wl[1] == "1" and (held > 0 or redis.call("HLEN", buyers) > (tonumber(wl[2]) or 0)) then
    if op == "tick" then
      return reply("open", 0, 0, 0, 0, total - cursor, starts)
    end
    if rank and rank >= cursor then
      return reply("waiting", rank - cursor + 1, rank - cursor, 0, 0, total - cursor, starts)
    end
    if rank and gated and redis.call("ZSCORE", away, user) then
      return reply("waiting", 1, 0, 0, 0, total - cursor + redis.call("ZCARD", away), starts)
    end
  end
  return reply("sold_out", 0, 0, 0, 0, total - cursor, starts)
end

-- The admission step, a function per part. Its commands are bounded per step: batched writes,
-- one ZMSCORE per 100 places walked, whatever the number of waiters or of absent ones.

-- 1. Admissions lapse after `session` unused and free their place for the next in line; a
-- buyer no longer needs his: a few random live ones are checked per step, so capacity comes
-- back without a scan.
local function lapse()
  local n = redis.call("ZREMRANGEBYSCORE", live, "-inf", now)
  if n > 0 then
    redis.call("HINCRBY", room, "lapsed", n)
  end
  local sample = redis.call("ZRANDMEMBER", live, 4)
  if #sample > 0 then
    local bought = redis.call("HMGET", buyers, unpack(sample))
    local done = {}
    for i = 1, #sample do
      if bought[i] then
        done[#done + 1] = sample[i]
      end
    end
    if #done > 0 then
      redis.call("ZREM", live, unpack(done))
      for i = 1, #done do
        decided_now[#decided_now + 1] = "x" .. done[i]
      end
      if aware then
        redis.call("ZREM", claims, unpack(done))
        redis.call("ZREM", idle, unpack(done))
      end
    end
  end
  return n
end

-- 2. Conversion-aware admission: an admission whose user took no token by the time he must
-- have heard of it (his presence deadline plus the claim window) is a no-show. It stays live,
-- but its capacity goes to the next present waiter now, not after a whole session.
local function judge()
  redis.call("ZREMRANGEBYSCORE", idle, "-inf", now)
  local due = redis.call("ZRANGEBYSCORE", claims, "-inf", now, "LIMIT", 0, 200)
  if #due == 0 then
    return
  end
  redis.call("ZREM", claims, unpack(due))
  local untls = scores(live, due)
  local bought = redis.call("HMGET", buyers, unpack(due))
  local holding = redis.call("HMGET", tokens, unpack(due))
  local took, gone, idles, ev = 0, {}, {}, {}
  for i = 1, #due do
    local u, untl = due[i], untls[i]
    if untl and untl > now then
      if bought[i] then
        gone[#gone + 1] = u
        took = took + 1
      elseif holding[i] then
        took = took + 1
      else
        idles[#idles + 1] = untl
        idles[#idles + 1] = u
        ev[#ev + 1] = string.format("n:%d:%d:%s", now, untl, u)
      end
    end
  end
  if #gone > 0 then
    redis.call("ZREM", live, unpack(gone))
    for i = 1, #gone do
      decided_now[#decided_now + 1] = "x" .. gone[i]
    end
  end
  if took > 0 then
    redis.call("HINCRBY", room, "claimed", took)
  end
  if #ev > 0 then
    batch({"ZADD", idle}, idles)
    if KEYS[7] then
      batch({"RPUSH", KEYS[7]}, ev)
    end
    redis.call("HINCRBY", room, "noshows", #ev)
    expire(idle)
  end
end

-- 3. The allowance grows at `rate` per second from the start, and holds at most one second's
-- worth, so the admitted count never runs ahead of rate x elapsed.
local function grow()
  if last < starts then
    last = starts
  end
  if now > last then
    allow = math.min(allow + (now - last) * rate / 1000, math.max(rate, 1))
    last = now
  end
end

-- 4. The capacity: the live admissions stay within stock x oversubscribe (returns the room
-- left and the bound in force).
local function capacity()
  local nlive = redis.call("ZCARD", live)
  if not aware then
    return math.floor(stock * over + 1e-9) - nlive, over
  end
  -- What the live admissions will still buy: those whose user took a token count whole, those
  -- not judged yet at the conversion the room has observed (tokens per judged admission; 1
  -- before any is judged), the no-shows nothing. Bounded: the live admissions, no-shows
  -- included, stay within stock x oversubscribe_max. Never a unit oversold: an admission is
  -- permission to try, and the gate takes a unit only while the stock is above 0.
  local omax = math.max(tonumber(ARGV[14] or "") or over, over)
  local gone = redis.call("ZCARD", idle)
  -- A claim may outlive its admission (a claim window longer than the session): not pending.
  local pending = math.min(redis.call("ZCARD", claims), math.max(nlive - gone, 0))
  local c = redis.call("HMGET", room, "claimed", "noshows")
  local ctook, cns = tonumber(c[1]) or 0, tonumber(c[2]) or 0
  local conv = (ctook + 1) / (ctook + cns + 1)
  local counted = math.max(nlive - gone - pending, 0) + pending * conv
  return math.min(math.floor(stock * over - counted + 1e-9), math.floor(stock * omax + 1e-9) - nlive), omax
end

-- 5. The sale is held: units left, the allowance there, but the live admissions fill the
-- capacity. The evidence of the rule "while units are left and a present waiter waits, the
-- sale never idles" (invariant 6): once per hold, the waiter it holds back and the stock.
local function note_hold()
  local u = gated and redis.call("ZRANGE", back, 0, 0)[1]
  if not u and cursor < total then
    u = string.sub(redis.call("ZRANGE", q, cursor, cursor)[1], 49)
    local here = seen and tonumber(redis.call("ZSCORE", seen, u))
    if gated and not (here and here >= now) then
      u = nil
    end
  end
  if u and not flags({u})[1] and redis.call("HSETNX", room, "held", 1) == 1 then
    redis.call("RPUSH", KEYS[7], string.format("h:%d:%d:%s", now, stock, u))
  end
end

-- 6a. Without the presence rule: the next `budget` places, in order.
local function admit_in_turn(budget, prefix)
  local admits, heres, ev = {}, {}, {}
  local n = math.min(budget, total - cursor)
  if n <= 0 then
    return admits, heres, ev, 0
  end
  local next = redis.call("ZRANGE", q, cursor, cursor + n - 1)
  local users = {}
  for i = 1, #next do
    users[i] = string.sub(next[i], 49)
  end
  local flagged = flags(users)
  for i = 1, #users do
    if flagged[i] then
      -- A flagged waiter's place is passed for good (KEYS[15]).
      ev[#ev + 1] = string.format("f:%d:0:%s", now, users[i])
    else
      admits[#admits + 1] = users[i]
      ev[#ev + 1] = prefix .. users[i]
    end
  end
  if aware and seen then
    heres = scores(seen, admits)
  end
  cursor = cursor + #next
  return admits, heres, ev, 0
end

-- 6b. Admission goes to waiters who are there: first those who came back after their place
-- was passed (best-ranked first: their places stand before the cursor), then from the cursor,
-- in order, the present ones; an absent one's place is passed and kept in room:away. At most
-- `budget` admissions and a walk of 4 x budget places (at least 100) per step, read 100
-- places at a time with their presence in one ZMSCORE.
local function admit_present(budget, prefix)
  -- admits: the users admitted, in order; heres: their presence deadlines; ev: the log's
  -- elements, in the walk's order (the verifier replays the walk: invariant 6).
  local admits, heres, ev, skips = {}, {}, {}, 0
  if budget <= 0 then
    return admits, heres, ev, skips
  end
  local first = redis.call("ZRANGE", back, 0, budget - 1)
  if #first > 0 then
    redis.call("ZREM", back, unpack(first))
    redis.call("ZREM", away, unpack(first))
    local h = aware and scores(seen, first) or {}
    local flagged = flags(first)
    for i = 1, #first do
      if not flagged[i] then
        admits[#admits + 1] = first[i]
        heres[#heres + 1] = h[i] or false
        ev[#ev + 1] = prefix .. first[i]
      end
    end
  end
  local walked, limit = 0, math.max(budget * 4, 100)
  while #admits < budget and cursor < total and walked < limit do
    local places = redis.call("ZRANGE", q, cursor, cursor + math.min(limit - walked, 100) - 1)
    if #places == 0 then
      break
    end
    local users = {}
    for i = 1, #places do
      users[i] = string.sub(places[i], 49)
    end
    local here = scores(seen, users)
    local flagged = flags(users)
    local passed = {}
    for i = 1, #users do
      if #admits >= budget then
        break
      end
      local u, h = users[i], here[i]
      if flagged[i] then
        -- A flagged waiter's place is passed for good (KEYS[15]).
        ev[#ev + 1] = string.format("f:%d:0:%s", now, u)
      elseif h and h >= now then
        admits[#admits + 1] = u
        heres[#heres + 1] = h
        ev[#ev + 1] = prefix .. u
      else
        passed[#passed + 1] = cursor
        passed[#passed + 1] = u
        skips = skips + 1
        ev[#ev + 1] = string.format("s:%d:%d:%s", now, h or 0, u)
      end
      cursor = cursor + 1
      walked = walked + 1
    end
    batch({"ZADD", away}, passed)
  end
  return admits, heres, ev, skips
end

-- 6c. With lanes: the step's budget apportioned across the lanes (the head of this script),
-- each lane walked by 6a or 6b over its own queue, cursor, away and back set. ApportionLanes
-- (caddymodule/room/core/lanes.go) is the same rule in Go, for its unit tests.
local function admit_lanes(budget, prefix, walk)
  local admits, heres, ev, skips = {}, {}, {}, 0
  if budget <= 0 then
    return admits, heres, ev, skips
  end
  local backlog, credit, own, extra = {}, {}, {}, {}
  for i, l in ipairs(lanes) do
    local c = tonumber(redis.call("HGET", room, l.cf)) or 0
    backlog[i] = math.max(redis.call("ZCARD", l.q) - c, 0) + (gated and redis.call("ZCARD", l.back) or 0)
    credit[i] = tonumber(redis.call("HGET", room, "lane:" .. l.name .. ":credit")) or 0
    extra[i] = 0
  end
  local left = budget
  for i, l in ipairs(lanes) do
    if lanes.mode == "priority" then
      own[i] = math.min(left, backlog[i])
    else
      credit[i] = credit[i] + budget * l.share
      own[i] = math.max(math.min(math.floor(credit[i] + 1e-9), backlog[i], left), 0)
    end
    left = left - own[i]
  end
  -- What is left (the fractions, and the parts of lanes with nobody to admit) goes one
  -- admission at a time to the lane with waiters left and the most credit left: the sale
  -- never idles while anyone waits.
  while left > 0 do
    local best = nil
    for i = 1, #lanes do
      if backlog[i] - own[i] - extra[i] > 0 and (best == nil or
          credit[i] - own[i] - extra[i] > credit[best] - own[best] - extra[best] + 1e-9) then
        best = i
      end
    end
    if best == nil then
      break
    end
    extra[best] = extra[best] + 1
    left = left - 1
  end
  for i, l in ipairs(lanes) do
    local got = 0
    if own[i] + extra[i] > 0 then
      q, away, back = l.q, l.away, l.back
      cursor = tonumber(redis.call("HGET", room, l.cf)) or 0
      total = redis.call("ZCARD", q)
      local a, h, e, s = walk(own[i] + extra[i], prefix)
      for j = 1, #a do
        admits[#admits + 1] = a[j]
        heres[#heres + 1] = h[j] or false
      end
      for j = 1, #e do
        ev[#ev + 1] = e[j]
      end
      skips = skips + s
      got = #a
      redis.call("HSET", room, l.cf, cursor)
      if got > 0 then
        redis.call("HINCRBY", room, "lane:" .. l.name .. ":admitted", got)
      end
    end
    if lanes.mode ~= "priority" then
      -- A lane's credit pays for what it admitted; a lane left with nobody to admit banks at
      -- most one admission, and none owes more than one.
      credit[i] = credit[i] - got
      if backlog[i] - got <= 0 then
        credit[i] = math.min(credit[i], 1)
      end
      credit[i] = math.max(credit[i], -1)
      redis.call("HSET", room, "lane:" .. l.name .. ":credit", string.format("%.6f", credit[i]))
    end
  end
  q, away, back = mylane.q, mylane.away, mylane.back
  cursor = tonumber(redis.call("HGET", room, curfield)) or 0
  total = redis.call("ZCARD", q)
  return admits, heres, ev, skips
end

-- 7. The admissions until now + session, their claim deadlines (the waiter hears of it at his
-- next poll, which his presence deadline promises, then takes his token within the claim
-- window) and the log: the evidence of invariants 6, 8 and 9 (docs/DESIGN.md): who was
-- admitted, when, in which order, what stock the script saw, and with presence each passed
-- place with its waiter's own deadline. It grows with admissions and passes, not the queue.
local function grant(admits, heres, ev, skips)
  local untl = now + session
  local zl, zc = {}, {}
  for i = 1, #admits do
    zl[#zl + 1] = untl
    zl[#zl + 1] = admits[i]
    if aware then
      zc[#zc + 1] = math.max(heres[i] or 0, now) + claim_ms
      zc[#zc + 1] = admits[i]
    end
    checks[#checks + 1] = admits[i]
  end
  batch({"ZADD", live}, zl)
  batch({"ZADD", claims}, zc)
  if #zc > 0 then
    expire(claims)
  end
  if skips > 0 then
    -- How the skips were judged, for the verifier: each s: entry carries its waiter's own
    -- deadline, no longer a window shared by all.
    redis.call("HINCRBY", room, "skipped", skips)
    redis.call("HSET", room, "presence", "until")
    expire(away)
    expire(back)
  end
  if KEYS[7] and #ev > 0 then
    batch({"RPUSH", KEYS[7]}, ev)
    expire(KEYS[7])
  end
  if #admits > 0 then
    admitted_total = redis.call("HINCRBY", room, "admitted", #admits)
  end
end

-- A gateway passes the admit interval (ms) as ARGV[11]: the step runs at most once per sale per
-- interval across every gateway (the room hash's last_ms is the last step's time). "1" or
-- absent: the step runs.
if admit and lease > 1 and rh[5] and now - (tonumber(rh[5]) or 0) < lease then
  admit = false
end
local lapsed, n = 0, 0
if admit then
  lapsed = lapse()
  if aware then
    judge()
  end
  grow()
  local cap, omax = capacity()
  if aware and cap <= 0 and allow >= 1 and KEYS[7] then
    note_hold()
  end
  local budget = math.min(math.floor(allow), cap)
  local prefix = string.format("a:%d:%d:", now, stock)
  local admits, heres, ev, skips
  if lanes then
    admits, heres, ev, skips = admit_lanes(budget, prefix, gated and admit_present or admit_in_turn)
  elseif gated then
    admits, heres, ev, skips = admit_present(budget, prefix)
  else
    admits, heres, ev, skips = admit_in_turn(budget, prefix)
  end
  grant(admits, heres, ev, skips)
  n = #admits
  allow = allow - n
  cursor_now = cursor
  if decided then
    -- The step's decisions, in the walk's order, from the log's elements ("a:", "s:", "f:",
    -- each ending in ":<user>").
    for i = 1, #ev do
      decided_now[#decided_now + 1] = string.sub(ev[i], 1, 1) .. string.match(ev[i], "^.:[^:]*:[^:]*:(.*)$")
    end
  end
  local dn = push_decisions(now + session)
  if aware then
    if n > 0 or cursor ~= cursor0 then
      redis.call("HDEL", room, "held")
    end
    -- How no-shows were judged, for the verifier (invariants 6 and 8).
    redis.call("HSET", room, curfield, cursor, "allow", string.format("%.6f", allow), "last_ms", last,
      "claim_ms", claim_ms, "oversubscribe_max", omax, "decided", dn)
  else
    redis.call("HSET", room, curfield, cursor, "allow", string.format("%.6f", allow), "last_ms", last, "decided", dn)
  end
  -- A few live admissions for the gateway to check against the throttle's bans: a user banned
  -- after his admission loses it within a few steps however many are live.
  local sampled = redis.call("ZRANDMEMBER", live, 16)
  for i = 1, #sampled do
    checks[#checks + 1] = sampled[i]
  end
end
if op == "tick" then
  local depth = total - cursor
  if lanes then
    depth = 0
    for i = 1, #lanes do
      depth = depth + math.max(redis.call("ZCARD", lanes[i].q) - (tonumber(redis.call("HGET", room, lanes[i].cf)) or 0), 0)
    end
  end
  if decided and ARGV[2] ~= "" then
    -- The decisions since the gateway's last tick, read in the same call as the cursor: every
    -- place the cursor passed is among them or older.
    local have, gap = tonumber(ARGV[2]) or 0, 0
    local k = decided_n - have
    if k < 0 then
      k, gap = decided_n, 1
    end
    decisions = {decided_n, gap, rh[8] == "1" and 1 or 0}
    if k > 0 then
      local got = redis.call("LRANGE", decided, -math.min(k, 512), -1)
      if #got < k then
        decisions[2] = 1
      end
      for i = 1, #got do
        decisions[#decisions + 1] = got[i]
      end
    end
  end
  return reply("open", 0, 0, 0, stock, depth, starts, n, lapsed)
end

if not rank then
  return reply("not_entered", 0, 0, 0, stock, total - cursor, starts, n, lapsed)
end
if rank >= cursor then
  return reply("waiting", rank - cursor + 1, rank - cursor, 0, stock, total - cursor, starts, n, lapsed)
end
-- A step may have ended the admission (a lapse, a buyer's): read again only then.
local untl = live_until
if admit or untl == nil then
  untl = tonumber(redis.call("ZSCORE", live, user))
end
untl = untl or nil
if gated and not untl and redis.call("ZSCORE", away, user) then
  -- Passed while away, seen again now: first in line at the next admission step.
  return reply("waiting", 1, 0, 0, stock, total - cursor + redis.call("ZCARD", away), starts, n, lapsed)
end
if not untl and flags({user})[1] then
  -- Passed because flagged: answered as a waiter first in line (as one passed while away and
  -- seen again), until the sale sells out or ends.
  local depth = total - cursor
  if gated then
    depth = depth + redis.call("ZCARD", away)
  end
  return reply("waiting", 1, 0, 0, stock, depth, starts, n, lapsed)
end
if untl and untl > now then
  return reply("admitted", 0, 0, untl, stock, total - cursor, starts, n, lapsed)
end
if redis.call("HEXISTS", buyers, user) == 1 then
  return reply("used", 0, 0, 0, stock, total - cursor, starts, n, lapsed)
end
return reply("lapsed", 0, 0, 0, stock, total - cursor, starts, n, lapsed)
