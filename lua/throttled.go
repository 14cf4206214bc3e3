package lua

import (
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The decision scripts with the throttle's zones in the same call: one EVALSHA per purchase
// (or token) where a route has seckill_throttle right before seckill_gate (or seckill_token),
// on a single Redis. See Throttled.
var (
	GateThrottled       = redis.NewScript(ThrottledSource("gate"))        // throttle.lua's zones, then gate.lua
	GateCommonThrottled = redis.NewScript(ThrottledSource("gate_common")) // throttle.lua's zones, then gate_common.lua
	TokenIssueThrottled = redis.NewScript(ThrottledSource("token_issue")) // throttle.lua's zones, then token_issue.lua
)

// throttledHead starts a combined script: it checks the trailing arguments, counts the
// decision's own KEYS and ARGV (nk, na: they come first) and reads Redis TIME once for the
// zones and the decision.
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
const throttledHead = `local z = tonumber(ARGV[#ARGV - 1])
local enforce = ARGV[#ARGV]
if z == nil or z < 1 or #enforce ~= z or #KEYS < 2 * z or #ARGV < 2 + 5 * z then
  return redis.error_reply("ERR throttled: bad arguments")
end
local nk, na = #KEYS - 2 * z, #ARGV - 2 - 5 * z
local now_us
do
  local t = redis.call("TIME")
  now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
`

// The lines of throttle.lua and of a decision script marked "-- (alone)", by their code, and
// what a combined script runs instead. The zones' part runs at the script's top level; the
// decision runs as one function, whose returns become the second item of the reply.
var (
	zonesAlone = map[string]string{
		`local t = redis.call("TIME")`:                          "",
		`local now = tonumber(t[1]) * 1000000 + tonumber(t[2])`: "local now = now_us",
		`local ko, ao, zones, last = 0, 0, #KEYS / 2, #ARGV`:    "local ko, ao, zones, last = nk, na, z, #ARGV - 2",
		`return out`: `for i = 1, z do
  if out[5 * (i - 1) + 1] ~= 0 and string.sub(enforce, i, i) == "1" then
    return {out}
  end
end`,
	}
	decisionAlone = map[string]string{
		`local nk, na = #KEYS, #ARGV`:                                           "",
		`local t = redis.call("TIME")`:                                          "",
		`local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`: "local now = math.floor(now_us / 1000)",
	}
	// gate_common.lua reads its KEYS and ARGV by index only: the zones' after them are no
	// concern of it.
	commonAlone = map[string]string{
		`local t = redis.call("TIME")`:                                          "",
		`local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`: "local now = math.floor(now_us / 1000)",
	}
)

// ThrottledSource is the text of the decision script name (gate, gate_common, token_issue) preceded by
// throttle.lua's zones in one script (see throttledHead for its KEYS, ARGV and reply): one
// TIME, the zones at the top level reading their KEYS and ARGV after the decision's (nothing
// is copied), then the decision.
func ThrottledSource(name string) string {
	var b strings.Builder
	b.WriteString("-- throttle.lua's zones, then " + name + ".lua, in one call (lua/throttled.go).\n")
	b.WriteString(throttledHead)
	b.WriteString(standIn("throttle", zonesAlone))
	b.WriteString("\nreturn {out, (function()\n")
	repl := decisionAlone
	if name == "gate_common" {
		repl = commonAlone
	}
	b.WriteString(standIn(name, repl))
	b.WriteString("\nend)()}\n")
	return b.String()
}

// standIn is the script name with each line marked "-- (alone)" replaced by what repl has for
// its code (an empty replacement drops the line). A marked line repl does not know, or a
// replacement the script does not use, is a build mistake: it panics, at package init.
func standIn(name string, repl map[string]string) string {
	lines := strings.Split(Source(name), "\n")
	used := 0
	for i, l := range lines {
		code, _, marked := strings.Cut(l, " -- (alone)")
		if !marked {
			continue
		}
		r, ok := repl[strings.TrimSpace(code)]
		if !ok {
			panic(fmt.Sprintf("lua: %s.lua: no combined form of the line %q", name, l))
		}
		lines[i] = r
		used++
	}
	if used != len(repl) {
		panic(fmt.Sprintf("lua: %s.lua has %d of the %d lines a combined script replaces", name, used, len(repl)))
	}
	return strings.Join(lines, "\n")
}
