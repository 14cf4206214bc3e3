//go:build integration

package sales

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/internal/testenv"
)

func TestBadDrawSpecsAre400NamingTheFieldAndAGoodOneIsStoredAndShown(t *testing.T) {
	t.Parallel()
	pool := backendtest.DB(t)
	rdb := testenv.Redis(t)
	s := &Sales{Pool: pool, Redis: rdb, Locker: lock.NewLocker(rdb, 10*time.Second), Log: slog.New(slog.DiscardHandler)}
	post := func(body string) (int, map[string]string) {
		rec := httptest.NewRecorder()
		s.HandleCreateSale(rec, httptest.NewRequest(http.MethodPost, "/admin/sales", strings.NewReader(body)))
		var out map[string]string
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	const window = `"starts_at":"2030-01-02T00:00:00Z","ends_at":"2030-01-03T00:00:00Z"`
	for _, c := range []struct{ draw, extra, field string }{
		{`{"closes_at":"2030-01-01T00:00:00Z","claim_within":"10m"}`, ``, "draw.opens_at"},
		{`{"opens_at":"2029-12-31T00:00:00Z","claim_within":"10m"}`, ``, "draw.closes_at"},
		{`{"opens_at":"2030-01-01T00:00:00Z","closes_at":"2030-01-01T00:00:00Z","claim_within":"10m"}`, ``, "draw.closes_at"},
		{`{"opens_at":"2029-12-31T00:00:00Z","closes_at":"2030-01-01T00:00:00Z","claim_within":"500ms"}`, ``, "draw.claim_within"},
		{`{"opens_at":"2029-12-31T00:00:00Z","closes_at":"2030-01-01T00:00:00Z"}`, ``, "draw.claim_within"},
		{`{"opens_at":"2029-12-31T00:00:00Z","closes_at":"2030-01-01T00:00:00Z","claim_within":"10m","difficulty":[5,2]}`, ``, "draw.difficulty"},
		{`{"opens_at":"2029-12-31T00:00:00Z","closes_at":"2030-01-02T00:00:01Z","claim_within":"10m"}`, ``, "draw.closes_at"},
		{`{"opens_at":"2029-12-31T00:00:00Z","closes_at":"2030-01-01T00:00:00Z","claim_within":"10m"}`, `,"per_user_limit":2`, "per_user_limit"},
		{`{"opens_at":"2029-12-31T00:00:00Z","closes_at":"2030-01-01T00:00:00Z","claim_within":"10m"}`, `,"shards":2`, "shards"},
		{`{"opens_at":"2029-12-31T00:00:00Z","closes_at":"2030-01-01T00:00:00Z","claim_within":"10m"}`, `,"room":{}`, "room"},
		{`{"opens_at":"2029-12-31T00:00:00Z","closes_at":"2030-01-01T00:00:00Z","claim_within":"10m","seed":"x"}`, ``, "seed"},
	} {
		code, out := post(`{"id":"` + testenv.ID("d") + `","stock":5,` + window + c.extra + `,"draw":` + c.draw + `}`)
		if code != http.StatusBadRequest || out["code"] != contract.CodeBadRequest || !strings.Contains(out["error"]+out["message"], c.field) {
			t.Errorf("draw %s%s: %d %v, want 400 bad_request naming %s", c.draw, c.extra, code, out, c.field)
		}
	}
	id := testenv.ID("d")
	code, _ := post(`{"id":"` + id + `",` + window + `,"variants":[{"id":"s","stock":2}],"draw":{"opens_at":"2029-12-31T00:00:00Z","closes_at":"2030-01-01T00:00:00Z","claim_within":"10m","difficulty":[0,4]}}`)
	if code != http.StatusCreated {
		t.Fatalf("good draw sale: %d", code)
	}
	var claim int64
	if err := pool.QueryRow(context.Background(), `SELECT claim_within_ms FROM draws WHERE sale_id = $1 AND state = 'open' AND dmax = 4`, id).Scan(&claim); err != nil || claim != 600_000 {
		t.Fatalf("draws row: %d %v", claim, err)
	}
	st, err := s.SaleStatus(context.Background(), id)
	if err != nil || st.Draw == nil || st.Draw.ClaimWithin != "10m0s" || st.Draw.Difficulty == nil || st.Draw.Difficulty[1] != 4 {
		t.Fatalf("status: %+v %v", st.Draw, err)
	}
	// Preheat twice: the first seed and its commitment stay, Postgres holds the commitment.
	first, err := s.Preheat(context.Background(), id)
	if err != nil || first.Draw == nil || !first.Draw.Created {
		t.Fatalf("preheat: %+v %v", first, err)
	}
	seed := rdb.HGet(context.Background(), contract.DrawKey(id), "seed").Val()
	again, err := s.Preheat(context.Background(), id)
	if err != nil || again.Draw.Created || again.Draw.SeedCommitment != first.Draw.SeedCommitment || rdb.HGet(context.Background(), contract.DrawKey(id), "seed").Val() != seed {
		t.Fatalf("second preheat drew a new seed: %+v", again.Draw)
	}
	if st, _ := s.SaleStatus(context.Background(), id); st.SeedCommitment != first.Draw.SeedCommitment {
		t.Fatalf("status commitment %q, want %q", st.SeedCommitment, first.Draw.SeedCommitment)
	}
}

// A draw's commitment is public from its first preheat: entrants see it and may save it. A later
// preheat keeps it or refuses (409 seed_lost); it never draws a new seed, whatever happened to
// the draw hash in Redis (the seed deleted, the whole hash deleted, another seed and
// commitment written there), and Postgres keeps the first commitment.
func TestAPreheatNeverReplacesAPublishedDrawCommitment(t *testing.T) {
	t.Parallel()
	pool := backendtest.DB(t)
	rdb := testenv.Redis(t)
	ctx := context.Background()
	s := &Sales{Pool: pool, Redis: rdb, Locker: lock.NewLocker(rdb, 10*time.Second), Log: slog.New(slog.DiscardHandler)}
	id := testenv.ID("d")
	t.Cleanup(func() {
		rdb.Del(context.Background(), contract.MetaKey(id), contract.DrawKey(id))
		rdb.SRem(context.Background(), contract.SalesIndexKey, id)
	})
	now := time.Now().UTC().Truncate(time.Second)
	spec := SaleSpec{ID: id, StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), Variants: []VariantSpec{{ID: "s", Stock: 2}},
		Draw: &admin.DrawSpec{OpensAt: now.Add(-time.Hour), ClosesAt: now.Add(time.Hour), ClaimWithin: "10m"}}
	if created, err := s.CreateSale(ctx, spec); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	first, err := s.Preheat(ctx, id)
	if err != nil || first.Draw == nil || !first.Draw.Created {
		t.Fatalf("preheat: %+v %v", first, err)
	}
	published := first.Draw.SeedCommitment
	kept := rdb.HGetAll(ctx, contract.DrawKey(id)).Val()
	preheat := func() (int, string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/admin/sales/"+id+"/preheat", nil)
		req.SetPathValue("id", id)
		s.HandlePreheat(rec, req)
		var out struct{ Code string }
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out.Code
	}
	const otherSeed = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
	for _, c := range []struct {
		name string
		lose func()
		seed string // the draw hash's seed after the refused preheat: none, or the one written
	}{
		{"the seed deleted", func() { rdb.HDel(ctx, contract.DrawKey(id), "seed") }, ""},
		{"the draw hash deleted", func() { rdb.Del(ctx, contract.DrawKey(id)) }, ""},
		{"another seed and its commitment written", func() {
			rdb.HSet(ctx, contract.DrawKey(id), "seed", otherSeed, "commitment", draw.Commitment(mustHex(t, otherSeed)))
		}, otherSeed},
	} {
		c.lose()
		if code, refusal := preheat(); code != http.StatusConflict || refusal != "seed_lost" {
			t.Errorf("%s: preheat answered %d %q, want 409 seed_lost", c.name, code, refusal)
		}
		var pg string
		if err := pool.QueryRow(ctx, `SELECT seed_commitment FROM draws WHERE sale_id = $1`, id).Scan(&pg); err != nil || pg != published {
			t.Fatalf("%s: Postgres commitment %q (%v), want the published %s", c.name, pg, err, published)
		}
		if seed := rdb.HGet(ctx, contract.DrawKey(id), "seed").Val(); seed != c.seed {
			t.Fatalf("%s: the draw hash's seed after the refusal is %q, want %q: the preheat drew a new one", c.name, seed, c.seed)
		}
		// The kept hash back: the preheat keeps it again.
		rdb.Del(ctx, contract.DrawKey(id))
		fields := make([]any, 0, 2*len(kept))
		for k, v := range kept {
			fields = append(fields, k, v)
		}
		rdb.HSet(ctx, contract.DrawKey(id), fields...)
		if code, _ := preheat(); code != http.StatusOK {
			t.Fatalf("%s: the preheat with the seed back: %d", c.name, code)
		}
		if got := rdb.HGet(ctx, contract.DrawKey(id), "seed").Val(); got != kept["seed"] {
			t.Fatalf("%s: the seed after the preheat is %q, want the first", c.name, got)
		}
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
