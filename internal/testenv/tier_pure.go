//go:build !integration

package testenv

// Integration is false in a test binary built without the integration tag (make unit): the
// pure tier, where no test may reach a server.
const Integration = false
