package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// ctl runs seckillctl against srv with token and returns its exit status and output.
func ctl(t *testing.T, srv *httptest.Server, token string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"-url", srv.URL, "-token", token}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestSeckillctlRefusesBadUsageWithStatus2(t *testing.T) {
	for _, args := range [][]string{{}, {"nope"}, {"status"}, {"stock", "add", "s"}, {"stock", "add", "s", "x"}, {"sales", "-o", "yaml"}, {"status", "-o", "json"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}

// pay is the shop's call: POST /shop/orders/{id}/paid with its token.
func TestSeckillctlPayConfirmsThePaymentAsTheShop(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"order_id":"o-1","status":"paid"}`))
	}))
	defer srv.Close()
	code, out, errs := ctl(t, srv, "shop-token-0123456789", "pay", "o-1")
	if code != 0 || !strings.Contains(out, "order o-1: paid") {
		t.Fatalf("pay: %d %s %s", code, out, errs)
	}
	if got.Method != "POST" || got.URL.Path != "/shop/orders/o-1/paid" || got.Header.Get("Authorization") != "Bearer shop-token-0123456789" {
		t.Fatalf("pay sent %s %s %q", got.Method, got.URL.Path, got.Header.Get("Authorization"))
	}
}
