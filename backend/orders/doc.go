// Package orders is the life of an order after the gate accepted it: the RabbitMQ consumer
// (Consumer), the batch writer with its stock guard, per-user limits and variants (Writer), the
// message decoder, the tracing of a batch write, the compensation that gives Redis back the
// units of orders that ended failed or cancelled (Compensator), the buyers' read of their order
// (API, GET /orders/{id}), the shop's payment call (Shop, POST /shop/orders/{id}/paid) and the
// sweeper that cancels what was not paid in time (Sweeper).
//
// It knows nothing of sales administration, tokens or reconcile: the backend wires it (Run),
// mounts its routes behind the admin listener's guard, and reconcile calls its Compensator. An
// order's webhook event is written in the transaction that changes the order
// (backend/webhook.Enqueue).
package orders
