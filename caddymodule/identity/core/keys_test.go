package core

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
)

func pemPublic(t *testing.T, pub any) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func TestAConfiguredKeyMustFitItsAlgorithm(t *testing.T) {
	es, rs := shoptest.NewKey(t, "e", jose.ES256), shoptest.NewKey(t, "r", jose.RS256)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	for name, k := range map[string][3]string{
		"none":                  {"k", "none", "x"},
		"HS512":                 {"k", "HS512", strings.Repeat("s", 64)},
		"short secret":          {"k", "HS256", "too-short"},
		"empty (unset env var)": {"k", "HS256", ""},
		"RS256 with an EC key":  {"k", "RS256", shoptest.PEM(t, es)},
		"ES256 with an RSA key": {"k", "ES256", shoptest.PEM(t, rs)},
		"ES256 on P-384":        {"k", "ES256", pemPublic(t, p384.Public())},
		"RSA 1024":              {"k", "RS256", pemPublic(t, rsa1024.Public())},
		"EdDSA not PEM":         {"k", "EdDSA", "MCowBQYDK2VwAyEA"},
	} {
		if _, err := ParseStaticKey(k[0], k[1], k[2]); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, ok := range [][3]string{
		{"h", "HS256", strings.Repeat("s", 32)},
		{"e", "ES256", shoptest.PEM(t, es)},
		{"r", "RS256", shoptest.PEM(t, rs)},
		{"d", "EdDSA", shoptest.PEM(t, shoptest.NewKey(t, "d", jose.EdDSA))},
		{"one-line", "ES256", strings.ReplaceAll(shoptest.PEM(t, es), "\n", `\n`)}, // an env var of one line
	} {
		if k, err := ParseStaticKey(ok[0], ok[1], ok[2]); err != nil || string(k.Alg) != ok[1] {
			t.Errorf("%s: %v", ok[1], err)
		}
	}
}

// One odd key in the shop's document does not take the others down; a document without any
// usable key is an error (and the last good set stays).
func TestAJWKSKeepsOnlyPublicSignatureKeysPinnedToAnAlgorithm(t *testing.T) {
	es, rs, ed := shoptest.NewKey(t, "es", jose.ES256), shoptest.NewKey(t, "rs", jose.RS256), shoptest.NewKey(t, "ed", jose.EdDSA)
	jwk := func(k jose.JSONWebKey) json.RawMessage {
		b, err := k.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	doc, _ := json.Marshal(map[string]any{"keys": []json.RawMessage{
		jwk(jose.JSONWebKey{Key: es.Priv.Public(), KeyID: "es", Use: "sig"}),                         // alg from the type
		jwk(jose.JSONWebKey{Key: rs.Priv.Public(), KeyID: "rs", Algorithm: "RS256"}),                 // explicit
		jwk(jose.JSONWebKey{Key: ed.Priv.Public(), KeyID: "ed", Algorithm: "EdDSA"}),                 // explicit
		jwk(jose.JSONWebKey{Key: es.Priv.Public(), KeyID: "enc", Use: "enc"}),                        // encryption key
		jwk(jose.JSONWebKey{Key: []byte(strings.Repeat("s", 32)), KeyID: "oct", Algorithm: "HS256"}), // a secret
		jwk(jose.JSONWebKey{Key: es.Priv, KeyID: "private", Algorithm: "ES256"}),                     // a private key
		jwk(jose.JSONWebKey{Key: rs.Priv.Public(), KeyID: "ps", Algorithm: "PS256"}),                 // not ours
		jwk(jose.JSONWebKey{Key: rs.Priv.Public(), KeyID: "mismatch", Algorithm: "ES256"}),           // RSA as ES256
		json.RawMessage(`{"kty":"XYZ","kid":"weird"}`),                                               // unknown type
		jwk(jose.JSONWebKey{Key: ed.Priv.Public(), KeyID: "es", Algorithm: "EdDSA"}),                 // kid again
	}})
	ks, skipped, err := parseJWKS(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]jose.SignatureAlgorithm{"es": jose.ES256, "rs": jose.RS256, "ed": jose.EdDSA}
	if len(ks) != len(want) {
		t.Errorf("kept %d keys, want %d; skipped %q", len(ks), len(want), skipped)
	}
	for kid, alg := range want {
		if k := ks[kid]; k == nil || k.Alg != alg {
			t.Errorf("kid %s: %+v, want %s", kid, k, alg)
		}
	}
	if len(skipped) != 7 {
		t.Errorf("skipped %d: %q", len(skipped), skipped)
	}

	for _, bad := range []string{`{"keys":[]}`, `{}`, `not json`, `{"keys":[{"kty":"oct","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}]}`} {
		if _, _, err := parseJWKS([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
