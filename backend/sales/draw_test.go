package sales

import (
	"context"
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
	"github.com/seckilledge/seckill/internal/testenv"
)

func TestBadDrawSpecsAre400NamingTheFieldAndAGoodOneIsStoredAndShown(t *testing.T) {
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
