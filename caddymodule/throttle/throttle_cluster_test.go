//go:build integration

package throttle

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/throttle/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// roundTrips counts what reaches Redis: commands sent alone and pipelines, at the cluster
// client and at each node (one node pipeline is one network round trip).
type roundTrips struct {
	single, pipelines, nodePipelines atomic.Int64
	mu                               sync.Mutex
	nodes                            map[string]int
}

type countHook struct {
	rt   *roundTrips
	node string // "" for the cluster client itself
}

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.node == "" {
			h.rt.single.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.node == "" {
			h.rt.pipelines.Add(1)
		} else {
			h.rt.nodePipelines.Add(1)
			h.rt.mu.Lock()
			h.rt.nodes[h.node]++
			h.rt.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}

func (rt *roundTrips) reset() {
	rt.single.Store(0)
	rt.pipelines.Store(0)
	rt.nodePipelines.Store(0)
	rt.mu.Lock()
	rt.nodes = map[string]int{}
	rt.mu.Unlock()
}

// twoMasterZones returns two zone names and a key whose throttle keys live on different
// masters of the cluster.
func twoMasterZones(t *testing.T, rdb *redis.ClusterClient, key string) (string, string) {
	t.Helper()
	ctx := context.Background()
	master := func(zone string) string {
		c, err := rdb.MasterForKey(ctx, contract.ThrottleKey(zone, key))
		if err != nil {
			t.Fatal(err)
		}
		return c.Options().Addr
	}
	a := testenv.ID("za")
	for range 100 {
		if b := testenv.ID("zb"); master(b) != master(a) {
			return a, b
		}
	}
	t.Fatal("no zone on another master in 100 tries")
	return "", ""
}

// The exact tier runs unchanged on a 3-master Redis Cluster: two zones whose keys live on
// different masters cost one pipeline per request (one round trip to each master, sent
// together), and the limit holds exactly, both in the limiter and through Caddy with the
// seckill app given the cluster's seeds.
func TestThrottleIsExactOnARedisClusterWithOnePipelinePerRequest(t *testing.T) {
	seeds := testenv.StartRedisCluster(t)
	rt := &roundTrips{nodes: map[string]int{}}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds,
		NewClient: func(opt *redis.Options) *redis.Client {
			c := redis.NewClient(opt)
			c.AddHook(countHook{rt: rt, node: opt.Addr})
			return c
		}})
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(countHook{rt: rt})
	ctx := context.Background()

	const limit = 10
	user := testenv.ID("u")
	za, zb := twoMasterZones(t, rdb, user)
	l := core.NewLimiter(rdb, []core.Rule{
		{Name: za, Limit: limit, Window: time.Minute, LocalLimit: -1},
		{Name: zb, Limit: 1000, Window: time.Minute, LocalLimit: -1},
	}, 5*time.Second)
	keys := []string{user, user}

	// The first decision loads the script on both masters (NOSCRIPT, then EVAL).
	if d := l.Decide(ctx, keys); !d.Allowed() || d.RedisErr != nil {
		t.Fatalf("first decision: %+v", d)
	}
	// The masters cache scripts each on its own (a failover or a new master starts
	// empty): with the script gone from zb's master only, the next pipeline runs za's call
	// and gets NOSCRIPT for zb's. Only zb's call may be sent again, or za counts twice.
	zbMaster, err := rdb.MasterForKey(ctx, contract.ThrottleKey(zb, user))
	if err != nil {
		t.Fatal(err)
	}
	if err := zbMaster.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if d := l.Decide(ctx, keys); !d.Allowed() || d.RedisErr != nil {
		t.Fatalf("decision after the script flush: %+v", d)
	}
	if n := logLen(t, rdb, contract.ThrottleKey(za, user)); n != 2 {
		t.Fatalf("after two decisions zone %s holds %d admissions, want 2 (a NOSCRIPT elsewhere must not re-run its call)", za, n)
	}
	// Each admitted decision: one pipeline from the caller, which reached each of the two
	// masters once (the two calls are sent together), and no command sent alone.
	admitted := 2
	for i := 2; i < limit; i++ {
		rt.reset()
		d := l.Decide(ctx, keys)
		if !d.Allowed() || d.RedisErr != nil || !d.RedisCalled {
			t.Fatalf("decision %d: %+v", i, d)
		}
		admitted++
		rt.mu.Lock()
		nodes := fmt.Sprint(rt.nodes)
		rt.mu.Unlock()
		if s, p, np := rt.single.Load(), rt.pipelines.Load(), rt.nodePipelines.Load(); s != 0 || p != 1 || np != 2 {
			t.Fatalf("decision %d: %d lone commands, %d pipelines, %d node pipelines (%s); want 0, 1, 2 (one per master)", i, s, p, np, nodes)
		}
	}
	// Past the limit: refused, whether by Redis or by the blocklist it filled.
	for i := 0; i < 5; i++ {
		d := l.Decide(ctx, keys)
		if d.RedisErr != nil {
			t.Fatalf("decision past the limit: %v", d.RedisErr)
		}
		if d.Allowed() {
			admitted++
		}
	}
	if admitted != limit {
		t.Errorf("limiter admitted %d of %d, want exactly %d", admitted, limit+5, limit)
	}
	if n := logLen(t, rdb, contract.ThrottleKey(za, user)); n != limit {
		t.Errorf("zone %s holds %d admissions in Redis, want %d", za, n, limit)
	}

	testenv.WaitFor(t, 10*time.Second, "the refusal given back in the loose zone", func() bool {
		return logLen(t, rdb, contract.ThrottleKey(zb, user)) == limit
	})

	// The same two zones through Caddy, with the seckill app on the cluster's seeds and the
	// handler's defaults (autopipelining on): limit+5 concurrent requests, limit admitted.
	user2 := testenv.ID("u")
	za2, zb2 := twoMasterZones(t, rdb, user2)
	port := testenv.FreePort(t)
	zone := func(name string, lim int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"name":%q,"key":"{http.request.header.X-User-ID}","limit":%d,"window":60000000000}`, name, lim))
	}
	cfg := map[string]any{
		"admin":   map[string]any{"disabled": true},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"level": "ERROR"}}},
		"apps": map[string]any{
			"seckill": map[string]any{"redis": map[string]any{"addrs": seeds}},
			"http": map[string]any{"servers": map[string]any{"s0": map[string]any{
				"listen": []string{fmt.Sprintf("127.0.0.1:%d", port)},
				"routes": []any{map[string]any{"handle": []any{
					map[string]any{"handler": "seckill_throttle", "zones": []any{zone(za2, limit), zone(zb2, 1000)}},
					map[string]any{"handler": "static_response", "body": "ok"},
				}}},
			}}},
		},
	}
	raw, _ := json.Marshal(cfg)
	if err := caddy.Load(raw, true); err != nil {
		t.Fatalf("load caddy: %v", err)
	}
	t.Cleanup(func() { _ = caddy.Stop() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	testenv.WaitFor(t, 10*time.Second, "caddy to listen", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	var ok, limited, other atomic.Int64
	var wg sync.WaitGroup
	for range limit + 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, base+"/", nil)
			req.Header.Set("X-User-ID", user2)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				other.Add(1)
				return
			}
			resp.Body.Close()
			switch resp.StatusCode {
			case 200:
				ok.Add(1)
			case 429:
				limited.Add(1)
			default:
				other.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != limit || limited.Load() != 5 || other.Load() != 0 {
		t.Errorf("through caddy: %d admitted, %d limited, %d other; want %d, 5, 0", ok.Load(), limited.Load(), other.Load(), limit)
	}
	// Both zones counted on the cluster: the tight one is full, the loose one holds the
	// admitted requests (refusals by the tight zone are given back to the loose one).
	if n := logLen(t, rdb, contract.ThrottleKey(za2, user2)); n != limit {
		t.Errorf("zone %s holds %d admissions, want %d", za2, n, limit)
	}
	// The give-backs run in the background, each bounded by 5 s (core's giveBackTimeout). A
	// failure says how many admissions the loose zone still holds: more than the limit is a
	// give-back dropped (or still running), fewer is one given back twice.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		held := logLen(t, rdb, contract.ThrottleKey(zb2, user2))
		if held == limit {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the requests the loose zone %s holds %d admissions, want %d", zb2, held, limit)
		}
	}
}
