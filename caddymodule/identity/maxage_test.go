package identity

import (
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issue 33 (informational): a session signed to last until the year 5138 was accepted. With
// max_age (default 24h) a session longer than that is refused, whatever its signature.
func TestASessionLongerThanMaxAgeIsRefused(t *testing.T) {
	k := newKey(t, "k1", jose.ES256)
	now := time.Now()
	p := &JWT{Keys: []StaticKey{{ID: k.kid, Algorithm: string(k.alg), Value: pemOf(t, k)}}, Issuer: testIssuer, Audience: testAudience}
	if err := p.setup(nil); err != nil {
		t.Fatal(err)
	}
	if time.Duration(p.MaxAge) != DefaultMaxAge || DefaultMaxAge != 24*time.Hour {
		t.Fatalf("default max_age %v", time.Duration(p.MaxAge))
	}
	v := p.verifier
	v.Now = func() time.Time { return now }
	noIat := func(exp time.Time) string {
		return sign(t, k, claims{Claims: jwt.Claims{Issuer: testIssuer, Audience: jwt.Audience{testAudience},
			Subject: "alice", Expiry: jwt.NewNumericDate(exp)}})
	}
	year5138 := time.Date(5138, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		token string
		want  Outcome
	}{
		{"an hour", at(t, k, now, now.Add(time.Hour)), Verified},
		{"exactly a day", at(t, k, now, now.Add(24*time.Hour)), Verified},
		{"a day and the leeway", at(t, k, now, now.Add(24*time.Hour+30*time.Second)), Verified},
		{"a day and a minute", at(t, k, now, now.Add(24*time.Hour+time.Minute)), TooLong},
		{"until 5138", at(t, k, now, year5138), TooLong},
		{"issued long ago, until 5138", at(t, k, now.Add(-time.Hour), year5138), TooLong},
		{"no iat, an hour from now", noIat(now.Add(time.Hour)), Verified},
		{"no iat, until 5138", noIat(year5138), TooLong},
	} {
		expect(t, v, c.name, c.token, c.want)
	}
	// A shorter max_age from the configuration.
	week := caddyDuration(7 * 24 * time.Hour)
	p2 := &JWT{Keys: p.Keys, Issuer: testIssuer, Audience: testAudience, MaxAge: caddyDuration(time.Hour)}
	if err := p2.setup(nil); err != nil {
		t.Fatal(err)
	}
	p2.verifier.Now = func() time.Time { return now }
	expect(t, p2.verifier, "max_age 1h, two hours", at(t, k, now, now.Add(2*time.Hour)), TooLong)
	p2.MaxAge = week
	if err := p2.setup(nil); err != nil {
		t.Fatal(err)
	}
	p2.verifier.Now = func() time.Time { return now }
	expect(t, p2.verifier, "max_age 1w, two days", at(t, k, now, now.Add(48*time.Hour)), Verified)
}
