// Package backendtest is what the tests of several backend packages need alike, kept minimal:
// a migrated database of the test's own, and an order id accepted at a given time.
package backendtest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seckilledge/seckill/backend/internal/schema"
	"github.com/seckilledge/seckill/internal/testenv"
)

// MigratedURL gives the test a database of its own at the newest schema, a copy of a template
// database migrated once (testenv.PostgresFrom), and returns its URL.
func MigratedURL(t testing.TB) string {
	t.Helper()
	return testenv.PostgresFrom(t, schema.Digest(), schema.Migrate)
}

// DB gives the test a database of its own, migrated, and a pool on it (closed at the end).
func DB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	url := MigratedURL(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// OrderIDAt makes a UUIDv7 order id whose timestamp is at (an order the gate accepted then).
func OrderIDAt(t testing.TB, at time.Time) string {
	t.Helper()
	u := uuid.Must(uuid.NewV7())
	ms := uint64(at.UnixMilli())
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return u.String()
}
