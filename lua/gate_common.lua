-- gate_common.lua: the purchase decision of the common sale, gate.lua's answers without its
-- general branches. A sale is common when its meta hash has no "shards" above 1, no
-- "variants", no "limit" above 1, no "room", "draw" or "waitlist" set to 1 and no "reserved"
-- units: one unit per user, first come. The gateway runs this script for a purchase that names
-- no variant, asks for one unit and carries no DPoP proof, on a sale it has not seen answer
-- {19} (caddymodule/gate/core); anything else runs gate.lua. On a common sale the two scripts
-- give the same reply and make the same writes (lua/gate_common_test.go holds them to that).
--
-- KEYS[1]  seckill:{sale:<id>}:meta     hash: stock, starts_ms, ends_ms, state (as gate.lua)
-- KEYS[2]  seckill:{sale:<id>}:buyers   hash: user id -> order id
-- KEYS[3]  seckill:{sale:<id>}:tokens   hash: user id -> "<nonce>:<exp_ms>" (issued tokens)
-- KEYS[4]  seckill:{sale:<id>}:outbox   stream of accepted orders (fields o, u, t; tp if traced)
-- ARGV[1]  sale id (the shard id "<sale>:<i>" on a shard)
-- ARGV[2]  user id
-- ARGV[3]  order id (UUIDv7, made by the gateway)
-- ARGV[4]  token store value "<nonce>:<exp_ms>" of the presented token, or "" (gate.lua's ARGV[4])
-- ARGV[5]  W3C traceparent of the request's sampled span, or "" (gate.lua's ARGV[6])
--
-- Returns  gate.lua's replies for a common sale: {0, order_id, stock_left}, {8}, {1},
--          {2, starts_ms, ends_ms}, {3, starts_ms, ends_ms} (or {3} when the state is "ended"),
--          {5, order_id}, {4}, {9}, {6}, {7, k}, and one of its own:
--          {19}  general: the sale is not common (see above). Nothing was decided or written;
--                the caller runs gate.lua with the same purchase.
-- The checks run in gate.lua's order (paused, sharded, the window, the token, the stock),
-- a refusal after the window tells a buyer his order instead, and the writes are gate.lua's:
-- HSETNX of the buyer, the stock, the buyers hash's expiry with the sale's first purchase,
-- the spent token, the outbox entry, PERSIST of an outbox the relay gave an expiry (meta field
-- "outbox_ttl"), and "sold_out:<sale>" with the last unit (a shard publishes it also when it
-- refuses a buyer for want of stock).
--
-- lua/throttled.go runs this text after throttle.lua's zones, as it does gate.lua.
local t = redis.call("TIME") -- (alone)
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) -- (alone)
local m = redis.call("HMGET", KEYS[1], "stock", "starts_ms", "ends_ms", "state", "shards", "limit", "variants",
  "room", "draw", "waitlist", "reserved", "buyers_ttl", "outbox_ttl")
local state = m[4]
if state == "paused" then
  return {8}
end
local k = tonumber(m[5])
if k ~= nil and k > 1 then
  return {7, k}
end
if (m[6] and m[6] ~= "1") or m[7] or m[8] == "1" or m[9] == "1" or m[10] == "1" or (m[11] and m[11] ~= "0") then
  return {19}
end
local stock, starts, ends = tonumber(m[1]), tonumber(m[2]), tonumber(m[3])
if stock == nil or starts == nil or ends == nil then
  return {1}
end
if now < starts then
  return {2, starts, ends}
end
if state == "ended" then
  return {3}
end
if now >= ends then
  return {3, starts, ends}
end
local user, order = ARGV[2], ARGV[3]
-- A refusal r, unless the user has bought: the same order id is the accepted answer again (a
-- retried call after a lost reply), another is his order.
local function refuse(r)
  local existing = redis.call("HGET", KEYS[2], user)
  if existing == order then
    return {0, order, stock}
  end
  if existing then
    return {5, existing}
  end
  return r
end
local token = ARGV[4]
if token ~= "" then
  if redis.call("HGET", KEYS[3], user) ~= token then
    return refuse({4})
  end
  local exp = tonumber(string.match(token, ":(%d+)$"))
  if exp == nil or now >= exp then
    return refuse({9})
  end
end
if stock <= 0 then
  local r = refuse({6})
  if r[1] == 6 and string.find(ARGV[1], ":", 1, true) then
    redis.call("PUBLISH", "seckill:events", "sold_out:" .. ARGV[1])
  end
  return r
end
if redis.call("HSETNX", KEYS[2], user, order) == 0 then
  local existing = redis.call("HGET", KEYS[2], user)
  if existing == order then
    return {0, order, stock}
  end
  return {5, existing}
end
stock = redis.call("HINCRBY", KEYS[1], "stock", -1)
if m[12] ~= "1" then
  local expires = redis.call("PEXPIRETIME", KEYS[1])
  if expires > 0 then
    redis.call("PEXPIREAT", KEYS[2], expires)
  end
  redis.call("HSET", KEYS[1], "buyers_ttl", 1)
end
if token ~= "" then
  redis.call("HDEL", KEYS[3], user)
end
if ARGV[5] == "" then
  redis.call("XADD", KEYS[4], "*", "o", order, "u", user, "t", now)
else
  redis.call("XADD", KEYS[4], "*", "o", order, "u", user, "t", now, "tp", ARGV[5])
end
if m[13] then
  redis.call("PERSIST", KEYS[4])
  redis.call("HDEL", KEYS[1], "outbox_ttl")
end
if stock == 0 then
  redis.call("PUBLISH", "seckill:events", "sold_out:" .. ARGV[1])
end
return {0, order, stock}
