// Package backend is the order service behind the gateway: the only part that talks to
// Postgres. It consumes winners from RabbitMQ, writes orders in batches with a stock guard,
// answers order-status polls, administers and preheats sales, releases unpaid orders,
// compensates Redis and reconciles it with Postgres.
//
// The work is done by the packages under it (docs/backend.md, "The packages"). This one is
// thin: Run reads the configuration, starts the listeners and the loops; New builds every part
// once and wires the calls between them in one place; Handler and OrderHandler mount their
// routes, each behind its role.
package backend
