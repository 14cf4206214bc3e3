//go:build integration

package testenv

// Integration is true in a test binary built with the integration tag (make test), the tier
// whose tests may reach servers, browsers and built binaries.
const Integration = true
