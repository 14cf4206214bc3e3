// Package systemtest holds whole-system tests: gateways (Caddy with the seckill modules, in
// this process or as processes of ./cmd/caddy), the backend's consumer and admin API, and the
// real Redis, RabbitMQ and Postgres, exercised together. It has no code of its own besides the
// tests: what they check is docs/operator.md's promises (one trace from click to row; every
// control obeyed by every gateway within a second).
package systemtest
