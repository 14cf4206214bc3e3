//go:build integration

package gate

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/dpop"
	"github.com/seckilledge/seckill/caddymodule/dpop/dpoptest"
	"github.com/seckilledge/seckill/caddymodule/tokenformat"

	// The token issuer of the device-bound routes.
	_ "github.com/seckilledge/seckill/caddymodule/token"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// shopHost is the host every device-bound test request names (and its proofs' htu): gateways
// behind one load balancer see the same Host, whichever of them answers.
const shopHost = "shop.test"

// boundConfig is a gateway whose token route (/seckill/<sale>/token) and purchase route
// (/seckill/<sale>/buy) bind tokens to the device as binding says.
func boundConfig(t testing.TB) gatewayConfig {
	c := newGatewayConfig(t, testenv.RabbitVhost(t))
	c.RequireToken = true
	c.RelayOff = true
	return c
}

func boundJSON(c gatewayConfig, binding string) []byte {
	var cfg map[string]any
	if err := json.Unmarshal(c.JSON(), &cfg); err != nil {
		panic(err)
	}
	srv := cfg["apps"].(map[string]any)["http"].(map[string]any)["servers"].(map[string]any)["gw"].(map[string]any)
	routes := srv["routes"].([]any)
	buy := routes[0].(map[string]any)["handle"].([]any)
	gate := buy[len(buy)-1].(map[string]any)
	gate["device_binding"] = binding
	token := map[string]any{
		"match": []any{map[string]any{"path": []string{"/seckill/*/token"}}},
		"handle": []any{map[string]any{"handler": "seckill_token", "user": "{http.request.header.X-User-ID}",
			"lead_time": "0s", "device_binding": binding}},
	}
	srv["routes"] = append([]any{token}, routes...)
	b, _ := json.Marshal(cfg)
	return b
}

func startBound(t testing.TB, binding string) string {
	t.Helper()
	c := boundConfig(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", c.Port)
	handlertest.StartCaddy(t, boundJSON(c, binding), base)
	return base
}

// bound is one request to a device-bound route: its answer.
type bound struct {
	Status int    `json:"-"`
	Code   string `json:"code"`
	Token  string `json:"token"`
	Order  string `json:"order_id"`
}

// send posts to base+path with Host shopHost, the user, the token and the DPoP proofs given.
func send(t testing.TB, base, path, user, token string, proofs ...string) bound {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, nil)
	req.Host = shopHost
	req.Header.Set("X-User-ID", user)
	if token != "" {
		req.Header.Set("X-Seckill-Token", token)
	}
	for _, p := range proofs {
		req.Header.Add(dpop.Header, p)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return bound{}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var b bound
	if err := json.Unmarshal(body, &b); err != nil {
		t.Errorf("%s: status %d, body %q is not JSON", path, resp.StatusCode, body)
	}
	b.Status = resp.StatusCode
	return b
}

func htu(sale, step string) string { return "http://" + shopHost + "/seckill/" + sale + "/" + step }

// boundToken takes a token for user bound to k (the issue's own proof).
func boundToken(t testing.TB, base, sale, user string, k *dpoptest.Key) string {
	t.Helper()
	a := send(t, base, "/seckill/"+sale+"/token", user, "", k.Proof(t, "POST", htu(sale, "token"), ""))
	if a.Status != http.StatusOK || !strings.HasPrefix(a.Token, "2.") {
		t.Fatalf("token issue with a proof: %+v, want 200 and a bound (2.) token", a)
	}
	return a.Token
}

// TestADeviceBoundTokenBuysOnlyWithAFreshProofOfItsKey drives device_binding required through
// the token issue and the purchase, against the real Redis: the device that took the token
// buys; every way around the key is refused with its code, and nothing of them is sold.
func TestADeviceBoundTokenBuysOnlyWithAFreshProofOfItsKey(t *testing.T) {
	rdb := testenv.Redis(t)
	base := startBound(t, "required")
	sale := newSale(t, rdb, 10, -time.Minute, time.Hour)
	buyPath := "/seckill/" + sale + "/buy"
	device, thief := dpoptest.NewKey(t), dpoptest.NewKey(t)

	if a := send(t, base, "/seckill/"+sale+"/token", "u1", ""); a.Status != http.StatusUnauthorized || a.Code != contract.CodeProofRequired {
		t.Fatalf("token issue without a proof: %+v, want 401 proof_required", a)
	}
	if a := send(t, base, "/seckill/"+sale+"/token", "u1", "", device.Proof(t, "POST", htu(sale, "buy"), "")); a.Code != contract.CodeProofWrongTarget {
		t.Fatalf("token issue with a proof made for the purchase: %+v, want proof_wrong_target", a)
	}
	tok := boundToken(t, base, sale, "u1", device)

	now := time.Now()
	claims := func(f func(c *dpoptest.Claims)) dpoptest.Claims {
		c := dpoptest.Claims{HTM: "POST", HTU: htu(sale, "buy"), IAT: now.Unix(), JTI: dpoptest.NewJTI(t), ATH: dpop.TokenHash(tok)}
		f(&c)
		return c
	}
	genuine := device.Proof(t, "POST", htu(sale, "buy"), tok)
	parts := strings.Split(genuine, ".")
	for _, c := range []struct {
		name   string
		proofs []string
		status int
		code   string
	}{
		{"no proof (the token copied alone)", nil, http.StatusUnauthorized, contract.CodeProofRequired},
		{"the copied token with another device's key", []string{thief.Proof(t, "POST", htu(sale, "buy"), tok)}, http.StatusForbidden, contract.CodeProofKeyMismatch},
		{"a forged signature", []string{parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2]))}, http.StatusUnauthorized, contract.CodeInvalidProof},
		{"the thief's key in the header over the device's signature", []string{strings.Split(thief.Proof(t, "POST", htu(sale, "buy"), tok), ".")[0] + "." + parts[1] + "." + parts[2]}, http.StatusUnauthorized, contract.CodeInvalidProof},
		{"two proofs", []string{genuine, genuine}, http.StatusUnauthorized, contract.CodeInvalidProof},
		{"a proof for another URL", []string{device.Sign(t, claims(func(c *dpoptest.Claims) { c.HTU = htu(sale, "token") }))}, http.StatusUnauthorized, contract.CodeProofWrongTarget},
		{"a proof for another method", []string{device.Sign(t, claims(func(c *dpoptest.Claims) { c.HTM = "GET" }))}, http.StatusUnauthorized, contract.CodeProofWrongTarget},
		{"a proof too old", []string{device.Sign(t, claims(func(c *dpoptest.Claims) { c.IAT = now.Add(-2 * time.Minute).Unix() }))}, http.StatusUnauthorized, contract.CodeProofExpired},
		{"a proof over another token", []string{device.Sign(t, claims(func(c *dpoptest.Claims) { c.ATH = dpop.TokenHash("x") }))}, http.StatusUnauthorized, contract.CodeInvalidProof},
	} {
		a := send(t, base, buyPath, "u1", tok, c.proofs...)
		if a.Status != c.status || a.Code != c.code {
			t.Errorf("%s: %+v, want %d %s", c.name, a, c.status, c.code)
		}
	}
	if got := stockOf(t, rdb, sale); got != 10 {
		t.Fatalf("stock %d after the refusals, want 10: something sold", got)
	}

	if a := send(t, base, buyPath, "u1", tok, genuine); a.Status != http.StatusAccepted {
		t.Fatalf("the device's own proof: %+v, want 202", a)
	}
	// The same proof again: refused as a replay (not already_bought: the proof is spent
	// before anything else of the purchase is looked at).
	if a := send(t, base, buyPath, "u1", tok, genuine); a.Status != http.StatusUnauthorized || a.Code != contract.CodeProofReplayed {
		t.Fatalf("the proof replayed: %+v, want 401 proof_replayed", a)
	}
	if got := stockOf(t, rdb, sale); got != 9 {
		t.Fatalf("stock %d, want 9", got)
	}

	// A bearer token (issued while the sale bound nothing) is refused under required.
	kr := testKeyring(t, "k1")
	bearer, c, _ := kr.Issue(sale, "u2", time.Now().Add(time.Minute))
	rdb.HSet(t.Context(), contract.TokensKey(sale), "u2", tokenStoreValue(c))
	if a := send(t, base, buyPath, "u2", bearer, device.Proof(t, "POST", htu(sale, "buy"), bearer)); a.Status != http.StatusForbidden || a.Code != contract.CodeUnboundToken {
		t.Fatalf("a bearer token under required: %+v, want 403 unbound_token", a)
	}
}

// TestOptionalBindingKeepsBearerTokensAndBindsTheRest: under optional a request without a
// proof gets and spends a bearer token as before (the demo's curl steps), one with a proof
// gets a bound token, which then needs its key's proof.
func TestOptionalBindingKeepsBearerTokensAndBindsTheRest(t *testing.T) {
	rdb := testenv.Redis(t)
	base := startBound(t, "optional")
	sale := newSale(t, rdb, 10, -time.Minute, time.Hour)
	buyPath := "/seckill/" + sale + "/buy"

	a := send(t, base, "/seckill/"+sale+"/token", "curl", "")
	if a.Status != http.StatusOK || !strings.HasPrefix(a.Token, "1.") {
		t.Fatalf("token without a proof: %+v, want a bearer (1.) token", a)
	}
	if b := send(t, base, buyPath, "curl", a.Token); b.Status != http.StatusAccepted {
		t.Fatalf("a bearer purchase under optional: %+v, want 202", b)
	}
	k := dpoptest.NewKey(t)
	tok := boundToken(t, base, sale, "page", k)
	if b := send(t, base, buyPath, "page", tok); b.Code != contract.CodeProofRequired {
		t.Fatalf("a bound token without its proof under optional: %+v, want proof_required", b)
	}
	if b := send(t, base, buyPath, "page", tok, dpoptest.NewKey(t).Proof(t, "POST", htu(sale, "buy"), tok)); b.Code != contract.CodeProofKeyMismatch {
		t.Fatalf("a bound token with another key under optional: %+v, want proof_key_mismatch", b)
	}
	if b := send(t, base, buyPath, "page", tok, k.Proof(t, "POST", htu(sale, "buy"), tok)); b.Status != http.StatusAccepted {
		t.Fatalf("a bound token with its proof: %+v, want 202", b)
	}
}

// TestAProofReplayedAtTwoGatewaysAtOnceWinsOnce sends one genuine proof many times at once to
// two gateways (this process and a subprocess) over one Redis: the jti is spent inside the
// purchase's script call, so exactly one request buys and every other is proof_replayed.
func TestAProofReplayedAtTwoGatewaysAtOnceWinsOnce(t *testing.T) {
	rdb := testenv.Redis(t)
	base1 := startBound(t, "required")
	c2 := boundConfig(t)
	base2 := fmt.Sprintf("http://127.0.0.1:%d", c2.Port)
	handlertest.StartGateway(t, boundJSON(c2, "required"), base2)
	sale := newSale(t, rdb, 10, -time.Minute, time.Hour)
	k := dpoptest.NewKey(t)
	tok := boundToken(t, base1, sale, "u1", k)
	proof := k.Proof(t, "POST", htu(sale, "buy"), tok)

	const n = 40
	answers := make([]bound, n)
	handlertest.Parallel(n, func(i int) {
		base := base1
		if i%2 == 1 {
			base = base2
		}
		answers[i] = send(t, base, "/seckill/"+sale+"/buy", "u1", tok, proof)
	})
	var mu sync.Mutex
	counts := map[string]int{}
	for _, a := range answers {
		mu.Lock()
		if a.Status == http.StatusAccepted {
			counts["accepted"]++
		} else {
			counts[a.Code]++
		}
		mu.Unlock()
	}
	if counts["accepted"] != 1 || counts[contract.CodeProofReplayed] != n-1 {
		t.Fatalf("answers %v, want accepted=1 proof_replayed=%d", counts, n-1)
	}
	if got := stockOf(t, rdb, sale); got != 9 {
		t.Fatalf("stock %d, want 9", got)
	}
}

func tokenStoreValue(c tokenformat.Claims) string { return tokenformat.StoreValue(c) }
