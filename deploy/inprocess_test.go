package deploy

import (
	"encoding/json"
	"os"
	"sync"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// The shipped Caddyfiles adapted and, for the shop's browser test, run in this process.

// caddyMu serialises the tests: Caddy is a process-wide singleton.
var caddyMu sync.Mutex

// adaptCaddyfile turns a Caddyfile into Caddy's JSON, with {$VAR} taken from the environment
// now, exactly as `caddy run --adapter caddyfile` does.
func adaptCaddyfile(t *testing.T, src []byte, name string) []byte {
	t.Helper()
	adapter := caddyconfig.GetAdapter("caddyfile")
	out, warnings, err := adapter.Adapt(src, map[string]any{"filename": name})
	if err != nil {
		t.Fatalf("adapt %s: %v", name, err)
	}
	for _, w := range warnings {
		t.Logf("adapt %s: %s", name, w.String())
	}
	return out
}

// quiet sets Caddy's log level to ERROR (or SECKILL_TEST_LOG, e.g. DEBUG, to investigate).
func quiet(t *testing.T, cfg []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(cfg, &m); err != nil {
		t.Fatal(err)
	}
	level := os.Getenv("SECKILL_TEST_LOG")
	if level == "" {
		level = "ERROR"
	}
	m["logging"] = map[string]any{"logs": map[string]any{"default": map[string]any{"level": level}}}
	out, _ := json.Marshal(m)
	return out
}

func startCaddy(t *testing.T, src []byte, name string) {
	t.Helper()
	cfg := quiet(t, adaptCaddyfile(t, src, name))
	caddyMu.Lock()
	if err := caddy.Load(cfg, true); err != nil {
		caddyMu.Unlock()
		t.Fatalf("load %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = caddy.Stop()
		caddyMu.Unlock()
	})
}
