package lua

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// The decision scripts with the throttle's zones in the same call: one EVALSHA per purchase
// (or token) where a route has seckill_throttle right before seckill_gate (or seckill_token),
// on a single Redis. See Throttled.
var (
	GateThrottled       = Throttled("gate")        // throttle.lua's zones, then gate.lua
	TokenIssueThrottled = Throttled("token_issue") // throttle.lua's zones, then token_issue.lua
)

// throttledMain runs the zones of throttle.lua, then, unless an enforcing zone refused, the
// decision script, in one atomic call. The two scripts' texts become the bodies of the local
// functions throttle_zones and decide, each with KEYS and ARGV of its own (parameters shadow
// the globals), so both run exactly as they do alone.
//
// KEYS     the decision script's KEYS, then the zones' (two per zone, as throttle.lua takes them)
// ARGV     the decision script's ARGV, then the zones' (five per zone), then two more:
// ARGV[#ARGV-1]  the number of zones z (>= 1)
// ARGV[#ARGV]    one character per zone, "1" when the zone may refuse (not shadow), else "0"
// Returns  {zones}            an enforcing zone refused: the decision did not run (zones is
//
//	                   throttle.lua's flat reply, five items per zone)
//	{zones, decision}  the zones let the request through and the decision ran
//	                   (decision is the decision script's reply, unchanged)
//
// A zone's admission stays recorded when the decision refuses, as when the two are separate
// calls; the caller gives back the admissions of zones another zone overruled, as the
// throttle does alone (throttle_refund.lua).
const throttledMain = `
local z = tonumber(ARGV[#ARGV - 1])
local enforce = ARGV[#ARGV]
if z == nil or z < 1 or #enforce ~= z or #KEYS < 2 * z or #ARGV < 2 + 5 * z then
  return redis.error_reply("ERR throttled: bad arguments")
end
local nk, na = #KEYS - 2 * z, #ARGV - 2 - 5 * z
local dk, da, tk, ta = {}, {}, {}, {}
for i = 1, nk do dk[i] = KEYS[i] end
for i = 1, 2 * z do tk[i] = KEYS[nk + i] end
for i = 1, na do da[i] = ARGV[i] end
for i = 1, 5 * z do ta[i] = ARGV[na + i] end
local zones = throttle_zones(tk, ta)
if type(zones) ~= "table" or zones.err then
  return zones
end
for i = 1, z do
  if zones[5 * (i - 1) + 1] ~= 0 and string.sub(enforce, i, i) == "1" then
    return {zones}
  end
end
return {zones, decide(dk, da)}
`

// Throttled is the decision script name (gate, token_issue) preceded by throttle.lua's zones in
// one script (see throttledMain for its KEYS, ARGV and reply).
func Throttled(name string) *redis.Script {
	var b strings.Builder
	b.WriteString("-- throttle.lua's zones, then " + name + ".lua, in one call (lua/throttled.go).\n")
	b.WriteString("local function throttle_zones(KEYS, ARGV)\n")
	b.WriteString(Source("throttle"))
	b.WriteString("\nend\nlocal function decide(KEYS, ARGV)\n")
	b.WriteString(Source(name))
	b.WriteString("\nend\n")
	b.WriteString(throttledMain)
	return redis.NewScript(b.String())
}
