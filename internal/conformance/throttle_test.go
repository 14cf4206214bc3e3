package conformance

import (
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/seckilledge/seckill/caddymodule/throttle"
	"github.com/seckilledge/seckill/internal/handlertest"
)

// throttleAdapt holds seckill_throttle's golden Caddyfiles.
const throttleAdapt = "../../caddymodule/throttle/testdata/adapt"

// TestThrottleCaddyfileAdaptsToTheDocumentedJSON adapts every
// caddymodule/throttle/testdata/adapt/*.caddyfile, checks that `caddy validate` provisions it
// without touching Redis, and compares the JSON with its golden file
// (go test ./internal/conformance -run ThrottleCaddyfile -update rewrites them).
func TestThrottleCaddyfileAdaptsToTheDocumentedJSON(t *testing.T) {
	handlertest.Golden(t, throttleAdapt, true)
}

func TestThrottleCaddyfileRejectsMistakes(t *testing.T) {
	for _, src := range []string{
		"seckill_throttle extra",
		"seckill_throttle {\n zone\n}",
		"seckill_throttle {\n zone a {client_ip} 5\n}",
		"seckill_throttle {\n zone a {client_ip} five 1s\n}",
		"seckill_throttle {\n zone a {client_ip} 5 soon\n}",
		"seckill_throttle {\n zone a {\n  limit\n }\n}",
		"seckill_throttle {\n zone a {\n  bogus 1\n }\n}",
		"seckill_throttle {\n zone a {\n  ban {\n   after x\n  }\n }\n}",
		"seckill_throttle {\n allow {\n  cidrs\n }\n}",
		"seckill_throttle {\n handle_errors yes\n}",
		"seckill_throttle {\n nonsense\n}",
	} {
		h := new(throttle.Handler)
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(src)); err == nil {
			t.Errorf("accepted:\n%s", src)
		}
	}
}

func TestThrottleValidateRejectsUnsafeConfigs(t *testing.T) {
	ok := func() *throttle.Zone { return &throttle.Zone{Name: "z", Key: "{client_ip}", Limit: 1, Window: 1e9} }
	cases := map[string]func(h *throttle.Handler){
		"no zones":        func(h *throttle.Handler) { h.Zones = nil },
		"bad name":        func(h *throttle.Handler) { h.Zones[0].Name = "a{b}" },
		"duplicate":       func(h *throttle.Handler) { h.Zones = append(h.Zones, ok()) },
		"no key":          func(h *throttle.Handler) { h.Zones[0].Key = "" },
		"zero limit":      func(h *throttle.Handler) { h.Zones[0].Limit = 0 },
		"no window":       func(h *throttle.Handler) { h.Zones[0].Window = 0 },
		"ipv4 prefix":     func(h *throttle.Handler) { h.Zones[0].IPv4Prefix = 33 },
		"ipv6 prefix":     func(h *throttle.Handler) { h.Zones[0].IPv6Prefix = 129 },
		"local limit":     func(h *throttle.Handler) { h.Zones[0].LocalLimit = -2 },
		"failure policy":  func(h *throttle.Handler) { h.Zones[0].OnFailure = "maybe" },
		"ban without n":   func(h *throttle.Handler) { h.Zones[0].Ban = &throttle.Ban{} },
		"headers":         func(h *throttle.Handler) { h.Headers = "rfc" },
		"negative jitter": func(h *throttle.Handler) { h.RetryJitter = -1 },
	}
	if err := (&throttle.Handler{Zones: []*throttle.Zone{ok()}}).Validate(); err != nil {
		t.Fatalf("a valid config was refused: %v", err)
	}
	for name, mutate := range cases {
		h := &throttle.Handler{Zones: []*throttle.Zone{ok()}}
		mutate(h)
		if err := h.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
