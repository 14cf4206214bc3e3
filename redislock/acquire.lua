-- acquire.lua: take a redislock lock, or re-enter it, in one atomic step.
--
-- The lock is a hash with the fields "owner" (who holds it), "token" (the fencing token of
-- this holding) and one field "h:<handle>" per acquisition that has not been released yet
-- (the re-entry count is the number of those fields). Writing the handle field, not
-- incrementing a counter, makes a retried EVALSHA harmless.
--
-- KEYS[1]  seckill:lock:{<name>}         the lock hash
-- KEYS[2]  seckill:lock:{<name>}:fence   the fencing counter (string integer)
-- ARGV[1]  owner id: a holder with the same owner re-enters
-- ARGV[2]  handle id of this acquisition (unique per Obtain call)
-- ARGV[3]  lease in ms (> 0)
-- ARGV[4]  fence counter retention in ms (> 0)
--
-- Returns  {1, token, pttl} when obtained (fresh or re-entered): token is the fencing token of
--          the holding (re-entries get the holder's token), pttl the lease left in ms.
--          {0, 0, pttl} when another owner holds it; pttl is its lease left in ms.
--
-- A fresh token is max(last token + 1, Redis TIME in microseconds). The clock floor keeps
-- tokens increasing even when the counter key is lost (expiry, or a failover that dropped the
-- latest writes): a token issued after the loss is still larger than every earlier one. That
-- is why the counter may carry a TTL.
if redis.replicate_commands then redis.replicate_commands() end
local lock, fence = KEYS[1], KEYS[2]
local owner, handle = ARGV[1], "h:" .. ARGV[2]
local ttl = tonumber(ARGV[3])
local keep = tonumber(ARGV[4])
if ttl == nil or ttl <= 0 or keep == nil or keep <= 0 then
  return redis.error_reply("ERR lock_acquire: bad arguments")
end

local holder = redis.call("HGET", lock, "owner")
if not holder then
  local now = redis.call("TIME")
  local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local token = tonumber(redis.call("GET", fence) or "0") + 1
  if token < floor then token = floor end
  -- %d, not tostring: tostring would print a 16-digit number in exponent form.
  local s = string.format("%d", token)
  redis.call("SET", fence, s, "PX", keep)
  redis.call("DEL", lock)
  redis.call("HSET", lock, "owner", owner, "token", s, handle, 1)
  redis.call("PEXPIRE", lock, ttl)
  return {1, token, ttl}
end

if holder == owner then
  redis.call("HSET", lock, handle, 1)
  -- Re-entry never shortens the lease the outer holder counts on.
  local left = redis.call("PTTL", lock)
  if left < ttl then
    redis.call("PEXPIRE", lock, ttl)
    left = ttl
  end
  return {1, tonumber(redis.call("HGET", lock, "token")), left}
end

return {0, 0, redis.call("PTTL", lock)}
