package backend_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend"
)

// runUntilPostgres runs backend.Run with cfg against a listener standing in for Postgres, and
// returns what Run returned: at once when start-up refuses before the database, as soon as
// Run's first connection reaches the stand-in (start-up got past every check before the
// database; the stand-in closes the connection and ends the run), and after 1.5 s at most.
// The tests of start-up wait for that moment, not for a timer.
func runUntilPostgres(t *testing.T, cfg backend.Config) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			cancel()
		}
	}()
	cfg.PGURL = "postgres://nobody@" + ln.Addr().String() + "/none?sslmode=disable&connect_timeout=1"
	return backend.Run(ctx, cfg)
}
