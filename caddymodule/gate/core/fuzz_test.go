//go:build integration

package core

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seckilledge/seckill/caddymodule/edge"
	hcore "github.com/seckilledge/seckill/caddymodule/handler/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/shardcache"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// FuzzGateRequest throws arbitrary sale ids, users, tokens and buy bodies at what seckill_gate
// does with them once its placeholders are read (ReadItem, then Decider.Decide against the
// real Redis, then WriteAccepted or the verdict's refusal as hcore.AppendBody writes it): no
// input may yield a 5xx other than 503, a body that is not the contract's JSON, or a panic.
func FuzzGateRequest(f *testing.F) {
	rdb := testenv.Redis(f)
	ctx := context.Background()
	sale, now := testenv.ID("s"), time.Now()
	err := lua.Preheat.Run(ctx, rdb, lua.PreheatCall{Sale: sale}.Keys(), sale, 1_000_000,
		now.Add(-time.Minute).UnixMilli(), now.Add(time.Hour).UnixMilli(), "init", (24 * time.Hour).Milliseconds(),
		"", testenv.ID("gate-core-fuzz-")).Err()
	if err != nil {
		f.Fatalf("preheat: %v", err)
	}
	f.Cleanup(func() {
		rdb.Del(ctx, contract.MetaKey(sale), contract.BuyersKey(sale), contract.TokensKey(sale), contract.OutboxKey(sale))
	})
	kr := testKeyring(f, "k1")
	tok, _, _ := kr.Issue(sale, "u1", time.Now().Add(time.Minute))
	newOrderID := func() (string, error) {
		id, err := uuid.NewV7()
		return id.String(), err
	}
	deciders := []*Decider{
		{Store: RedisStore{R: rdb}, Caller: edge.Caller{Timeout: 2 * time.Second}, Shards: new(shardcache.Counts),
			SoldOut: &fakeSoldOut{m: map[string]bool{}}, Now: time.Now, NewOrderID: newOrderID},
		{Store: RedisStore{R: rdb}, Caller: edge.Caller{Timeout: 2 * time.Second}, Shards: new(shardcache.Counts),
			SoldOut: &fakeSoldOut{m: map[string]bool{}}, Now: time.Now, NewOrderID: newOrderID, Keyring: kr},
	}

	f.Add(sale, "u1", tok, "", false)
	f.Add(sale, "u1", tok, "{}", true)
	f.Add(sale, "", "", "", false)
	f.Add("../etc", "u\x00", "1.k1.zz.zz.zz", "garbage", true)
	f.Add(strings.Repeat("s", 65), "{http.request.uri}", "{env.HOME}", "", true)
	f.Add("%2F", "ü", "1....", "\xff", false)
	f.Add(sale, "u2", "", `{"quantity":2}`, false)
	f.Add(sale, "u3", "", `{"variant":"xl","quantity":1}`, false)
	f.Fuzz(func(t *testing.T, sale, user, token, body string, requireToken bool) {
		d := deciders[0]
		if requireToken {
			d = deciders[1]
		}
		req := &http.Request{
			Method: http.MethodPost,
			URL:    &url.URL{Path: "/seckill/" + sale + "/buy"},
			Header: http.Header{},
			Body:   http.NoBody,
		}
		if body != "" {
			req.Body, req.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
		}
		// The handler's path from here on (gate.go, ServeDecision).
		var v Verdict
		if item, err := ReadItem(req); err != nil {
			if v.Outcome = CheckRequest(sale, user); v.Outcome == "" {
				v.Outcome = BadRequest
			}
		} else {
			v, _, err = d.Decide(t.Context(), Request{Sale: sale, User: user, Token: token, Item: item})
			if err != nil && v.Refusal().Status != http.StatusServiceUnavailable {
				t.Fatalf("Decide failed (%v) with outcome %q, not a 503", err, v.Outcome)
			}
		}
		if v.Outcome == Accepted {
			w := httptest.NewRecorder()
			WriteAccepted(w, v)
			var ok struct {
				OrderID string `json:"order_id"`
				Status  string `json:"status"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &ok); err != nil || w.Code != http.StatusAccepted || ok.OrderID == "" || ok.Status != "queued" {
				t.Fatalf("%d body %q: %v", w.Code, w.Body, err)
			}
			return
		}
		ref := v.Refusal()
		if ref.Status < 400 || ref.Status >= 500 && ref.Status != http.StatusServiceUnavailable {
			t.Fatalf("status %d (%q) for sale %q user %q token %q body %q", ref.Status, v.Outcome, sale, user, token, body)
		}
		var answer contract.Refusal
		if b := hcore.AppendBody(nil, ref); json.Unmarshal(b, &answer) != nil || answer.Code == "" {
			t.Fatalf("status %d body %q is not a refusal", ref.Status, b)
		}
	})
}
