package reconcile

import "testing"

func TestShardDeltasSpreadReconcileRepairsWithoutGoingNegative(t *testing.T) {
	t.Parallel()
	if d := ShardDeltas([]int64{1, 1, 1}, 5); d[0] != 2 || d[1] != 2 || d[2] != 1 {
		t.Fatalf("+5 over 3 shards = %v", d)
	}
	if d := ShardDeltas([]int64{1, 6, 2}, -7); d[0] != 0 || d[1] != -6 || d[2] != -1 {
		t.Fatalf("-7 over [1 6 2] = %v", d)
	}
	if d := ShardDeltas([]int64{1, 1}, -3); d[0]+d[1] != -3 {
		t.Fatalf("-3 over [1 1] = %v: the whole delta must be applied", d)
	}
}
