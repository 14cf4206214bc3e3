-- gate.lua: the purchase decision. One call decides one purchase atomically; every check comes
-- before any write, so a refusal changes nothing (a presented token is not consumed).
--
-- KEYS[1]  seckill:{sale:<id>}:meta     hash: stock, starts_ms, ends_ms, state
-- KEYS[2]  seckill:{sale:<id>}:buyers   hash: user id -> order id
-- KEYS[3]  seckill:{sale:<id>}:tokens   hash: user id -> "<nonce>:<exp_ms>" (issued tokens)
-- KEYS[4]  seckill:{sale:<id>}:outbox   stream of accepted orders (fields o, u, t; tp if traced)
-- ARGV[1]  sale id
-- ARGV[2]  user id
-- ARGV[3]  order id (UUIDv7, made by the gateway)
-- ARGV[4]  token store value "<nonce>:<exp_ms>" of the presented token, or "" when the route
--          does not require tokens (the signature and expiry were checked by the gateway)
-- ARGV[5]  the relay's consumer group name (created with the stream, from its first entry)
-- ARGV[6]  W3C traceparent of the request's sampled span, or "" (absent counts as ""): when
--          set, the outbox entry carries it as field tp, for the relay and the backend
--
-- Returns  {0, order_id, stock_left}  accepted (also when this very order id is already the
--                                      user's: a retried call after a lost reply)
--          {8}                         paused       (meta field state = "paused": the operator
--                                      paused the sale; nothing is accepted until it is not)
--          {1}                         unknown_sale (no meta hash)
--          {2}                         not_started  (Redis TIME < starts_ms)
--          {3}                         ended        (Redis TIME >= ends_ms, or state = "ended")
--          {5, order_id}               already_bought, with the user's existing order id (checked
--                                      before the token: a buyer is told his order, whatever he
--                                      presents)
--          {4}                         token_used   (no such issued nonce, or already spent)
--          {9}                         token_expired (the stored token's exp_ms <= Redis TIME: a
--                                      gateway whose clock runs slow cannot accept it)
--          {6}                         sold_out
--          {7, k}                      sharded: the meta hash is a sharded sale's (field
--                                      "shards" = k > 1); nothing was decided: the caller runs
--                                      this script again on the user's shard (contract/shard.go)
-- Publishes "sold_out:<sale>" on seckill:events when it sells the last unit (ARGV[1] is the
-- shard id "<sale>:<i>" on a shard, so the event names the shard). A shard also publishes it
-- when it refuses a buyer for want of stock: the backend's rebalancer then moves units to the
-- shard where buyers wait (each gateway asks again only after a restock of that shard, so it
-- is one message per gateway and restock, not one per refused click).
local m = redis.call("HMGET", KEYS[1], "stock", "starts_ms", "ends_ms", "shards", "state")
local state = m[5]
if state == "paused" then
  return {8}
end
local k = tonumber(m[4])
if k ~= nil and k > 1 then
  return {7, k}
end
local stock, starts, ends = tonumber(m[1]), tonumber(m[2]), tonumber(m[3])
if stock == nil or starts == nil or ends == nil then
  return {1}
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now < starts then
  return {2}
end
if now >= ends or state == "ended" then
  return {3}
end

local user, order = ARGV[2], ARGV[3]
local existing = redis.call("HGET", KEYS[2], user)
if existing == order then
  return {0, order, stock}
end
if existing then
  return {5, existing}
end
if ARGV[4] ~= "" then
  if redis.call("HGET", KEYS[3], user) ~= ARGV[4] then
    return {4}
  end
  -- The gateway checked the expiry with its own clock; Redis TIME has the last word.
  local exp = tonumber(string.match(ARGV[4], ":(%d+)$"))
  if exp == nil or now >= exp then
    return {9}
  end
end
if stock <= 0 then
  if string.find(ARGV[1], ":", 1, true) then
    redis.call("PUBLISH", "seckill:events", "sold_out:" .. ARGV[1])
  end
  return {6}
end

-- The decision is made: write.
stock = redis.call("HINCRBY", KEYS[1], "stock", -1)
redis.call("HSET", KEYS[2], user, order)
local expires = redis.call("PEXPIRETIME", KEYS[1])
if expires > 0 then
  redis.call("PEXPIREAT", KEYS[2], expires)
end
if ARGV[4] ~= "" then
  redis.call("HDEL", KEYS[3], user)
end
if redis.call("EXISTS", KEYS[4]) == 0 then
  redis.call("XGROUP", "CREATE", KEYS[4], ARGV[5], "0", "MKSTREAM")
end
if ARGV[6] == nil or ARGV[6] == "" then
  redis.call("XADD", KEYS[4], "*", "o", order, "u", user, "t", now)
else
  redis.call("XADD", KEYS[4], "*", "o", order, "u", user, "t", now, "tp", ARGV[6])
end
-- An outbox with entries never expires: the relay gives it a TTL again once it is drained.
redis.call("PERSIST", KEYS[4])
if stock == 0 then
  redis.call("PUBLISH", "seckill:events", "sold_out:" .. ARGV[1])
end
return {0, order, stock}
