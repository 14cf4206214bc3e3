package webhook

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
)

// A waitlist event's body is a contract.UnitEvent: the offer's end from claim_until, and none
// of an order event's or a draw event's fields.
func TestAUnitEventIsSentAsAUnitEventBody(t *testing.T) {
	until := time.Date(2026, 12, 2, 20, 40, 0, 0, time.FixedZone("x", 3600))
	at := time.Date(2026, 12, 2, 20, 38, 0, 0, time.UTC)
	id := UnitEventID("spring", UnitEvent{Type: contract.EventUnitOffered, UserID: "u7", OfferUntil: until})
	d := delivery{event: contract.WebhookEvent{ID: id, Type: contract.EventUnitOffered, OrderID: "unit:spring:u7",
		SaleID: "spring", UserID: "u7", At: at}, draw: &drawFields{claimUntil: &until}}
	b, err := d.body()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": "unit.offered:spring:u7:" + "1796240400000", "version": float64(1), "type": "unit.offered",
		"sale_id": "spring", "user_id": "u7", "offer_until": "2026-12-02T19:40:00Z", "at": "2026-12-02T20:38:00Z"}
	if len(got) != len(want) {
		t.Fatalf("body %s, want exactly %v", b, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("body %s: %s = %v, want %v", b, k, got[k], v)
		}
	}
}
