-- throttle.lua: exact sliding windows for one request's zones, with ban escalation.
--
-- Each zone's window is a sliding log of the Redis time (µs) of every ADMITTED request. A
-- request is admitted when fewer than `limit` entries lie in (now - window, now]; so over ANY
-- interval of length `window` at most `limit` requests are admitted, whichever instance served
-- them (exact, no boundary burst). Refused requests are never recorded, so a client hammering
-- while over the limit does not push its own retry time further away, and memory per key is
-- bounded by `limit` entries.
--
-- The log has two forms, chosen by the limit:
--   limit <= 128: a compact log, one string of packed 8-byte timestamps in admission order
--                 (oldest first). One GET, and one SET on admission: a sorted set would take
--                 ZREMRANGEBYSCORE, ZCARD, ZADD, PEXPIRE and ZRANGE, and ~10x the memory.
--   limit >  128: a sorted set, member "<t_us>-<n>" scored t_us (trimming a long log is cheap
--                 there, and a large string would be copied on every admission).
-- A key written in the other form (the zone's limit was changed across 128) is converted on
-- its next use, keeping its live entries, so a reload never forgets admissions.
--
-- A ban rides in the compact log itself: a banned key's log starts with one entry holding
-- -banned_until (a negative timestamp, so the trim of what left the window drops it once it is
-- read past), and the log is kept at least as long as the ban. The one GET an admission needs
-- anyway then also says whether the key is banned: a zone with bans costs GET and SET per
-- admission, not HGET, GET and SET. The ban hash still gets banned_until (the waiting room
-- reads it, docs/room.md); a sorted-set log reads it there.
--
-- The script decides for one zone, or for several zones of one request at once when their
-- keys may be used together (a standalone Redis, or keys of one Cluster slot): zone i uses
-- KEYS[2i-1], KEYS[2i] and ARGV[5i-4..5i], and its answer is items 5i-4..5i of the reply.
-- Each zone decides on its own, as separate calls would: the caller gives back the admissions
-- of zones another zone overruled (throttle_refund.lua).
--
-- KEYS[2i-1]  seckill:rl:{<zone>:<key>}       the log (string or sorted set, see above)
-- KEYS[2i]    seckill:rl:{<zone>:<key>}:ban   hash: strikes, episode_until, banned_until (µs);
--                                             only created once the key has been refused. A
--                                             compact log also carries its key's ban (below),
--                                             so an admission there reads no ban hash
-- ARGV[5i-4]  limit (integer >= 1)
-- ARGV[5i-3]  window in microseconds
-- ARGV[5i-2]  strikes before a ban (0 disables bans)
-- ARGV[5i-1]  strike memory in milliseconds: strikes are forgotten this long after the first
-- ARGV[5i]    ban duration in microseconds
--
-- Returns  per zone {status, remaining, reset_us, retry_us, member}, flattened in zone order
--          status 0 admitted, 1 limited, 2 banned;
--          remaining: admissions left in the window after this request;
--          reset_us: time until the oldest admission leaves the window (a slot frees);
--          retry_us: 0 when admitted, else how long the client should wait;
--          member: what identifies the admission for a refund ("<t_us>" in a compact log,
--          "<t_us>-<n>" in a sorted set), "" when not admitted.
--
-- One over-limit episode (refusals until a slot frees) counts as ONE strike, however many
-- requests it refused, so a burst of retries is not a ban by itself: repeated episodes are.
-- Time comes from Redis TIME, never from a gateway's clock. Every key has a TTL.
--
-- lua/throttled.go runs this text as the first part of a decision script (the zones of a
-- purchase or a token issue in the decision's own call): it replaces the lines marked
-- "-- (alone)" with its own, which share one TIME with the decision and find the zones'
-- KEYS and ARGV after the decision's, and the final return with the step to the decision.
local function int(x) return string.format("%d", x) end

local COMPACT_MAX = 128
local ENTRY = 8 -- bytes per packed timestamp (a double holds µs since 1970 exactly)

local t = redis.call("TIME") -- (alone)
local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) -- (alone)
local ko, ao, zones, last = 0, 0, #KEYS / 2, #ARGV -- (alone) zone i: KEYS[ko+2i-1..], ARGV[ao+5i-4..]

if zones < 1 or zones ~= math.floor(zones) or last ~= ao + zones * 5 then
  return redis.error_reply("ERR throttle: bad arguments")
end
for z = 1, zones do
  local a = ao + (z - 1) * 5
  local limit, window, strikes = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  if limit == nil or limit < 1 or window == nil or window < 1 or strikes == nil
    or tonumber(ARGV[a + 4]) == nil or tonumber(ARGV[a + 5]) == nil then
    return redis.error_reply("ERR throttle: bad arguments")
  end
end

-- A refusal: one strike per over-limit episode, a ban after enough of them. Returns the
-- zone's answer (five values).
local function refuse(ban, retry, strikes_needed, strike_ms, ban_us)
  if retry < 1 then retry = 1 end
  if strikes_needed > 0 then
    local h = redis.call("HMGET", ban, "strikes", "episode_until")
    local episode_until = tonumber(h[2]) or 0
    if episode_until <= now then
      local strikes = redis.call("HINCRBY", ban, "strikes", 1)
      redis.call("HSET", ban, "episode_until", int(now + retry))
      if strikes == 1 then
        redis.call("PEXPIRE", ban, int(strike_ms))
      end
      if strikes >= strikes_needed then
        redis.call("HSET", ban, "banned_until", int(now + ban_us), "strikes", 0)
        redis.call("PEXPIRE", ban, int(math.floor(ban_us / 1000) + 1))
        return 2, 0, ban_us, ban_us, ""
      end
    end
  end
  return 1, 0, retry, retry, ""
end

-- The compact log of key as a string, trimmed of what left the window (and of a ban marker),
-- and the ban it carried (0 for none). A sorted set from an earlier limit is converted and
-- stored first; its ban, kept in the ban hash only, is read there.
local function compact_log(key, ban, cut, ttl_ms)
  local s = redis.pcall("GET", key)
  if type(s) == "table" and s.err then
    local m = redis.call("ZRANGEBYSCORE", key, "(" .. int(cut), "+inf", "WITHSCORES")
    local parts = {}
    for i = 2, #m, 2 do parts[#parts + 1] = struct.pack("<d", tonumber(m[i])) end
    s = table.concat(parts)
    redis.call("DEL", key)
    if #s > 0 then redis.call("SET", key, s, "PX", ttl_ms) end
    return s, tonumber(redis.call("HGET", ban, "banned_until")) or 0
  end
  if not s then return "", 0 end
  local n, i, banned = #s / ENTRY, 0, 0
  if n > 0 then
    local first = struct.unpack("<d", s, 1)
    if first < 0 then banned = -first end
  end
  while i < n and struct.unpack("<d", s, i * ENTRY + 1) <= cut do i = i + 1 end
  if i > 0 then s = string.sub(s, i * ENTRY + 1) end
  return s, banned
end

local function decide_compact(key, ban, limit, window, ttl_ms, strikes_needed, strike_ms, ban_us)
  local s, banned = compact_log(key, ban, now - window, ttl_ms)
  if strikes_needed > 0 and banned > now then
    return 2, 0, banned - now, banned - now, ""
  end
  local n = #s / ENTRY
  if n < limit then
    local oldest = now
    if n > 0 then oldest = struct.unpack("<d", s, 1) end
    redis.call("SET", key, s .. struct.pack("<d", now), "PX", ttl_ms)
    return 0, limit - n - 1, oldest + window - now, 0, int(now)
  end
  local status, remaining, reset, retry, member =
    refuse(ban, struct.unpack("<d", s, 1) + window - now, strikes_needed, strike_ms, ban_us)
  if status == 2 then
    -- The ban goes into the log, which lives at least as long.
    local keep = math.floor(ban_us / 1000) + 1
    if keep < ttl_ms then keep = ttl_ms end
    redis.call("SET", key, struct.pack("<d", -(now + ban_us)) .. s, "PX", keep)
  end
  return status, remaining, reset, retry, member
end

local function decide_sorted(key, ban, limit, window, ttl_ms, strikes_needed, strike_ms, ban_us)
  if strikes_needed > 0 then
    local banned_until = tonumber(redis.call("HGET", ban, "banned_until")) or 0
    if banned_until > now then
      return 2, 0, banned_until - now, banned_until - now, ""
    end
  end
  -- Members scored at or before now - window have left the window.
  local trimmed = redis.pcall("ZREMRANGEBYSCORE", key, "-inf", int(now - window))
  if type(trimmed) == "table" and trimmed.err then
    -- A compact log from an earlier limit: its live entries become members (a ban marker,
    -- negative, is not one; the ban hash has the ban too).
    local s = redis.call("GET", key)
    redis.call("DEL", key)
    for i = 1, #s, ENTRY do
      local ts = struct.unpack("<d", s, i)
      if ts > now - window then redis.call("ZADD", key, int(ts), int(ts) .. "-c" .. i) end
    end
    redis.call("PEXPIRE", key, ttl_ms)
  end
  local n = redis.call("ZCARD", key)
  if n < limit then
    -- Unique even for two admissions in the same microsecond: between them nothing can leave
    -- the window (same cut-off), so n grew.
    local member = int(now) .. "-" .. n
    redis.call("ZADD", key, int(now), member)
    redis.call("PEXPIRE", key, ttl_ms)
    local oldest = now
    if n > 0 then
      oldest = tonumber(redis.call("ZRANGE", key, 0, 0, "WITHSCORES")[2])
    end
    return 0, limit - n - 1, oldest + window - now, 0, member
  end
  local oldest = tonumber(redis.call("ZRANGE", key, 0, 0, "WITHSCORES")[2])
  return refuse(ban, oldest + window - now, strikes_needed, strike_ms, ban_us)
end

local out = {}
for z = 1, zones do
  local a = ao + (z - 1) * 5
  local key, ban = KEYS[ko + 2 * z - 1], KEYS[ko + 2 * z]
  local limit, window = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local ttl_ms = math.floor(window / 1000) + 1
  local decide = decide_sorted
  if limit <= COMPACT_MAX then decide = decide_compact end
  local o = (z - 1) * 5
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] =
    decide(key, ban, limit, window, ttl_ms, tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]))
end
return out -- (alone)
