//go:build integration

package token

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/internal/testenv"
)

// loadCaddy (re)loads an in-process Caddy serving seckill_token on addr with the given
// token_keys. Caddy is a process-wide singleton: tests that call it must not run in parallel.
func loadCaddy(t *testing.T, addr string, keys ...string) {
	t.Helper()
	loadCaddyOn(t, []string{testenv.RedisAddr()}, addr, keys...)
}

// loadCaddyOn is loadCaddy with the app's Redis addrs (several: a Redis Cluster's seeds).
func loadCaddyOn(t *testing.T, redisAddrs []string, addr string, keys ...string) {
	t.Helper()
	addrs, _ := json.Marshal(redisAddrs)
	var ks []string
	for _, k := range keys {
		ks = append(ks, fmt.Sprintf(`{"id":%q,"secret":"{env.SECKILL_TEST_TOKEN_KEY_%s}"}`, k, strings.ToUpper(k)))
	}
	cfg := fmt.Sprintf(`{
		"admin": {"disabled": true},
		"logging": {"logs": {"default": {"level": "ERROR"}}},
		"apps": {
			"seckill": {"redis": {"addrs": %s}, "amqp": {"url": %q}, "token_keys": [%s]},
			"http": {"servers": {"gw": {
				"listen": [%q],
				"automatic_https": {"disable": true},
				"routes": [{
					"match": [{"path": ["/seckill/*/token"]}],
					"handle": [{"handler": "seckill_token", "user": "{http.request.header.X-User-ID}", "ttl": "1m"}]
				}]
			}}}
		}
	}`, addrs, testenv.AMQPURL(), strings.Join(ks, ","), addr)
	if err := caddy.Load([]byte(cfg), true); err != nil {
		t.Fatalf("caddy.Load: %v", err)
	}
}

func activeKeyring(t *testing.T) *tokenformat.Keyring {
	t.Helper()
	app, err := caddy.ActiveContext().App("seckill")
	if err != nil {
		t.Fatal(err)
	}
	return app.(*caddymodule.App).Keyring()
}

func postToken(t *testing.T, addr, sale, user string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/seckill/"+sale+"/token", nil)
	req.Header.Set("X-User-ID", user)
	// No keep-alive: a reload closes the previous config's connections.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func tokenOf(t *testing.T, body string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `"token":"`)
	tok, _, ok2 := strings.Cut(rest, `"`)
	if !ok || !ok2 {
		t.Fatalf("no token in %s", body)
	}
	return tok
}

func TestKeyRotationThroughAConfigReloadKeepsOldTokensUntilTheKeyIsRemoved(t *testing.T) {
	t.Setenv("SECKILL_TEST_TOKEN_KEY_K1", "old-key-0123456789-0123456789-0123456789")
	t.Setenv("SECKILL_TEST_TOKEN_KEY_K2", "new-key-0123456789-0123456789-0123456789")
	rdb := testenv.Redis(t)
	sale, user := testenv.ID("s"), testenv.ID("u")
	preheat(t, rdb, sale, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	t.Cleanup(func() { _ = caddy.Stop() })

	loadCaddy(t, addr, "k1")
	status, body := postToken(t, addr, sale, user)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	old := tokenOf(t, body)
	if !strings.HasPrefix(old, "1.k1.") {
		t.Fatalf("token %s not signed with k1", old)
	}

	loadCaddy(t, addr, "k2", "k1") // rotation: k2 signs, k1 still verifies
	status, body = postToken(t, addr, sale, testenv.ID("u"))
	if status != 200 || !strings.HasPrefix(tokenOf(t, body), "1.k2.") {
		t.Fatalf("after rotation new tokens must be signed with k2: %d %s", status, body)
	}
	if _, err := activeKeyring(t).Verify(old, sale, user, time.Now()); err != nil {
		t.Fatalf("a token of the previous key refused while that key is configured: %v", err)
	}

	loadCaddy(t, addr, "k2") // k1 retired
	if _, err := activeKeyring(t).Verify(old, sale, user, time.Now()); !errors.Is(err, tokenformat.ErrInvalid) {
		t.Fatalf("a token of a removed key: %v, want ErrInvalid", err)
	}
	if status, body = postToken(t, addr, sale, user); status != 200 {
		t.Fatalf("issuing after the key was retired: %d %s", status, body)
	}
}

func TestAConfigWithoutTokenKeysIsRefused(t *testing.T) {
	cfg := `{"admin": {"disabled": true}, "apps": {"http": {"servers": {"gw": {
		"listen": ["127.0.0.1:0"], "automatic_https": {"disable": true},
		"routes": [{"handle": [{"handler": "seckill_token"}]}]}}}}}`
	err := caddy.Validate(mustConfig(t, cfg))
	if err == nil || !strings.Contains(err.Error(), "token_keys") {
		t.Fatalf("validate: %v, want an error naming token_keys", err)
	}
}

func mustConfig(t *testing.T, s string) *caddy.Config {
	t.Helper()
	var c caddy.Config
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatal(err)
	}
	return &c
}
