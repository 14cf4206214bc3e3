-- shard_give.lua: the second half of moving units between two shards (see shard_take.lua):
-- add the units of one journaled move to the receiver shard, exactly once per move id.
--
-- KEYS[1]  seckill:{sale:<id>:<j>}:meta      the receiver shard's hash (stock, state, ...)
-- KEYS[2]  seckill:{sale:<id>:<j>}:moved_in  set of move ids already applied here
-- ARGV[1]  receiver shard id "<id>:<j>" (for the restock broadcast)
-- ARGV[2]  move id; "<unique>/<variant>" (contract.VariantMoveID) adds the units to that
--          variant's field "v:<variant>" as well as to "stock" (every shard of a sale with
--          variants is preheated with every variant, with 0 units where it has none)
-- ARGV[3]  units (integer > 0)
--
-- Returns  {applied, stock}: applied is 1 when this call added the units, 0 when the move was
--          applied before (nothing changed); stock is the receiver's stock after the call, -1
--          when the shard is no longer in Redis (the sale ended and expired: the units go with
--          it). When units are added, a "sold_out" state is set back to "open" and
--          "restock:<id>:<j>" is published on seckill:events so gateways clear the shard's
--          local sold-out flag.
local meta, applied = KEYS[1], KEYS[2]
local shard, id, n = ARGV[1], ARGV[2], tonumber(ARGV[3])
if n == nil or n <= 0 then
  return redis.error_reply("ERR shard_give: bad arguments")
end
if redis.call("EXISTS", meta) == 0 then
  return {1, -1}
end
if redis.call("SADD", applied, id) == 0 then
  return {0, tonumber(redis.call("HGET", meta, "stock")) or 0}
end
local expires = redis.call("PEXPIRETIME", meta)
if expires > 0 then
  redis.call("PEXPIREAT", applied, expires)
end
local stock = redis.call("HINCRBY", meta, "stock", n)
local variant = string.match(id, "/([%w_-]+)$")
if variant ~= nil then
  redis.call("HINCRBY", meta, "v:" .. variant, n)
end
if redis.call("HGET", meta, "state") == "sold_out" then
  redis.call("HSET", meta, "state", "open")
end
redis.call("PUBLISH", "seckill:events", "restock:" .. shard)
return {1, stock}
