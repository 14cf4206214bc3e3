package throttle

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
)

var update = flag.Bool("update", false, "rewrite the golden JSON of the Caddyfile adapt tests")

// TestCaddyfileAdaptsToTheDocumentedJSON adapts every testdata/adapt/*.caddyfile and compares
// the JSON with its golden file (go test -run Adapt -update rewrites them).
func TestCaddyfileAdaptsToTheDocumentedJSON(t *testing.T) {
	files, _ := filepath.Glob("testdata/adapt/*.caddyfile")
	if len(files) == 0 {
		t.Fatal("no adapt tests")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt(in, map[string]any{"filename": f})
			if err != nil {
				t.Fatalf("adapt: %v", err)
			}
			for _, w := range warnings {
				t.Logf("warning: %s", w.Message)
			}
			// `caddy validate` provisions the handlers: it must work without touching Redis.
			var cfg caddy.Config
			if err := json.Unmarshal(out, &cfg); err != nil {
				t.Fatal(err)
			}
			if err := caddy.Validate(&cfg); err != nil {
				t.Fatalf("the adapted config does not validate: %v", err)
			}
			var pretty bytes.Buffer
			_ = json.Indent(&pretty, out, "", "\t")
			pretty.WriteString("\n")
			golden := strings.TrimSuffix(f, ".caddyfile") + ".json"
			if *update {
				if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(want, pretty.Bytes()) {
				t.Fatalf("adapted JSON differs from %s:\n%s", golden, pretty.String())
			}
		})
	}
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
