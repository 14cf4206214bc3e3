package core

import (
	"net/http"
	"testing"
	"time"
)

var testRefresh = Refresh{Min: time.Second, Max: 30 * time.Second}

func TestRefreshGrowsWithDistanceFromTheFront(t *testing.T) {
	start := time.Unix(1000, 0)
	prev := int64(0)
	for _, ahead := range []int64{0, 10, 100, 500, 1000, 5000, 100000} {
		v := Decide(Reply{Outcome: Waiting, Ahead: ahead, Position: ahead + 1, Now: start, Starts: start}, false, Pace{Rate: 50}, testRefresh)
		r := v.Answer.RefreshS
		if r < prev {
			t.Fatalf("refresh_s %d for %d ahead is below %d for fewer", r, ahead, prev)
		}
		if r < 1 || r > 30 {
			t.Fatalf("refresh_s %d outside [1, 30]", r)
		}
		prev = r
	}
	if prev != 30 {
		t.Fatalf("a deep queue polls every %d s, want the maximum 30", prev)
	}
	front := Decide(Reply{Outcome: Waiting, Ahead: 0, Position: 1, Now: start, Starts: start}, false, Pace{Rate: 50}, testRefresh)
	if front.Answer.RefreshS != 1 {
		t.Fatalf("the front polls every %d s, want 1", front.Answer.RefreshS)
	}
}

func TestEstimatedWaitIsAheadOverRate(t *testing.T) {
	v := Decide(Reply{Outcome: Waiting, Ahead: 500, Position: 501, Now: time.Unix(10, 0), Starts: time.Unix(0, 0)}, false, Pace{Rate: 50}, testRefresh)
	if v.Answer.EstimatedWaitS != 10 || v.Answer.Position != 501 || v.Answer.Ahead != 500 {
		t.Fatalf("answer %+v, want a 10 s wait at position 501", v.Answer)
	}
}

func TestDecideMapsEveryOutcomeToTheContract(t *testing.T) {
	now := time.Unix(100, 0)
	cases := []struct {
		o      Outcome
		enter  bool
		status int
		code   string
		state  string
	}{
		{Admitted, false, 200, "", "admitted"},
		{SoldOut, false, 200, "", "sold_out"},
		{Ended, false, 200, "", "ended"},
		{Ended, true, 403, "ended", ""},
		{Paused, false, 200, "", "paused"},
		{Paused, true, 503, "paused", ""},
		{Lapsed, false, 200, "", "ended"},
		{Used, false, 200, "", "ended"},
		{NotEntered, false, 403, "invalid_ticket", ""},
		{NotStarted, true, 403, "not_started", ""},
		{Replayed, true, 403, "invalid_challenge", ""},
		{UnknownSale, false, 404, "unknown_sale", ""},
		{NoRoom, true, 404, "unknown_sale", ""},
		{"garbage", false, 503, "unavailable", ""},
	}
	for _, c := range cases {
		v := Decide(Reply{Outcome: c.o, Now: now, AdmittedUntil: now.Add(time.Minute)}, c.enter, Pace{Rate: 10}, testRefresh)
		if v.Status != c.status || v.Code != c.code || (c.status == http.StatusOK && v.Answer.State != c.state) {
			t.Errorf("%s (enter %v): %d %q %q, want %d %q %q", c.o, c.enter, v.Status, v.Code, v.Answer.State, c.status, c.code, c.state)
		}
	}
	lapsed := Decide(Reply{Outcome: Lapsed, Now: now}, false, Pace{Rate: 10}, testRefresh)
	if lapsed.Answer.Reason != "lapsed" {
		t.Fatalf("a lapsed place is not told why: %+v", lapsed.Answer)
	}
	adm := Decide(Reply{Outcome: Admitted, Now: now, AdmittedUntil: now.Add(time.Minute)}, false, Pace{Rate: 10}, testRefresh)
	if adm.Answer.AdmittedUntil != "1970-01-01T00:02:40Z" {
		t.Fatalf("admitted_until = %q", adm.Answer.AdmittedUntil)
	}
}

func TestPublicStateFollowsTheSaleWindow(t *testing.T) {
	r := SaleRoom{Settings: Settings{Prequeue: 10 * time.Minute}, Starts: time.Unix(10000, 0), Ends: time.Unix(20000, 0)}
	cases := []struct {
		now   int64
		stock int64
		state string
		want  string
	}{
		{9000, 5, "open", "not_started"},
		{9500, 5, "open", "prequeue"},
		{10000, 5, "open", "open"},
		{10000, 0, "open", "sold_out"},
		{10000, 5, "paused", "paused"},
		{20000, 5, "open", "ended"},
	}
	for _, c := range cases {
		if got := PublicState(r, Public{Now: time.Unix(c.now, 0), Stock: c.stock, State: c.state}); got != c.want {
			t.Errorf("at %d stock %d %s: %s, want %s", c.now, c.stock, c.state, got, c.want)
		}
	}
}

func TestPlaceIsStableAndRankIsTheHMACOfTheEntryID(t *testing.T) {
	ekey, seed := []byte("entry-key-entry-key-entry-key-32"), []byte("seed-seed-seed-seed-seed-seed-32")
	a, b := PlaceOf(ekey, seed, "s1", "alice"), PlaceOf(ekey, seed, "s1", "alice")
	if a.EntryID != b.EntryID || a.Member("alice") != b.Member("alice") || len(a.EntryID) != 22 {
		t.Fatalf("places differ for the same user: %s %s", a.EntryID, b.EntryID)
	}
	if PlaceOf(ekey, seed, "s2", "alice").EntryID == a.EntryID || PlaceOf(ekey, seed, "s1", "bob").EntryID == a.EntryID {
		t.Fatal("entry ids collide across sales or users")
	}
	if string(a.Rank[:]) != string(Rank(seed, a.EntryID)) {
		t.Fatal("the rank is not HMAC-SHA256(seed, entry id)")
	}
	if got := EntryIDOfMember(a.Member("alice")); got != a.EntryID {
		t.Fatalf("entry id of the member = %s, want %s", got, a.EntryID)
	}
}

// The estimate's range: at best the room's rate, most likely the observed rate, at worst the
// slower of observed / 1.5 and the floor.
func TestTheEstimatedWaitIsARangeFromTheObservedAdmissionRate(t *testing.T) {
	start := time.Unix(1000, 0)
	w := func(p Pace, ahead int64) (lo, point, hi int64) {
		v := Decide(Reply{Outcome: Waiting, Ahead: ahead, Position: ahead + 1, Now: start, Starts: start.Add(-time.Minute)}, false, p, testRefresh)
		if len(v.Answer.EstimatedWaitRangeS) != 2 {
			t.Fatalf("no range: %+v", v.Answer)
		}
		return v.Answer.EstimatedWaitRangeS[0], v.Answer.EstimatedWaitS, v.Answer.EstimatedWaitRangeS[1]
	}
	// Nothing measured yet: the point is ahead / rate, as before; the range reaches the floor.
	if lo, p, hi := w(Pace{Rate: 10, Floor: 1}, 100); lo != 10 || p != 10 || hi != 100 {
		t.Errorf("unmeasured: [%d %d %d], want [10 10 100]", lo, p, hi)
	}
	// Measured at 4/s: the point follows it, the range is 4 x 1.5 and 4 / 1.5.
	if lo, p, hi := w(Pace{Rate: 10, Floor: 1, Observed: 4, Measured: true}, 120); lo != 20 || p != 30 || hi != 45 {
		t.Errorf("measured 4/s: [%d %d %d], want [20 30 45]", lo, p, hi)
	}
	// Measured faster than the rate (a burst): never faster than the rate.
	if lo, p, _ := w(Pace{Rate: 10, Floor: 1, Observed: 50, Measured: true}, 100); lo != 10 || p != 10 {
		t.Errorf("measured above the rate: lo %d point %d, want 10 10", lo, p)
	}
	// Measured at 0 (live admissions full): the floor, not the rate, is the likely pace.
	if lo, p, hi := w(Pace{Rate: 10, Floor: 0.5, Measured: true}, 100); lo != 134 || p != 200 || hi != 200 {
		t.Errorf("measured 0: [%d %d %d], want [134 200 200]", lo, p, hi)
	}
	// Before the start: from the start to the start plus the whole pre-queue at the floor.
	v := Decide(Reply{Outcome: Waiting, Ahead: 99, Position: 100, Now: start, Starts: start.Add(30 * time.Second)}, false, Pace{Rate: 10, Floor: 1}, testRefresh)
	if v.Answer.EstimatedWaitS != 30 || v.Answer.EstimatedWaitRangeS[0] != 30 || v.Answer.EstimatedWaitRangeS[1] != 129 {
		t.Errorf("before the start: %d %v, want 30 [30 129]", v.Answer.EstimatedWaitS, v.Answer.EstimatedWaitRangeS)
	}
	if f := FloorRate(50, 10, Settings{Oversubscribe: 1.5, Session: time.Minute}); f != 0.25 {
		t.Errorf("floor of 10 units x 1.5 per minute: %v, want 0.25", f)
	}
}

// The admission pace is measured over samples of the admitted counter at least 2 s apart, and
// falls back to the average since the start.
func TestTheAdmissionPaceIsMeasuredFromTheAdmittedCounter(t *testing.T) {
	var a AdmissionPace
	start := time.Unix(1000, 0)
	if _, ok := a.Rate(0, start.Add(time.Second), start); ok {
		t.Fatal("a pace one second after the start, with no samples")
	}
	if r, ok := a.Rate(30, start.Add(10*time.Second), start); !ok || r != 3 {
		t.Fatalf("since the start: %v %v, want 3", r, ok)
	}
	for i := range 20 {
		a.Observe(int64(100+5*i), start.Add(time.Duration(i)*time.Second))
	}
	// Kept: every other second, the last 8: 5 admissions a second.
	if r, ok := a.Rate(0, start, start); !ok || r != 5 {
		t.Fatalf("measured: %v %v, want 5", r, ok)
	}
	a.Observe(0, start.Add(time.Hour)) // the room was set up again
	if r, ok := a.Rate(0, start.Add(time.Hour), start.Add(time.Hour)); ok {
		t.Fatalf("after a reset: %v, want unknown", r)
	}
}
