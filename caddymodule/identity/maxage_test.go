package identity

import (
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/seckilledge/seckill/caddymodule/identity/core"
	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
)

// A session signed to last for ever (here until the year 5138) is no key to the account: with
// max_age (default 24h) a session longer than that is refused, whatever its signature.
func TestASessionLongerThanMaxAgeIsRefused(t *testing.T) {
	k := shoptest.NewKey(t, "k1", jose.ES256)
	now := time.Now()
	p := &JWT{Keys: []StaticKey{{ID: k.Kid, Algorithm: string(k.Alg), Value: shoptest.PEM(t, k)}}, Issuer: shoptest.Issuer, Audience: shoptest.Audience}
	if err := p.setup(nil); err != nil {
		t.Fatal(err)
	}
	if time.Duration(p.MaxAge) != DefaultMaxAge || DefaultMaxAge != 24*time.Hour {
		t.Fatalf("default max_age %v", time.Duration(p.MaxAge))
	}
	v := p.verifier
	v.Now = func() time.Time { return now }
	noIat := func(exp time.Time) string {
		return shoptest.Sign(t, k, shoptest.Claims{Claims: jwt.Claims{Issuer: shoptest.Issuer, Audience: jwt.Audience{shoptest.Audience},
			Subject: "alice", Expiry: jwt.NewNumericDate(exp)}})
	}
	year5138 := time.Date(5138, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		token string
		want  core.Outcome
	}{
		{"an hour", shoptest.At(t, k, now, now.Add(time.Hour)), core.Verified},
		{"exactly a day", shoptest.At(t, k, now, now.Add(24*time.Hour)), core.Verified},
		{"a day and the leeway", shoptest.At(t, k, now, now.Add(24*time.Hour+30*time.Second)), core.Verified},
		{"a day and a minute", shoptest.At(t, k, now, now.Add(24*time.Hour+time.Minute)), core.TooLong},
		{"until 5138", shoptest.At(t, k, now, year5138), core.TooLong},
		{"issued long ago, until 5138", shoptest.At(t, k, now.Add(-time.Hour), year5138), core.TooLong},
		{"no iat, an hour from now", noIat(now.Add(time.Hour)), core.Verified},
		{"no iat, until 5138", noIat(year5138), core.TooLong},
	} {
		expect(t, v, c.name, c.token, c.want)
	}
	// A shorter max_age from the configuration.
	week := caddyDuration(7 * 24 * time.Hour)
	p2 := &JWT{Keys: p.Keys, Issuer: shoptest.Issuer, Audience: shoptest.Audience, MaxAge: caddyDuration(time.Hour)}
	if err := p2.setup(nil); err != nil {
		t.Fatal(err)
	}
	p2.verifier.Now = func() time.Time { return now }
	expect(t, p2.verifier, "max_age 1h, two hours", shoptest.At(t, k, now, now.Add(2*time.Hour)), core.TooLong)
	p2.MaxAge = week
	if err := p2.setup(nil); err != nil {
		t.Fatal(err)
	}
	p2.verifier.Now = func() time.Time { return now }
	expect(t, p2.verifier, "max_age 1w, two days", shoptest.At(t, k, now, now.Add(48*time.Hour)), core.Verified)
}
