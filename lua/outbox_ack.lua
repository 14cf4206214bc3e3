-- outbox_ack.lua: the relay's acknowledgement of entries RabbitMQ has confirmed: acknowledge
-- them in the consumer group and delete them from the stream, and give a drained outbox an
-- expiry again, marked in the meta field "outbox_ttl" (the gate scripts remove both when they
-- add an entry: a purchase spends no PERSIST on an outbox that has no expiry). A drain also gives the
-- buyers hash the sale's expiry when it has none: the gate sets it only with the sale's first
-- purchase (gate.lua, meta field buyers_ttl), and a hash that compensation emptied and a later
-- purchase made again would otherwise keep none.
--
-- KEYS[1]  seckill:{sale:<id>}:outbox   stream of accepted orders
-- KEYS[2]  seckill:{sale:<id>}:meta     the sale; a drained outbox expires with it
-- KEYS[3]  optional seckill:{sale:<id>}:buyers  hash: user id -> order id
-- ARGV[1]  consumer group name
-- ARGV[2]  fallback retention (ms) when the meta hash has no expiry or is gone
-- ARGV[3..] stream entry ids confirmed by the broker
--
-- Returns  the number of entries acknowledged (ids already acknowledged by another relay
--          count 0; they are deleted all the same)
local n = redis.call("XACK", KEYS[1], ARGV[1], unpack(ARGV, 3))
redis.call("XDEL", KEYS[1], unpack(ARGV, 3))
if redis.call("XLEN", KEYS[1]) == 0 then
  local expires = redis.call("PEXPIRETIME", KEYS[2])
  if expires ~= -2 then
    -- The mark goes with the expiry, so the next entry is never left to expire: an outbox
    -- with an expiry and no mark would keep it through the next purchase. (A sale whose meta
    -- is gone accepts nothing; preheat marks an outbox with an expiry when it makes it again.)
    redis.call("HSET", KEYS[2], "outbox_ttl", 1)
  end
  if expires > 0 then
    redis.call("PEXPIREAT", KEYS[1], expires)
    if KEYS[3] then
      redis.call("PEXPIREAT", KEYS[3], expires, "NX")
    end
  else
    redis.call("PEXPIRE", KEYS[1], ARGV[2])
  end
end
return n
