// Package handlertest is the test harness the seckill handlers share: Caddyfile golden tests,
// an in-process Caddy, a Caddy subprocess, a private Redis Cluster client. It is imported by
// tests only, and imports nothing of the seckill packages under test (so the app's own tests
// can use it without an import cycle).
package handlertest

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
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile" // the caddyfile adapter
	// Caddy's standard modules (reverse_proxy, file_server, static_response, ...), which the
	// golden and shipped Caddyfiles and the routes of the test gateways use beside the seckill
	// handlers: a test binary of the pure tier links nothing else that would register them.
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

var update = flag.Bool("update", false, "rewrite the golden JSON of the Caddyfile adapt tests")

// Adapt adapts a Caddyfile to indented JSON (with a final newline, as the golden files are).
func Adapt(src []byte) ([]byte, []caddyconfig.Warning, error) {
	out, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt(src, map[string]any{"filename": "Caddyfile"})
	if err != nil {
		return nil, warnings, err
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, out, "", "\t"); err != nil {
		return nil, warnings, err
	}
	pretty.WriteByte('\n')
	return pretty.Bytes(), warnings, nil
}

// Golden adapts every <dir>/*.caddyfile and compares the JSON with the .json next to it.
// `go test -run Adapt -update` (or UPDATE_GOLDEN=1) rewrites the golden files after a
// deliberate change. With validate, the adapted config is also provisioned as `caddy
// validate` does: it must work without touching any server.
func Golden(t *testing.T, dir string, validate bool) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.caddyfile"))
	if len(files) == 0 {
		t.Fatalf("no golden Caddyfiles in %s", dir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, warnings, err := Adapt(in)
			if err != nil {
				t.Fatalf("adapt: %v", err)
			}
			for _, w := range warnings {
				t.Logf("warning: %s", w.Message)
			}
			if validate {
				var cfg caddy.Config
				if err := json.Unmarshal(got, &cfg); err != nil {
					t.Fatal(err)
				}
				if err := caddy.Validate(&cfg); err != nil {
					t.Fatalf("the adapted config does not validate: %v", err)
				}
			}
			golden := strings.TrimSuffix(f, ".caddyfile") + ".json"
			if *update || os.Getenv("UPDATE_GOLDEN") == "1" {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s adapts to\n%s\nwant (%s)\n%s", f, got, golden, want)
			}
		})
	}
}

// AdaptFails checks that each Caddyfile is refused by the adapter.
func AdaptFails(t *testing.T, srcs ...string) {
	t.Helper()
	for _, src := range srcs {
		if _, _, err := Adapt([]byte(src)); err == nil {
			t.Errorf("adapting %q succeeded; want an error", src)
		}
	}
}
