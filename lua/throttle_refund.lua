-- throttle_refund.lua: give back one admission of throttle.lua that another zone of the same
-- request overruled, so the refused request is not counted against this zone's limit.
--
-- KEYS[1]  seckill:rl:{<zone>:<key>}   the zone's log: a compact string of packed timestamps
--                                      or a sorted set (see throttle.lua)
-- ARGV[1]  the admission's member as throttle.lua returned it ("<t_us>" compact,
--          "<t_us>-<n>" sorted set)
--
-- Returns  1 when the admission was removed, 0 when it is no longer there (it left the window,
--          the key expired, or the log changed form since: then the admission stays counted,
--          which can only refuse more, never admit more). The key keeps its TTL.
local kind = redis.call("TYPE", KEYS[1])["ok"]
if kind == "zset" then
  return redis.call("ZREM", KEYS[1], ARGV[1])
end
local t = tonumber(ARGV[1])
if kind ~= "string" or t == nil then
  return 0
end
local s = redis.call("GET", KEYS[1])
for i = #s - 7, 1, -8 do -- newest first: the admission being refunded is recent
  if struct.unpack("<d", s, i) == t then
    redis.call("SET", KEYS[1], string.sub(s, 1, i - 1) .. string.sub(s, i + 8), "KEEPTTL")
    return 1
  end
end
return 0
