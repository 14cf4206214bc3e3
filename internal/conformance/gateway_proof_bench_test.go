//go:build integration

package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/dpop"
	"github.com/seckilledge/seckill/caddymodule/dpop/dpoptest"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// BenchmarkGatewayChainProof is what a device-bound purchase costs the gateway (the
// target: at most 1.10x the CPU of a purchase without a proof). The demo Caddyfile runs in
// this process as BenchmarkGatewayChainAllocs runs it, with `device_binding optional` added
// to the :8080 site's seckill_token and seckill_gate, on a private Redis; each request goes
// straight to the server's ServeHTTP. Cases, every one an accepted purchase (throttle, gate,
// the 202):
//
//   - bearer: a token taken without a proof, bought without one (the cost of optional alone);
//   - proof: a token bound to the buyer's key, bought with a fresh DPoP proof: go-jose's
//     parse and ES256 verify, the RFC 7638 thumbprint, the token's MAC with it, and the jti's
//     SET NX in the same script call.
//
// The tokens and proofs are made before the clock starts (a page signs on the buyer's
// device, not on the gateway). Compare ns/op of bearer and proof on a quiet, pinned machine,
// median of 3 (the lead's figures):
//
//	taskset -c 0 go test -tags integration -run '^$' -bench GatewayChainProof -benchmem -benchtime 3000x -count 3 -cpu 1 ./internal/conformance/
func BenchmarkGatewayChainProof(b *testing.B) {
	if testing.Short() {
		b.Skip("integration: needs a private redis-server")
	}
	src, err := os.ReadFile("../../Caddyfile")
	if err != nil {
		b.Fatal(err)
	}
	bound := string(src)
	for _, h := range []string{"seckill_token {$SECKILL_PREFIX:/seckill}/* {\n\t\tuser {http.request.header.X-User-ID}\n", "seckill_gate {$SECKILL_PREFIX:/seckill}/* {\n\t\tuser {http.request.header.X-User-ID}\n"} {
		if !strings.Contains(bound, h) {
			b.Fatalf("the Caddyfile has no %q block any more: update this benchmark", h)
		}
		bound = strings.Replace(bound, h, h+"\t\tdevice_binding optional\n", 1)
	}
	rdb := testenv.StartRedis(b)
	b.Setenv("SECKILL_REDIS_ADDR", rdb.Addr())
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	b.Setenv("SECKILL_TOKEN_KEY", hex.EncodeToString(key))
	b.Setenv("SECKILL_NAMESPACE", testenv.ID("bench-"))
	gw, _ := startChain(b, bound)
	defer stopChain()
	sale := testenv.ID("bench")
	if _, _, err := (lua.PreheatCall{
		Sale: sale, Stock: 1 << 30, Starts: time.Now().Add(-time.Minute), Ends: time.Now().Add(time.Hour),
		Retention: time.Hour}).Run(context.Background(), redisClient(b, rdb.Addr())); err != nil {
		b.Fatal(err)
	}
	// httptest's requests name example.com: the proofs' htu does too.
	const origin = "http://example.com"
	user := 0
	for _, withProof := range []bool{false, true} {
		name := "bearer"
		if withProof {
			name = "proof"
		}
		b.Run(name, func(b *testing.B) {
			first := user + 1
			tokens, proofs := make([]string, b.N), make([]string, b.N)
			for i := range tokens {
				user++
				k := dpoptest.NewKey(b)
				r := clientRequest(http.MethodPost, "/seckill/"+sale+"/token", user)
				if withProof {
					r.Header.Set(dpop.Header, k.Proof(b, http.MethodPost, origin+"/seckill/"+sale+"/token", ""))
				}
				w := newWriter()
				gw.ServeHTTP(w, r)
				var t struct{ Token string }
				if w.status != http.StatusOK || json.Unmarshal(w.body, &t) != nil {
					b.Fatalf("token: %d %s", w.status, w.body)
				}
				tokens[i] = t.Token
				if withProof {
					proofs[i] = k.Proof(b, http.MethodPost, origin+"/seckill/"+sale+"/buy", t.Token)
				}
			}
			serve(b, gw, func(i int) *http.Request {
				r := clientRequest(http.MethodPost, "/seckill/"+sale+"/buy", first+i)
				r.Header.Set("X-Seckill-Token", tokens[i])
				if withProof {
					r.Header.Set(dpop.Header, proofs[i])
				}
				return r
			}, http.StatusAccepted)
		})
	}
}
