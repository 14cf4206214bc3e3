//go:build integration

package deploy

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/seckilledge/seckill/internal/testenv"
)

// Behind a balancer that appends the address it saw to the client's X-Forwarded-For, the
// left-most entries are the client's own words. {client_ip} (the per-IP zones' key) must be the
// right-most address that is not a trusted proxy: rotating the left-most one does not make a
// new key, and naming a victim's address does not fill the victim's zone.
func appendedForwardedFor(t *testing.T, g *gateway) {
	order := "/orders/" + uuid.NewString()
	newUser := func() client { return client{Cookie: g.Shop.signIn(testenv.ID("u"))} }
	// poll is one order poll as the balancer forwards it: what the client sent, then the
	// address the balancer saw.
	poll := func(c client, sent, seen string) reply {
		hdr := map[string]string{"X-Forwarded-For": seen}
		if sent != "" {
			hdr["X-Forwarded-For"] = sent + ", " + seen
		}
		return g.do(t, c, http.MethodGet, order, hdr)
	}

	// One address, five users (none over the user zone's 20 per 10 s), a fresh left-most
	// address on every poll: the IP zone (60 per 10 s) still stops them.
	real, limited := newIP(), 0
	for i := range 5 {
		c := newUser()
		for j := range 15 {
			switch r := poll(c, fmt.Sprintf("203.0.113.%d", i*15+j+1), real); r.Status {
			case http.StatusTooManyRequests:
				limited++
			case http.StatusNotFound:
			default:
				t.Fatalf("poll: %d %s", r.Status, r.Body)
			}
		}
	}
	if limited == 0 {
		t.Fatal("75 polls from one address with a rotating left-most X-Forwarded-For were never throttled: the client chose its own {client_ip}")
	}

	// An attacker names a victim's address in front of his own, 75 times: the victim's zone
	// is untouched, the attacker's is full.
	victim, attacker := newIP(), newIP()
	for range 5 {
		c := newUser()
		for range 15 {
			poll(c, victim, attacker)
		}
	}
	if r := poll(newUser(), "", victim); r.Status != http.StatusNotFound {
		t.Fatalf("the victim's first poll: %d %s; another client's X-Forwarded-For filled his IP zone", r.Status, r.Body)
	}
	if r := poll(newUser(), "", attacker); r.Status != http.StatusTooManyRequests {
		t.Fatalf("the attacker's address after 75 polls: %d %s, want 429", r.Status, r.Body)
	}
}
