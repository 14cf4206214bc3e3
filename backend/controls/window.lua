-- window.lua: move a sale's (or one shard's) window in its meta hash, only when the sale is in
-- Redis, and make its keys expire retention after the new end (as preheat does).
--
-- KEYS[1]  seckill:{sale:<id>}:meta     hash: stock, starts_ms, ends_ms, state
-- KEYS[2]  seckill:{sale:<id>}:buyers   hash: user id -> order id (its expiry follows the meta's)
-- KEYS[3]  optional seckill:{sale:<id>}:held  hash: users' units on a sale with a limit above 1
--                                       (its expiry follows the meta's too: a moved end must not
--                                       forget what users hold while the sale still sells)
-- ARGV[1]  starts_ms (unix ms)
-- ARGV[2]  ends_ms (unix ms, > starts_ms)
-- ARGV[3]  retention_ms
--
-- Returns  1 when the window was written, 0 when the sale is not in Redis.
local starts, ends, retention = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if starts == nil or ends == nil or retention == nil or ends <= starts then
  return redis.error_reply("ERR window: bad arguments")
end
if redis.call("EXISTS", KEYS[1]) == 0 then
  return 0
end
redis.call("HSET", KEYS[1], "starts_ms", starts, "ends_ms", ends)
redis.call("PEXPIREAT", KEYS[1], ends + retention)
for i = 2, #KEYS do
  if redis.call("EXISTS", KEYS[i]) == 1 then
    redis.call("PEXPIREAT", KEYS[i], ends + retention)
  end
end
return 1
