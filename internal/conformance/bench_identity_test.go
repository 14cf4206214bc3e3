package conformance

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/bench/scenario/identity"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/harness"

	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy/forwardauth"
	_ "github.com/seckilledge/seckill" // the directives of the benchmark's Caddyfile
)

// The Caddyfile the identity benchmark (bench/scenario/identity) runs: it must adapt (every subdirective spelled as the
// identity directives read it), with one site per case and the user each identity step sets.
func TestIdentityCaddyfileAdaptsWithOneSitePerCase(t *testing.T) {
	ports := map[string]int{identity.IdentityJWT: 9001, identity.IdentitySession: 9002, identity.IdentityForwardAuth: 9003, identity.IdentityForwardAuthClose: 9004}
	for _, throttle := range []bool{false, true} {
		src, err := identity.IdentityCaddyfile("http://127.0.0.1:3999", ports, 30*time.Second, throttle)
		if err != nil {
			t.Fatal(err)
		}
		conf, err := harness.GatewayConfig(src, 9000, 9010, 9011, "")
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := handlertest.Adapt([]byte(conf))
		if err != nil {
			t.Fatalf("throttle %v: %v\n%s", throttle, err, conf)
		}
		var cfg struct {
			Apps struct {
				HTTP struct {
					Servers map[string]struct {
						Listen []string        `json:"listen"`
						Routes json.RawMessage `json:"routes"`
					} `json:"servers"`
				} `json:"http"`
			} `json:"apps"`
		}
		if err := json.Unmarshal(out, &cfg); err != nil {
			t.Fatal(err)
		}
		sites := map[string]string{}
		for _, s := range cfg.Apps.HTTP.Servers {
			sites[s.Listen[0]] = string(s.Routes)
		}
		for addr, want := range map[string][]string{
			":9000": {`"user":"{http.request.header.X-User-ID}"`},
			":9001": {`"handler":"seckill_identity"`, `"jwks_url":"http://127.0.0.1:3999/.well-known/jwks.json"`, `"user":"{http.auth.user.id}"`},
			":9002": {`"handler":"seckill_session"`, `"upstream":"http://127.0.0.1:3999/session"`, `"ttl":30000000000`, `"user":"{http.auth.user.id}"`},
			":9003": {`"uri":"/session"`, `"user":"{http.request.header.X-Seckill-User}"`},
			":9004": {`"keep_alive":{"enabled":false}`, `"user":"{http.request.header.X-Seckill-User}"`},
		} {
			got := strings.Join(strings.Fields(sites[addr]), "")
			for _, w := range want {
				if !strings.Contains(got, w) {
					t.Errorf("throttle %v, site %s: no %s in\n%s", throttle, addr, w, got)
				}
			}
			if strings.Contains(got, "seckill_throttle") != throttle {
				t.Errorf("site %s: seckill_throttle present = %v, want %v", addr, !throttle, throttle)
			}
		}
		if strings.Contains(sites[":9003"], "keep_alive") {
			t.Error("forward_auth with keep-alive on sets keep_alive")
		}
	}
	if _, err := identity.IdentityCaddyfile("http://127.0.0.1:3999", map[string]int{identity.IdentityJWT: 1}, time.Second, false); err == nil {
		t.Error("a case without a port was accepted")
	}
}
