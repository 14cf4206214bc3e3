-- draw_enter.lua: enter a draw, change the entry's variant, or withdraw it (docs/draw.md). One
-- call decides one request atomically; every check comes before any write, so a refusal
-- changes nothing (a presented proof-of-work nonce is not spent).
--
-- KEYS[1]  seckill:{sale:<id>}:meta           hash: the sale (draw = 1, variants, v:<variant>,
--                                              variant when there is exactly one)
-- KEYS[2]  seckill:{sale:<id>}:draw           hash: seed, opens_ms, closes_ms, dmin, state, seq
--                                              (the entry counter), n:<variant> (live entries)
-- KEYS[3]  seckill:{sale:<id>}:draw:entries   hash: user -> "<entry_id>:<variant>" (entered) or
--                                              "<entry_id>:<variant>:w" (withdrawn)
-- KEYS[4]  seckill:{sale:<id>}:draw:spent     zset: spent proof-of-work nonce -> its expiry (ms)
-- ARGV[1]  "enter" (also a change of variant) or "withdraw"
-- ARGV[2]  user id
-- ARGV[3]  enter: the variant; "" takes the sale's only variant (meta field "variant"), and is
--          the variant of a sale without variants
-- ARGV[4]  enter: the proof-of-work nonce to spend, "" when none was presented
-- ARGV[5]  enter: the nonce's expiry (unix ms)
-- ARGV[6]  enter: the difficulty the presented challenge was sealed with ("" when none)
-- KEYS[5]  optional seckill:{sale:<id>}:draw:flagged  set: the flagged users (docs/draw.md,
--                                              "Flagged entrants"): entered like anyone, left
--                                              out of the entries the close fixes
-- ARGV[7]  optional, enter, with KEYS[5]: "1" flags the user (for good: an entry without a
--          flag does not clear it)
--
-- The window is Redis TIME: entries, changes and withdrawals are taken in [opens_ms, closes_ms)
-- while the draw's state is "open". The entry id is the draw's counter seq in 8 lowercase hex
-- digits (contract/draw.EntryIDFormat), given at the user's first entry and kept for ever: a
-- change, a withdrawal and a new entry keep it, so nobody re-rolls his rank. n:<variant> counts
-- the entries that are entered (not withdrawn) per variant, exactly.
--
-- Returns  {0, entry_id, variant, state}  done; state "entered" or "withdrawn" (also when the
--                                          entry already was in that state: a retried call)
--          {1}  unknown_sale  no draw hash seed, or meta field draw is not 1
--          {2}  not_open      Redis TIME < opens_ms
--          {3}  closed        Redis TIME >= closes_ms, the draw's state is not "open", or the
--                             entry is drawn already
--          {4}  bad_request   enter: no such variant (or none named on a sale with several)
--          {5}  not_entered   withdraw: the user never entered
--          {6}  replayed      enter: the nonce was spent already
--          {7}  pow_required  enter: the draw asks for a proof of work (dmin > 0) and none was
--                             presented, or its sealed difficulty is below dmin
local meta, draw, entries, spent = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op, user, vid = ARGV[1], ARGV[2], ARGV[3] or ""

local d = redis.call("HMGET", draw, "seed", "opens_ms", "closes_ms", "state", "dmin")
local m = redis.call("HMGET", meta, "draw", "variants", "variant")
if not d[1] or m[1] ~= "1" then
  return {1}
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now < tonumber(d[2]) then
  return {2}
end
local closes = tonumber(d[3])
if now >= closes or d[4] ~= "open" then
  return {3}
end

-- The user's entry: id, variant and what follows ("" entered, "w" withdrawn, a position once
-- drawn).
local cur = redis.call("HGET", entries, user)
local eid, cv, tail
if cur then
  eid, cv, tail = string.match(cur, "^([^:]*):([^:]*):?(.*)$")
  if tail ~= "" and tail ~= "w" then
    return {3}
  end
end

if op == "withdraw" then
  if not cur then
    return {5}
  end
  if tail == "" then
    redis.call("HSET", entries, user, eid .. ":" .. cv .. ":w")
    redis.call("HINCRBY", draw, "n:" .. cv, -1)
  end
  return {0, eid, cv, "withdrawn"}
end

-- What is entered for: a variant of this sale.
if m[2] then
  if vid == "" then
    vid = m[3] or ""
    if vid == "" then
      return {4}
    end
  elseif redis.call("HEXISTS", meta, "v:" .. vid) == 0 then
    return {4}
  end
elseif vid ~= "" then
  return {4}
end

local nonce = ARGV[4] or ""
local dmin = tonumber(d[5]) or 0
if dmin > 0 and (nonce == "" or (tonumber(ARGV[6]) or -1) < dmin) then
  return {7}
end
if nonce ~= "" and redis.call("ZSCORE", spent, nonce) then
  return {6}
end
if nonce ~= "" then
  -- A nonce is remembered only while its challenge lives (the gateway refuses an expired
  -- challenge before it gets here).
  redis.call("ZREMRANGEBYSCORE", spent, "-inf", now)
  redis.call("ZADD", spent, tonumber(ARGV[5]), nonce)
  redis.call("PEXPIREAT", spent, closes + 120000)
end

if KEYS[5] and ARGV[7] == "1" then
  redis.call("SADD", KEYS[5], user)
  local ttl = redis.call("PTTL", meta)
  if ttl > 0 then
    redis.call("PEXPIRE", KEYS[5], ttl)
  end
end
if not cur then
  eid = string.format("%08x", redis.call("HINCRBY", draw, "seq", 1))
elseif tail == "" and cv == vid then
  return {0, eid, vid, "entered"}
elseif tail == "" then
  redis.call("HINCRBY", draw, "n:" .. cv, -1)
end
redis.call("HSET", entries, user, eid .. ":" .. vid)
redis.call("HINCRBY", draw, "n:" .. vid, 1)
if not cur and redis.call("PTTL", entries) == -1 then
  -- The entries expire with the sale (the meta key), as the draw hash does.
  local ttl = redis.call("PTTL", meta)
  if ttl > 0 then
    redis.call("PEXPIRE", entries, ttl)
  end
end
return {0, eid, vid, "entered"}
