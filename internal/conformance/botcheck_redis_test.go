//go:build integration

package conformance_test

// The challenge provider against the shared Redis (caddymodule/botcheck/botcheckcaddy).

import (
	"context"
	"encoding/hex"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/botcheck"
	"github.com/seckilledge/seckill/caddymodule/botcheck/botcheckcaddy"
	"github.com/seckilledge/seckill/caddymodule/botcheck/botchecktest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// gateway is a provider provisioned as a gateway provisions it, with its own Redis client.
func gateway(t *testing.T, iss *botchecktest.Issuer) *botcheckcaddy.Provider {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr()})
	t.Cleanup(func() { _ = rdb.Close() })
	p := &botcheckcaddy.Provider{Name: botcheckcaddy.PrivacyPass, IssuerName: iss.Name, IssuerKey: iss.TokenKey()}
	if err := p.Provision(rdb, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPrivacyPassTokenIsSpentOnceAcrossGatewaysUnderConcurrentEntries(t *testing.T) {
	rdb := testenv.Redis(t)
	iss := botchecktest.NewIssuer(t, "issuer.example")
	gateways := []*botcheckcaddy.Provider{gateway(t, iss), gateway(t, iss)}
	sale := testenv.ID("pp")
	b := botcheck.Binding{Host: "shop.example", Sale: sale}
	challenge := (&botcheck.PrivacyPass{IssuerName: iss.Name, Key: iss.Key}).ChallengeAt(b, time.Now())
	replayed := iss.Token(t, challenge)
	fresh := make([][]byte, 8)
	for i := range fresh {
		fresh[i] = iss.Token(t, challenge)
	}

	const copies = 32
	outcomes := make(chan botcheck.Outcome, copies+len(fresh))
	start := make(chan struct{})
	var wg sync.WaitGroup
	enter := func(i int, token []byte) {
		defer wg.Done()
		<-start
		r := entry("shop.example", map[string]string{"Authorization": botchecktest.Authorization(token)})
		o, _ := gateways[i%2].Check(context.Background(), httptest.NewRecorder(), r, sale)
		outcomes <- o
	}
	for i := range copies {
		wg.Add(1)
		go enter(i, replayed)
	}
	for i, tok := range fresh {
		wg.Add(1)
		go enter(i, tok)
	}
	close(start)
	wg.Wait()
	close(outcomes)
	got := map[botcheck.Outcome]int{}
	for o := range outcomes {
		got[o]++
	}
	// One of the 32 copies passes, each of the 8 other tokens passes, the rest are spent.
	if got[botcheck.Passed] != 1+len(fresh) || got[botcheck.Failed] != copies-1 || len(got) != 2 {
		t.Fatalf("outcomes %v; want %d passed, %d failed", got, 1+len(fresh), copies-1)
	}
	// The nonce is kept under the sale's hash tag for the token's life (two windows), no longer.
	key := contract.PrivacyPassKey(sale, hex.EncodeToString(replayed[2:34]))
	ttl, err := rdb.PTTL(context.Background(), key).Result()
	if err != nil || ttl <= time.Hour || ttl > 2*time.Hour {
		t.Fatalf("%s: PTTL %v, %v; want within (1h, 2h]", key, ttl, err)
	}
	t.Cleanup(func() {
		keys := []string{key}
		for _, tok := range fresh {
			keys = append(keys, contract.PrivacyPassKey(sale, hex.EncodeToString(tok[2:34])))
		}
		rdb.Del(context.Background(), keys...)
	})
	// The same token at another sale's entry is foreign there, never a second spend.
	r := entry("shop.example", map[string]string{botcheckcaddy.Header: botchecktest.Authorization(fresh[0])})
	if o, _ := gateways[0].Check(context.Background(), httptest.NewRecorder(), r, testenv.ID("pp")); o != botcheck.Failed {
		t.Errorf("a token at another sale: %v, want failed", o)
	}
}
