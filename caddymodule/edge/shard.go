package edge

import (
	"errors"
	"fmt"

	"github.com/seckilledge/seckill/contract"
)

// ShardCache remembers which sales are sharded (caddymodule.ShardCounts).
type ShardCache interface {
	Of(sale string) int
	Learn(sale string, k int)
	Forget(sale string)
}

// ShardAnswer is what one script call says about sharding: Sharded is the shard count k > 1
// when the call ran on a sharded sale's own keys (nothing was decided), Gone that the keys it
// ran on hold no sale (a shard that expired or was recreated).
type ShardAnswer struct {
	Sharded int
	Gone    bool
}

// ErrShardedShard is returned when a shard answers "sharded": shards are never sharded.
var ErrShardedShard = errors.New("a shard answered sharded")

// OnUserShard decides on the user's shard of sale (the sale itself when it is not sharded).
// try runs one script call on target, a sale id or a shard id. A sale not yet known to be
// sharded is tried on its own keys first; when it answers sharded, the count is learnt and
// try runs again on the user's shard: one extra round trip per instance and sale, once. A
// shard that turns out gone is forgotten, so the next request learns the sale again.
func OnUserShard[R any](c ShardCache, sale, user string, try func(target string) (R, ShardAnswer, error)) (R, string, error) {
	k := c.Of(sale)
	target := contract.UserShardID(sale, user, k)
	r, a, err := try(target)
	if err == nil && a.Sharded > 0 && k == 1 {
		if a.Sharded < 2 || a.Sharded > contract.MaxShards {
			return r, target, fmt.Errorf("%w: shard count %d", ErrShardedShard, a.Sharded)
		}
		c.Learn(sale, a.Sharded)
		k = c.Of(sale)
		target = contract.UserShardID(sale, user, k)
		r, a, err = try(target)
	}
	if err != nil {
		return r, target, err
	}
	if a.Sharded > 0 {
		return r, target, ErrShardedShard
	}
	if a.Gone && k > 1 {
		c.Forget(sale)
	}
	return r, target, nil
}
