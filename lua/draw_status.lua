-- draw_status.lua: a user's entry in a draw and where it stands (GET /seckill/{sale}/draw;
-- docs/draw.md, "An entry's state"). Read only.
--
-- KEYS[1]  seckill:{sale:<id>}:meta           hash: draw = 1, and per variant w:<variant> =
--                                              "<wave>:<lo>:<hi>:<claim_until_ms>" (the current
--                                              wave) and wd:<variant> = 1 (no wave will follow)
-- KEYS[2]  seckill:{sale:<id>}:draw           hash: seed (exists exactly when the sale is a draw)
-- KEYS[3]  seckill:{sale:<id>}:draw:entries   hash: user -> "<entry_id>:<variant>" (entered),
--                                              "<entry_id>:<variant>:w" (withdrawn) or
--                                              "<entry_id>:<variant>:<pos>" (drawn), or
--                                              "<entry_id>:<variant>:<pos>:r" (drawn, and his
--                                              unit released to the next rank by the draw's
--                                              waitlist: expired)
-- KEYS[4]  seckill:{sale:<id>}:buyers         hash: user -> order id
-- ARGV[1]  user id
--
-- Returns  {0, entry_id, state, variant, pos, wave, claim_until_ms}
--                          state: "entered", "withdrawn", "claimed", "won", "expired", "lost"
--                          or "waiting"; pos is the 0-based position in the variant's ranking
--                          (-1 before the draw, and for a withdrawn entry); wave and
--                          claim_until_ms are those of the variant's current wave when the
--                          entry is in it (won, or expired in it), else 0
--          {1}             unknown_sale: no draw hash seed, or meta field draw is not 1
--          {5}             not_entered: the user has no entry
local meta, draw, entries, buyers = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local user = ARGV[1]

if redis.call("HEXISTS", draw, "seed") == 0 or redis.call("HGET", meta, "draw") ~= "1" then
  return {1}
end
local cur = redis.call("HGET", entries, user)
if not cur then
  return {5}
end
local eid, v, tail = string.match(cur, "^([^:]*):([^:]*):?(.*)$")
if tail == "" and redis.call("HGET", draw, "state") == "drawn" then
  -- Drawn without a position: a flagged entry the close left out (docs/draw.md, "Flagged
  -- entrants").
  return {0, eid, "lost", v, -1, 0, 0}
elseif tail == "" then
  return {0, eid, "entered", v, -1, 0, 0}
elseif tail == "w" then
  return {0, eid, "withdrawn", v, -1, 0, 0}
end
local released = string.match(tail, "^%d+:r$") ~= nil
local pos = tonumber(string.match(tail, "^(%d+)$") or string.match(tail, "^(%d+):r$"))
if pos == nil then
  return redis.error_reply("ERR draw_status: unreadable entry")
end
if redis.call("HEXISTS", buyers, user) == 1 then
  return {0, eid, "claimed", v, pos, 0, 0}
end
local w = redis.call("HMGET", meta, "w:" .. v, "wd:" .. v)
local wave, lo, hi, untl = 0, 0, 0, 0
if w[1] then
  local a, b, c, e = string.match(w[1], "^(%d+):(%d+):(%d+):(%d+)$")
  wave, lo, hi, untl = tonumber(a) or 0, tonumber(b) or 0, tonumber(c) or 0, tonumber(e) or 0
end
if (w[1] and pos < lo) or released then
  return {0, eid, "expired", v, pos, 0, 0}
end
if w[1] and pos < hi then
  local t = redis.call("TIME")
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if now < untl then
    return {0, eid, "won", v, pos, wave, untl}
  end
  return {0, eid, "expired", v, pos, wave, untl}
end
if w[2] then
  return {0, eid, "lost", v, pos, 0, 0}
end
return {0, eid, "waiting", v, pos, 0, 0}
