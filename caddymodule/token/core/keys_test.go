package core

import (
	"testing"

	"github.com/seckilledge/seckill/caddymodule/edge"
)

// The keys boxed once per target are the script's keys of that target, a sale's and a shard's,
// and a cache past its bound starts again rather than growing.
func TestTheBoxedKeysAreTheIssueScriptsKeys(t *testing.T) {
	b := edge.KeyBox{Build: issueKeys, Max: maxTargetKeys}
	for _, target := range []string{"s1", "s1:2", "s1"} {
		got := b.Of(target)
		want := issueKeys(target)
		if len(got) != len(want) {
			t.Fatalf("%s: %d keys, want %d", target, len(got), len(want))
		}
		for i := range want {
			if got[i] != any(want[i]) {
				t.Fatalf("%s: key %d is %v, want %s", target, i, got[i], want[i])
			}
		}
	}
	if len(issueKeys("s1")) == len(issueKeys("s1:2")) {
		t.Fatal("a sale and a shard should have different key lists (the room's and draw's keys)")
	}
	for i := range maxTargetKeys + 1 {
		b.Of("t" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26)))
	}
	if b.Len() > maxTargetKeys {
		t.Fatalf("%d targets cached, want at most %d", b.Len(), maxTargetKeys)
	}
}
