package core

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
)

// staticVerifier verifies with the public halves of keys, pinned to their algorithms, at a
// fixed clock.
func staticVerifier(t *testing.T, now time.Time, keys ...shoptest.Key) *Verifier {
	t.Helper()
	src := StaticKeys{}
	for _, k := range keys {
		var key *Key
		var err error
		if k.Alg == jose.HS256 {
			key, err = ParseStaticKey(k.Kid, string(k.Alg), string(k.HMAC))
		} else {
			key, err = ParseStaticKey(k.Kid, string(k.Alg), shoptest.PEM(t, k))
		}
		if err != nil {
			t.Fatal(err)
		}
		src[k.Kid] = key
	}
	return &Verifier{Keys: src, Issuer: shoptest.Issuer, Audience: shoptest.Audience, UserClaim: "sub",
		Leeway: 30 * time.Second, Now: func() time.Time { return now }}
}

func expect(t *testing.T, v *Verifier, name, token string, want Outcome) {
	t.Helper()
	user, got := v.Verify(context.Background(), token)
	if got != want {
		t.Errorf("%s: %s (user %q), want %s", name, got, user, want)
	}
	if got == Verified && user != "alice" {
		t.Errorf("%s: verified as %q, want alice", name, user)
	}
	if got != Verified && user != "" {
		t.Errorf("%s: refused (%s) but names user %q", name, got, user)
	}
}

func TestEverySupportedAlgorithmVerifiesItsOwnKeysSessions(t *testing.T) {
	now := time.Now()
	for _, alg := range algorithms {
		k := shoptest.NewKey(t, "k-"+string(alg), alg)
		v := staticVerifier(t, now, k)
		expect(t, v, string(alg), shoptest.At(t, k, now, now.Add(time.Hour)), Verified)
	}
}

func TestAForgedSignatureIsRefused(t *testing.T) {
	now := time.Now()
	shop, forger := shoptest.NewKey(t, "k1", jose.ES256), shoptest.NewKey(t, "k1", jose.ES256)
	v := staticVerifier(t, now, shop)
	expect(t, v, "signed by another key with the shop's kid", shoptest.At(t, forger, now, now.Add(time.Hour)), BadSignature)

	// The shop's own token with its claims swapped for mallory's: the signature no longer
	// covers them.
	good := strings.Split(shoptest.At(t, shop, now, now.Add(time.Hour)), ".")
	other := strings.Split(shoptest.Sign(t, shop, shoptest.Claims{Claims: jwt.Claims{Issuer: shoptest.Issuer, Audience: jwt.Audience{shoptest.Audience},
		Subject: "mallory", Expiry: jwt.NewNumericDate(now.Add(time.Hour))}}), ".")
	expect(t, v, "payload swapped", good[0]+"."+other[1]+"."+good[2], BadSignature)
	expect(t, v, "signature cut off", good[0]+"."+good[1]+".", BadSignature)

	// A token that carries its own key (jwk header) is checked with the shop's key, not that
	// one.
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: forger.Priv},
		(&jose.SignerOptions{EmbedJWK: true}).WithHeader(jose.HeaderKey("kid"), "k1"))
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := jwt.Signed(sig).Claims(shoptest.SessionClaims("alice")).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mustB64Decode(t, strings.Split(embedded, ".")[0])), `"jwk"`) {
		t.Fatal("the test token carries no jwk header")
	}
	expect(t, v, "its own key in the header", embedded, BadSignature)
}

func mustB64Decode(t *testing.T, s string) []byte {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// b64 is the base64url (unpadded) of s: JWS segments written by hand.
func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestAnUnsignedTokenIsRefused(t *testing.T) {
	now := time.Now()
	k := shoptest.NewKey(t, "k1", jose.ES256)
	v := staticVerifier(t, now, k)
	payload := b64(`{"iss":"` + shoptest.Issuer + `","aud":"seckill","sub":"alice","exp":` + itoa(now.Add(time.Hour).Unix()) + `}`)
	for _, alg := range []string{"none", "None", "NONE", "HS512", "PS256", ""} {
		header := b64(`{"alg":"` + alg + `","kid":"k1","typ":"JWT"}`)
		expect(t, v, "alg "+alg, header+"."+payload+".", Malformed)
		expect(t, v, "alg "+alg+" with a signature", header+"."+payload+"."+b64("sig"), Malformed)
	}
}

func itoa(n int64) string {
	b, _ := jwt.NewNumericDate(time.Unix(n, 0)).MarshalJSON()
	return string(b)
}

// The classic confusion: the verifier holds an RSA public key, the attacker signs HS256 with
// that public key's bytes as the HMAC secret. The key is pinned to RS256, so the token is
// refused before any MAC is computed, with the PEM or the DER as the secret.
func TestAnHS256TokenSignedWithTheRSAPublicKeyIsRefused(t *testing.T) {
	now := time.Now()
	rsaKey := shoptest.NewKey(t, "k1", jose.RS256)
	v := staticVerifier(t, now, rsaKey)
	pemBytes := []byte(shoptest.PEM(t, rsaKey))
	block := strings.TrimSpace(shoptest.PEM(t, rsaKey))
	for name, secret := range map[string][]byte{"pem": pemBytes, "pem trimmed": []byte(block)} {
		forged := shoptest.Sign(t, shoptest.Key{Kid: "k1", Alg: jose.HS256, HMAC: secret}, shoptest.Claims{Claims: jwt.Claims{
			Issuer: shoptest.Issuer, Audience: jwt.Audience{shoptest.Audience}, Subject: "alice", Expiry: jwt.NewNumericDate(now.Add(time.Hour))}})
		expect(t, v, name, forged, WrongAlgorithm)
	}

	// Same through a JWKS whose RSA key has no alg: the type pins RS256.
	shop := shoptest.NewShop(t)
	shop.Publish(rsaKey)
	j := NewJWKS(shop.URL(), shop.Srv.Client(), time.Hour, time.Hour, nopLogger, nil)
	t.Cleanup(func() { _ = j.Destruct() })
	v.Keys = j
	forged := shoptest.Sign(t, shoptest.Key{Kid: "k1", Alg: jose.HS256, HMAC: pemBytes}, shoptest.Claims{Claims: jwt.Claims{
		Issuer: shoptest.Issuer, Audience: jwt.Audience{shoptest.Audience}, Subject: "alice", Expiry: jwt.NewNumericDate(now.Add(time.Hour))}})
	expect(t, v, "jwks", forged, WrongAlgorithm)
	expect(t, v, "jwks, the real RS256 session", shoptest.At(t, rsaKey, now, now.Add(time.Hour)), Verified)
}

func TestAnExpiredOrNotYetValidSessionIsRefusedBeyondTheLeewayOnly(t *testing.T) {
	now := time.Unix(1_900_000_000, 0)
	k := shoptest.NewKey(t, "k1", jose.EdDSA)
	v := staticVerifier(t, now, k) // leeway 30s
	hour := time.Hour

	expect(t, v, "expired 10s ago (gateway clock ahead)", shoptest.At(t, k, now.Add(-hour), now.Add(-10*time.Second)), Verified)
	expect(t, v, "expired 31s ago", shoptest.At(t, k, now.Add(-hour), now.Add(-31*time.Second)), Expired)
	expect(t, v, "expired a day ago", shoptest.At(t, k, now.Add(-48*hour), now.Add(-24*hour)), Expired)
	expect(t, v, "issued 20s in the future (shop clock ahead)", shoptest.At(t, k, now.Add(20*time.Second), now.Add(hour)), Verified)
	expect(t, v, "issued 40s in the future", shoptest.At(t, k, now.Add(40*time.Second), now.Add(hour)), NotYetValid)

	nbf := func(d time.Duration) string {
		return shoptest.Sign(t, k, shoptest.Claims{Claims: jwt.Claims{Issuer: shoptest.Issuer, Audience: jwt.Audience{shoptest.Audience}, Subject: "alice",
			NotBefore: jwt.NewNumericDate(now.Add(d)), Expiry: jwt.NewNumericDate(now.Add(hour))}})
	}
	expect(t, v, "nbf 29s ahead", nbf(29*time.Second), Verified)
	expect(t, v, "nbf 2m ahead", nbf(2*time.Minute), NotYetValid)

	noExp := shoptest.Sign(t, k, shoptest.Claims{Claims: jwt.Claims{Issuer: shoptest.Issuer, Audience: jwt.Audience{shoptest.Audience}, Subject: "alice"}})
	expect(t, v, "no exp: a session must end", noExp, Expired)

	v.Leeway = 0
	expect(t, v, "expired 10s ago without leeway", shoptest.At(t, k, now.Add(-hour), now.Add(-10*time.Second)), Expired)
}

func TestTheIssuerAndTheAudienceMustBeTheShops(t *testing.T) {
	now := time.Now()
	k := shoptest.NewKey(t, "k1", jose.ES256)
	v := staticVerifier(t, now, k)
	tok := func(iss string, aud ...string) string {
		return shoptest.Sign(t, k, shoptest.Claims{Claims: jwt.Claims{Issuer: iss, Audience: aud, Subject: "alice",
			Expiry: jwt.NewNumericDate(now.Add(time.Hour))}})
	}
	expect(t, v, "right", tok(shoptest.Issuer, shoptest.Audience), Verified)
	expect(t, v, "one of several audiences", tok(shoptest.Issuer, "shop-api", shoptest.Audience), Verified)
	expect(t, v, "another issuer", tok("https://evil.test", shoptest.Audience), WrongIssuer)
	expect(t, v, "no issuer", tok("", shoptest.Audience), WrongIssuer)
	expect(t, v, "another audience (a token meant for the shop's API)", tok(shoptest.Issuer, "shop-api"), WrongAudience)
	expect(t, v, "no audience", tok(shoptest.Issuer), WrongAudience)

	// Not configured: not checked.
	v.Issuer, v.Audience = "", ""
	expect(t, v, "unchecked", tok("anyone", "anything"), Verified)
}

func TestTheUserMustBeAContractID(t *testing.T) {
	now := time.Now()
	k := shoptest.NewKey(t, "k1", jose.ES256)
	v := staticVerifier(t, now, k)
	tok := func(sub string, extra map[string]any) string {
		return shoptest.Sign(t, k, shoptest.Claims{Claims: jwt.Claims{Issuer: shoptest.Issuer, Audience: jwt.Audience{shoptest.Audience}, Subject: sub,
			Expiry: jwt.NewNumericDate(now.Add(time.Hour))}, Extra: extra})
	}
	for _, bad := range []string{"", "alice bob", "alice/../bob", "al:ice", strings.Repeat("a", 65), "álice"} {
		expect(t, v, "sub "+bad, tok(bad, nil), BadUser)
	}

	v.UserClaim = "uid"
	expect(t, v, "custom claim", tok("someone-else", map[string]any{"uid": "alice"}), Verified)
	expect(t, v, "custom claim missing", tok("alice", nil), BadUser)
	expect(t, v, "custom claim not a string", tok("alice", map[string]any{"uid": 42}), BadUser)
}

func TestATokenOver8KiBIsRefusedBeforeParsing(t *testing.T) {
	now := time.Now()
	k := shoptest.NewKey(t, "k1", jose.ES256)
	v := staticVerifier(t, now, k)
	big := shoptest.Sign(t, k, shoptest.Claims{Claims: jwt.Claims{Issuer: shoptest.Issuer, Audience: jwt.Audience{shoptest.Audience}, Subject: "alice",
		Expiry: jwt.NewNumericDate(now.Add(time.Hour))}, Extra: map[string]any{"pad": strings.Repeat("x", MaxToken)}})
	expect(t, v, "9 KiB, validly signed", big, TooLarge)
	expect(t, v, "8 KiB + 1 of garbage", strings.Repeat("a", MaxToken+1), TooLarge)
}

func TestAnUnknownKidIsRefused(t *testing.T) {
	now := time.Now()
	k1, k2 := shoptest.NewKey(t, "k1", jose.ES256), shoptest.NewKey(t, "k2", jose.ES256)
	v := staticVerifier(t, now, k1)
	expect(t, v, "kid k2", shoptest.At(t, k2, now, now.Add(time.Hour)), UnknownKey)
	expect(t, v, "no kid", shoptest.At(t, shoptest.Key{Alg: k1.Alg, Priv: k1.Priv}, now, now.Add(time.Hour)), UnknownKey)
}
