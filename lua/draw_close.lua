-- draw_close.lua: close a draw's entries (docs/draw.md, "The draw job", step 1). The backend
-- runs it under the sale's lock at closes_ms, or earlier when the operator runs the draw now;
-- from then on the edge takes no entry, change or withdrawal (it checks the state in the same
-- script call as the write), so the entries hash is fixed. Idempotent: a closed or drawn draw
-- is left as it is.
--
-- KEYS[1]  seckill:{sale:<id>}:draw     hash written by draw_setup.lua
-- ARGV     none (the time is Redis TIME, the clock the edge checks the window against)
--
-- Returns  {state, closes_ms}: the state after the call (closed, or drawn when the draw had run)
--          and the close's time: closes_ms, lowered to now when the draw is closed before its
--          time. Error when the draw hash has no seed (the sale is not preheated).
local draw = KEYS[1]
if redis.call("HEXISTS", draw, "seed") == 0 then
  return redis.error_reply("ERR draw_close: the draw is not set up (preheat the sale)")
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call("HGET", draw, "state")
local closes = tonumber(redis.call("HGET", draw, "closes_ms"))
if state == "open" then
  if now < closes then
    closes = now
  end
  state = "closed"
  redis.call("HSET", draw, "state", state, "closes_ms", closes)
end
return {state, closes}
