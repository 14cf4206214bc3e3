//go:build integration

package schema

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/seckilledge/seckill/internal/testenv"
)

func TestMigrateIsIdempotentAndTheSchemaGuardsStock(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if err := Migrate(ctx, url); err != nil {
			t.Fatalf("migrate run %d: %v", i+1, err)
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO sales (id, initial_stock, stock, starts_at, ends_at) VALUES ('s1', 1, 1, now(), now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE sales SET stock = stock - 2 WHERE id = 's1'`); err == nil {
		t.Fatal("stock went negative: CHECK (stock >= 0) is missing")
	}
	ins := `INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at) VALUES ($1, 's1', 'u1', 'created', now())`
	if _, err := conn.Exec(ctx, ins, "o1"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, ins, "o2"); err == nil {
		t.Fatal("a second order for the same (sale, user) was accepted")
	}
}
