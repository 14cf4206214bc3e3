package throttle

import (
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/seckilledge/seckill/internal/handlertest"
)

// TestCaddyfileAdaptsToTheDocumentedJSON adapts every testdata/adapt/*.caddyfile, checks that
// `caddy validate` provisions it without touching Redis, and compares the JSON with its golden
// file (go test -run Adapt -update rewrites them).
func TestCaddyfileAdaptsToTheDocumentedJSON(t *testing.T) {
	handlertest.Golden(t, "testdata/adapt", true)
}

func TestCaddyfileRejectsMistakes(t *testing.T) {
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
		h := new(Handler)
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(src)); err == nil {
			t.Errorf("accepted:\n%s", src)
		}
	}
}

func TestValidateRejectsUnsafeConfigs(t *testing.T) {
	ok := func() *Zone { return &Zone{Name: "z", Key: "{client_ip}", Limit: 1, Window: 1e9} }
	cases := map[string]func(h *Handler){
		"no zones":        func(h *Handler) { h.Zones = nil },
		"bad name":        func(h *Handler) { h.Zones[0].Name = "a{b}" },
		"duplicate":       func(h *Handler) { h.Zones = append(h.Zones, ok()) },
		"no key":          func(h *Handler) { h.Zones[0].Key = "" },
		"zero limit":      func(h *Handler) { h.Zones[0].Limit = 0 },
		"no window":       func(h *Handler) { h.Zones[0].Window = 0 },
		"ipv4 prefix":     func(h *Handler) { h.Zones[0].IPv4Prefix = 33 },
		"ipv6 prefix":     func(h *Handler) { h.Zones[0].IPv6Prefix = 129 },
		"local limit":     func(h *Handler) { h.Zones[0].LocalLimit = -2 },
		"failure policy":  func(h *Handler) { h.Zones[0].OnFailure = "maybe" },
		"ban without n":   func(h *Handler) { h.Zones[0].Ban = &Ban{} },
		"headers":         func(h *Handler) { h.Headers = "rfc" },
		"negative jitter": func(h *Handler) { h.RetryJitter = -1 },
	}
	if err := (&Handler{Zones: []*Zone{ok()}}).Validate(); err != nil {
		t.Fatalf("a valid config was refused: %v", err)
	}
	for name, mutate := range cases {
		h := &Handler{Zones: []*Zone{ok()}}
		mutate(h)
		if err := h.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
