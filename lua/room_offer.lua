-- room_offer.lua: the waitlist of a sale with a waiting room (docs/room.md, "The waitlist").
-- A unit that came back while the open pool was empty is held (compensate.lua: meta fields
-- "stock" and "reserved"); this script offers each held unit to the room's next present
-- waiter, as an admission with its own window, ends the offers whose window passed, and gives
-- the units nobody is left to take back to the open pool. The backend runs it after each
-- compensation and on every sweep of a live room sale; it is idempotent (a call with nothing
-- to do writes nothing but the room's waitlist fields), so several backends may run it.
-- Time is Redis TIME.
--
-- KEYS[1]  seckill:{sale:<id>}:meta          hash: stock, ends_ms, state, reserved (units of
--                                             stock held for the waitlist), "o:<user>" (an
--                                             open offer's end, ms; gate.lua sells that user
--                                             one held unit and deletes the field); this
--                                             script sets waitlist = 1 (gate.lua then answers
--                                             a short sold_out and publishes none, so no
--                                             gateway's room answers sold_out from memory)
-- KEYS[2]  seckill:{sale:<id>}:room          hash: cursor, admitted (room_queue.lua); this
--                                             script sets waitlist = 1 and paid = ARGV[3]
-- KEYS[3]  seckill:{sale:<id>}:room:q        zset: the queue (room_queue.lua)
-- KEYS[4]  seckill:{sale:<id>}:room:live     zset: user -> admitted until (ms)
-- KEYS[5]  seckill:{sale:<id>}:room:seen     zset: user -> present until (ms)
-- KEYS[6]  seckill:{sale:<id>}:room:away     zset: user -> queue index (passed while absent)
-- KEYS[7]  seckill:{sale:<id>}:room:back     zset: user -> queue index (away, seen again)
-- KEYS[8]  seckill:{sale:<id>}:room:log      list: the room's history; an offer is an
--                                             admission, "a:<now_ms>:<units>:<user>" (units: the
--                                             held units not on offer when it was made), and
--                                             an absent waiter the walk passes is
--                                             "s:<now_ms>:<present_until_ms>:<user>", as
--                                             room_queue.lua logs them
-- KEYS[9]  seckill:{sale:<id>}:room:offers   zset: user -> offer until (ms): the open offers
-- KEYS[10] seckill:{sale:<id>}:room:offerlog list: the waitlist's history, one element per
--                                             step of a unit: "v:<ms>:1:<order>" held
--                                             (compensate.lua), "o:<ms>:<until_ms>:<user>"
--                                             offered, "b:<ms>:<until_ms>:<user>" bought,
--                                             "x:<ms>:<until_ms>:<user>" passed (the window
--                                             ended unbought), "g:<ms>:<n>:-" n units given
--                                             back to the open pool
-- KEYS[11] seckill:{sale:<id>}:buyers        hash: user -> order id (gate.lua)
-- ARGV[1]  sale id (for the restock broadcast)
-- ARGV[2]  the offer window (ms, > 0): how long an offered waiter may buy
-- ARGV[3]  the sale's paid orders (decimal), or "": what the room tells its waiters (while
--          buyers hold units not paid yet, a unit may still come back: room_queue.lua keeps
--          them waiting)
-- ARGV[4]  "1": a waiter must be present (KEYS[5] >= now) to be offered a unit, as the
--          gateways' presence rule admits; "0": every waiter in turn
--
-- An offer ends bought (the gate deleted "o:<user>"), passed (its window ended: the unit
-- stays held and goes to the next waiter) or, when the sale ends, passed as well. A held unit
-- not on offer goes to the next present waiter: first those who came back after their place
-- was passed (best-ranked first), then from the cursor in queue order, an absent waiter's
-- place passed and kept (room:away), as the room's admission step does. When the queue has
-- nobody left to offer it to (or the sale ended), the unit goes back to the open pool:
-- "reserved" drops, a "sold_out" state is set back to "open" and "restock:<sale>" is
-- published. An offer also publishes "restock:<sale>": the gateways forget the sale's sold-out
-- flag, so the offered waiter's purchase reaches gate.lua.
--
-- Returns  {reserved, offers, returned, now_ms, events}: reserved and offers after the call,
--          returned = units given back to the pool now, events = a flat list of triples
--          (kind, user, until_ms), kind "offered", "bought" or "passed", in the order they
--          happened. {-1, 0, 0, now_ms, {}} when the sale is not in Redis or has no room.
local meta, room, q, live, seen, away, back, log, offers, olog, buyers =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local window = tonumber(ARGV[2])
if window == nil or window <= 0 then
  return redis.error_reply("ERR room_offer: bad arguments")
end
local presence = ARGV[4] ~= "0"
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local m = redis.call("HMGET", meta, "stock", "ends_ms", "state", "reserved", "room")
local stock, ends = tonumber(m[1]), tonumber(m[2])
if stock == nil or ends == nil or m[5] ~= "1" or redis.call("HEXISTS", room, "seed") == 0 then
  return {-1, 0, 0, now, {}}
end
if (ARGV[3] or "") ~= "" then
  redis.call("HSET", room, "waitlist", 1, "paid", ARGV[3])
else
  redis.call("HSET", room, "waitlist", 1)
end
redis.call("HSET", meta, "waitlist", 1)
local reserved = tonumber(m[4]) or 0
local until_ms = redis.call("PEXPIRETIME", meta)
local events = {}
local function logged(kind, n, who)
  redis.call("RPUSH", olog, string.format("%s:%d:%d:%s", kind, now, n, who))
end

-- Settle the open offers: bought (the gate took the unit), or passed (the window ended).
local open = redis.call("ZRANGE", offers, 0, -1, "WITHSCORES")
for i = 1, #open, 2 do
  local u, untl = open[i], tonumber(open[i + 1])
  if redis.call("HEXISTS", meta, "o:" .. u) == 0 then
    redis.call("ZREM", offers, u)
    logged("b", untl, u)
    events[#events + 1], events[#events + 2], events[#events + 3] = "bought", u, untl
  elseif untl <= now or now >= ends then
    -- Unbought: the unit stays held for the next waiter. The admission ends with the offer.
    redis.call("HDEL", meta, "o:" .. u)
    redis.call("ZREM", offers, u)
    if (tonumber(redis.call("ZSCORE", live, u)) or 0) <= untl then
      redis.call("ZREM", live, u)
    end
    logged("x", untl, u)
    events[#events + 1], events[#events + 2], events[#events + 3] = "passed", u, untl
  end
end

-- Offer the held units not on offer, one per waiter, in the room's order.
local free = reserved - redis.call("ZCARD", offers)
local nobody = false
if free > 0 and now < ends and m[3] ~= "paused" and m[3] ~= "ended" then
  local r = redis.call("HMGET", room, "cursor")
  local cursor = tonumber(r[1]) or 0
  local total = redis.call("ZCARD", q)
  local function here(u)
    if not presence then
      return true, 0
    end
    local s = tonumber(redis.call("ZSCORE", seen, u))
    return s ~= nil and s >= now, s or 0
  end
  local untl = now + window
  local offered, skips, walked = 0, 0, 0
  local function offer(u)
    redis.call("ZADD", live, "GT", untl, u)
    redis.call("HSET", meta, "o:" .. u, untl)
    redis.call("ZADD", offers, untl, u)
    redis.call("RPUSH", log, string.format("a:%d:%d:%s", now, free, u))
    logged("o", untl, u)
    events[#events + 1], events[#events + 2], events[#events + 3] = "offered", u, untl
    offered = offered + 1
  end
  -- Those who came back after their place was passed stand before the cursor: first.
  local returned = redis.call("ZRANGE", back, 0, -1)
  for i = 1, #returned do
    if offered >= free then
      break
    end
    local u = returned[i]
    if here(u) and redis.call("HEXISTS", buyers, u) == 0 then
      redis.call("ZREM", back, u)
      redis.call("ZREM", away, u)
      offer(u)
    end
  end
  while offered < free and cursor < total and walked < 1000 do
    local batch = redis.call("ZRANGE", q, cursor, cursor + 99)
    if #batch == 0 then
      break
    end
    for i = 1, #batch do
      if offered >= free then
        break
      end
      local u = string.sub(batch[i], 49)
      local present, last = here(u)
      if present then
        offer(u)
      else
        redis.call("ZADD", away, cursor, u)
        redis.call("RPUSH", log, string.format("s:%d:%d:%s", now, last, u))
        skips = skips + 1
      end
      cursor = cursor + 1
      walked = walked + 1
    end
  end
  nobody = offered < free and cursor >= total
  if offered + skips > 0 then
    redis.call("HSET", room, "cursor", cursor)
    redis.call("HINCRBY", room, "admitted", offered)
    if skips > 0 then
      redis.call("HINCRBY", room, "skipped", skips)
      redis.call("HSET", room, "presence", "until")
    end
    if until_ms > 0 then
      for _, k in ipairs({log, offers, away, live}) do
        redis.call("PEXPIREAT", k, until_ms)
      end
    end
  end
  if offered > 0 then
    redis.call("PUBLISH", "seckill:events", "restock:" .. ARGV[1])
  end
  free = free - offered
elseif free > 0 then
  nobody = true
end

-- Nobody left to offer them to: the held units go back to the open pool.
local gave = 0
if nobody and free > 0 then
  gave = free
  reserved = redis.call("HINCRBY", meta, "reserved", -free)
  logged("g", free, "-")
  if redis.call("HGET", meta, "state") == "sold_out" then
    redis.call("HSET", meta, "state", "open")
  end
  redis.call("PUBLISH", "seckill:events", "restock:" .. ARGV[1])
end
if until_ms > 0 and redis.call("EXISTS", olog) == 1 then
  redis.call("PEXPIREAT", olog, until_ms)
end
return {reserved, redis.call("ZCARD", offers), gave, now, events}
