-- stock.lua: the Redis half of one journaled stock change (POST /admin/sales/{id}/stock),
-- applied at most once per request id.
--
-- KEYS[1]  seckill:{sale:<id>}:meta             hash: stock, starts_ms, ends_ms, state, v:<variant>
-- KEYS[2]  seckill:{sale:<id>}:stock_requests   set of request ids applied here
-- ARGV[1]  sale or shard id (for the restock broadcast)
-- ARGV[2]  request id
-- ARGV[3]  delta (integer, non-zero; negative removes unsold units)
-- ARGV[4]  variant id, optional ("" or absent: the sale's stock only). With a variant, the
--          variant's field v:<variant> and the total "stock" move together, so "stock" stays
--          the sum of the variants; a removal is refused when either would go below zero.
--
-- Returns  {stock, outcome, variant stock}: outcome 1 applied, 2 applied before (nothing
--          changed), 3 refused (a removal larger than the stock or the variant's stock: nothing
--          changed), 0 the sale is not in Redis (stock -1; preheat will load the Postgres
--          stock). The third element is the variant's units left (-1 without a variant). When
--          units are added and what was added to is positive, a "sold_out" state is set back to
--          "open" (a "paused" one is left alone) and "restock:<id>" is published on
--          seckill:events, so every gateway clears its local sold-out flags: the sale's and
--          those of its variants.
local meta, done = KEYS[1], KEYS[2]
local id, req, delta, variant = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4] or ""
if delta == nil or delta == 0 then
  return redis.error_reply("ERR stock: bad delta")
end
if redis.call("EXISTS", meta) == 0 then
  return {-1, 0, -1}
end
local vfield = nil
if variant ~= "" then
  vfield = "v:" .. variant
end
local stock = tonumber(redis.call("HGET", meta, "stock")) or 0
local vstock = -1
if vfield then
  -- A variant a shard holds none of may have no field yet: it counts 0.
  vstock = tonumber(redis.call("HGET", meta, vfield)) or 0
end
if redis.call("SISMEMBER", done, req) == 1 then
  return {stock, 2, vstock}
end
if stock + delta < 0 or (vfield and vstock + delta < 0) then
  return {stock, 3, vstock}
end
redis.call("SADD", done, req)
local expires = redis.call("PEXPIRETIME", meta)
if expires > 0 then
  redis.call("PEXPIREAT", done, expires)
end
stock = redis.call("HINCRBY", meta, "stock", delta)
local reopened = stock > 0
if vfield then
  vstock = redis.call("HINCRBY", meta, vfield, delta)
  reopened = vstock > 0
end
if delta > 0 and reopened then
  if redis.call("HGET", meta, "state") == "sold_out" then
    redis.call("HSET", meta, "state", "open")
  end
  redis.call("PUBLISH", "seckill:events", "restock:" .. id)
end
return {stock, 1, vstock}
