-- refresh.lua: renew the lease of a redislock lock if this acquisition still holds it.
--
-- KEYS[1]  seckill:lock:{<name>}   the lock hash
-- ARGV[1]  owner id
-- ARGV[2]  fencing token of the holding
-- ARGV[3]  handle id of the acquisition
-- ARGV[4]  new lease in ms (> 0)
--
-- Returns  1 when the lease was set to ARGV[4]; 0 when this acquisition no longer holds the
--          lock (expired, taken by another, or already released).
local lock = KEYS[1]
local ttl = tonumber(ARGV[4])
if ttl == nil or ttl <= 0 then
  return redis.error_reply("ERR lock_refresh: bad lease")
end
local cur = redis.call("HMGET", lock, "owner", "token", "h:" .. ARGV[3])
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] or not cur[3] then
  return 0
end
redis.call("PEXPIRE", lock, ttl)
return 1
