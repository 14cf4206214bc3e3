-- throttle.lua: one zone's exact sliding window for one client key, with ban escalation.
--
-- The window is a sliding log: one sorted-set member per ADMITTED request, scored by the
-- Redis time of its admission in microseconds. A request is admitted when fewer than `limit`
-- members lie in (now - window, now]; so over ANY interval of length `window` at most `limit`
-- requests are admitted, whichever instance served them (exact, no boundary burst). Refused
-- requests are never recorded, so a client hammering while over the limit does not push its
-- own retry time further away, and memory per key is bounded by `limit` members.
--
-- KEYS[1]  seckill:rl:{<zone>:<key>}       sorted set: member "<t_us>-<n>", score t_us
-- KEYS[2]  seckill:rl:{<zone>:<key>}:ban   hash: strikes, episode_until, banned_until (µs);
--                                          only created once the key has been refused
-- ARGV[1]  limit (integer >= 1)
-- ARGV[2]  window in microseconds
-- ARGV[3]  strikes before a ban (0 disables bans)
-- ARGV[4]  strike memory in milliseconds: strikes are forgotten this long after the first
-- ARGV[5]  ban duration in microseconds
--
-- Returns  {status, remaining, reset_us, retry_us, member}
--          status 0 admitted, 1 limited, 2 banned;
--          remaining: admissions left in the window after this request;
--          reset_us: time until the oldest admission leaves the window (a slot frees);
--          retry_us: 0 when admitted, else how long the client should wait;
--          member: the sorted-set member recorded for an admitted request (the caller ZREMs
--          it when another zone of the same request refused), "" otherwise.
--
-- One over-limit episode (refusals until a slot frees) counts as ONE strike, however many
-- requests it refused, so a burst of retries is not a ban by itself: repeated episodes are.
-- Time comes from Redis TIME, never from a gateway's clock. Every key has a TTL.
local function int(x) return string.format("%d", x) end

local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local strikes_needed = tonumber(ARGV[3])
local strike_ms = tonumber(ARGV[4])
local ban_us = tonumber(ARGV[5])
if limit == nil or limit < 1 or window == nil or window < 1 or strikes_needed == nil then
  return redis.error_reply("ERR throttle: bad arguments")
end

if strikes_needed > 0 then
  local banned_until = tonumber(redis.call("HGET", KEYS[2], "banned_until")) or 0
  if banned_until > now then
    return {2, 0, banned_until - now, banned_until - now, ""}
  end
end

-- Members scored at or before now - window have left the window.
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", int(now - window))
local n = redis.call("ZCARD", KEYS[1])
local ttl_ms = int(math.floor(window / 1000) + 1)

if n < limit then
  -- Unique even for two admissions in the same microsecond: between them nothing can leave
  -- the window (same cut-off), so n grew.
  local member = int(now) .. "-" .. n
  redis.call("ZADD", KEYS[1], int(now), member)
  redis.call("PEXPIRE", KEYS[1], ttl_ms)
  local oldest = now
  if n > 0 then
    oldest = tonumber(redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")[2])
  end
  return {0, limit - n - 1, oldest + window - now, 0, member}
end

local oldest = tonumber(redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")[2])
local retry = oldest + window - now
if retry < 1 then retry = 1 end

if strikes_needed > 0 then
  local h = redis.call("HMGET", KEYS[2], "strikes", "episode_until")
  local episode_until = tonumber(h[2]) or 0
  if episode_until <= now then
    local strikes = redis.call("HINCRBY", KEYS[2], "strikes", 1)
    redis.call("HSET", KEYS[2], "episode_until", int(now + retry))
    if strikes == 1 then
      redis.call("PEXPIRE", KEYS[2], int(strike_ms))
    end
    if strikes >= strikes_needed then
      redis.call("HSET", KEYS[2], "banned_until", int(now + ban_us), "strikes", 0)
      redis.call("PEXPIRE", KEYS[2], int(math.floor(ban_us / 1000) + 1))
      return {2, 0, ban_us, ban_us, ""}
    end
  end
end
return {1, 0, retry, retry, ""}
