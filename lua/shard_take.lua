-- shard_take.lua: the first half of moving units between two shards of a sharded sale (the
-- backend's rebalance). Shards live in different hash slots, so no script can touch both: this
-- one takes units from the donor and writes down the move in the donor's journal, in one
-- atomic step; shard_give.lua adds them to the receiver (once per move id); then the journal
-- entry is deleted. A crash between the two halves leaves the entry, and the next rebalance
-- (or reconcile) finishes the move: units are never created, and never lost for good.
--
-- KEYS[1]  seckill:{sale:<id>:<i>}:meta    the donor shard's hash (stock, ...)
-- KEYS[2]  seckill:{sale:<id>:<i>}:moves   the donor's journal: move id -> "<receiver>|<n>"
-- ARGV[1]  move id (unique per move). On a sale with variants the id is
--          "<unique>/<variant>" (contract.VariantMoveID): the units are taken from that
--          variant's field "v:<variant>" and from "stock" together; a plain id takes nothing
--          from a shard with variants (the units could not be put back into their variant).
-- ARGV[2]  units wanted (integer > 0)
-- ARGV[3]  receiver shard id "<id>:<j>"
--
-- Returns  the units taken: min(wanted, stock), 0 when the donor has none (then nothing is
--          recorded) or is not in Redis (or has not that variant, or has variants and the id
--          names none); a move id already journaled returns its recorded amount and changes
--          nothing (a retried call).
local meta, moves = KEYS[1], KEYS[2]
local id, want, receiver = ARGV[1], tonumber(ARGV[2]), ARGV[3]
if want == nil or want <= 0 or receiver == "" then
  return redis.error_reply("ERR shard_take: bad arguments")
end
local prior = redis.call("HGET", moves, id)
if prior then
  return tonumber(string.match(prior, "|(%d+)$"))
end
local variant = string.match(id, "/([%w_-]+)$")
local m = redis.call("HMGET", meta, "stock", "variants", "v:" .. (variant or ""))
local stock = tonumber(m[1])
if stock == nil or stock <= 0 then
  return 0
end
local n = math.min(want, stock)
if variant ~= nil then
  local vstock = tonumber(m[3])
  if vstock == nil or vstock <= 0 then
    return 0
  end
  n = math.min(n, vstock)
  redis.call("HINCRBY", meta, "v:" .. variant, -n)
elseif (tonumber(m[2]) or 0) > 0 then
  return 0
end
redis.call("HINCRBY", meta, "stock", -n)
redis.call("HSET", moves, id, receiver .. "|" .. n)
local expires = redis.call("PEXPIRETIME", meta)
if expires > 0 then
  redis.call("PEXPIREAT", moves, expires)
end
return n
