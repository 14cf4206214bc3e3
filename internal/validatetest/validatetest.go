// Package validatetest checks a Caddy handler's Validate against a table of impossible
// settings. It imports nothing but testing, so a pure test binary that uses it links no more
// than the handler it tests.
package validatetest

import "testing"

// Validates checks a handler's Validate as Provision runs it, after the handler's defaults
// (setDefaults): each of bad, by name, is refused, and the zero handler is accepted.
func Validates[H interface{ Validate() error }](t *testing.T, setDefaults func(H), zero H, bad map[string]H) {
	t.Helper()
	for name, h := range bad {
		setDefaults(h)
		if err := h.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	setDefaults(zero)
	if err := zero.Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
}
