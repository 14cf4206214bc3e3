package core

import (
	"context"
	"net/http"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
)

// The rules the decision core adds for variants and quantities, with the fake store: what
// reaches the script, what is answered from the sold-out flags of a variant, and which flags
// a sold_out answer sets.
func TestGateVariantDecisionRules(t *testing.T) {
	kr := testKeyring(t, "k1")
	shard := contract.UserShardID("s1", "u1", 4)
	cases := []struct {
		name      string
		item      Item
		tokens    bool
		verdict   map[string]Verdict
		soldOut   []string
		want      Verdict // Outcome, Variant, Quantity, Held, Reason are compared
		wantCalls int
		wantFlags []string // flags set afterwards (besides soldOut)
	}{
		{name: "a malformed variant id never reaches Redis", item: Item{Variant: "a b"},
			want: Verdict{Outcome: BadRequest, Reason: ReasonVariant}},
		{name: "a quantity above the contract's bound", item: Item{Quantity: contract.MaxQuantity + 1},
			want: Verdict{Outcome: BadRequest, Reason: ReasonQuantity}},
		{name: "a negative quantity", item: Item{Quantity: -1}, want: Verdict{Outcome: BadRequest, Reason: ReasonQuantity}},
		{name: "unknown variant, from the script", item: Item{Variant: "green"},
			verdict: map[string]Verdict{"s1": {Outcome: BadRequest, Reason: ReasonVariant}},
			want:    Verdict{Outcome: BadRequest, Reason: ReasonVariant}, wantCalls: 1},
		{name: "quantity above the sale's limit, from the script", item: Item{Variant: "red", Quantity: 3},
			verdict: map[string]Verdict{"s1": {Outcome: BadRequest, Reason: ReasonQuantity}},
			want:    Verdict{Outcome: BadRequest, Reason: ReasonQuantity}, wantCalls: 1},
		{name: "limit reached tells what is held", item: Item{Variant: "red", Quantity: 2},
			verdict: map[string]Verdict{"s1": {Outcome: LimitReached, Held: 1}},
			want:    Verdict{Outcome: LimitReached, Held: 1}, wantCalls: 1},
		{name: "accepted with its variant and quantity", item: Item{Variant: "red", Quantity: 2},
			verdict: map[string]Verdict{"s1": {Outcome: Accepted, Variant: "red", Quantity: 2}},
			want:    Verdict{Outcome: Accepted, Variant: "red", Quantity: 2}, wantCalls: 1},
		{name: "a sold-out variant is answered from memory, naming it", item: Item{Variant: "red"},
			soldOut: []string{"s1/red"}, want: Verdict{Outcome: SoldOut, Variant: "red"}},
		{name: "... before the token is checked", item: Item{Variant: "red"}, tokens: true,
			soldOut: []string{"s1/red"}, want: Verdict{Outcome: SoldOut, Variant: "red"}},
		{name: "another variant still reaches the script", item: Item{Variant: "blue"}, soldOut: []string{"s1/red"},
			verdict: map[string]Verdict{"s1": {Outcome: Accepted, Variant: "blue", Quantity: 1}},
			want:    Verdict{Outcome: Accepted, Variant: "blue", Quantity: 1}, wantCalls: 1},
		{name: "a variant's last unit gone sets the variant's flag only", item: Item{Variant: "red"},
			verdict: map[string]Verdict{"s1": {Outcome: SoldOut, Short: true, Variant: "red", Left: 0}},
			want:    Verdict{Outcome: SoldOut, Variant: "red"}, wantCalls: 1, wantFlags: []string{"s1/red"}},
		{name: "too few units of a variant sets no flag", item: Item{Variant: "red", Quantity: 2},
			verdict: map[string]Verdict{"s1": {Outcome: SoldOut, Short: true, Variant: "red", Left: 1}},
			want:    Verdict{Outcome: SoldOut, Variant: "red"}, wantCalls: 1},
		{name: "the whole sale sold out sets the sale's flag", item: Item{Variant: "red"},
			verdict: map[string]Verdict{"s1": {Outcome: SoldOut}},
			want:    Verdict{Outcome: SoldOut}, wantCalls: 1, wantFlags: []string{"s1"}},
		{name: "sharded: the variant flag is the user's shard's", item: Item{Variant: "red"},
			verdict: map[string]Verdict{"s1": {Outcome: Sharded, Shards: 4}}, soldOut: []string{shard + "/red"},
			want: Verdict{Outcome: SoldOut, Variant: "red"}, wantCalls: 1},
		{name: "sharded: a variant gone on the user's shard flags it there", item: Item{Variant: "red"},
			verdict: map[string]Verdict{"s1": {Outcome: Sharded, Shards: 4}, shard: {Outcome: SoldOut, Short: true, Variant: "red"}},
			want:    Verdict{Outcome: SoldOut, Variant: "red"}, wantCalls: 2, wantFlags: []string{shard + "/red"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := &fakeStore{verdict: c.verdict}
			var ring *tokenformat.Keyring
			if c.tokens {
				ring = kr
			}
			d, so := newDecider(store, ring)
			for _, s := range c.soldOut {
				so.m[s] = true
			}
			v, _, err := d.Decide(context.Background(), Request{Sale: "s1", User: "u1", Token: "", Item: c.item})
			if err != nil || v.Outcome != c.want.Outcome || v.Variant != c.want.Variant || v.Quantity != c.want.Quantity ||
				v.Held != c.want.Held || v.Reason != c.want.Reason {
				t.Fatalf("verdict %+v (err %v), want %+v", v, err, c.want)
			}
			if len(store.calls) != c.wantCalls {
				t.Fatalf("%d script calls, want %d", len(store.calls), c.wantCalls)
			}
			for _, p := range store.calls {
				if p.Item != c.item {
					t.Fatalf("the script was asked for %+v, want %+v", p.Item, c.item)
				}
			}
			flags := map[string]bool{}
			for _, s := range append(c.soldOut, c.wantFlags...) {
				flags[s] = true
			}
			for s := range so.m {
				if !flags[s] {
					t.Errorf("flag %q set, want only %v", s, flags)
				}
			}
			for s := range flags {
				if !so.m[s] {
					t.Errorf("flag %q not set", s)
				}
			}
		})
	}
}

// A refusal's body carries what its verdict adds (the 202 answer: TestGateVariantAnswers in
// the handler's tests).
func TestGateVariantRefusals(t *testing.T) {
	r := Verdict{Outcome: LimitReached, Held: 2}.Refusal()
	if r.Status != http.StatusConflict || r.Code != "limit_reached" || r.Held != 2 {
		t.Fatalf("limit_reached refusal %+v", r)
	}
	if r := (Verdict{Outcome: SoldOut, Variant: "red"}).Refusal(); r.Variant != "red" || r.Code != "sold_out" {
		t.Fatalf("sold_out refusal %+v", r)
	}
	for _, reason := range []string{ReasonBody, ReasonVariant, ReasonQuantity} {
		r := Verdict{Outcome: BadRequest, Reason: reason}.Refusal()
		if r.Status != http.StatusBadRequest || r.Message == BadRequest.Message() {
			t.Errorf("bad_request %s: %+v, want its own message", reason, r)
		}
	}
	if r := (Verdict{Outcome: AlreadyBought, OrderID: "o1"}).Refusal(); r.OrderID != "o1" || r.Held != 0 || r.Variant != "" {
		t.Fatalf("already_bought refusal %+v", r)
	}
}

func TestGateParsesTheVariantScriptAnswers(t *testing.T) {
	cases := []struct {
		reply []any
		want  Verdict
		ok    bool
	}{
		{[]any{int64(0), "o1", int64(3), "red", int64(2), int64(1)}, Verdict{Outcome: Accepted, OrderID: "o1", StockLeft: 3, Variant: "red", Quantity: 2, Seq: 1}, true},
		{[]any{int64(0), "o1", int64(3), "red", int64(0), int64(1)}, Verdict{}, false},
		{[]any{int64(6), "red", int64(0)}, Verdict{Outcome: SoldOut, Short: true, Variant: "red"}, true},
		{[]any{int64(6), "", int64(2)}, Verdict{Outcome: SoldOut, Short: true, Left: 2}, true},
		{[]any{int64(11), "variant"}, Verdict{Outcome: BadRequest, Reason: ReasonVariant}, true},
		{[]any{int64(12), int64(2)}, Verdict{Outcome: LimitReached, Held: 2}, true},
		{[]any{int64(12)}, Verdict{}, false},
	}
	for _, c := range cases {
		v, err := parseReply(c.reply)
		if (err == nil) != c.ok || (c.ok && v != c.want) {
			t.Errorf("parseReply(%v) = %+v, %v; want %+v ok=%v", c.reply, v, err, c.want, c.ok)
		}
	}
}
