//go:build integration

package nginxgate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/internal/testenv"
)

// startPeer starts a private Redis and the peer on it. Without nginx and its Lua module the
// test FAILS (it is part of the normal suite; `make test`'s stack installs them).
func startPeer(t *testing.T) (*Server, *redis.Client) {
	t.Helper()
	rs := testenv.StartRedis(t) // skips under -short
	if err := Available(Options{}); err != nil {
		t.Fatalf("%v (scripts/stack.sh start installs them)", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := Start(context.Background(), Options{Dir: t.TempDir(), RedisAddr: rs.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, rdb
}

type answer struct {
	user, code, order string
	status            int
}

func buy(t *testing.T, c *http.Client, s *Server, sale, user string) answer {
	req, _ := http.NewRequest(http.MethodPost, s.URL+BuyPath(sale), nil)
	if user != "" {
		req.Header.Set("X-User-ID", user)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("buy: %v", err)
		return answer{user: user}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v struct {
		Code, Status string
		OrderID      string `json:"order_id"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Errorf("buy: %d %q is not JSON: %v", resp.StatusCode, b, err)
	}
	if resp.StatusCode == http.StatusAccepted && v.Status != "queued" {
		t.Errorf("202 without status queued: %s", b)
	}
	return answer{user: user, code: v.Code, order: v.OrderID, status: resp.StatusCode}
}

// A small sale through the peer, every user clicking three times at once: each unit is sold
// once, each user buys at most once, and what Redis holds is what the buyers were told.
func TestThePeerSellsEachUnitOnceAndOncePerUser(t *testing.T) {
	s, rdb := startPeer(t)
	ctx := context.Background()
	// A user's clicks are sent one after the other to different workers, so they race each
	// other while units are left (200 of 300): the once-per-user check is what stops them.
	const sale, stock, users, clicks = "peer-sale-1", 200, 300, 3
	if err := Prepare(ctx, rdb, sale, stock); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var (
		mu  sync.Mutex
		all []answer
		wg  sync.WaitGroup
	)
	work := make(chan string)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				a := buy(t, c, s, sale, u)
				mu.Lock()
				all = append(all, a)
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < users; i++ {
		for k := 0; k < clicks; k++ {
			work <- fmt.Sprintf("u%d", i)
		}
	}
	close(work)
	wg.Wait()

	won := map[string]string{} // user -> order
	orders := map[string]bool{}
	var told []answer
	for _, a := range all {
		switch {
		case a.status == http.StatusAccepted:
			if prev, ok := won[a.user]; ok {
				t.Errorf("user %s bought twice: %s and %s", a.user, prev, a.order)
			}
			if orders[a.order] {
				t.Errorf("order id %s given twice", a.order)
			}
			won[a.user], orders[a.order] = a.order, true
		case a.status == http.StatusConflict && a.code == "already_bought":
			told = append(told, a)
		case a.status == http.StatusConflict && a.code == "sold_out":
		default:
			t.Errorf("unexpected answer %+v", a)
		}
	}
	if len(won) != stock {
		t.Errorf("%d units sold, want exactly the stock %d (more users than units)", len(won), stock)
	}
	if len(told) == 0 {
		t.Error("no click was told already_bought: the users' clicks never raced")
	}
	for _, a := range told {
		if won[a.user] != a.order {
			t.Errorf("already_bought told %s order %q, but the user's 202 said %q", a.user, a.order, won[a.user])
		}
	}
	k1, k2, k3 := Keys(sale)
	if left, err := rdb.Get(ctx, k1).Int(); err != nil || left != 0 {
		t.Errorf("stock left %d (%v), want 0", left, err)
	}
	buyers, err := rdb.HGetAll(ctx, k2).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(buyers) != len(won) {
		t.Errorf("buyers hash has %d users, the 202s %d", len(buyers), len(won))
	}
	for u, o := range won {
		if buyers[u] != o {
			t.Errorf("buyers[%s] = %q, the 202 said %q", u, buyers[u], o)
		}
	}
	entries, err := rdb.XRange(ctx, k3, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(won) {
		t.Errorf("outbox has %d entries, want %d", len(entries), len(won))
	}
	for _, e := range entries {
		u, _ := e.Values["u"].(string)
		if o, _ := e.Values["o"].(string); won[u] != o {
			t.Errorf("outbox entry %v is not a 202 (user %s was told %q)", e.Values, u, won[u])
		}
	}
}

// The handler's RESP path when Redis answers an error: after SCRIPT FLUSH the EVALSHA gets
// NOSCRIPT, the handler loads the script and buys. A request without a user is refused.
func TestThePeerReloadsItsScriptAndRefusesAnonymousBuyers(t *testing.T) {
	s, rdb := startPeer(t)
	ctx := context.Background()
	if err := Prepare(ctx, rdb, "peer-sale-2", 1); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	if a := buy(t, c, s, "peer-sale-2", "alice"); a.status != http.StatusAccepted || a.order == "" {
		t.Fatalf("after SCRIPT FLUSH: %+v, want a 202 with an order", a)
	}
	if a := buy(t, c, s, "peer-sale-2", "bob"); a.status != http.StatusConflict || a.code != "sold_out" {
		t.Errorf("second buyer of one unit: %+v, want 409 sold_out", a)
	}
	if a := buy(t, c, s, "peer-sale-2", ""); a.status != http.StatusBadRequest || a.code != "bad_request" {
		t.Errorf("no X-User-ID: %+v, want 400 bad_request", a)
	}
	if ok, err := rdb.ScriptExists(ctx, SHA).Result(); err != nil || !ok[0] {
		t.Errorf("the script is not loaded again (%v)", err)
	}
}
