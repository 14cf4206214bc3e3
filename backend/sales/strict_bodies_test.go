package sales

import (
	"strings"
	"testing"

	"github.com/seckilledge/seckill/contract/admin"
)

// The admin API's bodies name each field once (a sale's here; the controls' in
// backend/controls, TestControlBodiesRefuseDuplicateKeys), spelled as documented: encoding/json alone keeps
// the last of two keys ({"add":1,"add":1000} adds 1000) and matches any case ("ADD"), so a
// proxy, a log or a reviewer reading the body sees another request than the one served.
// Each is refused as 400 bad_request (the parsers' errors are).
func TestJSONBodiesRefuseDuplicateKeys(t *testing.T) {
	t.Parallel()
	sale := `"id":"s1","starts_at":"2030-01-01T00:00:00Z","ends_at":"2030-01-02T00:00:00Z"`
	parsers := map[string]func(string) error{
		"sale": func(b string) error { _, err := ParseSaleSpec(strings.NewReader(b)); return err },
	}
	for _, c := range []struct{ parser, body string }{
		{"sale", `{` + sale + `,"stock":1,"stock":5}`},
		{"sale", `{` + sale + `,"Stock":5}`},
		{"sale", `{` + sale + `,"id":"s2"}`},
		{"sale", `{` + sale + `,"variants":[{"id":"a","stock":1,"stock":9}]}`},
		{"sale", `{` + sale + `,"variants":[{"ID":"a","stock":1}]}`},
		{"sale", `{` + sale + `,"stock":1,"room":{"rate":1,"rate":1000}}`},
		{"sale", `{` + sale + `,"stock":1,"room":{"Rate":1}}`},
		{"sale", `{` + sale + `,"stock":1,"PER_USER_LIMIT":2}`},
	} {
		if err := parsers[c.parser](c.body); err == nil {
			t.Errorf("%s body %s accepted", c.parser, c.body)
		}
	}
	// The bodies as documented still pass.
	for parser, body := range map[string]string{
		"sale": `{` + sale + `,"variants":[{"id":"a","stock":1}],"room":{"rate":1,"difficulty":[1,2]},"per_user_limit":2}`,
	} {
		if err := parsers[parser](body); err != nil {
			t.Errorf("%s body %s: %v", parser, body, err)
		}
	}
}

// A room's difficulty is [min, max]: [1,2,3] (and [5], which read as [5,0]) is refused, not cut
// or padded into something the operator did not ask for.
func TestADifficultyWithThreeNumbersIsRefused(t *testing.T) {
	t.Parallel()
	for _, d := range []string{`[1,2,3]`, `[0,0,0]`, `[5]`, `[]`, `[1,2,3,4]`, `"1,2"`} {
		body := `{"id":"s1","stock":1,"starts_at":"2030-01-01T00:00:00Z","ends_at":"2030-01-02T00:00:00Z","room":{"difficulty":` + d + `}}`
		if spec, err := ParseSaleSpec(strings.NewReader(body)); err == nil {
			t.Errorf("difficulty %s accepted as %v", d, *spec.Room.Difficulty)
		}
	}
	spec, err := ParseSaleSpec(strings.NewReader(`{"id":"s1","stock":1,"starts_at":"2030-01-01T00:00:00Z","ends_at":"2030-01-02T00:00:00Z","room":{"difficulty":[4,8]}}`))
	if err != nil || spec.Room.Difficulty == nil || *spec.Room.Difficulty != (admin.Difficulty{4, 8}) {
		t.Fatalf("difficulty [4,8]: %+v %v", spec.Room, err)
	}
}
