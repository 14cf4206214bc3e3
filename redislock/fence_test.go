//go:build integration

package redislock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seckilledge/seckill/internal/testenv"
)

// The scenario of Kleppmann's "How to do distributed locking": a holder pauses (GC, swap, a
// stopped VM) past its lease, another takes the lock and writes, then the first wakes up and
// writes as if it still held the lock. The fencing token makes Postgres refuse that write.
func TestPostgresRefusesAStaleHolderThatWokeAfterItsLeaseExpired(t *testing.T) {
	rdb := testenv.Redis(t)
	lk := New(rdb, nil)
	ctx := context.Background()
	db, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Exec(ctx, FencesTableSQL); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `CREATE TABLE sweeps (id int PRIMARY KEY, by text NOT NULL);
		INSERT INTO sweeps VALUES (1, 'nobody')`); err != nil {
		t.Fatal(err)
	}
	key := testenv.ID("sweeper")
	write := func(l *Lock, who string) error {
		return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			if err := l.Fence(ctx, pgxExec(tx)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE sweeps SET by = $1 WHERE id = 1`, who)
			return err
		})
	}

	a, err := lk.Obtain(ctx, key, &Options{TTL: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := write(a, "a"); err != nil {
		t.Fatalf("holder a, lock held: %v", err)
	}
	<-a.Lost() // a "pauses" past its lease

	b, err := lk.Obtain(ctx, key, &Options{Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release(ctx)
	if err := write(b, "b"); err != nil {
		t.Fatalf("holder b: %v", err)
	}
	if err := write(b, "b"); err != nil {
		t.Fatalf("holder b, second transaction with the same token: %v", err)
	}

	// a wakes up and writes as if nothing happened.
	if err := write(a, "a-stale"); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale holder's write = %v, want ErrFenced", err)
	}
	var by string
	if err := db.QueryRow(ctx, `SELECT by FROM sweeps WHERE id = 1`).Scan(&by); err != nil {
		t.Fatal(err)
	}
	if by != "b" {
		t.Fatalf("row written by %q after the stale write, want b", by)
	}
}

func TestCheckFenceOrdersConcurrentTransactions(t *testing.T) {
	ctx := context.Background()
	db, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Exec(ctx, FencesTableSQL); err != nil {
		t.Fatal(err)
	}
	// The newer holder records its token inside an open transaction; the older one must wait
	// for it and then be refused, not slip in before the commit.
	newer, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckFence(ctx, pgxExec(newer), "job", 10); err != nil {
		t.Fatal(err)
	}
	older := make(chan error, 1)
	go func() {
		older <- pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return CheckFence(ctx, pgxExec(tx), "job", 9) })
	}()
	select {
	case err := <-older:
		t.Fatalf("older token decided before the newer transaction ended: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := newer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-older; !errors.Is(err, ErrFenced) {
		t.Fatalf("older token after the newer committed = %v, want ErrFenced", err)
	}
	if err := CheckFence(ctx, pgxExec(db), "job", 10); err != nil {
		t.Fatalf("same token again: %v", err)
	}
	if err := CheckFence(ctx, pgxExec(db), "other-job", 1); err != nil {
		t.Fatalf("another lock's fence: %v", err)
	}
}

// pgxExec adapts a pgx handle (pgx.Tx, *pgx.Conn, *pgxpool.Pool) to Execer, as a pgx user of
// the package would.
func pgxExec(db interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}) Execer {
	return ExecFunc(func(ctx context.Context, sql string, args ...any) (int64, error) {
		tag, err := db.Exec(ctx, sql, args...)
		return tag.RowsAffected(), err
	})
}
