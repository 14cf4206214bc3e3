// Package lua embeds the Redis Lua scripts of the flash-sale edge, one file per script, each
// as a go-redis Script value run by EVALSHA, falling back to EVAL on NOSCRIPT: lua.Gate,
// lua.Preheat, ... A misspelt script is a compile error, not a panic at the first request;
// there is no lookup by name.
//
// Most scripts are called through a typed call (args.go, shard.go, outbox.go, draw.go,
// offer.go): a struct per script whose named fields are its arguments, with Keys, Args and
// Run (GateCall, GateCommonCall, PreheatCall, ReconcileCall, CompensateCall, ShardTakeCall, ShardGiveCall,
// OutboxAckCall, DrawEnterCall, DrawStatusCall, DrawSetupCall, DrawCloseCall, DrawWaveCall,
// RoomOfferCall), so the ARGV order is written once, beside the script, and not at every call
// site. The scripts of the gateway's own stores (token_issue, throttle, throttle_refund,
// room_setup, room_queue, room_admission_check, challenge_issue) are
// still called with their ARGV in order by those stores. doc_test.go holds both lists to the
// code: a new script needs a typed call or a place in the second.
//
// Every script starts with a header comment that lists its KEYS, ARGV and return values; a
// test holds every file to that. All keys a script touches share one hash tag, so each script
// runs unchanged on Redis Cluster.
package lua

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed *.lua
var files embed.FS

// The scripts, one per file.
var (
	Gate       = mustLoad("gate")        // the purchase decision (gate.lua)
	GateCommon = mustLoad("gate_common") // the purchase decision of the common sale (gate_common.lua)
	TokenIssue = mustLoad("token_issue") // a purchase token's nonce (token_issue.lua)
	Throttle   = mustLoad("throttle")    // one zone's sliding window (throttle.lua)
	Compensate = mustLoad("compensate")  // return a failed order's unit (compensate.lua)
	Preheat    = mustLoad("preheat")     // load a sale (preheat.lua)
	Reconcile  = mustLoad("reconcile")   // repair Redis from Postgres (reconcile.lua)
	OutboxAck  = mustLoad("outbox_ack")  // acknowledge delivered outbox entries
	ShardTake  = mustLoad("shard_take")  // take units from a shard
	ShardGive  = mustLoad("shard_give")  // give units to a shard

	RoomSetup          = mustLoad("room_setup")           // a sale's waiting room (room_setup.lua, preheat)
	RoomQueue          = mustLoad("room_queue")           // enter, poll, leave or tick the room (room_queue.lua)
	RoomAdmissionCheck = mustLoad("room_admission_check") // is a user admitted (room_admission_check.lua)

	// The waitlist's step, run by the backend (room_offer.lua).
	RoomOffer = mustLoad("room_offer")

	// The issue step of a proof-of-work challenge, room's and draw's (challenge_issue.lua).
	ChallengeIssue = mustLoad("challenge_issue")

	DrawEnter  = mustLoad("draw_enter")  // enter a draw, change the variant or withdraw (draw_enter.lua)
	DrawStatus = mustLoad("draw_status") // a user's entry and its state (draw_status.lua, read only)
)

// The draw's scripts run by the backend (docs/draw.md).
var (
	DrawSetup = mustLoad("draw_setup") // a draw sale's draw hash (draw_setup.lua, preheat)
	DrawClose = mustLoad("draw_close") // close the entries (draw_close.lua)
	DrawWave  = mustLoad("draw_wave")  // open a variant's next wave (draw_wave.lua)
)

func mustLoad(name string) *redis.Script {
	src, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("lua: no embedded script %q", name)) // a build mistake: caught by any test run
	}
	return redis.NewScript(string(src))
}

// Source returns the text of the embedded script name.
func Source(name string) string {
	b, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("lua: no embedded script %q", name))
	}
	return string(b)
}

// Names lists the embedded scripts (file names without ".lua"), sorted.
func Names() []string {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		panic(err) // the embedded directory: cannot fail
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".lua"))
	}
	sort.Strings(names) // not the files' order: "a.lua" sorts after "a-b.lua"
	return names
}
