// Package orders writes the gate's winners into Postgres: the RabbitMQ consumer (Consumer), the
// batch writer with its stock guard, per-user limits and variants (Writer), the message decoder,
// the tracing of a batch write, and the compensation that gives Redis back the units of orders
// that ended failed or cancelled (Compensator).
//
// It knows nothing of HTTP, sales administration or reconcile: the backend wires it (Run) and
// the sweeper and reconcile call its Compensator. An order's webhook event is written in the
// batch's own transaction (backend/webhook.Enqueue).
package orders
