package identity

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckilledge/seckill/caddymodule/identity/core"
	"github.com/seckilledge/seckill/caddymodule/internal/metric"
)

// Package-level collectors, registered into each config's registry with the core's
// (core.Collectors: the verified-session cache and the JWKS fetches), so counts survive config
// reloads. Labels are bounded: an outcome from a closed set, never a user, a kid or a URL
// (a forged token may name any kid).
var (
	jwtRequests = identityMetric.CounterVec("jwt_requests_total",
		"Requests whose signed session was checked, by outcome: verified, or why it was refused (missing, ambiguous, too_large, malformed, unknown_kid, wrong_alg, bad_signature, expired, not_yet_valid, wrong_issuer, wrong_audience, bad_user, no_keys).",
		"outcome")
	sessionRequests = identityMetric.CounterVec("session_requests_total",
		"Requests whose opaque session was looked up (seckill_session), by outcome: signed_in, signed_out, missing, ambiguous, unavailable.",
		"outcome")
	sessionLookups = identityMetric.CounterVec("session_lookups_total",
		"Calls to the shop's session endpoint (cache misses, one per session however many requests wait for it), by result: signed_in, signed_out, error.",
		"result")
	sessionCacheResults = identityMetric.CounterVec("session_cache_total",
		"Session cache lookups by result: hit or miss.",
		"result")
)

const identityMetric = metric.Subsystem("identity")

// The outcomes of seckill_session (metric labels).
const (
	sessionSignedIn    = "signed_in"
	sessionSignedOut   = "signed_out"
	sessionMissing     = "missing"
	sessionAmbiguous   = "ambiguous"
	sessionUnavailable = "unavailable"

	lookupSignedIn  = "signed_in"
	lookupSignedOut = "signed_out"
	lookupError     = "error"
)

var sessionOutcomes = []string{sessionSignedIn, sessionSignedOut, sessionMissing, sessionAmbiguous, sessionUnavailable}

// jwtCounted holds the series of each outcome, looked up once: counting a request is then one
// map read and an atomic add.
var jwtCounted = map[core.Outcome]prometheus.Counter{}

func init() {
	// Every series is visible from the start, at zero.
	for _, o := range core.Outcomes {
		jwtCounted[o] = jwtRequests.WithLabelValues(string(o))
	}
	for _, o := range sessionOutcomes {
		sessionRequests.WithLabelValues(o)
	}
	for _, r := range []string{lookupSignedIn, lookupSignedOut, lookupError} {
		sessionLookups.WithLabelValues(r)
	}
	for _, r := range []string{"hit", "miss"} {
		sessionCacheResults.WithLabelValues(r)
	}
}

func registerMetrics(reg prometheus.Registerer) {
	metric.Register(reg, jwtRequests, sessionRequests, sessionLookups, sessionCacheResults)
	metric.Register(reg, core.Collectors()...)
}
