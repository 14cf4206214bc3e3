package dpop_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/seckilledge/seckill/caddymodule/dpop"
	"github.com/seckilledge/seckill/caddymodule/dpop/dpoptest"
)

const (
	host = "shop.example"
	path = "/seckill/s1/buy"
	url  = "https://" + host + path
	tok  = "2.k1.abc.nonce.mac"
)

func req(now time.Time) dpop.Request {
	return dpop.Request{Method: "POST", Host: host, Path: path, Token: tok, Now: now}
}

func TestAGenuineProofGivesItsKeysThumbprintAndJTI(t *testing.T) {
	k := dpoptest.NewKey(t)
	proof := k.Proof(t, "POST", url+"?x=1", tok) // query ignored (RFC 9449, 4.3)
	p, err := dpop.Check(proof, req(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if p.JKT != k.JKT || !dpop.ValidJKT(p.JKT) || len(p.JTI) < 16 {
		t.Fatalf("proof %+v, want the key's thumbprint %s", p, k.JKT)
	}
	// Plain http on the wire (a TLS terminator before the gateway) is the same target.
	if _, err := dpop.Check(k.Proof(t, "POST", "http://"+host+path, tok), req(time.Now())); err != nil {
		t.Fatalf("http scheme: %v", err)
	}
}

// TestTheThumbprintOfAKnownKeyIsRFC7638s checks Check's thumbprint for RFC 7517 appendix
// A.2's P-256 key against one computed outside Go: base64url(SHA-256 of
// {"crv":"P-256","kty":"EC","x":"MKBC...","y":"4Etl..."}), members in that order (RFC 7638).
func TestTheThumbprintOfAKnownKeyIsRFC7638s(t *testing.T) {
	const want = "cn-I_WNMClehiVp51i_0VpOENW1upEerA8sEam5hn-s"
	proof := dpoptest.FixedKey(t).Proof(t, "POST", url, tok)
	p, err := dpop.Check(proof, req(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if p.JKT != want {
		t.Fatalf("thumbprint %s, want %s", p.JKT, want)
	}
}

func TestEveryBadProofIsRefusedWithItsError(t *testing.T) {
	k, other := dpoptest.NewKey(t), dpoptest.NewKey(t)
	now := time.Now()
	good := dpoptest.Claims{HTM: "POST", HTU: url, IAT: now.Unix(), JTI: dpoptest.NewJTI(t), ATH: dpop.TokenHash(tok)}
	with := func(f func(c *dpoptest.Claims)) string {
		c := good
		c.JTI = dpoptest.NewJTI(t)
		f(&c)
		return k.Sign(t, c)
	}
	genuine := k.Sign(t, good)
	parts := strings.Split(genuine, ".")
	forged := parts[0] + "." + strings.Split(with(func(c *dpoptest.Claims) {}), ".")[1] + "." + parts[2]
	// The header of one key over the signature of another: a proof that names a key it was not
	// signed by.
	otherParts := strings.Split(other.Sign(t, good), ".")
	wrongKey := parts[0] + "." + otherParts[1] + "." + otherParts[2]
	for _, c := range []struct {
		name  string
		proof string
		want  error
	}{
		{"none", "", dpop.ErrMissing},
		{"garbage", "not.a.jws", dpop.ErrInvalid},
		{"too long", strings.Repeat("a", dpop.MaxLen+1), dpop.ErrInvalid},
		{"another payload under the signature", forged, dpop.ErrInvalid},
		{"signed by another key than its header's", wrongKey, dpop.ErrInvalid},
		{"no ath", with(func(c *dpoptest.Claims) { c.ATH = "" }), dpop.ErrInvalid},
		{"ath of another token", with(func(c *dpoptest.Claims) { c.ATH = dpop.TokenHash("other") }), dpop.ErrInvalid},
		{"short jti", with(func(c *dpoptest.Claims) { c.JTI = "abc" }), dpop.ErrInvalid},
		{"jti with a colon", with(func(c *dpoptest.Claims) { c.JTI = "aaaaaaaaaaaaaaaa:b" }), dpop.ErrInvalid},
		{"no iat", with(func(c *dpoptest.Claims) { c.IAT = 0 }), dpop.ErrInvalid},
		{"another method", with(func(c *dpoptest.Claims) { c.HTM = "GET" }), dpop.ErrTarget},
		{"another path", with(func(c *dpoptest.Claims) { c.HTU = "https://" + host + "/seckill/s2/buy" }), dpop.ErrTarget},
		{"another host", with(func(c *dpoptest.Claims) { c.HTU = "https://evil.example" + path }), dpop.ErrTarget},
		{"another scheme", with(func(c *dpoptest.Claims) { c.HTU = "ftp://" + host + path }), dpop.ErrTarget},
		{"too old", with(func(c *dpoptest.Claims) { c.IAT = now.Add(-dpop.DefaultMaxAge - 2*time.Second).Unix() }), dpop.ErrStale},
		{"from the future", with(func(c *dpoptest.Claims) { c.IAT = now.Add(dpop.Leeway + 2*time.Second).Unix() }), dpop.ErrStale},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := dpop.Check(c.proof, req(now))
			if !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			r, ok := dpop.Refusal(err)
			if !ok || r.Status < 400 || r.Status > 499 || r.Code == "" {
				t.Fatalf("refusal %+v for %v", r, err)
			}
		})
	}
}

func TestOnlyES256ProofsOfTypeDPoPWithAPublicKeyPass(t *testing.T) {
	now := time.Now()
	claims := []byte(`{"htm":"POST","htu":"` + url + `","iat":` + itoa(now.Unix()) + `,"jti":"` + dpoptest.NewJTI(t) + `","ath":"` + dpop.TokenHash(tok) + `"}`)
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sign := func(opts *jose.SignerOptions, alg jose.SignatureAlgorithm, key any) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
		if err != nil {
			t.Fatal(err)
		}
		jws, _ := s.Sign(claims)
		out, _ := jws.CompactSerialize()
		return out
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	for name, proof := range map[string]string{
		"no typ":         sign(&jose.SignerOptions{EmbedJWK: true}, jose.ES256, priv),
		"typ jwt":        sign((&jose.SignerOptions{EmbedJWK: true}).WithType("JWT"), jose.ES256, priv),
		"no jwk":         sign((&jose.SignerOptions{}).WithType(dpop.Type), jose.ES256, priv),
		"ES384":          sign((&jose.SignerOptions{EmbedJWK: true}).WithType(dpop.Type), jose.ES384, p384),
		"HS256 (secret)": sign((&jose.SignerOptions{}).WithType(dpop.Type), jose.HS256, []byte("0123456789abcdef0123456789abcdef")),
	} {
		if _, err := dpop.Check(proof, req(now)); !errors.Is(err, dpop.ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
	if _, err := dpop.Check(sign((&jose.SignerOptions{EmbedJWK: true}).WithType(dpop.Type), jose.ES256, priv), req(now)); err != nil {
		t.Fatalf("the same proof done right: %v", err)
	}
}

func TestAProofAtTheIssueCarriesNoATH(t *testing.T) {
	k := dpoptest.NewKey(t)
	r := req(time.Now())
	r.Token = ""
	if _, err := dpop.Check(k.Proof(t, "POST", url, ""), r); err != nil {
		t.Fatal(err)
	}
	if _, err := dpop.Check(k.Proof(t, "POST", url, tok), r); !errors.Is(err, dpop.ErrInvalid) {
		t.Fatalf("an ath where no token is presented: %v, want ErrInvalid", err)
	}
}

func TestBindingValues(t *testing.T) {
	for in, want := range map[string]dpop.Binding{"": dpop.Off, "off": dpop.Off, "optional": dpop.Optional, "required": dpop.Required} {
		if got, err := dpop.ParseBinding(in); err != nil || got != want {
			t.Errorf("ParseBinding(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := dpop.ParseBinding("on"); err == nil {
		t.Error("ParseBinding(on) accepted")
	}
}

// A key's header is parsed once, its signature checked on every proof: a proof under a header
// seen before, with another payload or with another key's signature, is refused; and the
// thumbprint is go-jose's (dpoptest computes it with go-jose).
func TestASeenHeaderStillHasEveryProofsSignatureChecked(t *testing.T) {
	k, other := dpoptest.NewKey(t), dpoptest.NewKey(t)
	now := time.Now()
	genuine := k.Proof(t, "POST", url, tok)
	p, err := dpop.Check(genuine, req(now))
	if err != nil || p.JKT != k.JKT {
		t.Fatalf("genuine proof: %+v %v, want the key's thumbprint %s", p, err, k.JKT)
	}
	head, rest, _ := strings.Cut(genuine, ".")
	_, sig, _ := strings.Cut(rest, ".")
	// Another payload under the same (seen) header and signature.
	b, _ := json.Marshal(dpoptest.Claims{HTM: "POST", HTU: url, IAT: now.Unix(), JTI: dpoptest.NewJTI(t), ATH: dpop.TokenHash(tok)})
	forged := head + "." + base64.RawURLEncoding.EncodeToString(b) + "." + sig
	if _, err := dpop.Check(forged, req(now)); !errors.Is(err, dpop.ErrInvalid) {
		t.Fatalf("another payload under a seen header: %v, want ErrInvalid", err)
	}
	// Another key's signature of a payload, under this key's header.
	theirs := other.Proof(t, "POST", url, tok)
	_, rest, _ = strings.Cut(theirs, ".")
	if _, err := dpop.Check(head+"."+rest, req(now)); !errors.Is(err, dpop.ErrInvalid) {
		t.Fatalf("another key's signature under a seen header: %v, want ErrInvalid", err)
	}
	// A signature of the wrong length, or one bit off.
	flipped := []byte(sig)
	flipped[10] ^= 1
	for _, s := range []string{sig[:85], sig + "A", string(flipped)} {
		if _, err := dpop.Check(head+"."+strings.SplitN(genuine, ".", 3)[1]+"."+s, req(now)); !errors.Is(err, dpop.ErrInvalid) {
			t.Fatalf("signature %q: %v, want ErrInvalid", s, err)
		}
	}
	// The same key's next proof passes, with the same thumbprint.
	if p, err := dpop.Check(k.Proof(t, "POST", url, tok), req(now)); err != nil || p.JKT != k.JKT {
		t.Fatalf("the key's next proof: %+v %v", p, err)
	}
}
