// Package backend is the order service behind the gateway: the only part that talks to
// Postgres. It consumes winners from RabbitMQ, writes orders in batches with a stock guard,
// answers order-status polls, administers and preheats sales, releases unpaid orders,
// compensates Redis and reconciles it with Postgres.
package backend
