-- peer_gate.lua: the purchase decision a shop writes by hand for nginx + lua-nginx-module (the
-- peer of seckill-bench, bench/nginxgate). One call decides one purchase atomically:
-- already bought? stock left? then DECR the stock, HSET the buyer, XADD the order to an outbox
-- stream that the shop's own consumer would read. No window, no token, no throttle, no waiting
-- room, no variants: the least a gate must do to sell each unit once and once per user.
--
-- KEYS[1]  peer:{<sale>}:stock   string: units left
-- KEYS[2]  peer:{<sale>}:buyers  hash: user id -> order id
-- KEYS[3]  peer:{<sale>}:outbox  stream of accepted orders (fields o: order id, u: user id)
-- ARGV[1]  user id
-- ARGV[2]  order id (made by the handler)
--
-- Returns {0, order_id}  accepted
--         {1}            sold_out
--         {2, order_id}  already_bought, with the user's existing order id
local prior = redis.call("HGET", KEYS[2], ARGV[1])
if prior then
  return {2, prior}
end
local left = tonumber(redis.call("GET", KEYS[1]) or "0") or 0
if left <= 0 then
  return {1}
end
redis.call("DECR", KEYS[1])
redis.call("HSET", KEYS[2], ARGV[1], ARGV[2])
redis.call("XADD", KEYS[3], "*", "o", ARGV[2], "u", ARGV[1])
return {0, ARGV[2]}
