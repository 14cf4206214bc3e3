//go:build integration

package room

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/dpop"
	"github.com/seckilledge/seckill/caddymodule/dpop/dpoptest"
	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	clientjs "github.com/seckilledge/seckill/clients/js"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// required is a gateway with device_binding required on the room, the token and the gate.
func required() gatewayConfig {
	return gatewayConfig{Room: map[string]any{"device_binding": "required"}, Token: map[string]any{"device_binding": "required"},
		Gate: map[string]any{"device_binding": "required"}}
}

// requiredGateway is required, serving devicePage and the client (clients/js/seckill.js) too.
var requiredGateway = gateway(func() gatewayConfig {
	c := required()
	c.Files = map[string][2]string{"/device.html": {"text/html; charset=utf-8", devicePage}, "/seckill.js": {"text/javascript", clientjs.Source}}
	return c
}())

// TestTheAdmissionStaysWithTheKeyOfTheFirstBoundEntryAcrossTwoGateways: under device_binding
// required, two clients share alice's session (the same user id) and hold different keys.
// The device enters through gateway A and is admitted; the other client, through either
// gateway, cannot enter again, take a token or buy with his own key (403
// proof_key_mismatch), nor buy with the device's token; the device takes its token and buys.
// (gate.lua's own check of the place's key, for a token bound to another key, is
// TestAPurchaseWithAnotherKeyThanThePlacesIsRefused in lua/.)
func TestTheAdmissionStaysWithTheKeyOfTheFirstBoundEntryAcrossTwoGateways(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	a := requiredGateway.Base(t)
	b := secondProcess(t, required())
	r := newRoom(t, rdb, 5, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "60000", DifficultyMin: "0", DifficultyMax: "0"})
	device, other := dpoptest.NewKey(t), dpoptest.NewKey(t)
	url := func(gw, route string) string { return gw + "/seckill/" + r.Sale + "/" + route }
	proof := func(k *dpoptest.Key, method, u, token string) map[string]string {
		return map[string]string{dpop.Header: k.Proof(t, method, u, token)}
	}

	e := enter(t, a, r.Sale, "alice", proof(device, "POST", url(a, "queue"), ""))
	if e.Status != http.StatusOK || !strings.HasPrefix(e.Ticket, "b.") {
		t.Fatalf("the device's entry: %d %s", e.Status, e.Raw)
	}
	ticket := e.Ticket
	deadline := time.Now().Add(20 * time.Second)
	for {
		h := proof(device, "GET", url(a, "queue"), ticket)
		h[sealed.HeaderTicket] = ticket
		p := do(t, http.MethodGet, url(a, "queue"), "alice", h)
		if p.State == string(core.Admitted) {
			break
		}
		if p.Ticket != "" {
			ticket = p.Ticket
		}
		if time.Now().After(deadline) {
			t.Fatalf("the device was never admitted: %d %s", p.Status, p.Raw)
		}
		time.Sleep(100 * time.Millisecond)
	}

	mismatch := func(what string, got reply) {
		t.Helper()
		if got.Status != http.StatusForbidden || got.Code != contract.CodeProofKeyMismatch {
			t.Errorf("%s with the other key: %d %s, want 403 %s", what, got.Status, got.Raw, contract.CodeProofKeyMismatch)
		}
	}
	for _, gw := range []string{a, b} {
		mismatch("entering again through "+gw, enter(t, gw, r.Sale, "alice", proof(other, "POST", url(gw, "queue"), "")))
	}
	mismatch("the token", do(t, http.MethodPost, url(a, "token"), "alice", proof(other, "POST", url(a, "token"), "")))
	if got, _ := rdb.HGet(context.Background(), contract.BuyersKey(r.Sale), "alice").Result(); got != "" {
		t.Fatalf("the other key bought: order %s", got)
	}

	// The device itself goes on: its entry again, its token, its purchase.
	if got := enter(t, b, r.Sale, "alice", proof(device, "POST", url(b, "queue"), "")); got.Status != http.StatusOK {
		t.Errorf("the device entering again through B: %d %s, want 200", got.Status, got.Raw)
	}
	tok := do(t, http.MethodPost, url(a, "token"), "alice", proof(device, "POST", url(a, "token"), ""))
	if tok.Status != http.StatusOK || tok.Token == "" {
		t.Fatalf("the device's token: %d %s", tok.Status, tok.Raw)
	}
	h := proof(other, "POST", url(b, "buy"), tok.Token)
	h["X-Seckill-Token"] = tok.Token
	mismatch("the purchase with the device's token", do(t, http.MethodPost, url(b, "buy"), "alice", h))
	h = proof(device, "POST", url(b, "buy"), tok.Token)
	h["X-Seckill-Token"] = tok.Token
	if got := do(t, http.MethodPost, url(b, "buy"), "alice", h); got.Status != http.StatusAccepted {
		t.Fatalf("the device's purchase: %d %s, want 202", got.Status, got.Raw)
	}
}

// TestABoundTicketCutOutOfItsBindingIsNoBearerTicket: under device_binding optional, the
// ticket inside a bound one (its b.<kid>.<mac>. prefix cut off) polls and leaves nothing,
// without a proof or with one, across two gateways, even where the gateway verified (and
// cached) it inside its binding a moment before.
var optionalBinding = gatewayConfig{Room: map[string]any{"device_binding": "optional"}}

var optionalGateway = gateway(optionalBinding)

func TestABoundTicketCutOutOfItsBindingIsNoBearerTicket(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	a, b := optionalGateway.Base(t), secondProcess(t, optionalBinding)
	// Rate 0.001: nobody is admitted, the places stay waiting (and can be left).
	r := newRoom(t, rdb, 5, -time.Second, time.Hour, roomArgs{Rate: "0.001", Oversubscribe: "1", SessionMS: "60000", DifficultyMin: "0", DifficultyMax: "0"})
	device := dpoptest.NewKey(t)
	queue := func(gw string) string { return gw + "/seckill/" + r.Sale + "/queue" }
	enter(t, a, r.Sale, "head", nil) // ahead of alice: alice's place is not the first
	e := enter(t, a, r.Sale, "alice", map[string]string{dpop.Header: device.Proof(t, "POST", queue(a), "")})
	if e.Status != http.StatusOK || !strings.HasPrefix(e.Ticket, "b.") {
		t.Fatalf("the bound entry: %d %s", e.Status, e.Raw)
	}
	bound := e.Ticket
	inner := bound[strings.Index(bound[len("b."):], ".")+len("b.")+1:]
	inner = inner[strings.Index(inner, ".")+1:]
	if !strings.HasPrefix(inner, "r") {
		t.Fatalf("cutting %q gave %q", bound, inner)
	}
	for _, gw := range []string{a, b} {
		// The device polls as it should: the bound ticket with its proof.
		if got := do(t, http.MethodGet, queue(gw), "alice", map[string]string{sealed.HeaderTicket: bound, dpop.Header: device.Proof(t, "GET", queue(gw), bound)}); got.Status != http.StatusOK {
			t.Fatalf("the device's poll through %s: %d %s", gw, got.Status, got.Raw)
		}
		for name, h := range map[string]map[string]string{
			"poll, no proof":            {sealed.HeaderTicket: inner},
			"poll, the device's proof":  {sealed.HeaderTicket: inner, dpop.Header: device.Proof(t, "GET", queue(gw), inner)},
			"poll, another key's proof": {sealed.HeaderTicket: inner, dpop.Header: dpoptest.NewKey(t).Proof(t, "GET", queue(gw), inner)},
		} {
			if got := do(t, http.MethodGet, queue(gw), "alice", h); got.Status != http.StatusForbidden || got.Code != core.CodeInvalidTicket {
				t.Errorf("the cut ticket through %s, %s: %d %s, want 403 %s", gw, name, got.Status, got.Raw, core.CodeInvalidTicket)
			}
		}
		if got := do(t, http.MethodDelete, queue(gw), "alice", map[string]string{sealed.HeaderTicket: inner}); got.Status != http.StatusForbidden || got.Code != core.CodeInvalidTicket {
			t.Errorf("leaving with the cut ticket through %s: %d %s, want 403 %s", gw, got.Status, got.Raw, core.CodeInvalidTicket)
		}
	}
	if n, _ := rdb.ZCard(context.Background(), contract.RoomQueueKey(r.Sale)).Result(); n != 2 {
		t.Fatalf("%d places, want 2: the cut ticket gave alice's up", n)
	}
}
