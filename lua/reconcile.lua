-- reconcile.lua: apply the backend's reconciliation to a sale in Redis, atomically.
--
-- The backend computes, from a Postgres snapshot taken before a Redis snapshot, by how much
-- the Redis stock is off and which buyers Redis forgot. It applies a delta (not an absolute
-- value) so that purchases the gate accepted since the snapshot are kept.
--
-- KEYS[1]  seckill:{sale:<id>}:meta    hash: stock, starts_ms, ends_ms, state
-- KEYS[2]  seckill:{sale:<id>}:buyers  hash: user id -> order id
-- ARGV[1]  sale id (for the restock broadcast)
-- ARGV[2]  stock delta (integer, may be negative or 0)
-- ARGV[3..] pairs user id, order id of buyers to restore (HSETNX: never overwrites)
--
-- Returns  {stock, restored}: the Redis stock after the delta (-1 when the sale is not in
--          Redis: then nothing is changed) and how many buyers were restored. Publishes
--          "restock:<sale>" on seckill:events when the stock is positive afterwards.
local meta, buyers = KEYS[1], KEYS[2]
local delta = tonumber(ARGV[2])
if delta == nil then
  return redis.error_reply("ERR reconcile: bad delta")
end
if redis.call("EXISTS", meta) == 0 then
  return {-1, 0}
end
local restored = 0
for i = 3, #ARGV, 2 do
  restored = restored + redis.call("HSETNX", buyers, ARGV[i], ARGV[i + 1])
end
local stock = tonumber(redis.call("HGET", meta, "stock")) or 0
if delta ~= 0 then
  stock = redis.call("HINCRBY", meta, "stock", delta)
end
if stock > 0 then
  if redis.call("HGET", meta, "state") == "sold_out" then
    redis.call("HSET", meta, "state", "open")
  end
  redis.call("PUBLISH", "seckill:events", "restock:" .. ARGV[1])
end
return {stock, restored}
