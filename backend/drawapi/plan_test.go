//go:build integration

package drawapi

import (
	"context"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/backend/internal/backendtest"
)

// What an entrant reads is served without reading the whole set: on a draw of
// 50 000 entries (and its tree) next to another sale's, every query of a read walks an index
// of draw_entries and draw_nodes, never a whole table.
func TestEveryDrawReadWalksAnIndexOnALargeDraw(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := backendtest.DB(t)
	for _, q := range []string{
		`INSERT INTO sales (id, initial_stock, stock, starts_at, ends_at) SELECT s, 1, 1, now(), now() + interval '1 hour' FROM unnest(ARRAY['big', 'other']) s`,
		`INSERT INTO draws (sale_id, opens_at, closes_at, claim_within_ms, state, entries) SELECT s, now() - interval '1 hour', now(), 60000, 'drawn', 50000 FROM unnest(ARRAY['big', 'other']) s`,
		// Eight sizes; positions in entry order (the plans do not depend on the ranking).
		`INSERT INTO draw_entries (sale_id, entry_id, user_id, variant, idx, leaf, pos)
			SELECT s, lpad(to_hex(i), 8, '0'), 'u' || i, (i % 8)::text, i, sha256(i::text::bytea), i / 8
			FROM unnest(ARRAY['big', 'other']) s, generate_series(0, 49999) i`,
		`INSERT INTO draw_nodes (sale_id, level, idx, hash)
			SELECT s, l, i, sha256(i::text::bytea) FROM unnest(ARRAY['big', 'other']) s, generate_series(1, 16) l,
				generate_series(0, (50000 >> l)) i`,
		`INSERT INTO draw_waves (sale_id, variant, wave, lo, hi, at, claim_until)
			SELECT 'big', v::text, w, (w - 1) * 500, w * 500, now(), now() FROM generate_series(0, 7) v, generate_series(1, 3) w`,
		`ANALYZE`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, c := range []struct {
		name string
		q    string
		args []any
	}{
		{"waves", qWaves, []any{"big"}},
		{"first page", qPage, []any{"big", "", DefaultLimit + 1}},
		{"a page", qPage, []any{"big", "00010000", MaxLimit + 1}},
		{"entry", qEntry, []any{"big", "u12345"}},
		{"siblings", qSiblings, []any{"big", 12344, []int16{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
			[]int32{3087, 1542, 770, 384, 193, 97, 49, 25, 13, 7, 2, 0, 1, 0, 1}}},
	} {
		rows, err := pool.Query(ctx, "EXPLAIN "+c.q, c.args...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		text := strings.Join(plan, "\n")
		if strings.Contains(text, "Seq Scan on draw_entries") || strings.Contains(text, "Seq Scan on draw_nodes") ||
			strings.Contains(text, "Bitmap Heap Scan") || !strings.Contains(text, "Index") {
			t.Errorf("%s reads a whole table:\n%s", c.name, text)
		}
	}
}
