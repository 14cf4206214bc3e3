//go:build integration

// Package clientjs tests clients/js, the JavaScript client, with Node's own test runner
// against the real gateway and backend: TestJavaScriptClient starts the stack
// (internal/harness, the root Caddyfile), creates the sales the JavaScript tests drive, and
// runs `node --test clients/js/test/` with their addresses in the environment.
package clientjs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/proc"
	"github.com/seckilledge/seckill/internal/testenv"
)

var binaries harness.Binaries

func TestMain(m *testing.M) { os.Exit(binaries.Run(m)) }

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// The JavaScript client drives a purchase, a waiting room with proof of work and a draw on
// the real gateway; its unit tests (the proof of work against node:crypto, the polling
// loop's pace) run in the same `node --test`. Node missing is a failure, not a skip. Its stack
// is its own (a private Redis, the test's sales), so it runs beside the type checks.
func TestJavaScriptClient(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node (20 or later) is needed to test clients/js: %v", err)
	}
	testenv.NeedsServices(t, "Redis, RabbitMQ and Postgres")
	bin, err := binaries.Dir("../..")
	if err != nil {
		t.Fatal(err)
	}
	adminToken := randomHex(t, 24)
	s, err := harness.Start(context.Background(), harness.Options{
		Name: "clientjs", Root: "../..", BinDir: bin, LogDir: t.TempDir(),
		AdminToken: adminToken, TokenKey: randomHex(t, 32), PrivateRedis: true,
		AMQPURL: testenv.AMQPURL(), MgmtURL: testenv.AMQPMgmtURL(), PGAdminURL: testenv.PGAdminURL(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range []*proc.Server{s.Gateways[0].Server, s.Backends[0].Server} {
				t.Logf("%s's log:\n%s", p.Name, proc.LogTail(p.Log))
			}
		}
		s.Close()
	})
	admin := s.Backends[0].URL
	now := time.Now().UTC()
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	sale := func(prefix, spec string) string {
		id := testenv.ID(prefix)
		adminCall(t, admin, adminToken, "/admin/sales", fmt.Sprintf(`{"id":%q,%s}`, id, spec), http.StatusCreated)
		adminCall(t, admin, adminToken, "/admin/sales/"+id+"/preheat", "", http.StatusOK)
		return id
	}
	plain := sale("js", fmt.Sprintf(`"stock":5,"starts_at":%q,"ends_at":%q`, at(-time.Minute), at(time.Hour)))
	room := sale("jsr", fmt.Sprintf(`"stock":1,"starts_at":%q,"ends_at":%q,"room":{"rate":100,"oversubscribe":1,"session":"1m","prequeue":"0s","difficulty":[6,6]}`,
		at(-time.Minute), at(time.Hour)))
	draw := sale("jsd", fmt.Sprintf(`"starts_at":%q,"ends_at":%q,"variants":[{"id":"m","stock":1},{"id":"l","stock":1}],"draw":{"opens_at":%q,"closes_at":%q,"claim_within":"10m"}`,
		at(10*time.Minute), at(time.Hour), at(-time.Minute), at(10*time.Minute)))

	cmd := exec.Command(node, "--test", "test/")
	cmd.Env = append(os.Environ(), "SECKILL_GATEWAY="+s.Gateways[0].URL, "SECKILL_ADMIN="+admin,
		"SECKILL_ADMIN_TOKEN="+adminToken, "SECKILL_SALE="+plain, "SECKILL_ROOM_SALE="+room, "SECKILL_DRAW_SALE="+draw)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test test/: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "# fail 0") || strings.Contains(string(out), "# pass 0") {
		t.Fatalf("node --test: no passing run in its report:\n%s", out)
	}
	t.Logf("node --test test/:\n%s", tail(string(out), 12))
}

func adminCall(t *testing.T, base, token, path, body string, want int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %d %s, want %d", path, resp.StatusCode, b, want)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
