package contract

import (
	amqp "github.com/rabbitmq/amqp091-go"
)

// QueueArgs are the arguments of the winners' queue. Every party that declares the queue must
// pass exactly these (RabbitMQ refuses a redeclaration with other arguments).
//
// A quorum queue replicates and survives broker restarts; the delivery limit sends a message
// that keeps failing (a poison message) to the dead-letter exchange instead of looping forever;
// at-least-once dead-lettering (which needs reject-publish overflow) means even that hand-over
// cannot lose a message.
func QueueArgs() amqp.Table {
	return amqp.Table{
		"x-queue-type":           "quorum",
		"x-delivery-limit":       int32(DefaultDelivery),
		"x-dead-letter-exchange": DeadExchange,
		"x-dead-letter-strategy": "at-least-once",
		"x-overflow":             "reject-publish",
	}
}

// DeclareTopology declares, idempotently, the exchange `seckill` (topic, durable), the quorum
// queue `seckill.orders` bound to it with `order.*`, the dead-letter exchange `seckill.dead`
// (fanout) and its queue `seckill.orders.dead`. The gateway's relay and the backend both call it
// on every (re)connect, so either may start first.
func DeclareTopology(ch *amqp.Channel) error {
	if err := ch.ExchangeDeclare(Exchange, "topic", true, false, false, false, nil); err != nil {
		return err
	}
	if err := ch.ExchangeDeclare(DeadExchange, "fanout", true, false, false, false, nil); err != nil {
		return err
	}
	if _, err := ch.QueueDeclare(DeadQueue, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		return err
	}
	if err := ch.QueueBind(DeadQueue, "", DeadExchange, false, nil); err != nil {
		return err
	}
	if _, err := ch.QueueDeclare(Queue, true, false, false, false, QueueArgs()); err != nil {
		return err
	}
	return ch.QueueBind(Queue, RoutingPrefix+"*", Exchange, false, nil)
}
