package orders

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The collector's group commit, without servers: deliveries come from a channel the test
// fills, and the writer is a channel the test reads.

type collected struct {
	batch        []amqp.Delivery
	handed, open bool
	took         time.Duration
}

// collectOne runs collect on a goroutine with the given flight; the test drives it and then
// reads the batch from writer.
func collectOne(c *Consumer, deliveries chan amqp.Delivery, f *flight) (writer chan batchJob, result chan collected) {
	writer, result = make(chan batchJob), make(chan collected, 1)
	go func() {
		start := time.Now()
		b, handed, open := c.collect(context.Background(), deliveries, writer, 0, f)
		result <- collected{batch: b, handed: handed, open: open, took: time.Since(start)}
	}()
	return writer, result
}

func deliveriesOf(n int) chan amqp.Delivery {
	ch := make(chan amqp.Delivery, 100)
	for i := range n {
		ch <- amqp.Delivery{DeliveryTag: uint64(i + 1)}
	}
	return ch
}

// take reads one batch from writer, failing after a generous timeout (the wait under test is
// an hour when it is wrongly applied).
func take(t *testing.T, writer chan batchJob, within time.Duration) batchJob {
	t.Helper()
	select {
	case j := <-writer:
		return j
	case <-time.After(within):
		t.Fatalf("no batch handed over within %v", within)
		return batchJob{}
	}
}

func TestALoneMessageIsHandedToAWriterAtOnceWhateverTheWindow(t *testing.T) {
	c := &Consumer{BatchSize: 500, BatchWait: time.Hour}
	f := &flight{freed: make(chan struct{}, 1)} // nothing in flight
	writer, _ := collectOne(c, deliveriesOf(1), f)
	if j := take(t, writer, 10*time.Second); len(j.ds) != 1 {
		t.Fatalf("handed %d messages, want the lone one", len(j.ds))
	}
}

func TestMessagesArrivingWhileABatchIsWrittenGoTogetherWhenItSettles(t *testing.T) {
	c := &Consumer{BatchSize: 500, BatchWait: time.Hour}
	f := &flight{freed: make(chan struct{}, 1), handed: 1} // one batch being written
	writer, _ := collectOne(c, deliveriesOf(3), f)
	select {
	case j := <-writer:
		t.Fatalf("a batch of %d went while the one in flight was not settled and the window is an hour", len(j.ds))
	case <-time.After(50 * time.Millisecond):
	}
	f.settle()
	if j := take(t, writer, 10*time.Second); len(j.ds) != 3 {
		t.Fatalf("handed %d messages when the batch in flight settled, want the 3 gathered", len(j.ds))
	}
}

func TestAWakeUpLeftFromAnEarlierBatchDoesNotCutTheWindow(t *testing.T) {
	c := &Consumer{BatchSize: 500, BatchWait: time.Hour}
	f := &flight{freed: make(chan struct{}, 1), handed: 2}
	f.settle() // an earlier batch settled before this one began: one still in flight
	writer, _ := collectOne(c, deliveriesOf(2), f)
	select {
	case j := <-writer:
		t.Fatalf("a batch of %d went on a stale wake-up", len(j.ds))
	case <-time.After(50 * time.Millisecond):
	}
	f.settle()
	if j := take(t, writer, 10*time.Second); len(j.ds) != 2 {
		t.Fatalf("handed %d messages, want 2", len(j.ds))
	}
}

func TestTheWindowBoundsTheWaitForCompany(t *testing.T) {
	const window = 5 * time.Millisecond
	c := &Consumer{BatchSize: 500, BatchWait: window}
	f := &flight{freed: make(chan struct{}, 1), handed: 1} // in flight, and it never settles
	writer, result := collectOne(c, deliveriesOf(2), f)
	if j := take(t, writer, 10*time.Second); len(j.ds) != 2 {
		t.Fatalf("handed %d messages, want 2", len(j.ds))
	}
	if r := <-result; r.took < window {
		t.Fatalf("handed after %v, before the window of %v ended", r.took, window)
	}
}

func TestAFullBatchGoesWithoutWaitingForTheWindow(t *testing.T) {
	c := &Consumer{BatchSize: 3, BatchWait: time.Hour}
	f := &flight{freed: make(chan struct{}, 1), handed: 1}
	writer, _ := collectOne(c, deliveriesOf(5), f)
	if j := take(t, writer, 10*time.Second); len(j.ds) != 3 {
		t.Fatalf("handed %d messages, want a full batch of 3", len(j.ds))
	}
}
