-- draw_setup.lua: give a draw sale its draw hash (docs/draw.md). The backend runs it at
-- preheat, under the sale's lock, BEFORE preheat.lua: the meta hash is written last and says
-- "draw" = 1, so a draw that cannot be set up leaves no sale on sale without it. The seed is
-- drawn once: a second preheat keeps it (and the commitment published first), and refreshes the
-- window, the claim and the difficulty, but never the state, the entry counter or the counts.
-- A commitment once published is never replaced: when the backend names one (ARGV[9]) and the
-- hash does not hold a seed under it (the seed or the hash deleted, another seed written), or
-- the hash holds a commitment without its seed, nothing is written and the seed is lost.
--
-- KEYS[1]  seckill:{sale:<id>}:draw     hash: seed, commitment, opens_ms, closes_ms, claim_ms,
--                                       dmin, dmax, seq, state, n:<variant>, root, entries,
--                                       drawn_ms, waitlist
-- ARGV[1]  seed (64 hex digits: 32 random bytes), secret until the draw
-- ARGV[2]  commitment: hex SHA-256 of the seed bytes (Lua in Redis has no SHA-256)
-- ARGV[3]  opens_ms (unix ms): entries are taken from then
-- ARGV[4]  closes_ms (unix ms, > opens_ms): entries are taken until then
-- ARGV[5]  claim_ms: how long a winner has to buy (>= 1000)
-- ARGV[6]  dmin: proof-of-work bits (0..40)
-- ARGV[7]  dmax: proof-of-work bits (dmin..40)
-- ARGV[8]  until_ms: the hash expires then (the sale's end plus retention, what preheat.lua
--          gives the meta key)
-- ARGV[9]  the published commitment (Postgres's, 64 hex digits), or "" before the first preheat
-- ARGV[10] optional "1": the draw has the waitlist (field waitlist = 1, read by compensate.lua:
--          a released winner's unit raises the current wave by one rank); "0" or absent: none
--
-- Returns  {created, commitment}: created is 1 when the seed was drawn by this call, 0 when
--          the draw existed (its seed kept); commitment is the one stored with the first seed.
--          Error when an argument is out of bounds (nothing is written: every check comes
--          first). A draw that is closed already keeps its closes_ms (an early close stays).
--          Error "seed lost" when the published commitment's seed is not in the hash.
local draw = KEYS[1]
local seed, commitment = ARGV[1], ARGV[2]
if #seed ~= 64 or not seed:match("^[0-9a-f]+$") or #commitment ~= 64 or not commitment:match("^[0-9a-f]+$") then
  return redis.error_reply("ERR draw_setup: bad seed or commitment")
end
local n = {}
for i = 3, 8 do
  if not (ARGV[i] or ""):match("^%d+$") then
    return redis.error_reply("ERR draw_setup: bad ARGV[" .. i .. "]")
  end
  n[i] = tonumber(ARGV[i])
end
if n[4] <= n[3] or n[5] < 1000 or n[7] > 40 or n[7] < n[6] then
  return redis.error_reply("ERR draw_setup: bad window, claim or difficulty")
end
local published = ARGV[9] or ""
if published ~= "" and (#published ~= 64 or not published:match("^[0-9a-f]+$")) then
  return redis.error_reply("ERR draw_setup: bad published commitment")
end
local held = redis.call("HMGET", draw, "seed", "commitment")
if (published ~= "" and (not held[1] or held[2] ~= published)) or (not held[1] and held[2]) then
  return redis.error_reply("ERR draw_setup: seed lost: the draw hash holds no seed under the published commitment")
end
local created = redis.call("HSETNX", draw, "seed", seed)
if created == 1 then
  redis.call("HSET", draw, "commitment", commitment, "seq", 0, "state", "open", "closes_ms", ARGV[4])
elseif redis.call("HGET", draw, "state") == "open" then
  redis.call("HSET", draw, "closes_ms", ARGV[4])
end
redis.call("HSET", draw, "opens_ms", ARGV[3], "claim_ms", ARGV[5], "dmin", ARGV[6], "dmax", ARGV[7])
if ARGV[10] == "1" then
  redis.call("HSET", draw, "waitlist", 1)
else
  redis.call("HDEL", draw, "waitlist")
end
redis.call("PEXPIREAT", draw, n[8])
return {created, redis.call("HGET", draw, "commitment")}
