//go:build integration

package token

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

func TestAPausedSaleIssuesNoTokenAndAnswers503PausedUntilResumed(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	h := newIssuer(t, rdb, testRing(t), time.Minute, time.Minute)
	sale := testenv.ID("s")
	preheat(t, rdb, sale, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	rdb.HSet(ctx, contract.MetaKey(sale), contract.FieldState, contract.StatePaused)
	a := ask(t, h, "POST", tokenPath(sale), "alice")
	if a.status != 503 || a.body["code"] != contract.CodePaused || a.header.Get("Retry-After") != "1" {
		t.Fatalf("paused: %d %v %s, want 503 paused with Retry-After: 1", a.status, a.header, a.raw)
	}
	if rdb.HExists(ctx, contract.TokensKey(sale), "alice").Val() {
		t.Fatal("a token nonce was minted while paused")
	}
	rdb.HDel(ctx, contract.MetaKey(sale), contract.FieldState)
	if a := ask(t, h, "POST", tokenPath(sale), "alice"); a.status != 200 {
		t.Fatalf("resumed: %d %s, want 200", a.status, a.raw)
	}
}

func TestABuyerGetsHisOrderInsteadOfANewToken(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	h := newIssuer(t, rdb, testRing(t), time.Minute, time.Minute)
	sale := testenv.ID("s")
	preheat(t, rdb, sale, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	rdb.HSet(ctx, contract.BuyersKey(sale), "alice", "order-a")
	t.Cleanup(func() { rdb.Del(ctx, contract.BuyersKey(sale)) })
	a := ask(t, h, "POST", tokenPath(sale), "alice")
	if a.status != 409 || a.body["code"] != contract.CodeAlreadyBought || a.body["order_id"] != "order-a" {
		t.Fatalf("buyer: %d %s, want 409 already_bought with order-a", a.status, a.raw)
	}
	rdb.HSet(ctx, contract.MetaKey(sale), contract.FieldStock, 0)
	if a := ask(t, h, "POST", tokenPath(sale), "bob"); a.status != 409 || a.body["code"] != contract.CodeSoldOut {
		t.Fatalf("after sell-out: %d %s, want 409 sold_out", a.status, a.raw)
	}
	if n := rdb.HLen(ctx, contract.TokensKey(sale)).Val(); n != 0 {
		t.Fatalf("%d tokens minted for a buyer or after sell-out", n)
	}
}

func TestHandleErrorsHandsTheRefusalToCaddy(t *testing.T) {
	rdb := testenv.Redis(t)
	h := newIssuer(t, rdb, testRing(t), time.Minute, time.Minute)
	h.HandleErrors = true
	h.refuse.HandleErrors = true
	sale := testenv.ID("s")
	preheat(t, rdb, sale, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	rdb.HSet(context.Background(), contract.MetaKey(sale), contract.FieldState, contract.StatePaused)
	req := httptest.NewRequest("POST", tokenPath(sale), nil)
	req.Header.Set("X-User-ID", "alice")
	caddyhttp.NewTestReplacer(req)
	rec := httptest.NewRecorder()
	err := h.ServeHTTP(rec, req, nil)
	var he caddyhttp.HandlerError
	if !errors.As(err, &he) || he.StatusCode != 503 {
		t.Fatalf("ServeHTTP = %v, want a caddyhttp 503 error", err)
	}
	if r, ok := handler.As(err); !ok || r.Code != contract.CodePaused {
		t.Fatalf("the error carries %+v, want the paused refusal", r)
	}
	if rec.Body.Len() != 0 || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("body %q, Retry-After %q: want no body and Retry-After", rec.Body, rec.Header().Get("Retry-After"))
	}
}

// /seckill/a/../b/token matches the routes of sale b while the sale placeholder reads a: the
// request is refused, so a per-sale rule in front of b cannot hand out tokens of a.
func TestATokenRequestWhosePathNamesTwoSalesIsRefusedThroughCaddy(t *testing.T) {
	t.Setenv("SECKILL_TEST_TOKEN_KEY_K1", "old-key-0123456789-0123456789-0123456789")
	rdb := testenv.Redis(t)
	ctx := context.Background()
	a, b := testenv.ID("s"), testenv.ID("s")
	for _, s := range []string{a, b} {
		preheat(t, rdb, s, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	t.Cleanup(func() { _ = caddy.Stop() })
	loadCaddy(t, addr, "k1")

	// A raw request line: an HTTP client might clean the path before sending it.
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "POST /seckill/%s/../%s/token HTTP/1.1\r\nHost: gw\r\nX-User-ID: alice\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", a, b)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	for _, s := range []string{a, b} {
		if rdb.HExists(ctx, contract.TokensKey(s), "alice").Val() {
			t.Fatalf("a token of sale %s was issued through a path naming two sales", s)
		}
	}
	if status, body := postToken(t, addr, b, "alice"); status != 200 {
		t.Fatalf("the canonical path: %d %s", status, body)
	}
}
