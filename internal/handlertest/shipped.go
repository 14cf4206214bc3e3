package handlertest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	// seckill_cors is in front of the edge's routes in every shipped Caddyfile; it links
	// nothing but the handler kit.
	_ "github.com/seckilledge/seckill/caddymodule/cors"
)

// ShippedCaddyfiles are the Caddyfiles the project ships, relative to the module root.
var ShippedCaddyfiles = []string{"Caddyfile", "deploy/Caddyfile.production", "deploy/Caddyfile.production-session"}

// AdaptShipped adapts each shipped Caddyfile (root is the module root, relative to the test's
// package) and calls fn with its name and its decoded JSON config; a file that does not adapt
// fails the test.
func AdaptShipped(t *testing.T, root string, fn func(file string, cfg any)) {
	t.Helper()
	for _, f := range ShippedCaddyfiles {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := Adapt(src)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var cfg any
		if err := json.Unmarshal(out, &cfg); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		fn(f, cfg)
	}
}

// WalkJSON calls fn on every object in a decoded JSON value, depth first.
func WalkJSON(v any, fn func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		fn(x)
		for _, c := range x {
			WalkJSON(c, fn)
		}
	case []any:
		for _, c := range x {
			WalkJSON(c, fn)
		}
	}
}
