//go:build integration

package token

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The issuer runs unchanged when the seckill app is given the seeds of a 3-master Redis
// Cluster: its script touches only the sale's hash-tagged keys, so it never crosses a slot.
func TestTokenIssuerWorksOnARedisCluster(t *testing.T) {
	t.Setenv("SECKILL_TEST_TOKEN_KEY_K1", "cluster-key-0123456789-0123456789-012345")
	seeds, rdb := handlertest.RedisCluster(t)
	ctx := context.Background()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	t.Cleanup(func() { _ = caddy.Stop() })
	loadCaddyOn(t, seeds, addr, "k1")

	// Several sales, so their slots land on different masters.
	for i := range 6 {
		sale, user := testenv.ID(fmt.Sprintf("s%d", i)), testenv.ID("u")
		preheat(t, rdb, sale, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
		status, body := postToken(t, addr, sale, user)
		if status != 200 {
			t.Fatalf("%s: %d %s", sale, status, body)
		}
		tok := tokenOf(t, body)
		if !strings.HasPrefix(tok, "1.k1.") {
			t.Fatalf("token %s not signed with k1", tok)
		}
		c, err := activeKeyring(t).Verify(tok, sale, user, time.Now())
		if err != nil {
			t.Fatalf("%s: the issued token does not verify: %v", sale, err)
		}
		if got := rdb.HGet(ctx, contract.TokensKey(sale), user).Val(); got != tokenformat.StoreValue(c) {
			t.Fatalf("%s: tokens hash holds %q, the gate expects %q", sale, got, tokenformat.StoreValue(c))
		}
		metaAt := rdb.PExpireTime(ctx, contract.MetaKey(sale)).Val()
		if at := rdb.PExpireTime(ctx, contract.TokensKey(sale)).Val(); at <= 0 || at != metaAt {
			t.Fatalf("%s: tokens hash expires at %v, the sale's meta at %v", sale, at, metaAt)
		}
	}
}
