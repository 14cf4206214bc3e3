-- challenge_issue.lua: the issue step of a proof-of-work challenge (the waiting room's and the
-- draw's; caddymodule/sealed). It counts the challenge among the user's open ones and refuses
-- it when he already holds his bound, so one account's stockpile is bounded exactly across
-- every gateway; it counts it among his network's open ones too, which never refuses (a
-- carrier's NAT puts thousands of honest people behind one address) but tells the gateway
-- how crowded the network is: the gateway raises the challenge's difficulty with it, so a
-- crowded network pays in work. It also fixes the challenge's expiry on Redis's clock. A
-- challenge is open from its issue until its expiry (spending it at entry does not close it:
-- it lives seconds).
-- Time is Redis TIME.
--
-- KEYS[1]  seckill:{sale:<id>}:challenges:user:<user>  zset: nonce -> expiry (ms), the user's
--                                                     open challenges (PEXPIREAT the latest)
-- KEYS[2]  seckill:{sale:<id>}:challenges:net:<net>    zset: nonce -> expiry (ms), the open
--                                                     challenges of the user's IP prefix
-- ARGV[1]  the new challenge's nonce
-- ARGV[2]  life_ms: the challenge's life (> 0)
-- ARGV[3]  per_user: the most open challenges of one user; 0: no bound (KEYS[1] untouched)
-- ARGV[4]  per_net: > 0 counts the network's open challenges (never a refusal); 0: not
--          counted (KEYS[2] untouched)
--
-- Returns  {1, expires_ms, net_open}: issued, counted in both sets; net_open is how many
--          challenges the network held open before this one (0 when not counted);
--          {0, retry_ms, "user"}: refused, nothing written: the user holds his bound;
--          retry_ms is how long until his oldest open challenge expires (>= 1).
local nonce = ARGV[1]
local life, per_user, per_net = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if nonce == nil or nonce == "" or life == nil or life <= 0 or per_user == nil or per_user < 0 or per_net == nil or per_net < 0 then
  return redis.error_reply("ERR challenge_issue: bad arguments")
end

local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = now + life

-- Expired challenges leave first: a set holds only open ones.
if per_user > 0 then
  redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
  if redis.call("ZCARD", KEYS[1]) >= per_user then
    local oldest = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
    return { 0, math.max(tonumber(oldest[2]) - now, 1), "user" }
  end
end
local net_open = 0
if per_net > 0 then
  redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
  net_open = redis.call("ZCARD", KEYS[2])
end
for _, s in ipairs({ { KEYS[1], per_user }, { KEYS[2], per_net } }) do
  if s[2] > 0 then
    redis.call("ZADD", s[1], exp, nonce)
    -- The set goes with its last open challenge: memory follows the issue rate.
    redis.call("PEXPIREAT", s[1], exp)
  end
end
return { 1, exp, net_open }
