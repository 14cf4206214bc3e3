package core

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckilledge/seckill/caddymodule/internal/metric"
)

// The core's collectors: package-level so counts survive config reloads, registered into each
// config's registry by the glue (Collectors). Labels are bounded: a result from a closed set,
// never a user, a kid or a URL (a forged token may name any kid).
var (
	jwtCache = identityMetric.CounterVec("jwt_cache_total",
		"Lookups in seckill_identity's cache of verified sessions, by result: hit (answered without a signature check) or miss (verified in full).",
		"result")
	jwksFetches = identityMetric.CounterVec("jwks_fetches_total",
		"Fetches of the JWKS document (background refreshes and early fetches for an unknown kid), by result: ok or error (the last good keys stay in use).",
		"result")
)

// jwksSources is every JWKS source running (made by NewJWKS, until Destruct), for the age gauge.
var jwksSources sync.Map // *JWKS -> struct{}

// jwksAge is the age of the stalest key set in use: seconds since the last successful fetch of
// the source that fetched longest ago (since its start when it never has). A gateway then
// verifies with keys that old, or refuses every session once they are older than max_stale.
var jwksAge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
	Name: "seckill_identity_jwks_age_seconds",
	Help: "Seconds since the stalest JWKS source in use last fetched its keys successfully (since its start if never); 0 without a JWKS source.",
}, func() float64 {
	var oldest float64
	jwksSources.Range(func(k, _ any) bool {
		oldest = max(oldest, k.(*JWKS).Age().Seconds())
		return true
	})
	return oldest
})

// identityMetric is the subsystem the handlers' own collectors share: one family of
// seckill_identity_* series whichever package counts.
const identityMetric = metric.Subsystem("identity")

// The series of the verified-session cache, looked up once: counting is then an atomic add.
var (
	jwtCacheHits   = jwtCache.WithLabelValues("hit")
	jwtCacheMisses = jwtCache.WithLabelValues("miss")
)

func init() {
	// Every series is visible from the start, at zero.
	for _, r := range []string{"ok", "error"} {
		jwksFetches.WithLabelValues(r)
	}
}

// Collectors are the core's metrics, for the glue to register with its own.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{jwtCache, jwksFetches, jwksAge}
}
