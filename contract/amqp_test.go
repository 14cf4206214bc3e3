package contract_test

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

func TestTopologyRoutesOrdersToTheQuorumQueueAndIsIdempotent(t *testing.T) {
	conn, err := amqp.Dial(testenv.RabbitVhost(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := contract.DeclareTopology(ch); err != nil {
			t.Fatalf("declare %d: %v", i+1, err)
		}
	}
	if err := ch.Publish(contract.Exchange, contract.RoutingKey("s-1_x"), true, false, amqp.Publishing{Body: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 5e9, "the message in seckill.orders", func() bool {
		q, err := ch.QueueDeclarePassive(contract.Queue, true, false, false, false, contract.QueueArgs())
		return err == nil && q.Messages == 1
	})
}
