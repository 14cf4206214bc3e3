-- token_issue.lua: decide whether a user may get a purchase token for a sale now, and record
-- the token's nonce, in one round trip. Time is Redis TIME, never a gateway's clock.
--
-- KEYS[1]  seckill:{sale:<id>}:meta     hash: stock, starts_ms, ends_ms, state (preheat)
-- KEYS[2]  seckill:{sale:<id>}:tokens   hash: user id -> "<nonce>:<exp_ms>" (the live token)
-- KEYS[3]  seckill:{sale:<id>}:buyers   hash: user id -> order id (optional: without it the
--                                       already_bought and sold_out answers are not given)
-- ARGV[1]  user id
-- ARGV[2]  nonce (tokens.NewNonce: 22 base64url characters)
-- ARGV[3]  ttl_ms: a token lives this long from the start of the sale, or from now once it
--          has started
-- ARGV[4]  lead_ms: tokens are issued from this long before the start
-- ARGV[5]  optional "shard" when KEYS are one shard's of a sharded sale: an empty shard then
--          still issues (the gate's refusal there makes the backend move units to it)
-- KEYS[4]  optional seckill:{sale:<id>}:room       hash: the sale's waiting room (field "seed"
--                                                  exists when the sale has one)
-- KEYS[5]  optional seckill:{sale:<id>}:room:live  zset: user -> admitted until (ms)
-- ARGV[6]  optional "1": this gateway requires a live admission when the sale has a room
--          (require_admission; needs KEYS[4] and KEYS[5]). "" or absent: it does not, and a
--          sale that has a room is refused "misconfigured" rather than sold to anyone.
--          A sale has a room when its meta field "room" is 1 (preheat.lua writes it) or, for a
--          sale preheated before that field existed, when KEYS[4] holds a seed.
-- KEYS[6]  optional seckill:{sale:<id>}:room:log   list: the room's history (room_queue.lua);
--                                                  a token issued on a live admission appends
--                                                  "t:<now_ms>:<admitted_until_ms>:<user>:<nonce>",
--                                                  the evidence of invariant 7 (docs/DESIGN.md)
-- KEYS[7]  optional seckill:{sale:<id>}:draw:entries  hash: user -> "<entry_id>:<variant>[:w|
--                                                  :<pos>]" (docs/draw.md); read only on a
--                                                  sale whose meta field "draw" is 1, where
--                                                  it is required
-- KEYS[8]  optional seckill:{sale:<id>}:room:keys  hash: user -> the thumbprint of the device
--                                                  key his room place is bound to
--                                                  (room_queue.lua)
-- ARGV[7]  optional, with KEYS[8]: the thumbprint of the request's proof key ("" for none). A
--          user whose place is bound to another key gets "proof_key_mismatch" (after the admission
--          check): the admission is the device's, not only the token
--
-- A sale in draw mode (meta "draw" = 1) issues tokens only to a user holding a live win: his
-- entry is drawn ("<entry_id>:<variant>:<pos>") and his variant's current wave, meta
-- "w:<variant>" = "<wave>:<lo>:<hi>:<claim_until_ms>", has lo <= pos < hi and Redis TIME <
-- claim_until. The gate checks the same again, for the variant bought, when he buys.
--
-- Returns  {outcome, exp_ms, now_ms}
--          outcome "issued": the field of the user now holds "<nonce>:<exp_ms>" (any earlier
--                  token of this user for this sale is replaced, so it stops working), and
--                  exp_ms = min(max(now, starts) + ttl, ends), rounded down to whole seconds
--                  (the token carries seconds); the hash expires with the meta key
--          outcome "unknown_sale" | "not_started" | "ended" | "paused" | "sold_out" |
--                  "not_admitted" (ARGV[6] = "1", the sale has a room, the user no live
--                  admission, by Redis TIME) | "misconfigured" (the sale has a room, ARGV[6]
--                  is not "1": this gateway cannot enforce it) | "room_missing" (meta says
--                  the sale has a room, the room hash has no seed: its state is lost) |
--                  "draw_missing" (meta says the sale is a draw, KEYS[7] was not passed) |
--                  "proof_key_mismatch" (the user's room place is bound to a key other than ARGV[7]):
--                  nothing written, exp_ms = 0 ("paused": meta field state = "paused")
--          outcome "not_admitted" on a draw sale: {outcome, 0, now_ms, "draw"}, the user holds
--                  no live win (not entered, withdrawn, not drawn yet, waiting, lost, or his
--                  claim window is over)
--          outcome "already_bought": {outcome, 0, now_ms, order_id}: the user has an order in
--                  this sale; no token is minted. Not on a sale whose per-user limit (meta
--                  field "limit") is above 1: a buyer may buy again there, and the gate checks
--                  his units against the limit
--          outcome "sharded": the meta hash is a sharded sale's; exp_ms is its shard count k:
--                  nothing written, the caller runs this script again on the user's shard
--                  (whose meta holds the same window), so the gate finds the token there
--
-- lua/throttled.go runs this text as the decision of a script that first runs throttle.lua's
-- zones: it replaces the lines marked "-- (alone)" (one TIME serves both; the decision's KEYS
-- and ARGV come first, so nk and na count only its own).
local nk, na = #KEYS, #ARGV -- (alone)
-- The optional arguments, absent ones as "" (and keys as nil).
local function arg(i) return i <= na and ARGV[i] or "" end
local function key(i) return i <= nk and KEYS[i] or nil end
local meta, store = KEYS[1], KEYS[2]
local user, nonce = ARGV[1], ARGV[2]
local ttl, lead = tonumber(ARGV[3]), tonumber(ARGV[4])
if ttl == nil or ttl <= 0 or lead == nil or lead < 0 or #nonce ~= 22 then
  return redis.error_reply("ERR token_issue: bad arguments")
end

local t = redis.call("TIME") -- (alone)
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) -- (alone)

local w = redis.call("HMGET", meta, "starts_ms", "ends_ms", "shards", "state", "stock", "limit", "room", "draw")
local starts, ends, k, state = tonumber(w[1]), tonumber(w[2]), tonumber(w[3]), w[4]
if state == "paused" then
  return {"paused", 0, now}
end
if k ~= nil and k > 1 then
  return {"sharded", k, now}
end
if starts == nil or ends == nil then
  return {"unknown_sale", 0, now}
end
if now < starts - lead then
  return {"not_started", 0, now}
end
if now >= ends or state == "ended" then
  return {"ended", 0, now}
end
if key(3) then
  local order = (tonumber(w[6]) or 1) <= 1 and redis.call("HGET", KEYS[3], user)
  if order then
    return {"already_bought", 0, now, order}
  end
  local stock = tonumber(w[5])
  if arg(5) ~= "shard" and stock ~= nil and stock <= 0 then
    return {"sold_out", 0, now}
  end
end

-- The waiting room decides who may buy: no live admission, no token. A sale without a room
-- is not affected. A sale with one is never sold around it: a gateway that does not check
-- admissions, or a room whose state is gone, refuses instead.
local admitted_until = nil
local seeded = key(4) and redis.call("HEXISTS", KEYS[4], "seed") == 1
if w[7] == "1" or seeded then
  if arg(6) ~= "1" then
    return {"misconfigured", 0, now}
  end
  if not seeded or not key(5) then
    return {"room_missing", 0, now}
  end
  admitted_until = tonumber(redis.call("ZSCORE", KEYS[5], user))
  if admitted_until == nil or admitted_until <= now then
    return {"not_admitted", 0, now}
  end
  local bound = key(8) and redis.call("HGET", KEYS[8], user)
  if bound and bound ~= arg(7) then
    return {"proof_key_mismatch", 0, now}
  end
end

-- A draw decides who may buy: no live win, no token (the variant is checked at the gate, where
-- it is named).
if w[8] == "1" then
  if not key(7) then
    return {"draw_missing", 0, now}
  end
  local won, pos = string.match(redis.call("HGET", KEYS[7], user) or "", "^[^:]+:([^:]*):(%d+)$")
  local lo, hi, claim_until
  if won then
    lo, hi, claim_until = string.match(redis.call("HGET", meta, "w:" .. won) or "", "^%d+:(%d+):(%d+):(%d+)$")
  end
  pos = tonumber(pos)
  if lo == nil or pos < tonumber(lo) or pos >= tonumber(hi) or now >= tonumber(claim_until) then
    return {"not_admitted", 0, now, "draw"}
  end
end

-- A token taken before the start must still be usable once the sale opens: its lifetime
-- counts from the start, not from the moment it was issued.
local exp = math.max(now, starts) + ttl
if exp > ends then
  exp = ends
end
exp = exp - (exp % 1000)
if exp <= now then
  -- less than a second of the sale left: a token would be dead on arrival
  return {"ended", 0, now}
end

redis.call("HSET", store, user, nonce .. ":" .. string.format("%d", exp))
-- The hash lives as long as the sale's meta key (preheat sets it to the end plus retention),
-- and at least as long as the token.
local until_ms = redis.call("PEXPIRETIME", meta)
if until_ms < ends then
  until_ms = ends
end
redis.call("PEXPIREAT", store, until_ms)
if admitted_until ~= nil and key(6) then
  redis.call("RPUSH", KEYS[6], string.format("t:%d:%d:", now, admitted_until) .. user .. ":" .. nonce)
  redis.call("PEXPIREAT", KEYS[6], until_ms)
end
return {"issued", exp, now}
