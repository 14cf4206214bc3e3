package drawapi_test

import (
	"testing"

	"github.com/seckilledge/seckill/backend/drawapi"
)

// An immutable, cached page has one URL: limit only in its canonical
// form; and after= (empty) is the first page, as no after at all.
func TestTheEntriesQueryIsCanonical(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]*drawapi.EntriesQuery{
		"":                     {Limit: drawapi.DefaultLimit},
		"after=":               {Limit: drawapi.DefaultLimit},
		"after=&limit=5":       {Limit: 5},
		"limit=5":              {Limit: 5},
		"limit=10000":          {Limit: 10000},
		"after=0000000a":       {After: "0000000a", Limit: drawapi.DefaultLimit},
		"limit=+5":             nil,
		"limit=00005":          nil,
		"limit=05":             nil,
		"limit=0":              nil,
		"limit=5.0":            nil,
		"limit=%2B5":           nil,
		"limit=1e3":            nil,
		"limit=010000":         nil,
		"limit=99999999999999": nil,
	} {
		q, err := drawapi.ParseEntriesQuery(raw)
		switch {
		case want == nil && err == nil:
			t.Errorf("%q accepted as %+v", raw, q)
		case want != nil && (err != nil || q != *want):
			t.Errorf("%q: %+v %v, want %+v", raw, q, err, *want)
		}
	}
}
