//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/seckilledge/seckill/bench/scenario/identity"
	"github.com/seckilledge/seckill/internal/testenv"
)

// TestMain lets the test binary be the identity benchmark's stand-in shop: `seckill-bench
// identity` starts its own executable as `session-standin`, and under `go test` that
// executable is this binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "session-standin" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// The benchmark end to end on the gateway built from this repository, tiny and short (a
// correctness check, not a measurement): every case answers tokens, the local JWT asks the
// session service nothing during its rush, the cached forward_auth asks once per session, and
// forward_auth once per request.
func TestIdentityBenchmarkCountsTheSessionServiceCallsOfEachCase(t *testing.T) {
	_ = testenv.Postgres(t) // fails clearly when the stack is down
	if testing.Short() {
		t.Skip("builds and starts the gateway and the backend")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"identity", "-root", "../..", "-rounds", "1", "-sessions", "40", "-duration", "700ms", "-conns", "4",
		"-amqp", testenv.AMQPURL(), "-amqp-mgmt", testenv.AMQPMgmtURL(), "-pg-admin", testenv.PGAdminURL(), "-out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "identity.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Identity identity.IdentityResult `json:"identity"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Identity.Sides) != len(identity.IdentityCases) {
		t.Fatalf("%d rushes, want one per case:\n%s", len(res.Identity.Sides), stdout.String())
	}
	for _, s := range res.Identity.Sides {
		if s.Completed < 40 || s.OK != s.Completed {
			t.Errorf("%s: %d of %d requests got a token (%v)", s.Case, s.OK, s.Completed, s.Outcomes)
		}
		var want int64
		switch s.Case {
		case identity.IdentitySession:
			want = int64(s.Sessions)
		case identity.IdentityForwardAuth, identity.IdentityForwardAuthClose:
			want = int64(s.Completed)
		}
		if s.SessionCalls != want {
			t.Errorf("%s: %d session calls for %d requests of %d sessions, want %d", s.Case, s.SessionCalls, s.Completed, s.Sessions, want)
		}
		if s.CPU["gateway"] <= 0 {
			t.Errorf("%s: no gateway CPU measured: %v", s.Case, s.CPU)
		}
	}
}
