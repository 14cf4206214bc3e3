package sales

import (
	"strings"
	"testing"
	"time"

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

// The room's waitlist offers one unit of the sale's one stock: a sale with variants or a
// per-user limit above 1 is refused at creation with a clear error, not sold without it.
func TestARoomWaitlistIsRefusedWithVariantsOrALimitAboveOne(t *testing.T) {
	t.Parallel()
	now := time.Now()
	base := func() SaleSpec {
		return SaleSpec{ID: "w1", Stock: 3, StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), Room: &admin.RoomSpec{Waitlist: true}}
	}
	if _, err := base().Validate(); err != nil {
		t.Fatalf("a waitlist on a plain sale refused: %v", err)
	}
	withVariants := base()
	withVariants.Stock = 0
	withVariants.Variants = []VariantSpec{{ID: "s", Stock: 1}, {ID: "m", Stock: 2}}
	if _, err := withVariants.Validate(); err == nil || !strings.Contains(err.Error(), "room.waitlist") {
		t.Fatalf("a waitlist with variants: %v, want refused", err)
	}
	withVariants.Room.Waitlist = false
	if _, err := withVariants.Validate(); err != nil {
		t.Fatalf("a room without waitlist on a sale with variants refused: %v", err)
	}
	limit := base()
	limit.PerUserLimit = 2
	if _, err := limit.Validate(); err == nil || !strings.Contains(err.Error(), "room.waitlist") {
		t.Fatalf("a waitlist with per_user_limit 2: %v, want refused", err)
	}
	sharded := base()
	sharded.Shards = 4
	if _, err := sharded.Validate(); err == nil {
		t.Fatal("a room (and its waitlist) on a sharded sale accepted")
	}
}
