package core

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The age of a source's keys counts from its last successful fetch (from its start before
// one), and the gauge seckill_identity_jwks_age_seconds reports the stalest source running.
func TestTheJWKSAgeCountsFromTheLastGoodFetch(t *testing.T) {
	shop := shoptest.NewShop(t)
	shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	clock := shoptest.NewClock()
	_, j := jwksVerifier(t, shop, time.Hour, time.Second, clock)
	testenv.WaitFor(t, 5*time.Second, "the first fetch", func() bool { return j.loadedAt.Load() != 0 })
	if a := j.Age(); a != 0 {
		t.Errorf("just fetched: age %v", a)
	}
	clock.Advance(90 * time.Second)
	if a := j.Age(); a != 90*time.Second {
		t.Errorf("90 s later: age %v", a)
	}
	if g := testutil.ToFloat64(jwksAge); g < 90 {
		t.Errorf("the gauge says %v, below this source's 90 s", g)
	}

	// A source that never fetched ages from its start.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", 503) }))
	defer down.Close()
	clock2 := shoptest.NewClock()
	d := NewJWKS(down.URL, down.Client(), time.Hour, time.Hour, nopLogger, clock2.Now)
	clock2.Advance(10 * time.Minute)
	if a := d.Age(); a != 10*time.Minute {
		t.Errorf("never fetched, 10 minutes after start: age %v", a)
	}
	if g := testutil.ToFloat64(jwksAge); g < 600 {
		t.Errorf("the gauge says %v with a source 600 s stale", g)
	}
	_ = d.Destruct()
	if _, ok := jwksSources.Load(d); ok {
		t.Error("a destructed source still counts in the gauge")
	}
}
