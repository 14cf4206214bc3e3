-- seckill_peer.lua: nginx's content handler of the peer (bench/nginxgate). It speaks RESP to
-- Redis itself over ngx.socket.tcp (cosocket, connections kept in nginx's keepalive pool), one
-- EVALSHA of peer_gate.lua per purchase, and answers in JSON as the edge does:
--   202 {"order_id":"…","status":"queued"}
--   409 {"code":"sold_out"} / {"code":"already_bought","order_id":"…"}
--   400 {"code":"bad_request"} (no or bad X-User-ID), 405, 503 {"code":"unavailable"}
-- The buyer is the X-User-ID header, as on the demo gateway's header-identity site.
local _M = {}

local CRLF = "\r\n"
local cfg = {}

-- init runs in init_by_lua: where Redis is, the script's SHA1 (computed by seckill-bench) and
-- its source, for the one SCRIPT LOAD after a Redis restart (NOSCRIPT).
function _M.init(host, port, sha, script_path)
  local f = assert(io.open(script_path, "rb"))
  cfg = { host = host, port = port, sha = sha, script = f:read("*a") }
  f:close()
end

-- init_worker seeds each worker's generator apart, for the random part of the order ids.
function _M.init_worker()
  math.randomseed(math.floor(ngx.now() * 1000) + ngx.worker.pid() * 7919)
end

local function command(args)
  local t = { "*", #args, CRLF }
  for i = 1, #args do
    local a = args[i]
    t[#t + 1] = "$"
    t[#t + 1] = #a
    t[#t + 1] = CRLF
    t[#t + 1] = a
    t[#t + 1] = CRLF
  end
  return table.concat(t)
end

-- read_reply reads one RESP2 value: a number, a string, a table for an array, ngx.null for a
-- nil. A Redis error comes back as nil, its message, true; a broken connection as nil, err.
local function read_reply(sock)
  local line, err = sock:receive("*l")
  if not line then
    return nil, err
  end
  local kind, rest = line:sub(1, 1), line:sub(2)
  if kind == ":" then
    return tonumber(rest)
  elseif kind == "+" then
    return rest
  elseif kind == "-" then
    return nil, rest, true
  elseif kind == "$" then
    local n = tonumber(rest)
    if n == nil then
      return nil, "bad bulk length: " .. line
    end
    if n < 0 then
      return ngx.null
    end
    local data, rerr = sock:receive(n + 2)
    if not data then
      return nil, rerr
    end
    return data:sub(1, n)
  elseif kind == "*" then
    local n = tonumber(rest)
    if n == nil then
      return nil, "bad array length: " .. line
    end
    if n < 0 then
      return ngx.null
    end
    local arr = {}
    for i = 1, n do
      local v, verr, isredis = read_reply(sock)
      if v == nil then
        return nil, verr, isredis
      end
      arr[i] = v
    end
    return arr
  end
  return nil, "bad reply: " .. line
end

-- call sends one command on a pooled connection and reads its reply. The connection goes back
-- to the pool after a complete reply (a Redis error is a complete reply), and is closed
-- otherwise.
local function call(args)
  local sock = ngx.socket.tcp()
  sock:settimeouts(1000, 1000, 1000)
  local ok, err = sock:connect(cfg.host, cfg.port)
  if not ok then
    return nil, err
  end
  local _, serr = sock:send(command(args))
  if serr then
    sock:close()
    return nil, serr
  end
  local v, rerr, isredis = read_reply(sock)
  if v == nil and not isredis then
    sock:close()
    return nil, rerr
  end
  sock:setkeepalive(60000, 512)
  return v, rerr, isredis
end

local function answer(status, body)
  ngx.status = status
  ngx.header["Content-Type"] = "application/json"
  ngx.print(body)
end

-- order_id is a UUIDv7-shaped id: 48 bits of milliseconds, then 74 random bits.
local function order_id()
  local ms = math.floor(ngx.now() * 1000)
  return string.format("%08x-%04x-7%03x-%04x-%04x%08x", math.floor(ms / 65536), ms % 65536,
    math.random(0, 4095), 32768 + math.random(0, 16383), math.random(0, 65535), math.random(0, 2147483647))
end

function _M.buy(sale)
  if ngx.req.get_method() ~= "POST" then
    return answer(405, '{"code":"method_not_allowed"}')
  end
  local user = ngx.var.http_x_user_id
  if user == nil or #user > 128 or not user:find("^[%w_.:%-]+$") then
    return answer(400, '{"code":"bad_request"}')
  end
  local tag = "peer:{" .. sale .. "}:"
  local args = { "EVALSHA", cfg.sha, "3", tag .. "stock", tag .. "buyers", tag .. "outbox", user, order_id() }
  local r, err, isredis = call(args)
  if r == nil and isredis and err:find("^NOSCRIPT") then
    local loaded, lerr = call({ "SCRIPT", "LOAD", cfg.script })
    if loaded == nil then
      r, err = nil, lerr
    else
      r, err = call(args)
    end
  end
  if type(r) ~= "table" then
    ngx.log(ngx.ERR, "peer gate: redis: ", tostring(err))
    return answer(503, '{"code":"unavailable"}')
  end
  if r[1] == 0 then
    return answer(202, '{"order_id":"' .. r[2] .. '","status":"queued"}')
  elseif r[1] == 1 then
    return answer(409, '{"code":"sold_out"}')
  elseif r[1] == 2 then
    return answer(409, '{"code":"already_bought","order_id":"' .. r[2] .. '"}')
  end
  ngx.log(ngx.ERR, "peer gate: unexpected reply ", tostring(r[1]))
  return answer(503, '{"code":"unavailable"}')
end

return _M
