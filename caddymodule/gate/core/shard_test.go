package core

import (
	"testing"

	"github.com/seckilledge/seckill/contract"
)

func TestTheShardedAnswerCarriesAValidShardCount(t *testing.T) {
	v, err := parseReply([]any{int64(7), int64(8)})
	if err != nil || v.Outcome != Sharded || v.Shards != 8 {
		t.Fatalf("parseReply(7, 8) = %+v, %v", v, err)
	}
	for _, bad := range [][]any{{int64(7)}, {int64(7), int64(1)}, {int64(7), int64(contract.MaxShards + 1)}, {int64(7), "x"}} {
		if _, err := parseReply(bad); err == nil {
			t.Errorf("parseReply(%v) accepted", bad)
		}
	}
	// A client never sees it: it has no refusal of its own.
	if _, ok := refusals[Sharded]; ok {
		t.Error("sharded has a refusal")
	}
}
