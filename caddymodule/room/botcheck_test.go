//go:build integration

package room

import (
	"net/http"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/botcheck/botcheckcaddy"
	"github.com/seckilledge/seckill/caddymodule/botcheck/botchecktest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// botcheckSiteverify is the stand-in siteverify of botcheckGateway: "good" passes for the
// gateway's host, "down" answers 502, anything else is refused.
var (
	botcheckSiteverify *botchecktest.Siteverify
	botcheckGateway    = gateway(gatewayConfig{Setup: func(tb testing.TB, c *gatewayConfig) {
		botcheckSiteverify = botchecktest.NewSiteverify(tb, "test-secret", map[string]botchecktest.Answer{
			"good": {Body: `{"success":true,"hostname":"127.0.0.1","action":"enter"}`},
			"down": {Status: http.StatusBadGateway},
		})
		c.Room = map[string]any{"challenge_provider": map[string]any{
			"name": "turnstile", "secret": "test-secret", "verify_url": botcheckSiteverify.URL, "action": "enter"}}
	}})
)

func TestARoomWithAChallengeProviderChecksEachEntryOnceAndNoPoll(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw := botcheckGateway.Base(t)
	calls := &botcheckSiteverify.Calls
	r := newRoom(t, rdb, 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "60000"})
	token := func(v string) map[string]string { return map[string]string{botcheckcaddy.Header: v} }

	if got := enter(t, gw, r.Sale, "alice", nil); got.Status != http.StatusForbidden || got.Code != contract.CodeBotChallengeRequired {
		t.Fatalf("an entry without a token: %d %s, want 403 %s", got.Status, got.Raw, contract.CodeBotChallengeRequired)
	}
	if got := enter(t, gw, r.Sale, "alice", token("bad")); got.Status != http.StatusForbidden || got.Code != contract.CodeBotChallengeFailed {
		t.Fatalf("an entry with a bad token: %d %s, want 403 %s", got.Status, got.Raw, contract.CodeBotChallengeFailed)
	}
	// The site fails closed: a provider that cannot answer closes the door, with Retry-After.
	if got := enter(t, gw, r.Sale, "alice", token("down")); got.Status != http.StatusServiceUnavailable || got.Code != contract.CodeUnavailable || got.Retry == "" {
		t.Fatalf("an entry while the provider is down: %d %s (Retry-After %q), want 503 %s", got.Status, got.Raw, got.Retry, contract.CodeUnavailable)
	}
	first := enter(t, gw, r.Sale, "first", token("good"))
	alice := enter(t, gw, r.Sale, "alice", token("good"))
	if first.State != "admitted" || alice.State != "waiting" || alice.Ticket == "" {
		t.Fatalf("entries with good tokens: %s / %s", first.Raw, alice.Raw)
	}
	asked := calls.Load()
	if asked != 4 {
		t.Fatalf("the provider was asked %d times for 4 entries with a token (and none without)", asked)
	}
	// The verdict rides with the ticket: polls never ask the provider again.
	for range 20 {
		if got := poll(t, gw, r.Sale, "alice", alice.Ticket); got.Status != http.StatusOK || got.State != "waiting" {
			t.Fatalf("poll: %d %s", got.Status, got.Raw)
		}
	}
	if n := calls.Load(); n != asked {
		t.Fatalf("20 polls asked the provider %d times; a poll must never ask it", n-asked)
	}
}
