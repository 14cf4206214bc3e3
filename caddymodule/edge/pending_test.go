package edge

import (
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestPendingNeverHandsOutMoreSlotsThanItsBound(t *testing.T) {
	p := NewPending(10)
	var wg sync.WaitGroup
	var mu sync.Mutex
	held, most := 0, 0
	start := make(chan struct{})
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 100 {
				if !p.TryAcquire() {
					continue
				}
				mu.Lock()
				held++
				most = max(most, held)
				mu.Unlock()
				mu.Lock()
				held--
				mu.Unlock()
				p.Release()
			}
		}()
	}
	close(start)
	wg.Wait()
	if most > 10 {
		t.Fatalf("%d slots held at once, bound 10", most)
	}
	if p.Len() != 0 {
		t.Fatalf("%d slots leaked", p.Len())
	}
}

func TestPendingShedsOnceFullAndRecovers(t *testing.T) {
	p := NewPending(2)
	if !p.TryAcquire() || !p.TryAcquire() {
		t.Fatal("the first two calls must get a slot")
	}
	if p.TryAcquire() {
		t.Fatal("a third call got a slot beyond the bound")
	}
	p.Release()
	if !p.TryAcquire() {
		t.Fatal("a released slot was not handed out again")
	}
	var unbounded *Pending
	if !unbounded.TryAcquire() || !NewPending(0).TryAcquire() {
		t.Fatal("a nil or zero bound must never shed")
	}
}

func TestSampledLoggerDropsAFloodOfTheSameWarning(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	l := SampledLogger(zap.New(core))
	for range 3000 {
		l.Warn("redis did not answer")
	}
	if n := logs.Len(); n < 5 || n > 10 {
		t.Fatalf("%d of 3000 identical warnings written, want the first 5 and about 1 in 1000 after", n)
	}
}
