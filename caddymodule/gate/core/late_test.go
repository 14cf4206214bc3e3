package core

import (
	"context"
	"errors"
	"testing"
)

// countingStore counts the buyers-hash reads of a fakeStore.
type countingStore struct {
	*fakeStore
	reads int
}

func (s *countingStore) Buyer(ctx context.Context, target, user string) (string, error) {
	s.reads++
	return s.fakeStore.Buyer(ctx, target, user)
}

func TestALateClickAsksRedisOncePerUserAndTheBuyerIsStillToldHisOrder(t *testing.T) {
	store := &countingStore{fakeStore: &fakeStore{buyers: map[string]string{"s1/buyer": "o-1"}}}
	d, so := newDecider(store.fakeStore, nil)
	d.Store = store
	so.m["s1"] = true
	for i := 0; i < 3; i++ {
		v, _, err := d.Decide(context.Background(), Request{Sale: "s1", User: "buyer", Token: ""})
		if err != nil || v.Outcome != AlreadyBought || v.OrderID != "o-1" {
			t.Fatalf("click %d of the buyer: %+v, %v; want already_bought o-1", i, v, err)
		}
		v, _, err = d.Decide(context.Background(), Request{Sale: "s1", User: "late", Token: ""})
		if err != nil || v.Outcome != SoldOut {
			t.Fatalf("click %d of a late user: %+v, %v; want sold_out", i, v, err)
		}
	}
	if store.reads != 2 {
		t.Fatalf("%d reads of the buyers hash for 6 late clicks of 2 users, want 2", store.reads)
	}
}

func TestALateAnswerIsNotRememberedWhenRedisFailed(t *testing.T) {
	store := &countingStore{fakeStore: &fakeStore{err: errors.New("down")}}
	d, so := newDecider(store.fakeStore, nil)
	d.Store = store
	so.m["s1"] = true
	for i := 0; i < 2; i++ {
		if v, _, _ := d.Decide(context.Background(), Request{Sale: "s1", User: "u1", Token: ""}); v.Outcome != SoldOut {
			t.Fatalf("click %d with Redis down: %s, want sold_out (the stock is gone either way)", i, v.Outcome)
		}
	}
	if store.reads != 2 {
		t.Fatalf("%d reads, want 2: a failed read must be asked again", store.reads)
	}
}

func TestLateAnswersOfAnOlderGenerationAreDropped(t *testing.T) {
	var c lateAnswers[int]
	c.put("s1", "u1", "", 1)
	c.put("s1", "u2", "o-2", 1)
	if o, ok := c.get("s1", "u2", 1); !ok || o != "o-2" {
		t.Fatalf("get = %q, %v; want o-2", o, ok)
	}
	// A restock moved the generation on: the buyer's unit may have come back.
	if _, ok := c.get("s1", "u2", 2); ok {
		t.Fatal("an answer of generation 1 was served at generation 2")
	}
	if _, ok := c.get("s1", "u1", 1); ok {
		t.Fatal("the sale's old answers were kept after a newer generation was seen")
	}
	if c.n != 0 {
		t.Fatalf("count %d after the sale's answers were dropped, want 0", c.n)
	}
	c.put("s1", "u1", "", 2)
	c.put("s1", "u1", "o-9", 2) // a second put of a user keeps the first answer and the count
	if o, _ := c.get("s1", "u1", 2); o != "" || c.n != 1 {
		t.Fatalf("get = %q, count %d; want \"\" and 1", o, c.n)
	}
}

func TestLateAnswersStopGrowingAtTheCap(t *testing.T) {
	var c lateAnswers[int]
	c.n = lateCap - 1
	c.put("s1", "u1", "", 1)
	c.put("s1", "u2", "", 1)
	if _, ok := c.get("s1", "u2", 1); ok || c.n != lateCap {
		t.Fatalf("beyond the cap: remembered %v, count %d; want not remembered and %d", ok, c.n, lateCap)
	}
}
