package controls

import (
	"strings"
	"testing"
)

// The controls' bodies name each field once, spelled as documented, as a sale's do
// (backend/sales, TestJSONBodiesRefuseDuplicateKeys): encoding/json alone keeps the last of two
// keys ({"add":1,"add":1000} adds 1000) and matches any case ("ADD"), so a proxy, a log or a
// reviewer reading the body sees another request than the one served. Each is
// refused as 400 bad_request (the parsers' errors are).
func TestControlBodiesRefuseDuplicateKeys(t *testing.T) {
	t.Parallel()
	parsers := map[string]func(string) error{
		"stock": func(b string) error {
			_, err := ParseStockRequest(strings.NewReader(b))
			return err
		},
		"ends_at": func(b string) error { _, err := ParseEndsAt(strings.NewReader(b)); return err },
	}
	for _, c := range []struct{ parser, body string }{
		{"stock", `{"add":1,"add":1000,"request_id":"r1"}`},
		{"stock", `{"add":1,"request_id":"r1","request_id":"r2"}`},
		{"stock", `{"add":1,"request_id":"r1","\u0061dd":2}`},
		{"stock", `{"ADD":1,"request_id":"r1"}`},
		{"stock", `{"add":1,"Request_ID":"r1"}`},
		{"stock", `{"add":1,"request_id":"r1","Variant":"a"}`},
		{"ends_at", `{"ends_at":"2030-01-01T00:00:00Z","ends_at":"2031-01-01T00:00:00Z"}`},
		{"ends_at", `{"Ends_At":"2030-01-01T00:00:00Z"}`},
	} {
		if err := parsers[c.parser](c.body); err == nil {
			t.Errorf("%s body %s accepted", c.parser, c.body)
		}
	}
	// The bodies as documented still pass.
	for parser, body := range map[string]string{
		"stock":   `{"add":1,"request_id":"r1","variant":"a"}`,
		"ends_at": `{"ends_at":"2030-01-01T00:00:00Z"}`,
	} {
		if err := parsers[parser](body); err != nil {
			t.Errorf("%s body %s: %v", parser, body, err)
		}
	}
}
