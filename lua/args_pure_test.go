package lua

import (
	"strings"
	"testing"
)

// hashTag is the part of key Redis Cluster hashes: the text between the first '{' and the
// next '}'.
func hashTag(key string) string {
	i := strings.IndexByte(key, '{')
	j := strings.IndexByte(key[i+1:], '}')
	return key[i+1 : i+1+j]
}

// Every typed call touches one slot, so it runs unchanged on Redis Cluster.
func TestEveryTypedCallKeepsItsKeysInOneSlot(t *testing.T) {
	t.Parallel()
	calls := map[string][]string{
		"gate":       GateCall{Sale: "s1:2"}.Keys(),
		"preheat":    PreheatCall{Sale: "s1"}.Keys(),
		"reconcile":  ReconcileCall{Sale: "s1:0", Held: true}.Keys(),
		"compensate": CompensateCall{Sale: "s1:1"}.Keys(),
		"shard_take": ShardTakeCall{From: "s1:0", To: "s1:1"}.Keys(),
		"shard_give": ShardGiveCall{To: "s1:1"}.Keys(),
		"outbox_ack": OutboxAckCall{Sale: "s1"}.Keys(),
	}
	for name, keys := range calls {
		for _, k := range keys[1:] {
			if hashTag(k) != hashTag(keys[0]) {
				t.Errorf("%s: keys %v span more than one hash tag", name, keys)
			}
		}
	}
	if n := len(ReconcileCall{Sale: "s1"}.Keys()); n != 2 {
		t.Errorf("reconcile without Held passes %d keys, want 2 (meta, buyers)", n)
	}
}
