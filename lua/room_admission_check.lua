-- room_admission_check.lua: does a user hold a live admission to a sale's waiting room? The
-- check seckill_token's `require_admission` makes before it issues a token. Its body is
-- written to be pasted into token_issue.lua as well (docs/room.md, "Integration with
-- seckill_token"), so the token costs one round trip either way.
--
-- KEYS[1]  seckill:{sale:<id>}:room        hash (room_setup.lua); absent: the sale has no room
-- KEYS[2]  seckill:{sale:<id>}:room:live   zset: user -> admitted_until_ms
-- ARGV[1]  user id
--
-- Returns  {outcome, admitted_until_ms}: outcome "admitted" (until > Redis TIME),
--          "not_admitted" (no live admission) or "no_room" (the sale has no room: a token
--          handler with require_admission leaves such a sale unaffected).
local room, live, user = KEYS[1], KEYS[2], ARGV[1]
if redis.call("HEXISTS", room, "seed") == 0 then
  return {"no_room", 0}
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local untl = tonumber(redis.call("ZSCORE", live, user))
if untl == nil or untl <= now then
  return {"not_admitted", 0}
end
return {"admitted", untl}
