//go:build integration

package token

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"

	// seckill_throttle, in front of the issuer.
	_ "github.com/seckilledge/seckill/caddymodule/throttle"
)

func scriptCalls(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "cmdstat_evalsha:") || strings.HasPrefix(line, "cmdstat_eval:") {
			_, rest, _ := strings.Cut(line, "calls=")
			v, _, _ := strings.Cut(rest, ",")
			c, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("commandstats line %q", line)
			}
			n += c
		}
	}
	return n
}

// A throttle right before the issuer in its route decides in the issuer's script call: one
// call per token request, the zone's limit held, its refusal the throttle's 429 with its
// headers, and nothing issued to a refused request.
func TestAThrottleRightBeforeTheIssuerDecidesWithItInOneScriptCall(t *testing.T) {
	t.Setenv("SECKILL_TEST_TOKEN_KEY_K1", "joint-key-0123456789-0123456789-0123456")
	rs := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	sale := testenv.ID("s")
	preheat(t, rdb, sale, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	for _, s := range []*redis.Script{lua.TokenIssue, lua.TokenIssueThrottled, lua.Throttle} {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			t.Fatal(err)
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	zone := testenv.ID("tok")
	cfg := map[string]any{
		"admin":   map[string]any{"disabled": true},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"level": "ERROR"}}},
		"apps": map[string]any{
			"seckill": map[string]any{"redis": map[string]any{"addrs": []string{rs.Addr()}}, "amqp": map[string]any{"url": testenv.AMQPURL()},
				"relay":      map[string]any{"disabled": true},
				"token_keys": []any{map[string]any{"id": "k1", "secret": "{env.SECKILL_TEST_TOKEN_KEY_K1}"}}},
			"http": map[string]any{"servers": map[string]any{"gw": map[string]any{
				"listen": []string{addr}, "automatic_https": map[string]any{"disable": true},
				"routes": []any{map[string]any{
					"match": []any{map[string]any{"path": []string{"/seckill/*/token"}}},
					"handle": []any{
						json.RawMessage(fmt.Sprintf(`{"handler":"seckill_throttle","zones":[{"name":%q,"key":"{http.request.header.X-User-ID}","limit":2,"window":60000000000}]}`, zone)),
						map[string]any{"handler": "seckill_token", "user": "{http.request.header.X-User-ID}", "ttl": "1m"},
					},
				}},
			}}},
		},
	}
	raw, _ := json.Marshal(cfg)
	if err := caddy.Load(raw, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = caddy.Stop() })

	user := testenv.ID("u")
	before := scriptCalls(t, rdb)
	var statuses []int
	var last *http.Response
	var second string
	for i := range 3 {
		if i == 2 {
			second = rdb.HGet(ctx, contract.TokensKey(sale), user).Val()
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/seckill/"+sale+"/token", nil)
		req.Header.Set("X-User-ID", user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
		last = resp
	}
	if calls := scriptCalls(t, rdb) - before; calls != 3 {
		t.Fatalf("%d script calls for 3 token requests, want 3 (one each)", calls)
	}
	if statuses[0] != 200 || statuses[1] != 200 || statuses[2] != 429 {
		t.Fatalf("statuses %v, want 200 200 429", statuses)
	}
	if last.Header.Get("Retry-After") == "" || !strings.Contains(last.Header.Get("RateLimit"), ";r=0;") {
		t.Fatalf("the refusal's headers: %v", last.Header)
	}
	// The refused request issued nothing: the user's live token is still the second one's.
	if now := rdb.HGet(ctx, contract.TokensKey(sale), user).Val(); second == "" || now != second {
		t.Fatalf("the user's token was %q after the second request and is %q after the refused third", second, now)
	}
}
