-- room_setup.lua: give a sale its waiting room (the backend runs it at preheat, under the
-- sale's lock, BEFORE preheat.lua: the meta hash is written last and says "room" = 1, so a room
-- that cannot be set up leaves no sale on sale without it). The seed and the entry key are
-- drawn once: a second preheat keeps them, so the commitment published first stays the one
-- the order is checked against.
--
-- KEYS[1]  seckill:{sale:<id>}:meta     hash written by preheat.lua; may not exist yet when
--                                       ARGV[11] is given (the first preheat)
-- KEYS[2]  seckill:{sale:<id>}:room     hash: the room's settings, secrets and counters
-- ARGV[1]  seed (64 hex digits: 32 random bytes), secret until the sale ends
-- ARGV[2]  entry key (64 hex digits), secret for ever: it maps users to entry ids
-- ARGV[3]  rate: admissions per second (> 0)
-- ARGV[4]  oversubscribe: live admissions per remaining unit (>= 1, decimal)
-- ARGV[5]  session_ms: how long an admission lives unused (>= 1000)
-- ARGV[6]  prequeue_ms: how long before the start entries are taken (>= 0)
-- ARGV[7]  difficulty_min (bits, 0..40)
-- ARGV[8]  difficulty_max (bits, difficulty_min..40)
--          ARGV[3..8] may each be "": the sale leaves that setting to the gateways' Caddyfile
--          default (the field is removed)
-- ARGV[9]  commitment: hex SHA-256 of the seed bytes (Lua in Redis has no SHA-256)
-- ARGV[10] optional max_waiters: the most places the room holds (integer >= 1); absent or
--          "": the gateways' default (the field is removed). The field "units" keeps the
--          stock the room was first set up with, which the built-in default scales with.
-- ARGV[11] optional until_ms: the room expires then (the sale's end plus retention, what
--          preheat.lua gives the meta key). Absent or "": the meta key must exist and its
--          expiry is copied.
-- ARGV[12] optional units: the sale's stock, for "units" when the meta hash is not written yet
--          (the first preheat); absent or "": the meta hash's stock
-- ARGV[13] optional lanes: the room's lanes as the room hash's field "lanes" keeps them
--          (docs/room.md, "Lanes"): "<mode>,<name>:<kind>:<share>:<claim>,..." (mode "share"
--          or "priority"). Absent or "": no lanes (the field is removed). The backend checks
--          the lanes (admin.RoomSpec.Validate); this script checks only the shape
--
-- Returns  {created, commitment}: created is 1 when the seed was drawn by this call, 0 when
--          the room existed (its settings are refreshed, its seed kept); commitment is the hex
--          SHA-256 of the seed bytes, as the backend computed and stored it
--          (field "commitment", written with the seed). Error when the meta hash is missing
--          and ARGV[11] is not given, or when a setting is out of bounds (then nothing is
--          written: every check comes first).
local meta, room = KEYS[1], KEYS[2]
local seed, ekey = ARGV[1], ARGV[2]
local until_arg = ARGV[11] or ""
if until_arg == "" and redis.call("EXISTS", meta) == 0 then
  return redis.error_reply("ERR room_setup: the sale is not preheated")
end
if until_arg ~= "" and (not until_arg:match("^%d+$")) then
  return redis.error_reply("ERR room_setup: bad until_ms")
end
if #seed ~= 64 or #ekey ~= 64 or not seed:match("^[0-9a-f]+$") or not ekey:match("^[0-9a-f]+$") then
  return redis.error_reply("ERR room_setup: bad seed or entry key")
end
local fields = {"rate", "oversubscribe", "session_ms", "prequeue_ms", "difficulty_min", "difficulty_max"}
local lows = {0.001, 1, 1000, 0, 0, 0}
local v = {}
for i = 1, 6 do
  local raw = ARGV[i + 2]
  if raw ~= "" then
    v[i] = tonumber(raw)
    if v[i] == nil or v[i] < lows[i] or (i >= 5 and v[i] > 40) then
      return redis.error_reply("ERR room_setup: bad " .. fields[i])
    end
  end
end
if v[5] ~= nil and v[6] ~= nil and v[6] < v[5] then
  return redis.error_reply("ERR room_setup: difficulty_max below difficulty_min")
end
if #ARGV[9] ~= 64 then
  return redis.error_reply("ERR room_setup: bad commitment")
end
local maxw = ARGV[10] or ""
if maxw ~= "" and (not maxw:match("^[1-9][0-9]*$") or #maxw > 12) then
  return redis.error_reply("ERR room_setup: bad max_waiters")
end
local lanes = ARGV[13] or ""
if lanes ~= "" and not lanes:match("^[a-z]+,[a-z0-9_:,.%-A-Z]+$") then
  return redis.error_reply("ERR room_setup: bad lanes")
end
local created = redis.call("HSETNX", room, "seed", seed)
if created == 1 then
  redis.call("HSET", room, "ekey", ekey, "commitment", ARGV[9])
end
for i = 1, 6 do
  if v[i] == nil then
    redis.call("HDEL", room, fields[i])
  else
    redis.call("HSET", room, fields[i], ARGV[i + 2])
  end
end
if maxw == "" then
  redis.call("HDEL", room, "max_waiters")
else
  redis.call("HSET", room, "max_waiters", maxw)
end
if lanes == "" then
  redis.call("HDEL", room, "lanes")
else
  redis.call("HSET", room, "lanes", lanes)
end
redis.call("HSETNX", room, "units", tonumber(ARGV[12] or "") or tonumber(redis.call("HGET", meta, "stock")) or 0)
local until_ms = tonumber(until_arg) or redis.call("PEXPIRETIME", meta)
if until_ms > 0 then
  redis.call("PEXPIREAT", room, until_ms)
end
return {created, redis.call("HGET", room, "commitment")}
