//go:build integration

package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Tests that start together each get a copy of the template, which is built once, by one of
// them, and is whole when copied: no copy is refused because another test copies or builds at
// the same moment, and a template whose build died half way is built again.
func TestTemplateCopiesAreBuiltOnceAndMadeSideBySide(t *testing.T) {
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	tpl := "tpl_" + hex.EncodeToString(key)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, PGAdminURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "ALTER DATABASE "+tpl+" WITH IS_TEMPLATE false")
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+tpl+" WITH (FORCE)")
		_ = admin.Close(context.Background())
	})
	var builds atomic.Int32
	migrate := func(ctx context.Context, url string) error {
		builds.Add(1)
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "CREATE TABLE schema_mark (v int); INSERT INTO schema_mark VALUES (7)")
		return err
	}
	// A build that died after CREATE DATABASE: the template exists and still allows connections.
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+tpl); err != nil {
		t.Fatal(err)
	}
	copies := func(n int) {
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t.Run("copy", func(t *testing.T) {
					url := PostgresFrom(t, hex.EncodeToString(key), migrate)
					c, err := pgx.Connect(ctx, url)
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close(ctx)
					var v int
					if err := c.QueryRow(ctx, "SELECT v FROM schema_mark").Scan(&v); err != nil || v != 7 {
						t.Errorf("a copy of the template: %d, %v; want the migrated schema", v, err)
					}
				})
			}()
		}
		wg.Wait()
	}
	copies(6)
	copies(6)
	if n := builds.Load(); n != 1 {
		t.Errorf("the template was built %d times; want once", n)
	}
}
