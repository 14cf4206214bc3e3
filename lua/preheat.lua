-- preheat.lua: load (or refresh) a sale's window and stock into Redis.
--
-- KEYS[1]  seckill:{sale:<id>}:meta     hash: stock, starts_ms, ends_ms, state
-- KEYS[2]  optional seckill:{sale:<id>}:room  given when the sale has a waiting room: the hash
--          must hold a seed (room_setup.lua runs first), else nothing is written. The meta
--          field "room" = 1 then says so, on every call: the token and gate scripts refuse a
--          sale that says it has a room when the room's state is missing or the gateway does
--          not check admissions, instead of selling to anyone. The field is never removed (a
--          sale's room never goes away; a call without KEYS[2] leaves it). The room hash gets
--          the meta key's expiry. Not for a sharded sale (ARGV[7] > 1).
--          Or, for a sale in draw mode, seckill:{sale:<id>}:draw (told apart by the key's
--          ":draw" suffix): the hash must hold a seed (draw_setup.lua runs first), else nothing
--          is written; the meta field "draw" = 1 then says so on every call (the gate and the
--          token script admit only the draw's winners), and the draw hash gets the meta key's
--          expiry. A sale is never both: the draw key is refused when the meta says "room" and
--          the room key when it says "draw". Not sharded, and no limit above 1 (ARGV[9]).
-- KEYS[2..] optional, each told apart by its suffix, in any order after the room or draw key:
--          seckill:{sale:<id>}:outbox  the sale's outbox stream: created (empty) with the
--          relay's consumer group "relay" from id 0 when either is missing, so the gate script
--          never has to; an outbox holding no entry gets the meta key's expiry, and an outbox with an
--          expiry the meta field "outbox_ttl" (the gate scripts remove both with the first
--          entry). An outbox preheated without this key (an
--          older backend) is still relayed: the relay creates the group from id 0 on a stream
--          that has none.
--          seckill:{sale:<id>}:buyers, seckill:{sale:<id>}:held  when they exist, they get the
--          meta key's expiry (the gate sets it only once, when it makes the hash).
--          None of these on a sharded sale's base hash (ARGV[7] > 1): each shard's own call
--          passes its own.
-- ARGV[1]  sale id (for the restock broadcast)
-- ARGV[2]  stock to set (integer >= 0)
-- ARGV[3]  starts_ms (unix ms)
-- ARGV[4]  ends_ms (unix ms)
-- ARGV[5]  mode: "init"  sets stock only when the sale is not in Redis yet (idempotent
--                        preheat: a second call never resets a sale that is selling);
--                "reset" sets stock unconditionally (the backend's reconcile, under its lock)
-- ARGV[6]  retention_ms: the meta key expires this long after ends_ms
-- ARGV[7]  optional shard count k: when > 1 the hash is written as a sharded sale's base meta
--          (field "shards" = k; its stock ARGV[2] is then 0 and the units live in the shards'
--          own meta hashes, each preheated by its own call). Only written when the hash is
--          created: the shard count of a sale never changes. Pass "" (or 0) for none.
-- ARGV[8]  optional namespace of the deployment (the backend's SECKILL_NAMESPACE): written to
--          the field "namespace" on every call, so a gateway's relay takes the outbox only
--          when it serves the same namespace. Absent or "": the field is removed (the
--          unnamed deployment).
-- ARGV[9]  optional per-user limit in units, 1..1000 ("" or absent: 1, the field is not
--          written). Written with the stock (when the hash is created, or on "reset").
-- ARGV[10..] optional pairs: variant id, variant stock (at most 256 variants, ids of
--          [A-Za-z0-9_-]{1,64}, stocks >= 0). When given, the fields "v:<id>" hold each
--          variant's stock, "variants" their count ("variant" the id when there is exactly
--          one), and "stock" is set to their SUM (ARGV[2] is then ignored). Written with the
--          stock, like it; "reset" drops the variant fields of an earlier preheat first. A
--          sharded sale's base hash (ARGV[7] > 1) takes no variants: each shard's own call
--          carries its part of each variant.
--
-- Returns  {created, stock}: created is 1 when the meta hash was written for the first time
--          (or reset), 0 when an existing sale only had its window refreshed; stock is the
--          stock now in Redis. Publishes "restock:<sale>" on seckill:events when stock > 0,
--          so gateways clear a local sold-out flag, and "window:<sale>" when it moved the
--          window of a sale already in Redis, so gateways forget the window they remember.
local meta = KEYS[1]
local stock = tonumber(ARGV[2])
local starts = tonumber(ARGV[3])
local ends = tonumber(ARGV[4])
local retention = tonumber(ARGV[6])
if stock == nil or stock < 0 or starts == nil or ends == nil or ends <= starts or retention == nil then
  return redis.error_reply("ERR preheat: bad arguments")
end
local room, draw, outbox, follow = nil, nil, nil, {}
for i = 2, #KEYS do
  local key = KEYS[i]
  if string.sub(key, -5) == ":draw" then
    draw = key
  elseif string.sub(key, -7) == ":outbox" then
    outbox = key
  elseif string.sub(key, -7) == ":buyers" or string.sub(key, -5) == ":held" then
    follow[#follow + 1] = key
  else
    room = key
  end
end
if draw then
  room = nil
  local k = tonumber(ARGV[7])
  if (k ~= nil and k > 1) or (ARGV[9] ~= nil and ARGV[9] ~= "" and ARGV[9] ~= "1") then
    return redis.error_reply("ERR preheat: a draw sale is unsharded with a limit of 1")
  end
  if redis.call("HEXISTS", draw, "seed") == 0 then
    return redis.error_reply("ERR preheat: the sale's draw is not set up (draw_setup.lua first)")
  end
  if redis.call("HEXISTS", meta, "room") == 1 then
    return redis.error_reply("ERR preheat: a sale with a room cannot be a draw")
  end
end
if room and redis.call("HEXISTS", meta, "draw") == 1 then
  return redis.error_reply("ERR preheat: a draw sale takes no room")
end
if room then
  local k = tonumber(ARGV[7])
  if k ~= nil and k > 1 then
    return redis.error_reply("ERR preheat: a sharded sale takes no room")
  end
  -- All or nothing: a sale with a room is never written without it.
  if redis.call("HEXISTS", room, "seed") == 0 then
    return redis.error_reply("ERR preheat: the sale's room is not set up (room_setup.lua first)")
  end
end

local limit
if ARGV[9] ~= nil and ARGV[9] ~= "" then
  limit = string.match(ARGV[9], "^%d%d?%d?%d?$") and tonumber(ARGV[9])
  if limit == nil or limit < 1 or limit > 1000 then
    return redis.error_reply("ERR preheat: bad limit")
  end
end
local variants = {}
if #ARGV > 9 then
  if (#ARGV - 9) % 2 ~= 0 or (#ARGV - 9) / 2 > 256 then
    return redis.error_reply("ERR preheat: variants come in pairs id, stock (at most 256)")
  end
  local seen, sum = {}, 0
  for i = 10, #ARGV, 2 do
    local id, n = ARGV[i], string.match(ARGV[i + 1], "^%d+$") and tonumber(ARGV[i + 1])
    if not string.match(id, "^[%w_-]+$") or #id > 64 or seen[id] or n == nil then
      return redis.error_reply("ERR preheat: bad variant " .. id)
    end
    seen[id] = true
    sum = sum + n
    variants[#variants + 1] = id
    variants[#variants + 1] = n
  end
  local k = tonumber(ARGV[7])
  if k ~= nil and k > 1 then
    return redis.error_reply("ERR preheat: a sharded sale's base hash takes no variants")
  end
  stock = sum
end

local created = 0
if ARGV[5] == "reset" or redis.call("EXISTS", meta) == 0 then
  if ARGV[5] == "reset" then
    -- Everything the stock comes with is set anew: no variant or limit of an earlier preheat
    -- may survive.
    local old = {"limit", "variants", "variant"}
    for _, f in ipairs(redis.call("HKEYS", meta)) do
      if string.sub(f, 1, 2) == "v:" then
        old[#old + 1] = f
      end
    end
    redis.call("HDEL", meta, unpack(old))
  end
  redis.call("HSET", meta, "stock", stock, "starts_ms", starts, "ends_ms", ends, "state", "open")
  local k = tonumber(ARGV[7])
  if k ~= nil and k > 1 then
    redis.call("HSET", meta, "shards", k)
  end
  if limit ~= nil and limit > 1 then
    redis.call("HSET", meta, "limit", limit)
  end
  if #variants > 0 then
    local fields = {"variants", #variants / 2}
    if #variants == 2 then
      fields[#fields + 1] = "variant"
      fields[#fields + 1] = variants[1]
    end
    for i = 1, #variants, 2 do
      fields[#fields + 1] = "v:" .. variants[i]
      fields[#fields + 1] = variants[i + 1]
    end
    redis.call("HSET", meta, unpack(fields))
  end
  created = 1
else
  local was = redis.call("HMGET", meta, "starts_ms", "ends_ms")
  redis.call("HSET", meta, "starts_ms", starts, "ends_ms", ends)
  if tonumber(was[1]) ~= starts or tonumber(was[2]) ~= ends then
    -- Gateways that remember the window forget it.
    redis.call("PUBLISH", "seckill:events", "window:" .. ARGV[1])
  end
end
local ns = ARGV[8]
if ns ~= nil and ns ~= "" then
  redis.call("HSET", meta, "namespace", ns)
else
  redis.call("HDEL", meta, "namespace")
end
if room then
  redis.call("HSET", meta, "room", 1)
end
if draw then
  redis.call("HSET", meta, "draw", 1)
end
local current = tonumber(redis.call("HGET", meta, "stock"))
redis.call("PEXPIREAT", meta, ends + retention)
if room then
  redis.call("PEXPIREAT", room, ends + retention)
end
if draw then
  redis.call("PEXPIREAT", draw, ends + retention)
end
local k = tonumber(ARGV[7])
if k == nil or k <= 1 then
  if outbox then
    -- BUSYGROUP (the group is there) is the answer of every preheat after the first.
    redis.pcall("XGROUP", "CREATE", outbox, "relay", "0", "MKSTREAM")
    if redis.call("XLEN", outbox) == 0 then
      redis.call("PEXPIREAT", outbox, ends + retention)
    end
    -- An outbox with an expiry is marked in the meta hash, so the gate scripts remove the
    -- expiry with the next entry (outbox_ack.lua marks a drained one the same way).
    if redis.call("PTTL", outbox) > 0 then
      redis.call("HSET", meta, "outbox_ttl", 1)
    end
  end
  for _, key in ipairs(follow) do
    if redis.call("EXISTS", key) == 1 then
      redis.call("PEXPIREAT", key, ends + retention)
    end
  end
end
if current > 0 then
  redis.call("PUBLISH", "seckill:events", "restock:" .. ARGV[1])
end
return {created, current}
