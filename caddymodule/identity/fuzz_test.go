package identity

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/seckilledge/seckill/caddymodule/identity/core"
	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
	"github.com/seckilledge/seckill/contract"
)

// FuzzIdentityToken feeds anything as a session (bearer header, then cookie) to the handler:
// it must never panic, never admit anyone but the one user the keys signed for, and refuse
// everything else with 401 unauthenticated.
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
	f.Add(strings.Repeat("A", core.MaxToken+1))

	src := core.StaticKeys{}
	for _, k := range []shoptest.Key{es, hs} {
		value := string(k.HMAC)
		if k.Priv != nil {
			value = shoptest.PEM(f, k)
		}
		key, err := core.ParseStaticKey(k.Kid, string(k.Alg), value)
		if err != nil {
			f.Fatal(err)
		}
		src[k.Kid] = key
	}
	h := &Identity{JWT: JWT{Cookie: "session", logger: nopLogger}}
	h.verifier = &core.Verifier{Keys: src, Issuer: shoptest.Issuer, Audience: shoptest.Audience, Leeway: 30 * time.Second,
		Now: func() time.Time { return now }}

	f.Fuzz(func(t *testing.T, token string) {
		if user, o := h.verifier.Verify(context.Background(), token); o == core.Verified && user != "alice" {
			t.Fatalf("verified as %q", user)
		} else if o == core.Verified && !contract.ValidID(user) {
			t.Fatalf("verified a user that is not a contract id: %q", user)
		}
		for _, r := range []*http.Request{
			request(http.Header{"Authorization": {"Bearer " + token}}),
			cookieRequest(token),
		} {
			s := serve(h, r)
			switch {
			case s.status == http.StatusOK && s.user != "alice":
				t.Fatalf("admitted as %q", s.user)
			case s.status != http.StatusOK && (s.status != http.StatusUnauthorized || s.code != "unauthenticated"):
				t.Fatalf("refused with %d %q", s.status, s.code)
			}
		}
	})
}

// cookieRequest carries token as the session cookie, whatever its bytes (a raw header line).
func cookieRequest(token string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/seckill/s1/token", nil)
	r.Header.Set("Cookie", "session="+token)
	return r
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
