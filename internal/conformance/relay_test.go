package conformance

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/seckilledge/seckill/caddymodule/relay"
)

// The relay's durations (caddymodule/relay links no Caddy) read the JSON config exactly as
// caddy.Duration does, the type every other duration of the config has: the same value or
// the same refusal for strings with and without days, signs, fractions and integers of
// nanoseconds; and they are written back as caddy.Duration writes them.
func TestTheRelaysDurationsReadTheConfigAsCaddyDoes(t *testing.T) {
	for _, in := range []string{
		`"1ms"`, `"250ms"`, `"2s"`, `"1m30s"`, `"24h"`, `"1d"`, `"1.5d"`, `"1d12h"`, `"2h1d"`, `"-1d"`,
		`"+3d"`, `"0.25d1h30m"`, `"1dd"`, `"d"`, `"1hd"`, `"10"`, `"soon"`, `""`, `"1 d"`, `"5µs"`,
		`1000000`, `0`, `-5`, `1.5`, `"1e3d"`, `null`,
	} {
		var want caddy.Duration
		wantErr := json.Unmarshal([]byte(in), &want)
		var got relay.Duration
		gotErr := json.Unmarshal([]byte(in), &got)
		if (gotErr == nil) != (wantErr == nil) || time.Duration(got) != time.Duration(want) {
			t.Errorf("%s: relay.Duration %v (error %v), caddy.Duration %v (error %v)", in, time.Duration(got), gotErr, time.Duration(want), wantErr)
		}
	}
	for _, d := range []time.Duration{0, time.Millisecond, 36 * time.Hour} {
		got, _ := json.Marshal(relay.Config{BatchWait: relay.Duration(d)})
		want := fmt.Sprintf(`{"batch_wait":%d}`, d)
		if d == 0 {
			want = `{}`
		}
		if string(got) != want {
			t.Errorf("%v written as %s, want %s", d, got, want)
		}
		cd, _ := json.Marshal(caddy.Duration(d))
		rd, _ := json.Marshal(relay.Duration(d))
		if string(cd) != string(rd) {
			t.Errorf("%v: relay.Duration writes %s, caddy.Duration %s", d, rd, cd)
		}
	}
}
