package admin

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"time"
)

// Duration is a span of time in the admin API's bodies (pay_within, room.session,
// room.prequeue, draw.claim_within). It decodes from a JSON number of seconds (90, 0.5), the
// form every OpenAPI client generator can produce, or from a Go duration string ("1m30s",
// "15m"), the form the API took first and still takes. A number is kept as the Go string it
// equals (90 -> "1m30s"), so Postgres, the audit trail and every answer carry one form: the
// answers always give Go duration strings. The value is checked (its minimum) by the spec that
// holds it, which names the field.
type Duration string

// MaxDurationSeconds bounds a Duration given in seconds: what a time.Duration holds, about
// 292 years.
const MaxDurationSeconds = float64(math.MaxInt64) / float64(time.Second)

// UnmarshalJSON takes a number of seconds or a string; null leaves the value as it is (as
// encoding/json does for a string). Anything else (true, an object, a number out of range) is
// a *json.UnmarshalTypeError, which encoding/json completes with the field's name.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*d = Duration(s)
		return nil
	}
	refuse := func(what string) error {
		return &json.UnmarshalTypeError{Value: what, Type: reflect.TypeFor[Duration]()}
	}
	if len(b) == 0 || !(b[0] == '-' || b[0] >= '0' && b[0] <= '9') {
		return refuse("a value that is neither seconds nor a duration string")
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil || math.Abs(secs) >= MaxDurationSeconds {
		return refuse("number " + string(b) + " (seconds out of range)")
	}
	*d = Duration(time.Duration(math.Round(secs * float64(time.Second))).String())
	return nil
}

// Parse is the duration; "" is zero with no error (the field was left out).
func (d Duration) Parse() (time.Duration, error) {
	if d == "" {
		return 0, nil
	}
	return time.ParseDuration(string(d))
}
