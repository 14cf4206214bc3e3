package token

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

var update = flag.Bool("update", false, "rewrite the golden files of the Caddyfile adapt tests")

func adapt(t *testing.T, src []byte) ([]byte, error) {
	t.Helper()
	out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt(src, map[string]any{"filename": "Caddyfile"})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out, "", "\t"); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// Golden tests: testdata/caddyfile/<name>.caddyfile adapts to <name>.json. After a deliberate
// change: go test ./caddymodule/token -run Caddyfile -update.
func TestCaddyfileAdaptsToTheDocumentedJSON(t *testing.T) {
	files, _ := filepath.Glob("testdata/caddyfile/*.caddyfile")
	if len(files) == 0 {
		t.Fatal("no golden Caddyfiles")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := adapt(t, src)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		golden := strings.TrimSuffix(f, ".caddyfile") + ".json"
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s adapts to\n%s\nwant (%s)\n%s", f, got, golden, want)
		}
	}
}

func TestSeckillTokenRunsBeforeRespondWhereverItIsWritten(t *testing.T) {
	src, _ := os.ReadFile("testdata/caddyfile/defaults.caddyfile")
	got, err := adapt(t, src)
	if err != nil {
		t.Fatal(err)
	}
	tok, resp := bytes.Index(got, []byte(`"handler": "seckill_token"`)), bytes.Index(got, []byte(`"handler": "static_response"`))
	if tok < 0 || resp < 0 || tok > resp {
		t.Fatalf("seckill_token must be ordered before respond:\n%s", got)
	}
}

func TestCaddyfileRefusesMistakes(t *testing.T) {
	for _, body := range []string{
		"seckill_token { nonsense 1 }",
		"seckill_token { ttl }",
		"seckill_token { ttl soon }",
		"seckill_token { sale a b }",
		"seckill_token /x extra",
	} {
		if _, err := adapt(t, []byte(":8080 {\n"+body+"\n}\n")); err == nil {
			t.Errorf("%q adapted without error", body)
		}
	}
}
