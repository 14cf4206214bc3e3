package backend_test

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
)

// The log level is a setting: SECKILL_LOG_LEVEL, overridden by -log-level; a level nobody
// knows is refused at start, naming it.
func TestTheLogLevelIsASetting(t *testing.T) {
	cfg, err := backend.ConfigFromFlags(servicetest.FlagSet(), nil)
	if err != nil || cfg.LogLevel != slog.LevelInfo {
		t.Fatalf("default: %v, %v", cfg.LogLevel, err)
	}
	t.Setenv("SECKILL_LOG_LEVEL", "warn")
	if cfg, err = backend.ConfigFromFlags(servicetest.FlagSet(), nil); err != nil || cfg.LogLevel != slog.LevelWarn {
		t.Errorf("SECKILL_LOG_LEVEL=warn: %v, %v", cfg.LogLevel, err)
	}
	if cfg, err = backend.ConfigFromFlags(servicetest.FlagSet(), []string{"-log-level", "DEBUG"}); err != nil || cfg.LogLevel != slog.LevelDebug {
		t.Errorf("-log-level DEBUG: %v, %v", cfg.LogLevel, err)
	}
	t.Setenv("SECKILL_LOG_LEVEL", "loud")
	if _, err = backend.ConfigFromFlags(servicetest.FlagSet(), nil); err == nil || !strings.Contains(err.Error(), `"loud"`) {
		t.Errorf("SECKILL_LOG_LEVEL=loud: %v", err)
	}
}

// The backend's logger writes records at the level and above only: a warning Run logs before it
// touches Postgres is written at warn and left out at error.
func TestTheBackendLogsAtItsLevel(t *testing.T) {
	t.Setenv("SECKILL_ADMIN_TOKEN", servicetest.TestAdminToken)
	t.Setenv("SECKILL_WEBHOOK_ALLOW_PRIVATE", "1") // Run warns that it is deprecated
	t.Setenv("SECKILL_PG_URL", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	t.Setenv("SECKILL_BACKEND_LISTEN", "127.0.0.1:0")
	t.Setenv("SECKILL_BACKEND_ADMIN_LISTEN", "127.0.0.1:1")
	logged := func(level string) string {
		t.Helper()
		t.Setenv("SECKILL_LOG_LEVEL", level)
		cfg, err := backend.ConfigFromFlags(servicetest.FlagSet(), nil)
		if err != nil {
			t.Fatal(err)
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := os.Stderr
		os.Stderr = w
		runErr := runUntilPostgres(t, cfg)
		os.Stderr = stderr
		w.Close()
		out, _ := io.ReadAll(r)
		if runErr == nil {
			t.Fatal("Run started against an unreachable Postgres")
		}
		return string(out)
	}
	if out := logged("warn"); !strings.Contains(out, `"level":"WARN"`) || !strings.Contains(out, "SECKILL_WEBHOOK_ALLOW_PRIVATE") {
		t.Errorf("at warn the warning is missing:\n%s", out)
	}
	if out := logged("error"); strings.Contains(out, "SECKILL_WEBHOOK_ALLOW_PRIVATE") {
		t.Errorf("at error the warning is written:\n%s", out)
	}
}
