package webhook

import (
	"encoding/json"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/openapicheck"
)

// webhookSchema is the body schema of the document's webhook name.
func webhookSchema(t *testing.T, d *openapicheck.Document, name string) *openapi3.Schema {
	t.Helper()
	w := d.T.Webhooks[name]
	if w == nil || w.Post == nil || w.Post.RequestBody == nil || w.Post.RequestBody.Value == nil {
		t.Fatalf("docs/openapi.yaml has no webhook %q with a body", name)
	}
	mt := w.Post.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		t.Fatalf("webhook %q has no JSON schema", name)
	}
	return mt.Schema.Value
}

// Every event body the worker sends is its webhook's body in docs/openapi.yaml, the waitlist's
// and the draw's included (draw.won, draw.lost, draw.expired, unit.offered, unit.passed), and
// each webhook's type enum is exactly the contract's types: an event the document does not
// describe, or a field it does not list, fails.
func TestEveryEventBodyIsItsWebhookInTheOpenAPIDocument(t *testing.T) {
	doc, err := openapicheck.Default()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 2, 20, 38, 0, 0, time.UTC)
	until := at.Add(2 * time.Minute)
	wave := 1
	order := func(typ string) delivery {
		return delivery{event: contract.WebhookEvent{ID: "evt_" + typ, Type: typ, OrderID: "01JD3V6C8M5Q4ZKX2N7R9T0W1Y", SaleID: "spring",
			Variant: "", Quantity: 1, UserID: "u1", At: at}}
	}
	drawEvent := func(typ string, w *int, claim *time.Time) delivery {
		return delivery{event: contract.WebhookEvent{ID: "evt_" + typ, Type: typ, OrderID: "draw:spring:u1", SaleID: "spring", UserID: "u1", At: at},
			draw: &drawFields{entryID: "00000001", variant: "M", wave: w, claimUntil: claim}}
	}
	unit := func(typ string) delivery {
		return delivery{event: contract.WebhookEvent{ID: typ + ":spring:u7:1796241600000", Type: typ, OrderID: "unit:spring:u7", SaleID: "spring", UserID: "u7", At: at},
			draw: &drawFields{claimUntil: &until}}
	}
	cases := map[string][]delivery{
		"order": {order(contract.EventOrderCreated), order(contract.EventOrderPaid), order(contract.EventOrderCancelled), order(contract.EventOrderFailed)},
		// A draw.won carries its wave and claim end; a draw.expired its wave; a draw.lost neither.
		"draw": {drawEvent(contract.EventDrawWon, &wave, &until), drawEvent(contract.EventDrawExpired, &wave, nil), drawEvent(contract.EventDrawLost, nil, nil)},
		"unit": {unit(contract.EventUnitOffered), unit(contract.EventUnitPassed)},
	}
	for name, ds := range cases {
		schema := webhookSchema(t, doc, name)
		var types []string
		for _, d := range ds {
			types = append(types, d.event.Type)
			b, err := d.body()
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			if err := schema.VisitJSON(v); err != nil {
				t.Errorf("%s: the body %s is not the document's %q webhook: %v", d.event.Type, b, name, err)
			}
			// The check can fail: a field the document does not list is refused.
			v.(map[string]any)["unlisted"] = "x"
			if err := schema.VisitJSON(v); err == nil {
				t.Errorf("%s: a body with a field the document does not list passed its schema", d.event.Type)
			}
		}
		var enum []string
		if p := schema.Properties["type"]; p != nil && p.Value != nil {
			for _, e := range p.Value.Enum {
				s, _ := e.(string)
				enum = append(enum, s)
			}
		}
		sort.Strings(types)
		sort.Strings(enum)
		if !slices.Equal(types, enum) {
			t.Errorf("webhook %q lists the types %v, the worker sends %v", name, enum, types)
		}
	}
}
