package sales

import (
	"testing"

	"github.com/seckilledge/seckill/contract/admin"
)

func TestRoomSpecRefusesImpossibleSettings(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	for name, spec := range map[string]admin.RoomSpec{
		"zero rate":           {Rate: f(0)},
		"oversubscribe below": {Oversubscribe: f(0.9)},
		"short session":       {Session: "500ms"},
		"negative prequeue":   {Prequeue: "-1m"},
		"bad duration":        {Session: "soon"},
		"inverted difficulty": {Difficulty: &admin.Difficulty{10, 4}},
		"difficulty too high": {Difficulty: &admin.Difficulty{0, 41}},
	} {
		if err := spec.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := (admin.RoomSpec{Rate: f(50), Oversubscribe: f(1.5), Session: "2m", Prequeue: "15m", Difficulty: &admin.Difficulty{0, 0}}).Validate(); err != nil {
		t.Fatalf("a good spec refused: %v", err)
	}
}
