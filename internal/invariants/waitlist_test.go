package invariants

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestWaitlistInvariantHoldsEveryOfferToItsEnd(t *testing.T) {
	now := time.UnixMilli(10_000_000)
	good := []string{"v:1:1:o-a", "o:2:9000000:c", "b:3:9000000:c", "v:4:1:o-b", "o:5:9000000:e", "x:6:9000000:e",
		"o:6:9990000:f", "v:7:1:o-d", "o:8:10050000:g"}
	meta := map[string]string{"reserved": "2", "o:g": "10050000"}
	open := []redis.Z{{Score: 9990000, Member: "f"}, {Score: 10050000, Member: "g"}}
	buyers := []string{"a", "b", "c", "d"}
	meta["o:f"] = "9990000"
	if c := checkWaitlist(good, open, meta, buyers, now); c.Verdict != Pass || c.Numbers["open"] != 2 || c.Numbers["bought"] != 1 {
		t.Fatalf("a sound waitlist: %+v", c)
	}
	cases := []struct {
		name string
		log  []string
		meta map[string]string
		open []redis.Z
		want string
	}{
		{"a unit offered that was not held", []string{"v:1:1:o-a", "o:2:9000000:c", "o:3:9000000:d"},
			map[string]string{"reserved": "1"}, nil, "while none was held"},
		{"one waiter offered twice", []string{"v:1:1:o-a", "o:2:9000000:c", "x:3:9000000:c", "o:4:9000000:c"},
			map[string]string{"reserved": "1", "o:c": "9000000"}, []redis.Z{{Member: "c"}}, "offered a unit twice"},
		{"Redis holds fewer units than the log", []string{"v:1:1:o-a", "v:2:1:o-b"},
			map[string]string{"reserved": "1"}, nil, "Redis holds 1 units"},
		{"an offer taken by nobody's order", []string{"v:1:1:o-a", "o:2:9990000:z"},
			map[string]string{"reserved": "1"}, []redis.Z{{Member: "z"}}, "holds no order"},
		{"an offer left open long past its window", []string{"v:1:1:o-a", "o:2:100:c"},
			map[string]string{"reserved": "1", "o:c": "100"}, []redis.Z{{Member: "c"}}, "still open"},
		{"more given back than held", []string{"v:1:1:o-a", "g:2:2:-"},
			map[string]string{"reserved": "0"}, nil, "while fewer were held"},
	}
	for _, tc := range cases {
		c := checkWaitlist(tc.log, tc.open, tc.meta, buyers, now)
		if c.Verdict != Fail || !strings.Contains(strings.Join(c.Problems, "; "), tc.want) {
			t.Errorf("%s: %s %q, want a FAIL saying %q", tc.name, c.Verdict, c.Problems, tc.want)
		}
	}
}
