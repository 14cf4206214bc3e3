package core

import (
	"strconv"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/lua"
)

// The keys boxed once per sale are gate.lua's keys of that sale or shard, and the cache past
// its bound starts again rather than growing.
func TestTheBoxedKeysAreTheGateScriptsKeys(t *testing.T) {
	b := edge.KeyBox{Build: func(sale string) []string { return lua.GateCall{Sale: sale}.Keys() }, Max: maxSaleKeys}
	for _, target := range []string{"s1", "s1:2", "s1"} {
		got, want := b.Of(target), lua.GateCall{Sale: target}.Keys()
		if len(got) != len(want) {
			t.Fatalf("%s: %d keys, want %d", target, len(got), len(want))
		}
		for i := range want {
			if got[i] != any(want[i]) {
				t.Fatalf("%s: key %d is %v, want %s", target, i, got[i], want[i])
			}
		}
	}
	for i := range maxSaleKeys + 1 {
		b.Of("s" + strconv.Itoa(i))
	}
	if b.Len() > maxSaleKeys {
		t.Fatalf("%d sales cached, want at most %d", b.Len(), maxSaleKeys)
	}
}
