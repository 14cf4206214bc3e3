package saleevents

import (
	"testing"

	"github.com/seckilledge/seckill/contract"
)

func TestParseReadsKindAndSaleOrShard(t *testing.T) {
	for in, want := range map[string]Event{
		"sold_out:s1":   {contract.EventSoldOut, "s1"},
		"restock:s1:2":  {contract.EventRestock, "s1:2"},
		"other:s-1_2":   {"other", "s-1_2"},
		"sold_out:s1:x": {},
		"sold_out:":     {},
		":s1":           {},
		"nocolon":       {},
	} {
		got, ok := Parse(in)
		if ok != (want != Event{}) || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, ok, want)
		}
	}
}
