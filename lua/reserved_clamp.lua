-- reserved_clamp.lua: keep a sale's waitlist reserve consistent (reconcile; docs/room.md, "The
-- waitlist"). Meta "reserved" counts the units of "stock" held for the waitlist's offers, which
-- the open pool may not sell. It must never be above what the waitlist really holds, nor above
-- the stock (stock - reserved never negative), nor below 0: a drifted reserve (a lost write, a
-- hand edit, a stock repaired below it) would keep units from every buyer, or let the open pool
-- sell units offered to a waiter.
--
-- KEYS[1]  seckill:{sale:<id>}:meta           hash: stock, reserved, state
-- KEYS[2]  seckill:{sale:<id>}:room:offerlog  list: the waitlist's history (room_offer.lua):
--                                              "v" a unit held, "b" an offer bought, "g:<ms>:<n>"
--                                              n units given back to the pool; the units it still
--                                              holds (on offer or not) are v - b - n. A purchase
--                                              of an offer lowers "reserved" at the gate before
--                                              the next step logs its "b", so the log's count is
--                                              an upper bound, never raised to
-- ARGV[1]  sale id (for the restock broadcast)
--
-- Returns  {1, before, after}: "reserved" before and after the call; {0, 0, 0} when the sale
--          has no reserve (nothing to keep). When units are freed and the state is "sold_out", the
--          state is set back to "open" and "restock:<sale>" is published, as room_offer.lua does.
local meta, olog = KEYS[1], KEYS[2]
local m = redis.call("HMGET", meta, "stock", "reserved", "state")
local stock, reserved = tonumber(m[1]), tonumber(m[2])
if stock == nil or reserved == nil then
  return {0, 0, 0}
end
local held = 0
local n = redis.call("LLEN", olog)
for i = 0, n - 1, 1000 do
  local part = redis.call("LRANGE", olog, i, i + 999)
  for _, s in ipairs(part) do
    local kind, a = string.match(s, "^(%a):%d+:(%d+):")
    if kind == "v" then
      held = held + 1
    elseif kind == "b" then
      held = held - 1
    elseif kind == "g" then
      held = held - tonumber(a)
    end
  end
end
local want = math.max(0, math.min(reserved, held, stock))
if want == reserved then
  return {1, reserved, reserved}
end
redis.call("HSET", meta, "reserved", want)
if want < reserved and stock - want > 0 then
  if m[3] == "sold_out" then
    redis.call("HSET", meta, "state", "open")
  end
  redis.call("PUBLISH", "seckill:events", "restock:" .. ARGV[1])
end
return {1, reserved, want}
