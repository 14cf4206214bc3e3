//go:build integration

package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"

	// seckill_throttle, in front of the gate.
	_ "github.com/seckilledge/seckill/caddymodule/throttle"
)

// throttleZones is a seckill_throttle of a user zone (limit per minute, a ban after bans
// episodes; 0 for none) and a shadow device zone, both named after prefix.
func throttleZones(prefix string, limit, bans int) string {
	ban := ""
	if bans > 0 {
		ban = fmt.Sprintf(`,"ban":{"after":%d,"within":600000000000,"for":300000000000}`, bans)
	}
	return fmt.Sprintf(`{"handler":"seckill_throttle","zones":[`+
		`{"name":"%s_user","key":"{http.request.header.X-User-ID}","limit":%d,"window":60000000000%s},`+
		`{"name":"%s_device","key":"{http.request.header.X-Device-ID}","limit":1000,"window":60000000000,"shadow":true}]}`,
		prefix, limit, ban, prefix)
}

// jointAndApartConfig is one Caddy of two servers on rdb's Redis: on joint the throttle is
// right before the gate in the purchase's route (one script call), on apart it is in a route
// of its own before it (the throttle calls Redis itself). Each has its own zone names.
func jointAndApartConfig(t *testing.T, redisAddr string, joint, apart int, limit, bans int) (cfg []byte, zones [2]string) {
	t.Helper()
	zones = [2]string{testenv.ID("j"), testenv.ID("a")}
	gate := map[string]any{"handler": "seckill_gate", "user": "{http.request.header.X-User-ID}", "timeout": "10s"}
	buy := map[string]any{"path": []string{"/seckill/*/buy"}}
	ok := map[string]any{"handle": []any{map[string]any{"handler": "static_response", "body": "ok"}}}
	srv := map[string]any{
		"joint": map[string]any{"listen": []string{fmt.Sprintf("127.0.0.1:%d", joint)}, "routes": []any{
			map[string]any{"match": []any{buy}, "handle": []any{json.RawMessage(throttleZones(zones[0], limit, bans)), gate}},
			ok,
		}},
		"apart": map[string]any{"listen": []string{fmt.Sprintf("127.0.0.1:%d", apart)}, "routes": []any{
			map[string]any{"match": []any{buy}, "handle": []any{json.RawMessage(throttleZones(zones[1], limit, bans))}},
			map[string]any{"match": []any{buy}, "handle": []any{gate}},
			ok,
		}},
	}
	c := map[string]any{
		"admin":   map[string]any{"disabled": true},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"level": handlertest.LogLevel()}}},
		"apps": map[string]any{
			"seckill": map[string]any{
				"redis":     map[string]any{"addrs": []string{redisAddr}, "read_timeout": "5s"},
				"relay":     map[string]any{"disabled": true},
				"namespace": testNamespace,
			},
			"http": map[string]any{"servers": srv},
		},
	}
	b, _ := json.Marshal(c)
	return b, zones
}

// reply is one purchase's answer as a client sees it.
type reply struct {
	Status                        int
	Code, Message                 string
	Policy, RateLimit, RetryAfter string
	ContentType                   string
	hasOrder                      bool
}

func purchase(t *testing.T, base, sale, user string) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/seckill/"+sale+"/buy", nil)
	req.Header.Set("X-User-ID", user)
	req.Header.Set("X-Device-ID", "d1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err) // not Fatal: called from the tests' goroutines
		return reply{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		t.Errorf("%d %q is not JSON", resp.StatusCode, b)
	}
	return reply{Status: resp.StatusCode, Code: body.Code, Message: body.Message, hasOrder: body.OrderID != "",
		Policy: resp.Header.Get("RateLimit-Policy"), RateLimit: resp.Header.Get("RateLimit"),
		RetryAfter: resp.Header.Get("Retry-After"), ContentType: resp.Header.Get("Content-Type")}
}

// scriptCalls is how many script calls (EVALSHA and EVAL) the Redis at rdb has run.
func scriptCalls(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
			continue
		}
		_, rest, _ := strings.Cut(line, "calls=")
		v, _, _ := strings.Cut(rest, ",")
		c, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("commandstats line %q", line)
		}
		n += c
	}
	return n
}

// The same purchases through a throttle in the gate's route and through one in a route of
// its own get the same answers and headers; the first costs one script call each, the second
// two for each purchase the throttle let through (the control that makes the count mean
// something).
func TestAThrottleRightBeforeTheGateDecidesWithItInOneScriptCall(t *testing.T) {
	rs := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	joint, apart := testenv.FreePort(t), testenv.FreePort(t)
	// Two admissions a minute per user; the first over-limit episode is a ban.
	cfg, zones := jointAndApartConfig(t, rs.Addr(), joint, apart, 2, 1)
	bases := map[string]string{"joint": fmt.Sprintf("http://127.0.0.1:%d", joint), "apart": fmt.Sprintf("http://127.0.0.1:%d", apart)}
	handlertest.StartCaddy(t, cfg, bases["joint"])
	handlertest.WaitListening(t, bases["apart"])
	ctx := context.Background()
	for _, s := range []*redis.Script{lua.Gate, lua.GateThrottled, lua.GateCommon, lua.GateCommonThrottled, lua.Throttle} {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			t.Fatal(err)
		}
	}

	got := map[string][]reply{}
	calls := map[string]int{}
	for _, name := range []string{"joint", "apart"} {
		sale := newSale(t, rdb, 100, -time.Minute, time.Hour)
		user := testenv.ID("u")
		before := scriptCalls(t, rdb)
		// accepted, already_bought (the zone admitted it), rate_limited (a ban: the first
		// episode), rate_limited again (the ban, from Redis: the blocklist answers locally
		// only for the refused key's later requests, so this one is the local tier's).
		for range 3 {
			got[name] = append(got[name], purchase(t, bases[name], sale, user))
		}
		calls[name] = scriptCalls(t, rdb) - before
		got[name] = append(got[name], purchase(t, bases[name], sale, user))
	}
	j, a := got["joint"], got["apart"]
	if j[0].Status != 202 || !j[0].hasOrder || j[1].Status != 409 || j[1].Code != "already_bought" ||
		j[2].Status != 429 || j[2].Code != "rate_limited" || j[3].Status != 429 {
		t.Fatalf("joint answers %+v, want 202, 409 already_bought, 429 rate_limited, 429", j)
	}
	for i := range j {
		// The zones' names differ between the servers; everything else must not.
		jp := strings.ReplaceAll(j[i].Policy, zones[0], "Z")
		ap := strings.ReplaceAll(a[i].Policy, zones[1], "Z")
		jr := strings.ReplaceAll(j[i].RateLimit, zones[0], "Z")
		ar := strings.ReplaceAll(a[i].RateLimit, zones[1], "Z")
		// The reset of a window is counted in whole seconds from the first admission: the two
		// servers ran a moment apart, so compare only the remaining count.
		jr, _, _ = strings.Cut(jr, ";t=")
		ar, _, _ = strings.Cut(ar, ";t=")
		if j[i].Status != a[i].Status || j[i].Code != a[i].Code || j[i].Message != a[i].Message || jp != ap || jr != ar ||
			(j[i].RetryAfter == "") != (a[i].RetryAfter == "") || j[i].ContentType != a[i].ContentType {
			t.Errorf("answer %d: joint %+v, apart %+v: want the same", i, j[i], a[i])
		}
	}
	if j[2].RetryAfter == "" || j[2].Policy == "" || !strings.Contains(j[2].RateLimit, ";r=0;") {
		t.Errorf("the joint refusal lacks its Retry-After or RateLimit headers: %+v", j[2])
	}
	if j[2].Message != "too many requests: temporarily blocked" {
		t.Errorf("the joint refusal %q is not the ban's", j[2].Message)
	}
	if calls["joint"] != 3 || calls["apart"] != 5 {
		t.Fatalf("script calls for 3 purchases: joint %d (want 3), apart %d (want 5: 3 throttle, 2 gate)", calls["joint"], calls["apart"])
	}
}

// The zones stay exact across gateways when each decides them inside its gate's script: two
// gateway processes admit one combined limit of purchases of one device.
func TestTheJointThrottleAdmitsOneCombinedLimitAcrossTwoGateways(t *testing.T) {
	const limit = 12
	rdb := testenv.Redis(t)
	zone := testenv.ID("dev")
	th := fmt.Sprintf(`{"handler":"seckill_throttle","zones":[{"name":%q,"key":"{http.request.header.X-Device-ID}","limit":%d,"window":60000000000}]}`, zone, limit)
	var bases []string
	for range 2 {
		c := newGatewayConfig(t, "amqp://unused")
		c.Throttle, c.RelayOff = th, true
		bases = append(bases, startGatewayProcess(t, c).Base)
	}
	sale := newSale(t, rdb, 1000, -time.Minute, time.Hour)
	var accepted, limited, other atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				r := purchase(t, bases[g%2], sale, testenv.ID("u"))
				switch {
				case r.Status == 202:
					accepted.Add(1)
				case r.Status == 429 && r.Code == "rate_limited":
					limited.Add(1)
				default:
					other.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if accepted.Load() != limit || limited.Load() != 40-limit || other.Load() != 0 {
		t.Fatalf("accepted %d, rate_limited %d, other %d of 40 purchases of one device: want %d accepted",
			accepted.Load(), limited.Load(), other.Load(), limit)
	}
	if got := stockOf(t, rdb, sale); got != 1000-limit {
		t.Fatalf("stock %d, want %d: the throttle's refusals must sell nothing", got, 1000-limit)
	}
}
