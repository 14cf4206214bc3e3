-- reconcile.lua: apply the backend's reconciliation to a sale (or one shard) in Redis,
-- atomically.
--
-- The backend computes, from a Postgres snapshot taken before a Redis snapshot, by how much
-- the Redis stock is off and which buyers Redis forgot. It applies a delta (not an absolute
-- value) so that purchases the gate accepted since the snapshot are kept.
--
-- KEYS[1]  seckill:{sale:<id>}:meta    hash: stock, starts_ms, ends_ms, state
-- KEYS[2]  seckill:{sale:<id>}:buyers  hash: user id -> order id
-- KEYS[3]  seckill:{sale:<id>}:held    optional hash: user id -> units held, "#<user>" ->
--                                       purchases made (a sale with a limit above 1). Only
--                                       needed when "h:" or "#" pairs are given.
-- ARGV[1]  sale id (for the restock broadcast)
-- ARGV[2]  stock delta (integer, may be negative or 0)
-- ARGV[3..] pairs. Four kinds, told apart by their first characters (user ids never contain
--          ':' or '#', contract.ValidID, so none can be taken for another):
--          "<user>", order id     restore a forgotten buyer (HSETNX: never overwrites);
--          "v:<variant>", delta   added to that variant's field of the meta hash when the
--                                 field exists (the backend computes the stock delta and the
--                                 variants' from the same snapshots);
--          "h:<user>", units      added to the user's held units (units >= 0: Redis lost
--                                 them; a delta, so a purchase or a compensation that ran
--                                 since the snapshot is kept);
--          "#<user>", seq         the user's purchase counter raised to at least seq (never
--                                 lowered), so the gate's next purchase number is above every
--                                 order the user has in Postgres. An absent counter reads 1
--                                 when the user has a held field (the gate's convention), else
--                                 0; raising it creates the held field (0 units) too.
--          A held hash this script creates gets the meta hash's expiry, as the gate does, and
--          so does a buyers hash it restored a buyer to when the hash has none.
--
-- Returns  {stock, restored, raised}: the Redis stock after the delta (-1 when the sale is not
--          in Redis: then nothing is changed), how many buyers were restored and how many
--          "h:"/"#" pairs changed the held hash. Publishes "restock:<sale>" on seckill:events
--          when the stock is positive afterwards.
local meta, buyers, held = KEYS[1], KEYS[2], KEYS[3]
local delta = tonumber(ARGV[2])
if delta == nil then
  return redis.error_reply("ERR reconcile: bad delta")
end
if redis.call("EXISTS", meta) == 0 then
  return {-1, 0, 0}
end
-- Every argument is checked before the first write: an error leaves Redis as it was.
for i = 3, #ARGV, 2 do
  local kind = string.sub(ARGV[i], 1, 2)
  local n = tonumber(ARGV[i + 1])
  if kind == "v:" and n == nil then
    return redis.error_reply("ERR reconcile: bad variant delta")
  end
  if kind == "h:" or string.sub(kind, 1, 1) == "#" then
    if held == nil then
      return redis.error_reply("ERR reconcile: held pairs without the held key")
    end
    if n == nil or n < 0 or n ~= math.floor(n) then
      return redis.error_reply("ERR reconcile: bad held units or seq")
    end
  end
end
local restored, raised = 0, 0
local heldNew = held ~= nil and redis.call("EXISTS", held) == 0
for i = 3, #ARGV, 2 do
  local f = ARGV[i]
  local kind = string.sub(f, 1, 2)
  if kind == "v:" then
    local d = tonumber(ARGV[i + 1])
    if d ~= 0 and redis.call("HEXISTS", meta, f) == 1 then
      redis.call("HINCRBY", meta, f, d)
    end
  elseif kind == "h:" then
    local n = tonumber(ARGV[i + 1])
    if n > 0 then
      redis.call("HINCRBY", held, string.sub(f, 3), n)
      raised = raised + 1
    end
  elseif string.sub(f, 1, 1) == "#" then
    local user = string.sub(f, 2)
    local want = tonumber(ARGV[i + 1])
    local has = redis.call("HEXISTS", held, user) == 1
    local cur = tonumber(redis.call("HGET", held, f))
    if cur == nil then
      cur = has and 1 or 0
    end
    if cur < want then
      if not has then
        redis.call("HSET", held, user, 0)
      end
      redis.call("HSET", held, f, want)
      raised = raised + 1
    end
  else
    restored = restored + redis.call("HSETNX", buyers, f, ARGV[i + 1])
  end
end
-- Hashes this call made (or found without an expiry) expire with the sale: the gate gives the
-- buyers hash its expiry only with the sale's first purchase.
if (heldNew and raised > 0) or restored > 0 then
  local expires = redis.call("PEXPIRETIME", meta)
  if expires > 0 then
    if heldNew and raised > 0 then
      redis.call("PEXPIREAT", held, expires)
    end
    if restored > 0 then
      redis.call("PEXPIREAT", buyers, expires, "NX")
    end
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
return {stock, restored, raised}
