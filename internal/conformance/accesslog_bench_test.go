//go:build integration

package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/internal/testenv"
)

// BenchmarkAccessLog is what Caddy's access log adds to a request: the same `respond` site
// without a `log` directive, with one writing JSON lines to a file, and with one that samples
// (docs/operator.md, "Logs"). Each request goes straight to the server's ServeHTTP, so the
// difference is the log entry's making, encoding and write.
//
//	go test -tags integration -run '^$' -bench AccessLog -benchmem -benchtime 200000x ./internal/conformance/
func BenchmarkAccessLog(b *testing.B) {
	dir := b.TempDir()
	for _, tc := range []struct{ name, file, opts string }{
		{"off", "", ""},
		{"file", "access.log", ""},
		{"sampled-1-in-100", "sampled.log", "\n\t\tsampling {\n\t\t\tinterval 1s\n\t\t\tfirst 100\n\t\t\tthereafter 100\n\t\t}"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			port := testenv.FreePort(b)
			log, path := "", filepath.Join(dir, tc.file)
			if tc.file != "" {
				log = fmt.Sprintf("log {\n\t\toutput file %s\n\t\tformat json%s\n\t}", path, tc.opts)
			}
			src := fmt.Sprintf("{\n\tadmin off\n}\n:%d {\n\t%s\n\trespond \"ok\" 200\n}\n", port, log)
			h := loadKeepingLogs(b, src)
			serve(b, h, func(i int) *http.Request { return clientRequest(http.MethodGet, "/x", i) }, 200)
			b.StopTimer()
			stopChain()
			if tc.file != "" {
				// Bytes written to the log per request (every request a line, or one in 100).
				if st, err := os.Stat(path); err == nil {
					b.ReportMetric(float64(st.Size())/float64(b.N), "logB/op")
				}
			}
		})
	}
}

// loadKeepingLogs loads src in this process with its own loggers (the access log) and the
// default log at ERROR, and returns its one server.
func loadKeepingLogs(b *testing.B, src string) http.Handler {
	b.Helper()
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(src), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		b.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(cfg, &m); err != nil {
		b.Fatal(err)
	}
	logging, _ := m["logging"].(map[string]any)
	if logging == nil {
		logging = map[string]any{}
	}
	logs, _ := logging["logs"].(map[string]any)
	if logs == nil {
		logs = map[string]any{}
	}
	def, _ := logs["default"].(map[string]any)
	if def == nil {
		def = map[string]any{}
	}
	def["level"] = "ERROR"
	logs["default"], logging["logs"], m["logging"] = def, logs, logging
	cfg, _ = json.Marshal(m)
	if err := caddy.Load(cfg, true); err != nil {
		b.Fatal(err)
	}
	app, err := caddy.ActiveContext().App("http")
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range app.(*caddyhttp.App).Servers {
		return s
	}
	b.Fatal("no server")
	return nil
}
