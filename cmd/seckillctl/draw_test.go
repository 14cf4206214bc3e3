package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// drawAdmin stands in for the backend's GET and POST /admin/sales/{id}/draw (another part of
// issue 29 builds them) with the shape docs/draw.md fixes; it records what the CLI asked.
type drawAdmin struct {
	mu    sync.Mutex
	calls []string
}

const drawBody = `{"sale_id":"sneaker","state":"drawn","entries":37,"entries_by_variant":{"42":12,"40":13,"41":12},
	"root":"ab12","seed_commitment":"cd34","waves":[
	{"variant":"40","wave":1,"lo":0,"hi":3,"at":"2026-12-01T14:00:00Z","claim_until":"2026-12-01T14:10:00Z","claimed":1},
	{"variant":"40","wave":2,"lo":3,"hi":5,"at":"2026-12-01T14:10:00Z","claim_until":"2026-12-01T14:20:00Z","claimed":0}]}`

func (d *drawAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.calls = append(d.calls, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
	d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path != "/admin/sales/sneaker/draw" {
		w.WriteHeader(404)
		_ = json.NewEncoder(w).Encode(map[string]string{"code": "unknown_sale", "message": "no such sale"})
		return
	}
	_, _ = w.Write([]byte(drawBody))
}

func TestSeckillctlShowsAndRunsADraw(t *testing.T) {
	d := &drawAdmin{}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	out := mustCtl(t, srv, "draw", "show", "sneaker")
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"state drawn", "entries 37", "entries root ab12", "seed commitment cd34",
		"40 13 41 12 42 12", "40 1 1-3 3 1", "40 2 4-5 2 0"} {
		if !strings.Contains(flat, want) {
			t.Fatalf("draw show: no %q in\n%s", want, out)
		}
	}
	if out := mustCtl(t, srv, "draw", "run", "sneaker"); !strings.Contains(out, "draw run sneaker: done") {
		t.Fatalf("draw run: %s", out)
	}
	out = mustCtl(t, srv, "draw", "show", "sneaker", "-o", "json")
	var back map[string]any
	if err := json.Unmarshal([]byte(out), &back); err != nil || back["state"] != "drawn" {
		t.Fatalf("draw show -o json: %v %s", err, out)
	}
	if code, _, errs := ctl(t, srv, adminToken, "draw", "show", "nosuch"); code != 1 || !strings.Contains(errs, "404 unknown_sale") {
		t.Fatalf("an unknown sale: exit %d %s", code, errs)
	}
	for _, args := range [][]string{{"draw"}, {"draw", "delete", "sneaker"}, {"draw", "run"}, {"draw", "show", "a", "b"}} {
		if code, _, _ := ctl(t, srv, adminToken, args...); code != 2 {
			t.Fatalf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
	want := []string{
		"GET /admin/sales/sneaker/draw Bearer " + adminToken,
		"POST /admin/sales/sneaker/draw Bearer " + adminToken,
		"GET /admin/sales/sneaker/draw Bearer " + adminToken,
		"GET /admin/sales/nosuch/draw Bearer " + adminToken,
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if strings.Join(d.calls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the CLI asked:\n%s\nwant:\n%s", strings.Join(d.calls, "\n"), strings.Join(want, "\n"))
	}
}
