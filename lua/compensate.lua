-- compensate.lua: give back to Redis the unit of an accepted order that ended failed or
-- cancelled in Postgres. Idempotent per order id: the backend may run it again after a crash,
-- from the sweeper's retry pass or from reconcile, and the unit is returned exactly once.
--
-- KEYS[1]  seckill:{sale:<id>}:meta         hash: stock, starts_ms, ends_ms, state
-- KEYS[2]  seckill:{sale:<id>}:buyers       hash: user id -> order id
-- KEYS[3]  seckill:{sale:<id>}:compensated  set of order ids already compensated
-- KEYS[4]  seckill:{sale:<id>}:held         optional hash: user id -> units held (variant and
--                                            limit sales; absent for a limit-1 sale without
--                                            variants)
-- KEYS[5]  optional seckill:{sale:<id>}:room           hash: the sale's waiting room
-- KEYS[6]  optional seckill:{sale:<id>}:room:offerlog  list: the waitlist's history
--                                            (room_offer.lua); a unit held for the waitlist is
--                                            logged "v:<now_ms>:1:<order id>". KEYS[5] and
--                                            KEYS[6] come together: without them no unit is
--                                            held
-- KEYS[7]  optional seckill:{sale:<id>}:draw           hash: a draw's claim_ms, n:<variant>,
--                                            waitlist (draw_setup.lua)
-- KEYS[8]  optional seckill:{sale:<id>}:draw:entries   hash: the draw's entries
-- KEYS[9]  optional seckill:{sale:<id>}:draw:raises    list: the draw's waitlist raises,
--                                            "<wave>:<pos>:<claim_until_ms>:<now_ms>:<variant>:<order>".
--                                            KEYS[7..9] come together; read only on a sale
--                                            whose meta field "draw" is 1
-- ARGV[1]  sale id (for the restock broadcast)
-- ARGV[2]  order id
-- ARGV[3]  user id
-- ARGV[4]  optional variant id ("" or absent: the sale has no variants)
-- ARGV[5]  optional quantity ("" or absent: 1)
--
-- The order's quantity goes back to "stock" (the sale's total) and, when a variant is named
-- and the meta hash has its field "v:<variant>", to that variant too; the user's held units
-- drop by the quantity (never below 0) when the held hash exists.
--
-- The waitlist (docs/room.md, "The waitlist"): on a sale with a room whose gateways' waitlist
-- the backend runs (room hash field "waitlist" = 1), without variants and with a limit of
-- 1, a unit that comes back while the open pool is empty (stock - reserved <= 0) is held for
-- the room's next present waiter: it goes into "stock" and into "reserved" (the units of stock
-- the open pool may not sell), the state stays "sold_out" and no restock is broadcast.
-- room_offer.lua offers it, or gives it back to the pool when nobody is left.
--
-- The draw's waitlist (docs/draw.md, "The waitlist"): on a draw sale (meta "draw" = 1) whose
-- draw hash has waitlist = 1, the unit goes back to its variant as on any sale, the releasing
-- winner's drawn entry gets the suffix ":r" (gate.lua and token_issue.lua no longer see a win
-- in it, so he cannot take the unit back), and when the variant's current wave
-- "w:<variant>" = "<wave>:<lo>:<hi>:<claim_until_ms>" still runs (Redis TIME < claim_until, no
-- "wd:<variant>") and has a rank left (hi < n:<variant>), its upper rank rises by one: position
-- hi wins at once, and the wave's claim window ends no earlier than claim_ms from now (nor after
-- the sale). The raise is logged in KEYS[9]. Otherwise the unit waits for the next wave, as
-- without the waitlist. The compensated set makes it once per order id.
--
-- Returns  {done, stock}: done is 1 when this call returned the unit, 0 when the order was
--          compensated before (nothing changed); stock is the Redis stock after the call, or
--          -1 when the sale is no longer in Redis (then only the buyer is removed and the
--          order recorded). When the unit is returned, the buyer is removed (only if the hash
--          still maps the user to this order), a "sold_out" state is set back to "open", and
--          "restock:<sale>" is published on seckill:events so gateways clear their local
--          sold-out flag. The compensated set always gets a TTL: the sale's expiry, or one day
--          when the sale is no longer in Redis.
local meta, buyers, done = KEYS[1], KEYS[2], KEYS[3]
local sale, order, user = ARGV[1], ARGV[2], ARGV[3]
local variant = ARGV[4] or ""
local qty = tonumber(ARGV[5] or "") or 1
if qty < 1 then
  return redis.error_reply("ERR compensate: bad quantity")
end

if redis.call("SADD", done, order) == 0 then
  local s = redis.call("HGET", meta, "stock")
  return {0, tonumber(s) or -1}
end
-- The record of compensated orders lives as long as the sale does: the meta key's expiry,
-- else (meta gone) the buyers hash's, which the gate set to the same instant, else a day, so
-- the set never outlives the sale by more than that and never lives forever.
local ttl = redis.call("PTTL", meta)
if ttl <= 0 then
  ttl = redis.call("PTTL", buyers)
end
if ttl <= 0 then
  ttl = 86400000
end
redis.call("PEXPIRE", done, ttl)

if redis.call("HGET", buyers, user) == order then
  redis.call("HDEL", buyers, user)
end

local held = KEYS[4]
if held ~= nil and redis.call("EXISTS", held) == 1 then
  local h = tonumber(redis.call("HGET", held, user)) or 0
  if h > 0 then
    redis.call("HINCRBY", held, user, -math.min(h, qty))
  end
end

if redis.call("EXISTS", meta) == 0 then
  return {1, -1}
end
local w = redis.call("HMGET", meta, "room", "variants", "limit", "stock", "reserved")
if w[1] == "1" and not w[2] and (tonumber(w[3]) or 1) <= 1 and qty == 1 and KEYS[6]
    and (tonumber(w[4]) or 0) - (tonumber(w[5]) or 0) <= 0
    and redis.call("HGET", KEYS[5], "waitlist") == "1" then
  local stock = redis.call("HINCRBY", meta, "stock", 1)
  redis.call("HINCRBY", meta, "reserved", 1)
  local t = redis.call("TIME")
  redis.call("RPUSH", KEYS[6], string.format("v:%d:1:%s", tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), order))
  redis.call("PEXPIRE", KEYS[6], ttl)
  return {1, stock}
end
if KEYS[9] and redis.call("HGET", meta, "draw") == "1" and redis.call("HGET", KEYS[7], "waitlist") == "1" then
  local e = redis.call("HGET", KEYS[8], user)
  if e and string.match(e, "^[^:]+:([^:]*):(%d+)$") == variant then
    redis.call("HSET", KEYS[8], user, e .. ":r")
  end
  local d = redis.call("HMGET", KEYS[7], "claim_ms", "n:" .. variant)
  local cur = redis.call("HGET", meta, "w:" .. variant)
  local claim, n = tonumber(d[1]), tonumber(d[2])
  if cur and claim and n and redis.call("HEXISTS", meta, "wd:" .. variant) == 0 then
    local a, b, c, f = string.match(cur, "^(%d+):(%d+):(%d+):(%d+)$")
    local wave, lo, hi, cu = tonumber(a), tonumber(b), tonumber(c), tonumber(f)
    local t = redis.call("TIME")
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local ends = tonumber(redis.call("HGET", meta, "ends_ms")) or 0
    if wave and now < cu and hi < n then
      local ncu = math.max(cu, math.min(now + claim, ends))
      redis.call("HSET", meta, "w:" .. variant, wave .. ":" .. lo .. ":" .. (hi + 1) .. ":" .. ncu)
      redis.call("RPUSH", KEYS[9], string.format("%d:%d:%d:%d:%s:%s", wave, hi, ncu, now, variant, order))
      redis.call("PEXPIRE", KEYS[9], ttl)
    end
  end
end
local stock = redis.call("HINCRBY", meta, "stock", qty)
if variant ~= "" and redis.call("HEXISTS", meta, "v:" .. variant) == 1 then
  redis.call("HINCRBY", meta, "v:" .. variant, qty)
end
if redis.call("HGET", meta, "state") == "sold_out" then
  redis.call("HSET", meta, "state", "open")
end
redis.call("PUBLISH", "seckill:events", "restock:" .. sale)
return {1, stock}
