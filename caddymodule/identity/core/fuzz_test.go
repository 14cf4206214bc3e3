package core

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
	"github.com/seckilledge/seckill/contract"
)

// FuzzIdentityToken feeds anything as a session (bearer header, then cookie) through what
// seckill_identity and seckill_jwt do with it, Credential then VerifyIdentity: it must never
// panic, never verify anyone but the one user the keys signed for, and refuse everything
// else with an outcome the handlers answer 401 unauthenticated (every outcome but Verified and
// NoKeys, the 503 of a verifier without keys, which static keys never are).
func FuzzIdentityToken(f *testing.F) {
	es, hs := shoptest.NewKey(f, "es", jose.ES256), shoptest.NewKey(f, "hs", jose.HS256)
	now := time.Now()
	for _, k := range []shoptest.Key{es, hs} {
		tok := shoptest.Session(f, k, "alice")
		f.Add(tok)
		parts := strings.Split(tok, ".")
		f.Add(parts[0] + "." + parts[1] + ".")
		f.Add(b64(`{"alg":"none","kid":"es"}`) + "." + parts[1] + ".")
		f.Add(parts[0] + "." + b64(`{"sub":"../../etc","exp":1e400}`) + "." + parts[2])
	}
	f.Add("")
	f.Add("...")
	f.Add("a.b.c.d.e")
	f.Add(`{"payload":"e30","signatures":[]}`)
	f.Add(strings.Repeat("A", MaxToken+1))

	src := StaticKeys{}
	for _, k := range []shoptest.Key{es, hs} {
		value := string(k.HMAC)
		if k.Priv != nil {
			value = shoptest.PEM(f, k)
		}
		key, err := ParseStaticKey(k.Kid, string(k.Alg), value)
		if err != nil {
			f.Fatal(err)
		}
		src[k.Kid] = key
	}
	v := &Verifier{Keys: src, Issuer: shoptest.Issuer, Audience: shoptest.Audience, Leeway: 30 * time.Second,
		Now: func() time.Time { return now }}

	f.Fuzz(func(t *testing.T, token string) {
		if user, o := v.Verify(context.Background(), token); o == Verified && user != "alice" {
			t.Fatalf("verified as %q", user)
		} else if o == Verified && !contract.ValidID(user) {
			t.Fatalf("verified a user that is not a contract id: %q", user)
		}
		bearer := httptest.NewRequest(http.MethodPost, "/seckill/s1/token", nil)
		bearer.Header.Set("Authorization", "Bearer "+token)
		// The cookie as a raw header line, whatever its bytes.
		cookie := httptest.NewRequest(http.MethodPost, "/seckill/s1/token", nil)
		cookie.Header.Set("Cookie", "session="+token)
		for _, r := range []*http.Request{bearer, cookie} {
			tok, o := Credential(r, "session")
			var id Identity
			if o == Verified {
				id, o = v.VerifyIdentity(r.Context(), tok)
			}
			switch {
			case o == Verified && id.User != "alice":
				t.Fatalf("admitted as %q", id.User)
			case o == NoKeys || o == "":
				t.Fatalf("refused with outcome %q, not one answered 401 unauthenticated", o)
			}
		}
	})
}
