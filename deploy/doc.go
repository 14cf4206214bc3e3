// Package deploy holds the shipped configurations (Caddyfile.production here, the demo
// Caddyfile at the repository root, the Dockerfiles) and, in its tests, runs them whole: the
// real Caddyfile adapted in-process with environment placeholders pointing at test ports, the
// backend, a fake shop session service (Caddyfile.production) or the sample shop of
// examples/shop (the root Caddyfile's :8088 site, in Chromium), and real Redis, RabbitMQ and
// Postgres. It has no code of its own.
package deploy
