package core

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/contract"
)

// The entry's body faces the network: the parser must never panic, and what it accepts must
// be one JSON object whose only key is "variant", spelt so, once, holding "" or a valid id.
func FuzzParseEntry(f *testing.F) {
	for _, seed := range []string{
		`{"variant":"42"}`, `{}`, `{"variant":""}`, ` {"variant" : "xl"} `,
		`{"variant":"42","variant":"43"}`, `{"Variant":"42"}`, `{"variant":"42"} {}`, `{"variant":42}`,
		`{"variant":"a:b"}`, `{"variant":null}`, `[]`, `null`, ``, `{"variant":"` + strings.Repeat("a", 65) + `"}`,
		`{"variant":"\u0034\u0032"}`, `{"size":"42"}`, "{\"variant\":\"42\"}\x00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v, ok := ParseEntry(body)
		if !ok {
			if v != "" {
				t.Fatalf("refused %q but returned %q", body, v)
			}
			return
		}
		if v != "" && !contract.ValidVariantID(v) {
			t.Fatalf("accepted variant %q from %q", v, body)
		}
		// An accepted body is one object whose keys are exactly "variant", at most once.
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("accepted %q, which is not a JSON object: %v", body, err)
		}
		for k := range m {
			if k != "variant" {
				t.Fatalf("accepted %q with key %q", body, k)
			}
		}
		if strings.Count(string(body), `"variant"`) > 1 && strings.Count(string(body), `"`) <= 4 {
			t.Fatalf("accepted a repeated key in %q", body)
		}
	})
}

func TestParseEntryKnownAnswers(t *testing.T) {
	for body, want := range map[string]string{`{"variant":"42"}`: "42", `{}`: "", `{"variant":"\u0034\u0032"}`: "42"} {
		if v, ok := ParseEntry([]byte(body)); !ok || v != want {
			t.Errorf("%s: %q %v, want %q", body, v, ok, want)
		}
	}
	for _, body := range []string{`{"variant":"42","variant":"43"}`, `{"Variant":"42"}`, `{"variant":"42"} {}`,
		`{"variant":"a:b"}`, `{"variant":42}`, ``, `[]`} {
		if v, ok := ParseEntry([]byte(body)); ok {
			t.Errorf("%s: accepted (%q)", body, v)
		}
	}
}
