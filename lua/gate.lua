-- gate.lua: the purchase decision. One call decides one purchase atomically; every check comes
-- before any write, so a refusal changes nothing (a presented token is not consumed).
--
-- KEYS[1]  seckill:{sale:<id>}:meta     hash: stock, starts_ms, ends_ms, state
-- KEYS[2]  seckill:{sale:<id>}:buyers   hash: user id -> order id
-- KEYS[3]  seckill:{sale:<id>}:tokens   hash: user id -> "<nonce>:<exp_ms>" (issued tokens)
-- KEYS[4]  seckill:{sale:<id>}:outbox   stream of accepted orders (fields o, u, t; tp if traced;
--                                       on a sale with variants or a limit above 1 also v (the
--                                       variant, when there is one), q (quantity) and n (the
--                                       user's purchase number), q and n only when not 1)
-- KEYS[5]  seckill:{sale:<id>}:held     hash: user id -> units held (from the user's first
--                                       purchase on), "#<user>" -> purchases made (from his
--                                       second on; absent: 1). Only on a sale with a limit
--                                       above 1 (contract.UsesHeld): callers that never buy
--                                       those may pass 4 keys
-- KEYS[6]  seckill:{sale:<id>}:room       hash: the sale's waiting room (field "seed")
-- KEYS[7]  seckill:{sale:<id>}:room:live  zset: user -> admitted until (ms). KEYS[6] and
--                                       KEYS[7] are read only on a sale whose meta field
--                                       "room" is 1 (preheat.lua): callers that never buy
--                                       those may pass fewer keys
-- KEYS[8]  seckill:{sale:<id>}:draw:entries  hash: user -> "<entry_id>:<variant>[:w|:<pos>]"
--                                       (docs/draw.md). Read only on a sale whose meta field
--                                       "draw" is 1: callers that never buy those may pass
--                                       fewer keys
-- KEYS[9]  seckill:{sale:<id>}:proof:<jti>  the DPoP proof of a device-bound purchase
--                                       (docs/DESIGN.md, "Device-bound tokens and tickets"):
--                                       passed only with ARGV[10]
-- KEYS[10] seckill:{sale:<id>}:room:keys  hash: user -> the thumbprint of the device key his
--                                       room place is bound to (room_queue.lua); passed with
--                                       KEYS[9]
-- ARGV[1]  sale id
-- ARGV[2]  user id
-- ARGV[3]  order id (UUIDv7, made by the gateway)
-- ARGV[4]  token store value "<nonce>:<exp_ms>" of the presented token, or "" when the route
--          does not require tokens (the signature and expiry were checked by the gateway)
-- ARGV[5]  the relay's consumer group name: no longer read (preheat.lua creates the group, the
--          relay creates it on a stream without one); kept so the arguments after it stand
-- ARGV[6]  W3C traceparent of the request's sampled span, or "" (absent counts as ""): when
--          set, the outbox entry carries it as field tp, for the relay and the backend
-- ARGV[7]  variant id, "" (or absent) for none: a sale with exactly one variant takes that one
-- ARGV[8]  quantity, "" (or absent) for 1
-- ARGV[9]  "1" when this gateway enforces the waiting room (seckill_gate require_admission);
--          "" (or absent) when it does not. On a sale that has a room (meta "room" = 1) the
--          purchase then needs a live admission of the user, by Redis TIME, in this very
--          call: a token taken just before the admission lapsed buys nothing after it. A
--          gateway that does not enforce it refuses such a sale (13) instead of selling around
--          the room.
-- ARGV[10] the proof's replay window in ms, with KEYS[9]: the proof is spent (SET NX PX, the
--          value the order id) by the first call that reaches the sale's window, whatever the
--          purchase then answers, so a replay is refused (17) on every gateway. The same order
--          id again (a retried call after a lost reply) is not a replay. "" or absent: none.
-- ARGV[11] with KEYS[10]: the proof's key thumbprint. On a sale with a room, a user whose place
--          is bound to another key is refused (18), after the admission check: the admission
--          is the device's.
--
-- A sale is "simple" when its meta hash has no "variants" field and no "limit" above 1: it is
-- decided exactly as it always was (same replies, same writes, same outbox fields). Otherwise
-- the meta fields "v:<variant>" hold each variant's units while "stock" stays the total of all
-- of them. With a limit above 1 the held hash is the truth for the per-user limit; with a limit
-- of 1 the buyers hash is, as on a simple sale (a buyer holds one unit and buys once), so a
-- variant purchase does the writes of a simple one plus the variant's field.
--
-- A sale in draw mode (meta "draw" = 1, docs/draw.md) sells only to a user holding a live win:
-- his entry in KEYS[8] is drawn ("<entry_id>:<variant>:<pos>"), for the variant bought, and the
-- variant's current wave, meta "w:<variant>" = "<wave>:<lo>:<hi>:<claim_until_ms>", has
-- lo <= pos < hi and Redis TIME < claim_until. A purchase naming no variant there buys the
-- variant the user won. The per-user limit of a draw sale is 1, so nobody buys twice.
--
-- Returns  {0, order_id, stock_left}  accepted (also when this very order id is already the
--                                      user's: a retried call after a lost reply)
--          {0, order_id, stock_left, variant, quantity, seq}  accepted on a sale that is not
--                                      simple (seq: the user's purchase number; 0 on a retry)
--          {8}                         paused       (meta field state = "paused": the operator
--                                      paused the sale; nothing is accepted until it is not)
--          {1}                         unknown_sale (no meta hash)
--          {2, starts_ms, ends_ms}     not_started  (Redis TIME < starts_ms); the window, so a
--                                      gateway can answer the next clicks from memory until
--                                      near the opening (caddymodule/gate/core, window.go)
--          {3, starts_ms, ends_ms}     ended        (Redis TIME >= ends_ms)
--          {3}                         ended        (state = "ended": no window to remember)
--          {5, order_id}               already_bought, with the user's existing order id (checked
--                                      before the token: a buyer is told his order, whatever he
--                                      presents)
--          {4}                         token_used   (no such issued nonce, or already spent)
--          {9}                         token_expired (the stored token's exp_ms <= Redis TIME: a
--                                      gateway whose clock runs slow cannot accept it)
--          {6}                         sold_out     (the sale: its total stock is gone)
--          {6, variant, left}          sold_out     of the variant (or, variant "", a quantity
--                                      above the stock of a sale without variants): only
--                                      left <= 0 means the variant is gone for everyone;
--                                      {6, "", 0} while units are held for the waitlist
--                                      (meta "reserved", room_offer.lua) or the sale has one
--                                      (meta "waitlist" = 1; then no "sold_out:" is
--                                      published): the sale is not sold out for the user who
--                                      is offered a unit ("o:<user>")
--          {7, k}                      sharded: the meta hash is a sharded sale's (field
--                                      "shards" = k > 1); nothing was decided: the caller runs
--                                      this script again on the user's shard (contract/shard.go)
--          {11, what}                  bad_request  what = "variant" (unknown variant, a variant
--                                      named on a sale without variants, none named on a sale
--                                      with several) or "quantity" (not 1..limit). Checked
--                                      right after the window, before anything else.
--          {12, held}                  limit_reached: held + quantity > limit (held: units the
--                                      user holds). With limit 1 the answer stays {5, order_id}.
--          {13}                        misconfigured: the sale has a room, ARGV[9] is not "1"
--          {14}                        room_missing: the sale has a room, KEYS[6] has no seed
--                                      (or KEYS[6..7] were not passed)
--          {15}                        not_admitted: the sale has a room, the user holds no
--                                      live admission (13..15 are checked after
--                                      already_bought and limit_reached, before the token)
--          {15, "draw"}                not_admitted: the sale is a draw, the user holds no
--                                      live win of the variant bought (checked after the room,
--                                      before the token)
--          {16}                        draw_missing: the sale is a draw, KEYS[8] was not passed
--          {17}                        proof_replayed: KEYS[9] holds another order id (checked
--                                      right after the window: the one write of a refusal)
--          {18}                        proof_key_mismatch: the sale has a room and the user's
--                                      place is bound to another key than ARGV[11]
--          (10 is not used.)
-- The buyers hash (and, on a sale with a limit above 1, the held hash) expires with the sale:
-- the purchase that finds the meta field "buyers_ttl" unset gives them the meta key's expiry
-- and sets it, so later purchases spend no command on expiries. preheat.lua, the backend's
-- window control and reconcile.lua move or set those expiries; outbox_ack.lua gives a hash
-- found without one (made again after compensation emptied it) the sale's at the next drain.
--
-- lua/throttled.go runs this text as the decision of a script that first runs throttle.lua's
-- zones: it replaces the lines marked "-- (alone)" (one TIME serves both; the decision's KEYS
-- and ARGV come first, so nk and na count only its own).
--
-- Publishes "sold_out:<sale>" on seckill:events when it sells the last unit (ARGV[1] is the
-- shard id "<sale>:<i>" on a shard, so the event names the shard). A shard also publishes it
-- when it refuses a buyer for want of stock: the backend's rebalancer then moves units to the
-- shard where buyers wait (each gateway asks again only after a restock of that shard, so it
-- is one message per gateway and restock, not one per refused click). A variant that sells
-- its last unit publishes "sold_out:<sale>/<variant>" instead (unless the whole sale sold out
-- with it); a shard publishes it also when it refuses a buyer for want of that variant.
local nk, na = #KEYS, #ARGV -- (alone)
local t = redis.call("TIME") -- (alone)
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) -- (alone)
-- The optional arguments, absent ones as "" (and keys as nil).
local function arg(i) return i <= na and ARGV[i] or "" end
local function key(i) return i <= nk and KEYS[i] or nil end
local vid, qarg = arg(7), arg(8)
local m = redis.call("HMGET", KEYS[1], "stock", "starts_ms", "ends_ms", "shards", "state", "limit", "variants", "v:" .. vid, "room", "draw", "w:" .. vid, "buyers_ttl", "reserved", "o:" .. ARGV[2], "waitlist", "outbox_ttl")
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
if now < starts then
  return {2, starts, ends}
end
if state == "ended" then
  return {3}
end
if now >= ends then
  return {3, starts, ends}
end
if key(9) and arg(10) ~= "" then
  local spent = redis.call("SET", KEYS[9], ARGV[3], "NX", "GET", "PX", ARGV[10])
  if spent and spent ~= ARGV[3] then
    return {17}
  end
end

-- A draw sale: the user's entry, and his variant and position once drawn (nil otherwise: not
-- entered, withdrawn, or not drawn yet). The entry names the variant bought when none is named.
local draw, won, pos, wave = m[10] == "1", nil, nil, m[11]
if draw and key(8) then
  won, pos = string.match(redis.call("HGET", KEYS[8], ARGV[2]) or "", "^[^:]+:([^:]*):(%d+)$")
  if vid == "" and won ~= nil and won ~= "" then
    vid = won
    local f = redis.call("HMGET", KEYS[1], "v:" .. vid, "w:" .. vid)
    m[8], wave = f[1], f[2]
  end
end

-- What is bought: a variant of this sale, in a quantity within the limit.
local nv = tonumber(m[7]) or 0
local limit = tonumber(m[6]) or 1
local vstock
if nv > 0 and vid == "" and draw then
  -- Nothing won to name (or no entries key): the draw check below refuses, after
  -- already_bought, rather than a bad_request the user can do nothing about.
elseif nv > 0 then
  if vid == "" then
    if nv ~= 1 then
      return {11, "variant"}
    end
    vid = redis.call("HGET", KEYS[1], "variant") or ""
    vstock = tonumber(redis.call("HGET", KEYS[1], "v:" .. vid))
  else
    vstock = tonumber(m[8])
  end
  if vstock == nil then
    return {11, "variant"}
  end
elseif vid ~= "" then
  return {11, "variant"}
end
local q = 1
if qarg ~= "" then
  q = string.match(qarg, "^%d%d?%d?%d?$") and tonumber(qarg) or 0
end
if q < 1 or q > limit then
  return {11, "quantity"}
end
local simple = nv == 0 and limit == 1

local user, order = ARGV[2], ARGV[3]
-- What a user who has bought is told, whatever comes after this point: with this very order
-- id, the accepted answer again (a retried call after a lost reply); with another, his order
-- (already_bought) when the limit is 1. nil when neither applies.
local function bought_answer(existing)
  if existing == order then
    if simple then
      return {0, order, stock}
    end
    return {0, order, stock, vid, q, 0}
  end
  if existing and limit == 1 then
    return {5, existing}
  end
end
-- A refusal r below, unless the user has bought. With a limit of 1 the buyers hash is read
-- only here or by the purchase's HSETNX: an accepted purchase reads it once, in the write.
local function refuse(r)
  if limit == 1 then
    return bought_answer(redis.call("HGET", KEYS[2], user)) or r
  end
  return r
end
local held, bought
if limit > 1 then
  local answer = bought_answer(redis.call("HGET", KEYS[2], user))
  if answer then
    return answer
  end
  -- A user's field in the held hash exists from his first purchase on (compensation lowers it,
  -- never deletes it); his purchase count "#<user>" only from his second: most buyers buy once.
  bought = redis.call("HGET", key(5), user)
  held = tonumber(bought) or 0
  if held + q > limit then
    return {12, held}
  end
end
if m[9] == "1" then
  -- The waiting room decides who may buy, up to the purchase itself: an admission that lapsed
  -- since the token was issued has given its place to the next in line.
  if arg(9) ~= "1" then
    return refuse({13})
  end
  if not key(7) or redis.call("HEXISTS", KEYS[6], "seed") == 0 then
    return refuse({14})
  end
  local admitted = tonumber(redis.call("ZSCORE", KEYS[7], user))
  if admitted == nil or admitted <= now then
    return refuse({15})
  end
  local bound = key(10) and redis.call("HGET", KEYS[10], user)
  if bound and bound ~= arg(11) then
    return refuse({18})
  end
end
if draw then
  -- A draw decides who may buy what, up to the purchase itself: a win whose claim window
  -- closed since the token was issued has given its unit to the next wave.
  if not key(8) then
    return refuse({16})
  end
  local lo, hi, claim_until = string.match(wave or "", "^%d+:(%d+):(%d+):(%d+)$")
  pos = tonumber(pos)
  if won ~= vid or pos == nil or lo == nil or pos < tonumber(lo) or pos >= tonumber(hi)
      or now >= tonumber(claim_until) then
    return refuse({15, "draw"})
  end
end
if ARGV[4] ~= "" then
  if redis.call("HGET", KEYS[3], user) ~= ARGV[4] then
    return refuse({4})
  end
  -- The gateway checked the expiry with its own clock; Redis TIME has the last word.
  local exp = tonumber(string.match(ARGV[4], ":(%d+)$"))
  if exp == nil or now >= exp then
    return refuse({9})
  end
end
local shard = string.find(ARGV[1], ":", 1, true)
-- The waitlist (room_offer.lua): "reserved" units of the stock are held for offered waiters;
-- a user with a live offer ("o:<user>") buys one of them, anybody else only what is left.
local offer, reserved = tonumber(m[14]), vstock == nil and tonumber(m[13]) or 0
if offer and offer > now and reserved > 0 then reserved = reserved - 1 else offer = nil end
stock = stock - reserved
if stock <= 0 and (reserved > 0 or m[15] == "1") then
  -- A short sold_out: no gateway flags the sale, so its room keeps its waiters, and an
  -- offered waiter's purchase reaches this script.
  return refuse({6, "", 0})
end
if stock <= 0 then
  local r = refuse({6})
  if shard and r[1] == 6 then
    redis.call("PUBLISH", "seckill:events", "sold_out:" .. ARGV[1])
  end
  return r
end
if stock < q or (vstock ~= nil and vstock < q) then
  -- Not enough of what was asked; the sale itself still sells. Only an empty variant is news.
  local r = refuse({6, vid, vstock or stock})
  if shard and vstock ~= nil and vstock <= 0 and r[1] == 6 then
    redis.call("PUBLISH", "seckill:events", "sold_out:" .. ARGV[1] .. "/" .. vid)
  end
  return r
end

-- The decision is made: write. (The script is atomic: a value read above is the value now.)
-- With a limit of 1 the buyer goes in first: HSETNX finds a user who has bought (the one
-- answer the checks above left open), and then nothing is written.
if limit == 1 and redis.call("HSETNX", KEYS[2], user, order) == 0 then
  return bought_answer(redis.call("HGET", KEYS[2], user))
end
local vleft
if offer then
  redis.call("HINCRBY", KEYS[1], "reserved", -1)
  redis.call("HDEL", KEYS[1], "o:" .. user)
end
if vstock == nil then
  stock = redis.call("HINCRBY", KEYS[1], "stock", -q) - reserved
else
  stock, vleft = stock - q, vstock - q
  redis.call("HSET", KEYS[1], "stock", stock, "v:" .. vid, vleft)
end
local seq = 1
if limit > 1 then
  redis.call("HSET", KEYS[2], user, order)
  if bought then
    seq = (tonumber(redis.call("HGET", KEYS[5], "#" .. user)) or 1) + 1
    redis.call("HSET", KEYS[5], user, held + q, "#" .. user, seq)
  else
    redis.call("HSET", KEYS[5], user, q)
  end
end
if m[12] ~= "1" then
  -- The sale's first purchase (since the meta hash was made): the buyers and held hashes get
  -- the sale's expiry, once (see the header).
  local expires = redis.call("PEXPIRETIME", KEYS[1])
  if expires > 0 then
    redis.call("PEXPIREAT", KEYS[2], expires)
    if limit > 1 then
      redis.call("PEXPIREAT", KEYS[5], expires)
    end
  end
  redis.call("HSET", KEYS[1], "buyers_ttl", 1)
end
if ARGV[4] ~= "" then
  redis.call("HDEL", KEYS[3], user)
end
-- XADD makes the stream when it is missing. Its consumer group is not this script's business:
-- preheat.lua creates the stream with the group, and the relay creates the group from id 0 on
-- a stream that has none (a sale preheated by an older backend, an outbox that expired after
-- it drained), so every entry is relayed either way.
local tp = arg(6)
if simple then
  if tp == "" then
    redis.call("XADD", KEYS[4], "*", "o", order, "u", user, "t", now)
  else
    redis.call("XADD", KEYS[4], "*", "o", order, "u", user, "t", now, "tp", tp)
  end
elseif vid ~= "" and q == 1 and seq == 1 and tp == "" then
  -- The common purchase of a variant sale (one unit, the user's first): no table to build.
  redis.call("XADD", KEYS[4], "*", "o", order, "u", user, "t", now, "v", vid)
else
  -- q and n only when they are not 1 (absent means 1, in the entry as in the message).
  local e = {"o", order, "u", user, "t", now}
  if vid ~= "" then
    e[#e + 1], e[#e + 2] = "v", vid
  end
  if q ~= 1 then
    e[#e + 1], e[#e + 2] = "q", q
  end
  if seq ~= 1 then
    e[#e + 1], e[#e + 2] = "n", seq
  end
  if tp ~= "" then
    e[#e + 1], e[#e + 2] = "tp", tp
  end
  redis.call("XADD", KEYS[4], "*", unpack(e))
end
-- An outbox with entries never expires: the relay (outbox_ack.lua) and preheat give a drained
-- outbox the sale's expiry and mark it in the meta field "outbox_ttl", and the first entry
-- after that removes both. Without the mark the outbox has no expiry: nothing to remove.
if m[16] then
  redis.call("PERSIST", KEYS[4])
  redis.call("HDEL", KEYS[1], "outbox_ttl")
end
if stock == 0 and reserved == 0 and m[15] ~= "1" then
  redis.call("PUBLISH", "seckill:events", "sold_out:" .. ARGV[1])
elseif vleft == 0 then
  redis.call("PUBLISH", "seckill:events", "sold_out:" .. ARGV[1] .. "/" .. vid)
end
if simple then
  return {0, order, stock}
end
return {0, order, stock, vid, q, seq}
