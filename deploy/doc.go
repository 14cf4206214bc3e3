// Package deploy holds the shipped configurations (Caddyfile.production here, the demo
// Caddyfile at the repository root, the Dockerfiles) and, in its tests, runs them whole: the
// real Caddyfile adapted in-process with environment placeholders pointing at test ports, the
// backend, a fake shop session service, and real Redis, RabbitMQ and Postgres. It has no code
// of its own.
package deploy
