package httpapi

import "testing"

func TestALimitIsReadOnlyInItsCanonicalForm(t *testing.T) {
	for v, want := range map[string]int{"1": 1, "5": 5, "1000": 1000, "999": 999,
		"": 0, "0": 0, "00": 0, "05": 0, "+5": 0, "-5": 0, " 5": 0, "5 ": 0, "1001": 0, "10000": 0, "1e3": 0, "5.0": 0, "٥": 0} {
		n, ok := ParseLimit(v, 1000)
		if ok != (want != 0) || n != want {
			t.Errorf("ParseLimit(%q) = %d, %v; want %d", v, n, ok, want)
		}
	}
}
