package room

import "testing"

// The first 10 % of the units run from the start to the k-th sale; the last 10 % from the sale
// before them to the last one; unsold units put the end at the cap (a lower bound).
func TestTenPercentsOfTheUnits(t *testing.T) {
	at := []float64{0.5, 1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 30, 40}
	first, last, ratio := tenPercents(at, 20, 100)
	if first != 1 || last != 40-16 || ratio != 24 {
		t.Fatalf("all sold: first %g last %g ratio %g, want 1, 24, 24", first, last, ratio)
	}
	first, last, _ = tenPercents(at[:19], 20, 100)
	if first != 1 || last != 100-16 {
		t.Fatalf("one unsold: first %g last %g, want 1 and 84 (to the cap)", first, last)
	}
	first, last, _ = tenPercents(at[:5], 20, 100)
	if first != 1 || last != 0 {
		t.Fatalf("most unsold: first %g last %g, want 1 and 0 (the cap less the cap)", first, last)
	}
	if first, _, _ := tenPercents(nil, 20, 100); first != 100 {
		t.Fatalf("nothing sold: first %g, want the cap", first)
	}
}
