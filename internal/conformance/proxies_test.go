package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/harness"
)

// Every Caddyfile the project ships, and the configuration the benchmarks and tests put in
// front of theirs, reads X-Forwarded-For right to left (trusted_proxies_strict) wherever it
// trusts a proxy: left to right, {client_ip} is whatever the client wrote first.
func TestEveryTrustedProxyListIsStrict(t *testing.T) {
	check := func(f string, cfg any) {
		trusting := 0
		handlertest.WalkJSON(cfg, func(o map[string]any) {
			if _, ok := o["trusted_proxies"]; !ok {
				return
			}
			if _, ok := o["listen"]; !ok {
				return // a reverse_proxy's own list: not the server's client address
			}
			trusting++
			if o["trusted_proxies_strict"] != float64(1) {
				t.Errorf("%s: a server trusts proxies without trusted_proxies_strict: its {client_ip} is the client's own left-most X-Forwarded-For", f)
			}
		})
		if f != "Caddyfile" && trusting == 0 {
			t.Errorf("%s: no server trusts a proxy; the check would pass on nothing", f)
		}
	}
	handlertest.AdaptShipped(t, "../..", check)
	// The benchmarks' and the tests' gateways: their Caddyfile with harness.TrustLoopbackProxy.
	for _, f := range []string{"../../Caddyfile", "../../bench/draw.Caddyfile", "../../bench/fairness.Caddyfile"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		moved, err := harness.GatewayConfig(string(src), 1, 2, 3, harness.TrustLoopbackProxy)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := handlertest.Adapt([]byte(moved))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var cfg any
		if err := json.Unmarshal(out, &cfg); err != nil {
			t.Fatal(err)
		}
		check(filepath.Base(f)+" + harness.TrustLoopbackProxy", cfg)
	}
}
