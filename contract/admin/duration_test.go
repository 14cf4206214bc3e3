package admin

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A duration is a number of seconds or a Go duration string; a number is kept as the Go
// string it equals, so every answer carries one form.
func TestADurationIsSecondsOrAGoString(t *testing.T) {
	for in, want := range map[string]Duration{
		`90`: "1m30s", `0.5`: "500ms", `0`: "0s", `5400`: "1h30m0s", `1e3`: "16m40s", `-5`: "-5s",
		`"1h30m"`: "1h30m", `"15m"`: "15m", `""`: "", `null`: "keep",
	} {
		d := Duration("keep")
		if err := json.Unmarshal([]byte(in), &d); err != nil || d != want {
			t.Errorf("%s: %q, %v; want %q", in, d, err, want)
		}
	}
	for _, in := range []string{`true`, `{}`, `[90]`, `1e400`, `1e12`, `-1e12`} {
		var d Duration
		err := json.Unmarshal([]byte(in), &d)
		if _, ok := err.(*json.UnmarshalTypeError); !ok {
			t.Errorf("%s: decoded as %q, %v; want an UnmarshalTypeError", in, d, err)
		}
	}
	// Inside a spec the error names the field.
	var r RoomSpec
	if err := json.Unmarshal([]byte(`{"session":true}`), &r); err == nil || !strings.Contains(err.Error(), "session") {
		t.Errorf("session true: %v", err)
	}
	if v, err := Duration("1m30s").Parse(); err != nil || v != 90*time.Second {
		t.Errorf("Parse: %v %v", v, err)
	}
	if v, err := Duration("").Parse(); err != nil || v != 0 {
		t.Errorf("Parse of nothing: %v %v", v, err)
	}
}

// A room and a draw take their durations in either form, and check their minimum on the value.
func TestRoomAndDrawDurationsAreCheckedInEitherForm(t *testing.T) {
	var r RoomSpec
	if err := json.Unmarshal([]byte(`{"session":120,"prequeue":"15m"}`), &r); err != nil || r.Session != "2m0s" || r.Validate() != nil {
		t.Fatalf("%+v %v", r, err)
	}
	if err := json.Unmarshal([]byte(`{"session":0.5}`), &r); err != nil || r.Validate() == nil {
		t.Fatalf("a session of half a second passed: %+v %v", r, err)
	}
	var d DrawSpec
	if err := json.Unmarshal([]byte(`{"claim_within":600}`), &d); err != nil {
		t.Fatal(err)
	}
	if v, err := d.Claim(); err != nil || v != 10*time.Minute {
		t.Fatalf("claim_within 600: %v %v", v, err)
	}
}
