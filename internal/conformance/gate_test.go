package conformance

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/seckilledge/seckill/caddymodule/gate"
	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/caddymodule/relay"
	"github.com/seckilledge/seckill/internal/handlertest"
)

// gateAdapt holds seckill_gate's golden Caddyfiles.
const gateAdapt = "../../caddymodule/gate/testdata/adapt"

// Golden tests: caddymodule/gate/testdata/adapt/<name>.caddyfile adapts to <name>.json.
// After a deliberate change: go test ./internal/conformance -run GateCaddyfile -update.
func TestGateCaddyfileAdaptsToTheDocumentedJSON(t *testing.T) {
	handlertest.Golden(t, gateAdapt, false)
}

func TestGateCaddyfileRefusesUnknownOptions(t *testing.T) {
	handlertest.AdaptFails(t,
		":80 {\n seckill_gate {\n bogus 1\n }\n}",
		":80 {\n seckill_gate {\n redis sometimes\n }\n}",
		"{\n seckill {\n relay {\n batch_size -1\n }\n }\n}\n:80 {\n seckill_gate\n}",
		":80 {\n seckill_gate extra\n}",
	)
}

// A state-changing request a browser sends from another site (a simple
// text/plain form post, or a sibling subdomain's fetch) is refused 403 cross_site before the
// gate does anything (this gate was built without a store: reaching it would panic);
// the shared rule is handler.CheckRequest (its own test has the whole table).
func TestGateRefusesACrossSiteRequestBeforeAnythingElse(t *testing.T) {
	handlertest.RefusesCrossSite(t, new(gate.Gate), "https://shop.example/seckill/s1/buy", `{"qty":1}`, http.MethodPost)
}

// preheat.lua creates the outbox group the relay reads (gate's TestGateAcceptWritesStockBuyerOutboxAndExpiries
// checks it is core.RelayGroup): both must name the same one.
func TestTheRelayReadsTheGroupTheGateWrites(t *testing.T) {
	if core.RelayGroup != relay.Group {
		t.Fatalf("gate writes group %q, relay reads %q", core.RelayGroup, relay.Group)
	}
}

// seckill_gate's `relay` block, deprecated since the relay moved to the seckill app, is
// removed: a Caddyfile that still has it is refused by the adapter with an error
// naming the option to write instead, not adapted to settings nobody applies.
func TestTheGateRelayBlockIsRefusedNamingTheSeckillGlobalOption(t *testing.T) {
	_, _, err := handlertest.Adapt([]byte(":80 {\n seckill_gate {\n relay {\n batch_size 64\n }\n }\n}"))
	if err == nil || !strings.Contains(err.Error(), "seckill { relay { ... } }") || !strings.Contains(err.Error(), "moved") {
		t.Fatalf("adapting a gate relay block: %v; want an error naming `seckill { relay { ... } }`", err)
	}
	if _, _, err := handlertest.Adapt([]byte(":80 {\n seckill_gate\n}")); err != nil {
		t.Fatalf("the same gate without the block: %v", err)
	}
}

// A JSON config from before the move, with relay settings on the handler, fails to provision
// (caddy validate, caddy run and a reload alike) with an error naming apps.seckill.relay,
// instead of running a relay with settings it no longer reads.
func TestAGateWithRelaySettingsFailsToProvisionNamingTheAppsRelay(t *testing.T) {
	src := "{\n seckill {\n redis {\n addrs 127.0.0.1:1\n }\n }\n}\n:80 {\n seckill_gate\n}"
	out, _, err := handlertest.Adapt([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	validate := func(withRelay bool) error {
		var cfg map[string]any
		if err := json.Unmarshal(out, &cfg); err != nil {
			t.Fatal(err)
		}
		if withRelay {
			servers := cfg["apps"].(map[string]any)["http"].(map[string]any)["servers"].(map[string]any)
			for _, srv := range servers {
				routes := srv.(map[string]any)["routes"].([]any)
				gate := routes[0].(map[string]any)["handle"].([]any)[0].(map[string]any)
				if gate["handler"] != "seckill_gate" {
					t.Fatalf("the route's first handler is %v", gate["handler"])
				}
				gate["relay"] = map[string]any{"poll_interval": "20ms"}
			}
		}
		raw, _ := json.Marshal(cfg)
		var c caddy.Config
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		return caddy.Validate(&c)
	}
	if err := validate(false); err != nil {
		t.Fatalf("the config without the handler's relay settings: %v", err)
	}
	if err := validate(true); err == nil || !strings.Contains(err.Error(), "apps.seckill.relay") {
		t.Fatalf("validate with the handler's relay settings: %v; want an error naming apps.seckill.relay", err)
	}
}
