-- release.lua: release one acquisition of a redislock lock (compare-and-delete).
--
-- Never deletes a lock held by another owner, nor a later holding of the same owner (the
-- token differs): that is what a plain DEL after an expired lease would do.
--
-- KEYS[1]  seckill:lock:{<name>}            the lock hash
-- ARGV[1]  owner id
-- ARGV[2]  fencing token of the holding
-- ARGV[3]  handle id of the acquisition being released
-- ARGV[4]  seckill:lock:{<name>}:released   pub/sub channel told when the lock is free
--
-- Returns  0 when the lock is now free (deleted; the token is published on ARGV[4] so waiters
--          wake at once); n > 0 when the owner still holds it through n other acquisitions
--          (re-entry); -1 when this holding is not the lock's (expired, or taken by another).
local lock = KEYS[1]
local cur = redis.call("HMGET", lock, "owner", "token")
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then
  return -1
end
redis.call("HDEL", lock, "h:" .. ARGV[3])
local left = redis.call("HLEN", lock) - 2
if left > 0 then
  return left
end
redis.call("DEL", lock)
redis.call("PUBLISH", ARGV[4], ARGV[2])
return 0
