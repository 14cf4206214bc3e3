//go:build ignore

// lua-source prints the source of a script as the gateway loads it, for benchmarks that run it
// outside the gateway (scripts/bench-combined.sh):
//
//	go run scripts/lua-source.go throttled:gate          # the zones and the gate in one call (lua/throttled.go)
//	go run scripts/lua-source.go throttled:gate_common   # the zones and the common sale's gate
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/seckilledge/seckill/lua"
)

func main() {
	if len(os.Args) != 2 || !strings.HasPrefix(os.Args[1], "throttled:") {
		fmt.Fprintln(os.Stderr, "usage: go run scripts/lua-source.go throttled:<gate|gate_common|token_issue>")
		os.Exit(2)
	}
	fmt.Print(lua.ThrottledSource(strings.TrimPrefix(os.Args[1], "throttled:")))
}
