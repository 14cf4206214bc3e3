//go:build integration

package reconcile_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/reconcile"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/lua"
)

// Reconcile runs again and again while a crowd buys through the real gate script and a writer
// drains their messages into Postgres in batches of its own rhythm, and some messages are lost
// (accepted two hours ago, never written). The repair must never give Redis a unit Postgres
// does not have: every order written is created, none is refused by the Postgres guard
// (sold_out_in_db would mean Redis sold what Postgres did not hold), the lost ones end failed
// with their units back, and once the writer is done Redis and Postgres agree in units, per
// variant and per user (the verifier).
func TestReconcileWhileACrowdBuysNeverOversellsAndEndsInAgreement(t *testing.T) {
	t.Parallel()
	for _, k := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", k), func(t *testing.T) { reconcileUnderCrowd(t, k) })
	}
}

func reconcileUnderCrowd(t *testing.T, k int) {
	e := servicetest.New(t)
	ctx := context.Background()
	variants := []backend.VariantSpec{{ID: "red", Stock: 150}, {ID: "blue", Stock: 150}}
	var sale string
	if k > 1 {
		sale = e.ShardedVariantSale(k, 3, variants...)
	} else {
		sale = e.VariantSale(3, variants...)
	}
	w := &unitWorld{e: e, sale: sale, k: k}

	const users, buyers = 400, 6
	msgs := make(chan contract.OrderMessage, users*3)
	var mu sync.Mutex // guards w.accepted and lost
	lost := map[string]bool{}
	// Every 10 purchases a buyer waits for the next reconcile to finish, so that the runs
	// interleave with the crowd however fast either side is.
	var runs struct {
		sync.Mutex
		cond *sync.Cond
		n    int
		done bool
	}
	runs.cond = sync.NewCond(&runs.Mutex)
	waitRun := func(seen int) int {
		runs.Lock()
		defer runs.Unlock()
		for runs.n <= seen && !runs.done {
			runs.cond.Wait()
		}
		return runs.n
	}
	var wg sync.WaitGroup
	next := make(chan int, users)
	for u := 0; u < users; u++ {
		next <- u
	}
	close(next)
	for b := 0; b < buyers; b++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(b), uint64(k)))
			seen, bought := 0, 0
			for u := range next {
				user := fmt.Sprintf("c%d", u)
				for try := 0; try < 4; try++ {
					order := uuid.Must(uuid.NewV7()).String()
					drop := u%17 == 0 // this user's message is lost: they stop buying
					if drop {
						order = backendtest.OrderIDAt(t, time.Now().Add(-2*time.Hour))
					}
					v := variants[rng.IntN(len(variants))].ID
					q := 1 + rng.IntN(2)
					reply, err := lua.GateCall{Sale: contract.UserShardID(sale, user, k), User: user, OrderID: order, Group: "relay", Variant: v, Quantity: q}.Run(ctx, e.Redis)
					if err != nil {
						t.Error(err)
						return
					}
					if reply[0].(int64) == 12 {
						break // limit reached
					}
					if reply[0].(int64) != 0 {
						continue
					}
					if bought++; bought%10 == 0 {
						seen = waitRun(seen)
					}
					m := contract.OrderMessage{OrderID: order, SaleID: sale, UserID: user, AcceptedAt: time.Now().UTC(),
						Variant: reply[3].(string), Quantity: int(reply[4].(int64)), SeqNo: int(reply[5].(int64))}
					mu.Lock()
					w.accepted = append(w.accepted, acceptedOf(m))
					if drop {
						lost[order] = true
					}
					mu.Unlock()
					if drop {
						break
					}
					msgs <- m
				}
			}
		}()
	}
	// The writer: batches of 1 to 12 messages, as they come.
	writerDone := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewPCG(7, uint64(k)))
		wr := &orders.Writer{Pool: e.Pool}
		var batch []contract.OrderMessage
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			res, err := wr.WriteBatch(ctx, batch)
			if err == nil && len(res.Failed) > 0 {
				err = fmt.Errorf("the Postgres guard refused %d orders Redis accepted: %+v", len(res.Failed), res.Failed)
			}
			batch = batch[:0]
			return err
		}
		size := 1 + rng.IntN(12)
		for m := range msgs {
			batch = append(batch, m)
			if len(batch) >= size {
				if err := flush(); err != nil {
					writerDone <- err
					return
				}
				size = 1 + rng.IntN(12)
			}
		}
		writerDone <- flush()
	}()
	// The reconciler, until the crowd is done.
	crowdDone := make(chan struct{})
	reconciled := make(chan int, 1)
	go func() {
		n := 0
		defer func() {
			runs.Lock()
			runs.done = true
			runs.cond.Broadcast()
			runs.Unlock()
			reconciled <- n
		}()
		for {
			select {
			case <-crowdDone:
				return
			default:
			}
			if _, err := e.Svc.Reconciler.Reconcile(ctx, sale); err != nil {
				t.Errorf("reconcile under load: %v", err)
				return
			}
			n++
			runs.Lock()
			runs.n = n
			runs.cond.Broadcast()
			runs.Unlock()
		}
	}()
	wg.Wait()
	close(crowdDone)
	close(msgs)
	n := <-reconciled // before any Fatal: the reconciler must not outlive the test
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d reconciles while %d purchases were accepted (%d lost)", n, len(w.accepted), len(lost))
	if n < 3 || len(lost) == 0 {
		t.Fatalf("the test did not exercise what it means to: %d reconciles, %d lost", n, len(lost))
	}
	// Every lost order recorded failed once the crowd is gone, and the variants they owed
	// repaired: at most two runs (the second when the first still saw units in flight).
	for i := 0; i < 2; i++ {
		w.reconcile()
	}
	if got := e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'failed' AND reason = $2`, sale, reconcile.ReasonLost); got != len(lost) {
		t.Errorf("%d lost orders recorded failed, want %d", got, len(lost))
	}
	if got := e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND (status <> 'failed' AND status <> 'created' OR status = 'failed' AND reason <> $2)`, sale, reconcile.ReasonLost); got != 0 {
		t.Errorf("%d orders ended otherwise than created or lost", got)
	}
	w.mustPass("after the crowd")
	if rep := w.reconcile(); len(rep.Actions) > 0 && rep.StockDelta != 0 {
		t.Fatalf("a last reconcile still repaired: %v", rep.Actions)
	}
}

func acceptedOf(m contract.OrderMessage) invariants.Accepted {
	return invariants.Accepted{OrderID: m.OrderID, UserID: m.UserID, At: time.Now()}
}
