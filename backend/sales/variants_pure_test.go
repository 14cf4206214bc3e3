package sales_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/sales"

	"github.com/seckilledge/seckill/contract"
)

func TestSaleSpecWithVariantsIsValidatedWithAStableCode(t *testing.T) {
	now := time.Now()
	base := func() backend.SaleSpec {
		return backend.SaleSpec{ID: "s1", StartsAt: now, EndsAt: now.Add(time.Hour), Variants: []backend.VariantSpec{{ID: "a", Stock: 1}, {ID: "b", Stock: 0}}, PerUserLimit: 2}
	}
	if _, err := base().Validate(); err != nil {
		t.Fatalf("a good spec: %v", err)
	}
	many := make([]backend.VariantSpec, contract.MaxVariants+1)
	for i := range many {
		many[i] = backend.VariantSpec{ID: "v" + strconv.Itoa(i), Stock: 1}
	}
	for name, mod := range map[string]func(*backend.SaleSpec){
		"too many":      func(s *backend.SaleSpec) { s.Variants = many },
		"none":          func(s *backend.SaleSpec) { s.Variants = []backend.VariantSpec{} },
		"bad id":        func(s *backend.SaleSpec) { s.Variants[0].ID = "a/b" },
		"twice":         func(s *backend.SaleSpec) { s.Variants[1].ID = "a" },
		"negative":      func(s *backend.SaleSpec) { s.Variants[0].Stock = -1 },
		"limit 1001":    func(s *backend.SaleSpec) { s.PerUserLimit = 1001 },
		"limit -1":      func(s *backend.SaleSpec) { s.PerUserLimit = -1 },
		"stock not sum": func(s *backend.SaleSpec) { s.Stock = 5 },
	} {
		s := base()
		mod(&s)
		if _, err := s.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := sales.ParseSaleSpec(strings.NewReader(`{"id":"s1","starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z","variants":[{"id":"a","stock":1,"colour":"red"}]}`)); err == nil {
		t.Error("an unknown field in a variant was accepted")
	}
	s := base()
	s.Variants = many[:contract.MaxVariants]
	if _, err := s.Validate(); err != nil {
		t.Errorf("256 variants refused: %v", err)
	}
}
