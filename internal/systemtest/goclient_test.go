//go:build integration

package systemtest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	// The generated client's runtime (parameter styling); imported here so that go.mod keeps
	// it for the program TestAGoClientGeneratedFromTheDocumentBuysOnTheRealStack builds.
	_ "github.com/oapi-codegen/runtime"

	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/proc"
	"github.com/seckilledge/seckill/internal/testenv"
)

// A Go shop can generate its client from docs/openapi.yaml with the most used generator and
// buy with it: oapi-codegen (pinned in go.mod as a tool, `go tool oapi-codegen`) generates the
// types and the client with its defaults, they compile with the program testdata/goclient/buy.go,
// and that program, using nothing but the generated code, creates a sale on the backend's admin
// API (pay_within in seconds), preheats it, takes a token and buys at the real gateway, is
// refused a second purchase (409 already_bought, read by its open code), sees its order
// created, and finds the sale sold out for the next buyer. The order is then one row in
// Postgres.
func TestAGoClientGeneratedFromTheDocumentBuysOnTheRealStack(t *testing.T) {
	testenv.NeedsServices(t, "Redis, RabbitMQ and Postgres")
	prog := buildGeneratedGoClient(t)

	bin, err := binaries.Dir("../..")
	if err != nil {
		t.Fatal(err)
	}
	adminTok := randomHex(t, 24)
	s, err := harness.Start(context.Background(), harness.Options{
		Name: "goclient", Root: "../..", BinDir: bin, LogDir: t.TempDir(),
		AdminToken: adminTok, TokenKey: randomHex(t, 32), PrivateRedis: true,
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

	sale := testenv.ID("gen")
	cmd := exec.Command(prog, "-gateway", s.Gateways[0].URL, "-admin", s.Backends[0].URL, "-admin-token", adminTok, "-sale", sale)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("the generated client's purchase: %v\n%s%s", err, out, stderr)
	}
	var got struct {
		OrderID string `json:"order_id"`
		Status  string `json:"status"`
	}
	if err := json.Unmarshal(out, &got); err != nil || got.OrderID == "" || got.Status != "created" {
		t.Fatalf("the program printed %q (%v), want its created order", out, err)
	}
	conn, err := pgx.Connect(context.Background(), s.PGURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE sale_id = $1 AND order_id = $2`, sale, got.OrderID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("orders of %s in Postgres: %d (%v), want the one the client bought", sale, n, err)
	}
}

// buildGeneratedGoClient generates the client from docs/openapi.yaml next to a copy of
// testdata/goclient/buy.go (inside the module, so that go.mod's versions apply) and builds
// them into one program; it returns the program's path.
func buildGeneratedGoClient(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is needed: %v", err)
	}
	dir, err := os.MkdirTemp("testdata/goclient", "run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	src, err := os.ReadFile("testdata/goclient/buy.go")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "buy.go"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	gen := exec.Command(goBin, "tool", "oapi-codegen", "-generate", "types,client", "-package", "main",
		"-o", filepath.Join(dir, "client.gen.go"), "../../docs/openapi.yaml")
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen refused docs/openapi.yaml: %v\n%s", err, out)
	}
	prog := filepath.Join(t.TempDir(), "goclient")
	build := exec.Command(goBin, "build", "-o", prog, "./"+filepath.ToSlash(dir))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the generated client does not compile: %v\n%s", err, out)
	}
	return prog
}
