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
-- ARGV[3..] pairs user id, order id of buyers to restore (HSETNX: never overwrites), and, for
--          a sale with variants, pairs "v:<variant>", delta: added to that variant's field of
--          the meta hash when the field exists (user ids never contain ':', so the two kinds of
--          pairs cannot be confused). The backend computes the stock delta and the variants'
--          from the same Postgres snapshot, so "stock" ends as the sum of the variants.
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
-- Every argument is checked before the first write: an error leaves Redis as it was.
for i = 3, #ARGV, 2 do
  if string.sub(ARGV[i], 1, 2) == "v:" and tonumber(ARGV[i + 1]) == nil then
    return redis.error_reply("ERR reconcile: bad variant delta")
  end
end
local restored = 0
for i = 3, #ARGV, 2 do
  if string.sub(ARGV[i], 1, 2) == "v:" then
    local d = tonumber(ARGV[i + 1])
    if d ~= 0 and redis.call("HEXISTS", meta, ARGV[i]) == 1 then
      redis.call("HINCRBY", meta, ARGV[i], d)
    end
  else
    restored = restored + redis.call("HSETNX", buyers, ARGV[i], ARGV[i + 1])
  end
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
