// Package lua embeds the Redis Lua scripts of the flash-sale edge, one file per script, and
// exposes each as a typed go-redis Script value (EVALSHA, falling back to EVAL on NOSCRIPT):
// lua.Gate, lua.TokenIssue, ... A misspelt script is a compile error, not a panic at the
// first request.
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
)

func mustLoad(name string) *redis.Script {
	src, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("lua: no embedded script %q", name)) // a build mistake: caught by any test run
	}
	return redis.NewScript(string(src))
}

var byName = func() map[string]*redis.Script {
	m := map[string]*redis.Script{}
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		src, err := files.ReadFile(e.Name())
		if err != nil {
			panic(err)
		}
		m[strings.TrimSuffix(e.Name(), ".lua")] = redis.NewScript(string(src))
	}
	return m
}()

// Script returns the embedded script name (the file name without ".lua"). It panics when no
// such file is embedded.
//
// Deprecated: use the typed values (lua.Gate, lua.TokenIssue, ...): a wrong name then does
// not compile. Kept for callers outside the edge until they move.
func Script(name string) *redis.Script {
	s, ok := byName[name]
	if !ok {
		panic(fmt.Sprintf("lua: no embedded script %q", name))
	}
	return s
}

// Source returns the text of the embedded script name.
func Source(name string) string {
	b, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("lua: no embedded script %q", name))
	}
	return string(b)
}

// Names lists the embedded scripts, sorted.
func Names() []string {
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
