-- challenge_issue.lua: the issue step of a proof-of-work challenge (the waiting room's and the
-- draw's; caddymodule/sealed, issue 35). It counts the challenge among the user's and his
-- network's open ones and refuses it when either already holds its bound, so a stockpile of
-- challenges is bounded exactly across every gateway; it also fixes the challenge's expiry on
-- Redis's clock. A challenge is open from its issue until its expiry (spending it at entry
-- does not close it: it lives seconds).
-- Time is Redis TIME.
--
-- KEYS[1]  seckill:{sale:<id>}:challenges:user:<user>  zset: nonce -> expiry (ms), the user's
--                                                     open challenges (PEXPIREAT the latest)
-- KEYS[2]  seckill:{sale:<id>}:challenges:net:<net>    zset: nonce -> expiry (ms), the open
--                                                     challenges of the user's IP prefix
-- ARGV[1]  the new challenge's nonce
-- ARGV[2]  life_ms: the challenge's life (> 0)
-- ARGV[3]  per_user: the most open challenges of one user; 0: no bound (KEYS[1] untouched)
-- ARGV[4]  per_net: the most open challenges of one IP prefix; 0: no bound (KEYS[2] untouched)
--
-- Returns  {1, expires_ms}: issued, counted in both sets;
--          {0, retry_ms, "user" | "net"}: refused, nothing written: that set holds its bound;
--          retry_ms is how long until its oldest open challenge expires (>= 1).
local nonce = ARGV[1]
local life, per_user, per_net = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if nonce == nil or nonce == "" or life == nil or life <= 0 or per_user == nil or per_user < 0 or per_net == nil or per_net < 0 then
  return redis.error_reply("ERR challenge_issue: bad arguments")
end

local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = now + life

local sets = { { KEYS[1], per_user, "user" }, { KEYS[2], per_net, "net" } }
for _, s in ipairs(sets) do
  local key, bound, name = s[1], s[2], s[3]
  if bound > 0 then
    -- Expired challenges leave first: the set holds only open ones, at most bound of them.
    redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
    if redis.call("ZCARD", key) >= bound then
      local oldest = redis.call("ZRANGE", key, 0, 0, "WITHSCORES")
      return { 0, math.max(tonumber(oldest[2]) - now, 1), name }
    end
  end
end
for _, s in ipairs(sets) do
  local key, bound = s[1], s[2]
  if bound > 0 then
    redis.call("ZADD", key, exp, nonce)
    -- The set goes with its last open challenge: memory follows the issue rate.
    redis.call("PEXPIREAT", key, exp)
  end
end
return { 1, exp }
