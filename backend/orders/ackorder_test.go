package orders

import (
	"reflect"
	"testing"
)

func newTestAckOrder() (*ackOrder, *[]uint64, *int) {
	var acked []uint64
	broken := 0
	a := &ackOrder{ready: map[uint64]uint64{}, ack: func(tag uint64) error { acked = append(acked, tag); return nil },
		broken: func() { broken++ }}
	return a, &acked, &broken
}

func TestBatchesCommittedOutOfOrderAreAcknowledgedInDeliveryOrder(t *testing.T) {
	a, acked, _ := newTestAckOrder()
	// Batch 0 holds tags 1..500, batch 1 501..1000, batch 2 1001..1500 (all dead-lettered:
	// nothing to acknowledge), batch 3 1501..2000.
	_ = a.settled(1, 1000)
	_ = a.settled(3, 2000)
	if len(*acked) != 0 {
		t.Fatalf("acknowledged %v before batch 0 committed: a multiple ack would cover it", *acked)
	}
	_ = a.settled(0, 500)
	if want := []uint64{1000}; !reflect.DeepEqual(*acked, want) {
		t.Fatalf("acks %v, want %v", *acked, want)
	}
	_ = a.settled(2, 0)
	if want := []uint64{1000, 2000}; !reflect.DeepEqual(*acked, want) {
		t.Fatalf("acks %v, want %v", *acked, want)
	}
}

func TestNothingAfterAnUnwrittenBatchIsAcknowledged(t *testing.T) {
	a, acked, broken := newTestAckOrder()
	_ = a.settled(0, 500)
	_ = a.settled(2, 1500)
	a.unsettled(1)
	a.unsettled(3)
	_ = a.settled(4, 2500)
	if want := []uint64{500}; !reflect.DeepEqual(*acked, want) {
		t.Fatalf("acks %v, want only %v: batch 1 is not written", *acked, want)
	}
	if *broken != 1 {
		t.Fatalf("the session was ended %d times, want once", *broken)
	}
}
