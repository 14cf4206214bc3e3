package backend_test

import (
	"strings"
	"testing"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
)

// The default receiver is read at start-up: one inside refuses to start, clearly, before the
// backend touches anything.
func TestADefaultWebhookURLPointingInsideFailsStartUp(t *testing.T) {
	t.Setenv("SECKILL_ADMIN_TOKEN", servicetest.TestAdminToken)
	t.Setenv("SECKILL_WEBHOOK_SECRETS", servicetest.HookSecretNew)
	// Unreachable on purpose (runUntilPostgres points start-up at its own stand-in): a start-up
	// that gets past the check fails here, not elsewhere.
	t.Setenv("SECKILL_PG_URL", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	t.Setenv("SECKILL_BACKEND_LISTEN", "127.0.0.1:0")
	t.Setenv("SECKILL_BACKEND_ADMIN_LISTEN", "127.0.0.1:1")
	start := func() error {
		t.Helper()
		cfg, err := backend.ConfigFromFlags(servicetest.FlagSet(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return runUntilPostgres(t, cfg)
	}
	for _, hook := range []string{"http://127.0.0.1:8082/admin", "http://169.254.169.254/latest/meta-data/", "http://localhost:9/"} {
		t.Setenv("SECKILL_WEBHOOK_URL", hook)
		if err := start(); err == nil || !strings.Contains(err.Error(), "SECKILL_WEBHOOK_URL: ") ||
			!strings.Contains(err.Error(), "webhooks go to the shop") {
			t.Errorf("%s: start-up said %v, want a refusal of SECKILL_WEBHOOK_URL", hook, err)
		}
	}
	t.Setenv("SECKILL_WEBHOOK_ALLOW_CIDRS", "127.0.0.1/32")
	for _, hook := range []string{"http://127.0.0.1:8082/admin", "http://localhost:9/"} {
		t.Setenv("SECKILL_WEBHOOK_URL", hook)
		if err := start(); err != nil && strings.Contains(err.Error(), "SECKILL_WEBHOOK_URL") {
			t.Errorf("%s with SECKILL_WEBHOOK_ALLOW_CIDRS=127.0.0.1/32: %v", hook, err)
		}
	}
	// Metadata stays refused whatever is allowed, the deprecated switch included.
	t.Setenv("SECKILL_WEBHOOK_ALLOW_CIDRS", "0.0.0.0/0")
	t.Setenv("SECKILL_WEBHOOK_ALLOW_PRIVATE", "1")
	t.Setenv("SECKILL_WEBHOOK_URL", "http://169.254.169.254/latest/meta-data/")
	if err := start(); err == nil || !strings.Contains(err.Error(), "SECKILL_WEBHOOK_URL: ") {
		t.Errorf("a metadata URL with everything allowed: start-up said %v", err)
	}
	t.Setenv("SECKILL_WEBHOOK_ALLOW_CIDRS", "")
	t.Setenv("SECKILL_WEBHOOK_URL", "http://10.0.0.7/hooks")
	if err := start(); err != nil && strings.Contains(err.Error(), "SECKILL_WEBHOOK_URL") {
		t.Errorf("the deprecated SECKILL_WEBHOOK_ALLOW_PRIVATE=1 no longer allows a private receiver: %v", err)
	}
	t.Setenv("SECKILL_WEBHOOK_ALLOW_CIDRS", "10.0.0.1/8")
	if _, err := backend.ConfigFromFlags(servicetest.FlagSet(), nil); err == nil || !strings.Contains(err.Error(), "SECKILL_WEBHOOK_ALLOW_CIDRS") {
		t.Errorf("a malformed allow list: %v", err)
	}
}
