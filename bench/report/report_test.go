package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/bench/scenario/crowd"
	"github.com/seckilledge/seckill/internal/invariants"
)

func fakeRun(t *testing.T, name, kind string, won int64) *crowd.Outcome {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= won {
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"order_id":"o%d"}`, n.Load())
			return
		}
		w.WriteHeader(http.StatusConflict)
		fmt.Fprint(w, `{"code":"sold_out","message":"m"}`)
	}))
	defer srv.Close()
	reqs := make([]load.Request, 300)
	for i := range reqs {
		reqs[i] = load.Request{Method: "POST", URL: srv.URL, Kind: crowd.KindCrowd}
	}
	res := load.Execute(context.Background(), load.Run{Name: name, Model: load.Model{Connections: 4}, Requests: reqs})
	o := &crowd.Outcome{Name: name, Kind: kind, Rush: res, Latency: load.PercentilesOf(res.Latency), Accepted: int(won)}
	if kind != crowd.Ceiling {
		o.Verify = &invariants.Report{Checks: []invariants.Check{{N: 1, Name: "no oversell", Verdict: invariants.Pass, Detail: "fine"}}}
	}
	return o
}

func TestReportRendersTableJSONAndSelfContainedHTML(t *testing.T) {
	r := &crowd.Result{Date: time.Now(), Command: "seckill-bench", Machine: driver.ThisMachine(), Crowd: crowd.DefaultCrowd(), Stock: 10}
	r.Contestants = []*crowd.Outcome{fakeRun(t, "optimistic lock (DB)", crowd.Optimistic, 10), fakeRun(t, "full edge", crowd.Edge, 10), fakeRun(t, "ceiling", crowd.Ceiling, 0)}
	r.Evaluate()
	var txt bytes.Buffer
	Text(&txt, r)
	for _, want := range []string{"| full edge |", "vs optimistic", "PASS  1. no oversell", "every invariant PASSes", "targets"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, txt.String())
		}
	}
	var html bytes.Buffer
	if err := HTML(&html, r); err != nil {
		t.Fatal(err)
	}
	h := html.String()
	if strings.Count(h, "<svg") < 4 { // the distribution plus one timeline per run
		t.Errorf("the HTML has %d charts, want 4", strings.Count(h, "<svg"))
	}
	if strings.Contains(h, "<script") || strings.Contains(h, "src=\"http") || strings.Contains(h, "href=\"http") {
		t.Error("the HTML loads something from outside: it must be self-contained")
	}
	path := filepath.Join(t.TempDir(), "result.json")
	if err := WriteJSON(path, r); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var back crowd.Result
	if err := json.Unmarshal(b, &back); err != nil || len(back.Contestants) != 3 || back.Contestants[1].Rush.Completed != 300 {
		t.Fatalf("JSON round trip: %v %+v", err, back.Contestants)
	}
	r.Contestants[1].Verify.Checks[0].Verdict = invariants.Fail
	txt.Reset()
	Text(&txt, r)
	if !strings.Contains(txt.String(), "FAIL: an invariant") {
		t.Error("a failed check does not show in the summary")
	}
}
