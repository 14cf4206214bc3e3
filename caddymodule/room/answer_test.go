package room

import (
	"bytes"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/room/core"
)

// An answer every waiter is told alike (sold out, paused, ended: its state, units left and
// refresh_s alone) is encoded once and then written as those bytes, the very bytes its own
// encoding gives, until what it says changes; any other answer is encoded per poll.
func TestAnAnswerEveryWaiterIsToldAlikeIsEncodedOnce(t *testing.T) {
	var s stableAnswers
	for _, state := range []core.Outcome{core.SoldOut, core.Paused, core.Ended} {
		a := core.QueueAnswer{State: string(state), UnitsLeft: 7, RefreshS: 2}
		first := s.of(&a)
		if want := core.AppendAnswer(nil, &a); !bytes.Equal(first, want) {
			t.Fatalf("%s: %s, want %s", state, first, want)
		}
		if again := s.of(&a); &again[0] != &first[0] {
			t.Errorf("%s: encoded again although nothing changed", state)
		}
		a.UnitsLeft = 6
		if got, want := s.of(&a), core.AppendAnswer(nil, &a); !bytes.Equal(got, want) {
			t.Errorf("%s after a sale: %s, want %s", state, got, want)
		}
		a.RefreshS = 5
		if got, want := s.of(&a), core.AppendAnswer(nil, &a); !bytes.Equal(got, want) {
			t.Errorf("%s, told to come back later: %s, want %s", state, got, want)
		}
	}
	for _, a := range []core.QueueAnswer{
		{State: string(core.Waiting), Position: 3, Ahead: 2, RefreshS: 1},
		{State: string(core.Admitted), AdmittedUntil: "2026-12-07T03:00:00Z", RefreshS: 5},
		{State: string(core.Ended), Reason: "lapsed"},
		{State: string(core.SoldOut), Ticket: "t1"},
	} {
		if b := s.of(&a); b != nil {
			t.Errorf("%+v is told alike: %s", a, b)
		}
	}
	var none *stableAnswers // a handler that made none encodes every answer
	if none.of(&core.QueueAnswer{State: string(core.SoldOut)}) != nil {
		t.Error("a nil set answered")
	}
}
