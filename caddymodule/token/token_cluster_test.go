package token

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The issuer runs unchanged when the seckill app is given the seeds of a 3-master Redis
// Cluster: its script touches only the sale's hash-tagged keys, so it never crosses a slot.
func TestTokenIssuerWorksOnARedisCluster(t *testing.T) {
	t.Setenv("SECKILL_TEST_TOKEN_KEY_K1", "cluster-key-0123456789-0123456789-012345")
	seeds := testenv.StartRedisCluster(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()

	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	seedsJSON, _ := json.Marshal(seeds)
	cfg := fmt.Sprintf(`{
		"admin": {"disabled": true},
		"logging": {"logs": {"default": {"level": "ERROR"}}},
		"apps": {
			"seckill": {"redis": {"addrs": %s}, "amqp": {"url": %q},
				"token_keys": [{"id":"k1","secret":"{env.SECKILL_TEST_TOKEN_KEY_K1}"}]},
			"http": {"servers": {"gw": {
				"listen": [%q],
				"automatic_https": {"disable": true},
				"routes": [{
					"match": [{"path": ["/seckill/*/token"]}],
					"handle": [{"handler": "seckill_token", "user": "{http.request.header.X-User-ID}", "ttl": "1m"}]
				}]
			}}}
		}
	}`, seedsJSON, testenv.AMQPURL(), addr)
	if err := caddy.Load([]byte(cfg), true); err != nil {
		t.Fatalf("caddy.Load: %v", err)
	}
	t.Cleanup(func() { _ = caddy.Stop() })

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
