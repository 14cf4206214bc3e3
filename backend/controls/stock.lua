-- stock.lua: the Redis half of one journaled stock change (POST /admin/sales/{id}/stock),
-- applied at most once per request id.
--
-- KEYS[1]  seckill:{sale:<id>}:meta             hash: stock, starts_ms, ends_ms, state
-- KEYS[2]  seckill:{sale:<id>}:stock_requests   set of request ids applied here
-- ARGV[1]  sale or shard id (for the restock broadcast)
-- ARGV[2]  request id
-- ARGV[3]  delta (integer, non-zero; negative removes unsold units)
--
-- Returns  {stock, outcome}: outcome 1 applied, 2 applied before (nothing changed), 3 refused
--          (a removal larger than the stock: nothing changed), 0 the sale is not in Redis
--          (stock -1; preheat will load the Postgres stock). When units are added and the
--          stock is positive, a "sold_out" state is set back to "open" (a "paused" one is
--          left alone) and "restock:<id>" is published on seckill:events, so every gateway
--          clears its local sold-out flag.
local meta, done = KEYS[1], KEYS[2]
local id, req, delta = ARGV[1], ARGV[2], tonumber(ARGV[3])
if delta == nil or delta == 0 then
  return redis.error_reply("ERR stock: bad delta")
end
if redis.call("EXISTS", meta) == 0 then
  return {-1, 0}
end
local stock = tonumber(redis.call("HGET", meta, "stock")) or 0
if redis.call("SISMEMBER", done, req) == 1 then
  return {stock, 2}
end
if stock + delta < 0 then
  return {stock, 3}
end
redis.call("SADD", done, req)
local expires = redis.call("PEXPIRETIME", meta)
if expires > 0 then
  redis.call("PEXPIREAT", done, expires)
end
stock = redis.call("HINCRBY", meta, "stock", delta)
if delta > 0 and stock > 0 then
  if redis.call("HGET", meta, "state") == "sold_out" then
    redis.call("HSET", meta, "state", "open")
  end
  redis.call("PUBLISH", "seckill:events", "restock:" .. id)
end
return {stock, 1}
