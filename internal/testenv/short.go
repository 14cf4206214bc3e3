package testenv

import "testing"

// NeedsServices marks a test that needs a real Redis, RabbitMQ or Postgres. Under
// `go test -short` (the fast tier: pure tests only, no service running) it skips the test;
// otherwise it does nothing, and a missing service fails the test where it is used. Every
// helper of this package that hands out a service calls it, so a test gets the fast-tier
// skip by asking for its service.
func NeedsServices(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the service stack: skipped under -short")
	}
}
