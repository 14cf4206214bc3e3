//go:build integration

package draw

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/botcheck/botchecktest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// enterWith enters the draw with an Authorization value, returning the status, the body and
// the WWW-Authenticate header.
func enterWith(t *testing.T, base, sale, user, variant, authorization string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/seckill/"+sale+"/draw", strings.NewReader(`{"variant":"`+variant+`"}`))
	req.Header.Set("X-User-ID", user)
	// Both gateways serve one site, as behind a load balancer: the challenge names its origin.
	req.Host = "shop.example"
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("WWW-Authenticate")
}

// privacyPassIssuer is the issuer privacyPassGateway's draw trusts.
var (
	privacyPassIssuer  *botchecktest.Issuer
	privacyPassGateway = gateway(gatewayConfig{Two: true, Setup: func(tb testing.TB, c *gatewayConfig) {
		privacyPassIssuer = botchecktest.NewIssuer(tb, "issuer.example")
		c.Draw = map[string]any{"challenge_provider": map[string]any{
			"name": "privacypass", "issuer_name": privacyPassIssuer.Name, "issuer_key": privacyPassIssuer.TokenKey()}}
	}})
)

func TestADrawWithPrivacyPassTakesEachTokenOnceAcrossGateways(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw, gw2 := privacyPassGateway.Two(t)
	iss := privacyPassIssuer
	sale := newDraw(t, rdb, drawArgs{Variants: map[string]int{"s": 1, "m": 1}, OpensIn: -time.Minute, ClosesIn: time.Hour})

	// Without a token: 401 with the challenge a Privacy Pass client answers by itself.
	status, body, challenge := enterWith(t, gw, sale, "alice", "s", "")
	if status != http.StatusUnauthorized || !strings.Contains(body, contract.CodeBotChallengeRequired) || !strings.HasPrefix(challenge, "PrivateToken ") {
		t.Fatalf("no token: %d %s, WWW-Authenticate %q", status, body, challenge)
	}
	answer := iss.Answer(t, challenge)
	if status, body, _ := enterWith(t, gw, sale, "alice", "s", answer); status != http.StatusOK {
		t.Fatalf("the answered challenge: %d %s", status, body)
	}
	// The same token at the other gateway (or again at this one) is spent.
	for _, base := range []string{gw2, gw} {
		if status, body, _ := enterWith(t, base, sale, "bob", "m", answer); status != http.StatusUnauthorized || !strings.Contains(body, contract.CodeBotChallengeFailed) {
			t.Fatalf("the token again at %s: %d %s, want 401 %s", base, status, body, contract.CodeBotChallengeFailed)
		}
	}
	// Changing the variant is an entry: a new token for it.
	if status, body, _ := enterWith(t, gw2, sale, "alice", "m", iss.Answer(t, challenge)); status != http.StatusOK || !strings.Contains(body, `"variant":"m"`) {
		t.Fatalf("a new token for a new variant: %d %s", status, body)
	}
	// Another issuer's token for the same challenge is not ours.
	other := botchecktest.NewIssuer(t, "issuer.example")
	if status, body, _ := enterWith(t, gw, sale, "carol", "s", other.Answer(t, challenge)); status != http.StatusUnauthorized || !strings.Contains(body, contract.CodeBotChallengeFailed) {
		t.Fatalf("another issuer's token: %d %s", status, body)
	}
}
