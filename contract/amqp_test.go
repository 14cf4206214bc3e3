//go:build integration

package contract_test

import (
	"context"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/rabbitmgmt"
	"github.com/seckilledge/seckill/internal/testenv"
)

// declared opens a channel on a fresh vhost and declares the topology twice (it must be
// idempotent: the gateway's relay and the backend both declare it on every reconnect).
func declared(t *testing.T) (ch *amqp.Channel, vhost string) {
	t.Helper()
	u := testenv.RabbitVhost(t)
	conn, err := amqp.Dial(u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err = conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := contract.DeclareTopology(ch); err != nil {
			t.Fatalf("declare %d: %v", i+1, err)
		}
	}
	return ch, u[strings.LastIndexByte(u, '/')+1:]
}

func TestTopologyRoutesOrdersToTheQuorumQueueAndIsIdempotent(t *testing.T) {
	ch, _ := declared(t)
	if err := ch.Publish(contract.Exchange, contract.RoutingKey("s-1_x"), true, false, amqp.Publishing{Body: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 5*time.Second, "the message in seckill.orders", func() bool {
		q, err := ch.QueueDeclarePassive(contract.Queue, true, false, false, false, nil)
		return err == nil && q.Messages == 1
	})
}

// A passive declare ignores arguments, so it cannot tell a quorum queue with dead-lettering
// from a classic queue without: ask the broker what it really declared.
func TestTopologyIsAQuorumQueueThatDeadLettersAtLeastOnce(t *testing.T) {
	_, vhost := declared(t)
	mg := testenv.Mgmt(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, err := mg.Queue(ctx, vhost, contract.Queue)
	if err != nil {
		t.Fatal(err)
	}
	if q.Type != "quorum" || !q.Durable {
		t.Fatalf("%s is %s (durable %v), want a durable quorum queue", contract.Queue, q.Type, q.Durable)
	}
	want := map[string]any{
		"x-queue-type":           "quorum",
		"x-delivery-limit":       float64(contract.DefaultDelivery),
		"x-dead-letter-exchange": contract.DeadExchange,
		"x-dead-letter-strategy": "at-least-once",
		"x-overflow":             "reject-publish",
	}
	for k, v := range want {
		if q.Arguments[k] != v {
			t.Errorf("%s argument %s = %v, want %v", contract.Queue, k, q.Arguments[k], v)
		}
	}
	dead, err := mg.Queue(ctx, vhost, contract.DeadQueue)
	if err != nil {
		t.Fatal(err)
	}
	if dead.Type != "quorum" || !dead.Durable {
		t.Errorf("%s is %s (durable %v), want a durable quorum queue", contract.DeadQueue, dead.Type, dead.Durable)
	}
	bound := func(queue string, want rabbitmgmt.Binding) {
		t.Helper()
		bs, err := mg.Bindings(ctx, vhost, queue)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if b == want {
				return
			}
		}
		t.Errorf("%s is not bound to %+v: %+v", queue, want, bs)
	}
	bound(contract.Queue, rabbitmgmt.Binding{Source: contract.Exchange, RoutingKey: contract.RoutingPrefix + "*"})
	bound(contract.DeadQueue, rabbitmgmt.Binding{Source: contract.DeadExchange, RoutingKey: ""})
}

// The delivery limit and the dead-letter exchange at work: a message every consumer refuses
// (a poison message) is delivered DefaultDelivery times or once more, then moves to the
// dead-letter queue instead of looping forever, and is not lost on the way.
func TestAPoisonMessageEndsInTheDeadLetterQueue(t *testing.T) {
	ch, _ := declared(t)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, contract.Exchange, contract.RoutingKey("s1"), true, false,
		amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte("poison")})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := dc.WaitContext(ctx); !ok || err != nil {
		t.Fatalf("publish not confirmed: %v", err)
	}
	deliveries := 0
	testenv.WaitFor(t, 30*time.Second, "the poison message to leave seckill.orders", func() bool {
		m, ok, err := ch.Get(contract.Queue, false)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			q, err := ch.QueueDeclarePassive(contract.Queue, true, false, false, false, nil)
			return err == nil && q.Messages == 0 && deliveries > 0
		}
		deliveries++
		if deliveries > 3*contract.DefaultDelivery {
			t.Fatalf("delivered %d times: the delivery limit does not apply", deliveries)
		}
		if err := m.Nack(false, true); err != nil {
			t.Fatal(err)
		}
		return false
	})
	if deliveries < contract.DefaultDelivery || deliveries > contract.DefaultDelivery+1 {
		t.Fatalf("delivered %d times, want the limit %d (or one more)", deliveries, contract.DefaultDelivery)
	}
	testenv.WaitFor(t, 10*time.Second, "the poison message in the dead-letter queue", func() bool {
		m, ok, err := ch.Get(contract.DeadQueue, true)
		return err == nil && ok && string(m.Body) == "poison"
	})
}
