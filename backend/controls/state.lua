-- state.lua: set a sale's (or one shard's) operator state in its meta hash, only when the
-- sale is in Redis (a hash created here would hold no stock, and preheat would then take the
-- sale for loaded and never load it).
--
-- KEYS[1]  seckill:{sale:<id>}:meta   hash: stock, starts_ms, ends_ms, state
-- ARGV[1]  the state to set: "paused" or "open"
--
-- Returns  the state before the call ("" when the field was unset), or false when the meta
--          hash does not exist (nothing was written).
if redis.call("EXISTS", KEYS[1]) == 0 then
  return false
end
local before = redis.call("HGET", KEYS[1], "state") or ""
redis.call("HSET", KEYS[1], "state", ARGV[1])
return before
