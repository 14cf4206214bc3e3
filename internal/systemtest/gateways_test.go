//go:build integration

package systemtest

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// gateway is a gateway process of the system.
type gateway struct {
	Name, Base, Admin string
}

// startGateway runs one gateway of the system as its own process until the test ends
// (handlertest.StartGateway: the gate and room tests start theirs the same way).
func (s *system) startGateway(t *testing.T, name string) gateway {
	t.Helper()
	port, adminPort := testenv.FreePort(t), testenv.FreePort(t)
	g := gateway{Name: name, Base: fmt.Sprintf("http://127.0.0.1:%d", port), Admin: fmt.Sprintf("http://127.0.0.1:%d", adminPort)}
	handlertest.StartGateway(t, s.gatewayJSON(port, adminPort, true), g.Base)
	return g
}

// scriptCalls is the gateway's count of decision script calls (seckill_gate_script_seconds):
// a sold_out answer that leaves it unchanged came from the gateway's local sold-out flag.
func (g gateway) scriptCalls(t *testing.T) int64 {
	t.Helper()
	resp, err := http.Get(g.Admin + "/metrics")
	if err != nil {
		t.Fatalf("%s metrics: %v", g.Name, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "seckill_gate_script_seconds_count "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int64(n)
		}
	}
	return 0
}

// within polls every gateway at once with ask until each answers what want accepts, and fails
// the test unless every one did within d of start (the control's answer, or the moment it
// named), and not before it. ask gets the
// attempt's number, so it can name a fresh buyer.
func within(t *testing.T, what string, gws []gateway, start time.Time, d time.Duration,
	ask func(g gateway, i int) answer, want func(answer) bool) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]string, len(gws))
	for k, g := range gws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last answer
			for i := 0; time.Since(start) < 5*time.Second; i++ {
				last = ask(g, i)
				if want(last) {
					took := time.Since(start)
					t.Logf("%s: %s %v after the control's moment", g.Name, what, took.Round(time.Millisecond))
					if took < -5*time.Millisecond { // (ends_ms is whole milliseconds)
						errs[k] = fmt.Sprintf("%s: %s %v before the control's moment", g.Name, what, -took)
					}
					if took > d {
						errs[k] = fmt.Sprintf("%s: %s after %v (limit %v)", g.Name, what, took.Round(time.Millisecond), d)
					}
					return
				}
				time.Sleep(10 * time.Millisecond) // the poll's pace; the verdict is the timestamp
			}
			errs[k] = fmt.Sprintf("%s: never %s; last answer %+v", g.Name, what, last)
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

func is(status int, code string) func(answer) bool {
	return func(a answer) bool { return a.Status == status && a.Code == code }
}

// Every control, through the backend's admin API as alice, obeyed by two gateway processes
// on one sale within a second: pause (both 503 paused), resume (both sell again), a stock add
// on a sold-out sale (both sell again: their local sold-out flags cleared), a moved end (both
// answer ended from the new end on), and end now on a second sale (both answer ended). Each
// control is in the audit trail with its author.
func TestTwoGatewaysObeyEveryControlWithinASecondAndEachIsAudited(t *testing.T) {
	s := newSystem(t)
	s.admin()
	s.consume(nil)
	sale := s.sale(4)
	t0 := time.Now()
	gws := []gateway{s.startGateway(t, "gateway-1"), s.startGateway(t, "gateway-2")}
	t.Logf("two gateways up in %v", time.Since(t0).Round(time.Millisecond))
	const limit = time.Second

	// Each gateway sells one unit; its buyer is the probe that costs no stock afterwards
	// (already_bought until a control says otherwise: the script checks the sale's state first).
	probe := map[string]string{}
	for _, g := range gws {
		probe[g.Name] = "probe-" + g.Name
		if a := buy(t, g.Base, sale, probe[g.Name], nil); a.Status != http.StatusAccepted {
			t.Fatalf("%s: first buy %+v", g.Name, a)
		}
	}
	askProbe := func(g gateway, _ int) answer { return buy(t, g.Base, sale, probe[g.Name], nil) }
	fresh := func(tag string) func(g gateway, i int) answer {
		return func(g gateway, i int) answer {
			return buy(t, g.Base, sale, fmt.Sprintf("%s-%s-%d", tag, g.Name, i), nil)
		}
	}

	// Pause.
	start := time.Now()
	if code, body := s.control(aliceToken, http.MethodPost, "/admin/sales/"+sale+"/pause", ""); code != http.StatusOK {
		t.Fatalf("pause: %d %v", code, body)
	}
	within(t, "paused", gws, start, limit, askProbe, is(http.StatusServiceUnavailable, "paused"))
	// Paused, a fresh buyer gets nothing either.
	for _, g := range gws {
		if a := buy(t, g.Base, sale, "paused-buyer-"+g.Name, nil); a.Code != "paused" {
			t.Fatalf("%s: a fresh buyer while paused: %+v", g.Name, a)
		}
	}

	// Resume: the probes are buyers again, and each gateway sells the last two units.
	start = time.Now()
	if code, body := s.control(aliceToken, http.MethodPost, "/admin/sales/"+sale+"/resume", ""); code != http.StatusOK {
		t.Fatalf("resume: %d %v", code, body)
	}
	within(t, "selling again after resume", gws, start, limit, askProbe, is(http.StatusConflict, "already_bought"))
	for _, g := range gws {
		if a := buy(t, g.Base, sale, "after-resume-"+g.Name, nil); a.Status != http.StatusAccepted {
			t.Fatalf("%s: a buyer after resume: %+v", g.Name, a)
		}
	}

	// Sold out. Each gateway must hold the sale's local sold-out flag before the stock add,
	// else the add would prove nothing: a sold_out answer without a script call is the flag.
	for _, g := range gws {
		testenv.WaitFor(t, 10*time.Second, g.Name+"'s local sold-out flag", func() bool {
			before := g.scriptCalls(t)
			a := buy(t, g.Base, sale, testenv.ID("late-"), nil)
			return a.Code == "sold_out" && g.scriptCalls(t) == before
		})
	}

	// Two units more: each gateway sells one within the second (a gateway that kept its
	// flag would answer sold_out without asking Redis).
	start = time.Now()
	if code, body := s.control(aliceToken, http.MethodPost, "/admin/sales/"+sale+"/stock",
		`{"add":3,"request_id":"systemtest-add-`+sale+`"}`); code != http.StatusOK {
		t.Fatalf("stock add: %d %v", code, body)
	}
	within(t, "selling again after the stock add", gws, start, limit, fresh("restocked"), is(http.StatusAccepted, ""))

	// Move the end two seconds ahead (one unit is left, so no gateway answers from a sold-out
	// flag): both still sell now, and both answer ended within a second of the new end.
	endsAt := time.Now().Add(2 * time.Second).UTC()
	if code, body := s.control(aliceToken, http.MethodPatch, "/admin/sales/"+sale,
		`{"ends_at":"`+endsAt.Format(time.RFC3339Nano)+`"}`); code != http.StatusOK {
		t.Fatalf("move end: %d %v", code, body)
	}
	for _, g := range gws {
		if a := askProbe(g, 0); a.Code != "already_bought" {
			t.Fatalf("%s: before the moved end: %+v", g.Name, a)
		}
	}
	within(t, "ended at the moved end", gws, endsAt, limit, askProbe, is(handler.Ended.Status, "ended"))
	// An ended sale refuses every control.
	if code, body := s.control(aliceToken, http.MethodPost, "/admin/sales/"+sale+"/end", ""); code != http.StatusConflict || body["code"] != "sale_ended" {
		t.Fatalf("end of an ended sale: %d %v", code, body)
	}

	// End now, on a second sale both gateways are selling.
	sale2 := s.sale(4)
	for _, g := range gws {
		if a := buy(t, g.Base, sale2, probe[g.Name], nil); a.Status != http.StatusAccepted {
			t.Fatalf("%s: buy on the second sale: %+v", g.Name, a)
		}
	}
	start = time.Now()
	if code, body := s.control(aliceToken, http.MethodPost, "/admin/sales/"+sale2+"/end", ""); code != http.StatusOK {
		t.Fatalf("end: %d %v", code, body)
	}
	within(t, "ended", gws, start, limit, func(g gateway, _ int) answer { return buy(t, g.Base, sale2, probe[g.Name], nil) },
		is(handler.Ended.Status, "ended"))
	for _, g := range gws {
		if a := buy(t, g.Base, sale2, "after-end-"+g.Name, nil); a.Code != "ended" {
			t.Fatalf("%s: a fresh buyer after end: %+v", g.Name, a)
		}
	}

	// The audit trail: every control, by alice, read by a viewer.
	audited := func(sale string, actions ...string) {
		t.Helper()
		code, body := s.control(viewerToken, http.MethodGet, "/admin/audit?sale="+sale, "")
		if code != http.StatusOK {
			t.Fatalf("audit: %d %v", code, body)
		}
		entries, _ := body["entries"].([]any)
		seen := map[string]bool{}
		for _, e := range entries {
			m, _ := e.(map[string]any)
			if m["who"] != "alice" || m["role"] != "admin" || m["sale_id"] != sale || m["request_id"] == "" {
				t.Fatalf("audit entry %v: want alice, admin, the sale, a request id", m)
			}
			seen[fmt.Sprint(m["action"])] = true
		}
		for _, action := range actions {
			if !seen[action] {
				t.Fatalf("audit trail of %s %v lacks %s", sale, entries, action)
			}
		}
	}
	audited(sale, "pause", "resume", "stock", "move_end")
	audited(sale2, "end")
}
