package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/internal/invariants"
)

// The rows must be able to fail: a gate that accepts while Redis is down, answers 503 without
// Retry-After, or an order that never reaches Postgres is a FAIL.
func TestRedisRowFailsOnAnAcceptanceWithoutRedis(t *testing.T) {
	t0 := time.Now()
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	h := Happened{Fault: Fault{Kind: RedisStop}, Start: at(10), Down: at(10.1), Up: at(14), Recovered: at(14.2),
		BuyersAfter: map[string]string{"b": "o1"}}
	watch := newOrderWatch(nil)
	watch.Add("o1")
	watch.seen["o1"], watch.status["o1"] = at(15), "created"
	good := []Attempt{
		{User: "a", Step: "buy", Sent: at(11), Done: at(11.1), Status: 503, Outcome: "unavailable", RetryAfter: true},
		{User: "b", Step: "buy", Sent: at(9.9), Done: at(9.95), Status: 202, Outcome: "accepted", OrderID: "o1"},
	}
	ev := evaluator{start: t0, attempts: good, accepted: []invariants.Accepted{{OrderID: "o1", UserID: "b", At: at(9.95)}}, watch: watch, catchUp: time.Minute}
	if r := ev.row(h); r.Verdict != invariants.Pass {
		t.Fatalf("a clean outage failed: %+v", r)
	}
	cases := map[string][]Attempt{
		"accepted without Redis": {good[0], {User: "c", Step: "buy", Sent: at(12), Done: at(12.1), Status: 202, Outcome: "accepted", OrderID: "o2"}},
		"without Retry-After":    {{User: "a", Step: "buy", Sent: at(11), Done: at(11.1), Status: 503, Outcome: "unavailable"}},
		"other 5xx":              {good[0], {User: "d", Step: "buy", Sent: at(11), Done: at(11.1), Status: 502, Outcome: "http_502"}},
		"no 503 at all":          {{User: "e", Step: "buy", Sent: at(11), Done: at(11.1), Outcome: "error"}},
	}
	for name, attempts := range cases {
		ev.attempts = attempts
		if r := ev.row(h); r.Verdict != invariants.Fail || !strings.Contains(r.Outcome, "FAIL") {
			t.Errorf("%s: %+v", name, r)
		}
	}
	// A decision acknowledged before the stop that the restarted Redis forgot.
	ev.attempts = good
	h.BuyersAfter = map[string]string{}
	if r := ev.row(h); r.Verdict != invariants.Fail || !strings.Contains(r.Outcome, "lost with Redis") {
		t.Errorf("a forgotten decision passed: %+v", r)
	}
	h.BuyersAfter = map[string]string{"b": "o1"}
	// An order accepted just before the stop that never reaches Postgres.
	ev.attempts = good
	ev.accepted = append(ev.accepted, invariants.Accepted{OrderID: "lost", UserID: "f", At: at(9.99)})
	watch.Add("lost")
	if r := ev.row(h); r.Verdict != invariants.Fail {
		t.Errorf("a lost order passed: %+v", r)
	}
}
