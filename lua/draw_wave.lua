-- draw_wave.lua: open the next wave of one variant of a drawn sale, atomically by Redis TIME
-- (docs/draw.md, Lifecycle steps 4 and 6). Wave 1 makes positions [0, min(n, units)) of the
-- variant's ranking winners; when a wave's claim window has ended, the units still unsold (the
-- meta's count now, read in this call so that no purchase slips between the count and the new
-- wave) go to the next ranks. The gate reads the meta field "w:<variant>" in its own call.
--
-- KEYS[1]  seckill:{sale:<id>}:meta     hash: starts_ms, ends_ms, "v:<variant>" (or "stock"
--                                       for the variant ""), "w:<variant>" =
--                                       "<wave>:<lo>:<hi>:<claim_until_ms>", "wd:<variant>"
-- KEYS[2]  seckill:{sale:<id>}:draw     hash: claim_ms, "n:<variant>" (the variant's entries as
--                                       fixed at the close, written by the draw before wave 1),
--                                       waitlist (draw_setup.lua)
-- ARGV[1]  variant id ("" for a sale without variants: its units are the field "stock")
--
-- Returns  {action, wave, lo, hi, claim_until_ms, ended_wave, ended_lo, ended_hi}:
--          action 0: nothing to do, the current wave (wave, lo, hi, claim_until) still runs;
--          1: a wave was opened (wave, lo, hi, claim_until: the new one);
--          2: the variant is done now ("wd:<variant>" = 1 was set: no unit unsold, no entry
--             left or the sale ends before a new window could start); wave..claim_until are the
--             last wave's (0s when none was opened);
--          3: the variant was done before this call (same values as 2);
--          4: the draw has the waitlist and the current wave is over with no unit unsold, but
--             ranks are left and the sale runs: the variant waits (no "wd:<variant>"), since an
--             unpaid order may still give a unit back (compensate.lua leaves it unsold, and the
--             next call opens the next wave on it); wave..claim_until and ended_* are the
--             current wave's.
--          ended_* name the wave whose claim window this call found over (its winners who did
--          not buy have expired), 0s when none. Error when the sale or the draw is missing or
--          n:<variant> is not written yet.
local meta, draw = KEYS[1], KEYS[2]
local v = ARGV[1] or ""
local ends = tonumber(redis.call("HGET", meta, "ends_ms"))
local starts = tonumber(redis.call("HGET", meta, "starts_ms"))
local claim = tonumber(redis.call("HGET", draw, "claim_ms"))
local n = tonumber(redis.call("HGET", draw, "n:" .. v))
if ends == nil or starts == nil or claim == nil then
  return redis.error_reply("ERR draw_wave: the sale or its draw is not in Redis")
end
if n == nil then
  return redis.error_reply("ERR draw_wave: the draw has not counted variant " .. v)
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local unitsField = "v:" .. v
if v == "" then
  unitsField = "stock"
end
local wf, df = "w:" .. v, "wd:" .. v

local cur = redis.call("HGET", meta, wf)
local wave, lo, hi, untilMs = 0, 0, 0, 0
if cur then
  local a, b, c, d = string.match(cur, "^(%d+):(%d+):(%d+):(%d+)$")
  wave, lo, hi, untilMs = tonumber(a), tonumber(b), tonumber(c), tonumber(d)
end
if redis.call("HEXISTS", meta, df) == 1 then
  return {3, wave, lo, hi, untilMs, 0, 0, 0}
end
local units = tonumber(redis.call("HGET", meta, unitsField)) or 0

local done = function(ew, el, eh)
  redis.call("HSET", meta, df, 1)
  return {2, wave, lo, hi, untilMs, ew, el, eh}
end

if wave == 0 then
  local from = math.max(now, starts)
  local to = math.min(n, units)
  if to <= 0 or from >= ends then
    return done(0, 0, 0)
  end
  local cu = math.min(from + claim, ends)
  redis.call("HSET", meta, wf, "1:0:" .. to .. ":" .. cu)
  return {1, 1, 0, to, cu, 0, 0, 0}
end
if now < untilMs then
  return {0, wave, lo, hi, untilMs, 0, 0, 0}
end
-- The current wave is over: its winners who did not buy have expired.
if units <= 0 and hi < n and now < ends and redis.call("HGET", draw, "waitlist") == "1" then
  return {4, wave, lo, hi, untilMs, wave, lo, hi}
end
if units <= 0 or hi >= n or now >= ends then
  return done(wave, lo, hi)
end
local nlo, nhi = hi, math.min(n, hi + units)
local cu = math.min(now + claim, ends)
redis.call("HSET", meta, wf, (wave + 1) .. ":" .. nlo .. ":" .. nhi .. ":" .. cu)
return {1, wave + 1, nlo, nhi, cu, wave, lo, hi}
