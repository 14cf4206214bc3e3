-- preheat.lua: load (or refresh) a sale's window and stock into Redis.
--
-- KEYS[1]  seckill:{sale:<id>}:meta     hash: stock, starts_ms, ends_ms, state
-- ARGV[1]  sale id (for the restock broadcast)
-- ARGV[2]  stock to set (integer >= 0)
-- ARGV[3]  starts_ms (unix ms)
-- ARGV[4]  ends_ms (unix ms)
-- ARGV[5]  mode: "init"  sets stock only when the sale is not in Redis yet (idempotent
--                        preheat: a second call never resets a sale that is selling);
--                "reset" sets stock unconditionally (the backend's reconcile, under its lock)
-- ARGV[6]  retention_ms: the meta key expires this long after ends_ms
-- ARGV[7]  optional shard count k: when > 1 the hash is written as a sharded sale's base meta
--          (field "shards" = k; its stock ARGV[2] is then 0 and the units live in the shards'
--          own meta hashes, each preheated by its own call). Only written when the hash is
--          created: the shard count of a sale never changes. Pass "" (or 0) for none.
-- ARGV[8]  optional namespace of the deployment (the backend's SECKILL_NAMESPACE): written to
--          the field "namespace" on every call, so a gateway's relay takes the outbox only
--          when it serves the same namespace. Absent or "": the field is removed (the
--          unnamed deployment).
--
-- Returns  {created, stock}: created is 1 when the meta hash was written for the first time
--          (or reset), 0 when an existing sale only had its window refreshed; stock is the
--          stock now in Redis. Publishes "restock:<sale>" on seckill:events when stock > 0,
--          so gateways clear a local sold-out flag.
local meta = KEYS[1]
local stock = tonumber(ARGV[2])
local starts = tonumber(ARGV[3])
local ends = tonumber(ARGV[4])
local retention = tonumber(ARGV[6])
if stock == nil or stock < 0 or starts == nil or ends == nil or ends <= starts or retention == nil then
  return redis.error_reply("ERR preheat: bad arguments")
end

local created = 0
if ARGV[5] == "reset" or redis.call("EXISTS", meta) == 0 then
  redis.call("HSET", meta, "stock", stock, "starts_ms", starts, "ends_ms", ends, "state", "open")
  local k = tonumber(ARGV[7])
  if k ~= nil and k > 1 then
    redis.call("HSET", meta, "shards", k)
  end
  created = 1
else
  redis.call("HSET", meta, "starts_ms", starts, "ends_ms", ends)
end
local ns = ARGV[8]
if ns ~= nil and ns ~= "" then
  redis.call("HSET", meta, "namespace", ns)
else
  redis.call("HDEL", meta, "namespace")
end
local current = tonumber(redis.call("HGET", meta, "stock"))
redis.call("PEXPIREAT", meta, ends + retention)
if current > 0 then
  redis.call("PUBLISH", "seckill:events", "restock:" .. ARGV[1])
end
return {created, current}
