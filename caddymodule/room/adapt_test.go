package room

import (
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	"github.com/seckilledge/seckill/caddymodule/sealed/sealedhttp"
	"github.com/seckilledge/seckill/internal/validatetest"
)

// The room's Caddyfile (its golden files, the options it refuses) is checked in
// internal/conformance (TestRoomCaddyfileAdaptsToTheDocumentedJSON), which links every module.

func TestValidateRefusesImpossibleSettings(t *testing.T) {
	validatetest.Validates(t, (*Room).setDefaults, new(Room), map[string]*Room{
		"zero oversubscribe":       {Oversubscribe: 0.5},
		"inverted difficulty":      {Difficulty: []int{10, 5}},
		"difficulty too high":      {Difficulty: []int{0, 41}},
		"short session":            {Session: 1},
		"negative rate":            {Rate: -1},
		"slow summary":             {SummaryInterval: caddy.Duration(2 * time.Second), FrontWindow: caddy.Duration(time.Minute)},
		"short presence":           {PresenceWindow: caddy.Duration(5 * time.Second)},
		"slow admission":           {AdmitInterval: caddy.Duration(time.Second)},
		"narrow front":             {SummaryInterval: caddy.Duration(500 * time.Millisecond), FrontWindow: caddy.Duration(time.Second)},
		"instant challenges":       {Kit: roomkit.Kit{Challenges: sealedhttp.Challenges{ChallengeLife: caddy.Duration(time.Millisecond)}}},
		"eternal challenges":       {Kit: roomkit.Kit{Challenges: sealedhttp.Challenges{ChallengeLife: caddy.Duration(time.Hour)}}},
		"bound below -1":           {Kit: roomkit.Kit{Challenges: sealedhttp.Challenges{ChallengesPerUser: -2}}},
		"prefix too long":          {Kit: roomkit.Kit{Challenges: sealedhttp.Challenges{ChallengePrefix: []int{33, 48}}}},
		"max below over":           {Oversubscribe: 2, OversubscribeMax: 1.5},
		"claim below off":          {ClaimWindow: -2},
		"negative difficulty rate": {Kit: roomkit.Kit{DifficultyRate: -1}},
		"negative ttl":             {Kit: roomkit.Kit{CacheTTL: -1}},
	})
}

func TestPresenceWindowOffAdmitsEveryoneInTurn(t *testing.T) {
	h := &Room{PresenceWindow: -1}
	h.setDefaults()
	if err := h.Validate(); err != nil || h.mem.PresenceFor(time.Second) != 0 {
		t.Fatalf("presence_window off: %v, presence %v", err, h.mem.PresenceFor(time.Second))
	}
	w := &Room{PresenceWindow: caddy.Duration(40 * time.Second)}
	w.setDefaults()
	if err := w.Validate(); err != nil || w.mem.PresenceFor(time.Second) != 40*time.Second {
		t.Fatalf("presence_window 40s: %v, presence %v, want the window whatever the refresh", err, w.mem.PresenceFor(time.Second))
	}
}

// By default a waiter is present for the refresh_s of his last answer plus a grace, not for a
// window shared by all: told one second, absent a few seconds after he stops.
func TestByDefaultAWaiterIsPresentForWhatHeWasToldPlusAGrace(t *testing.T) {
	d := new(Room)
	d.setDefaults()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	grace := 2*DefaultSummaryInterval + time.Second
	for _, told := range []time.Duration{time.Second, 5 * time.Second, DefaultRefreshMax} {
		if got := d.mem.PresenceFor(told); got != told+grace {
			t.Errorf("told %v: present for %v, want %v", told, got, told+grace)
		}
	}
}
