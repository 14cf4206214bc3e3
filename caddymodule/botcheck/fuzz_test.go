package botcheck_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/botcheck"
)

// FuzzPrivacyPassAuthorization feeds the Privacy Pass parser and verifier any header: they
// never panic, a value they read gives back the same bytes once written in the canonical
// form, and nothing but the issuer's token for this challenge passes.
func FuzzPrivacyPassAuthorization(f *testing.F) {
	rfc, _ := hex.DecodeString(rfcToken)
	enc := base64.URLEncoding.EncodeToString(rfc)
	for _, s := range []string{
		`PrivateToken token="` + enc + `"`,
		`PrivateToken token=` + base64.RawURLEncoding.EncodeToString(rfc),
		`PrivateToken realm="a\"b", token="` + enc + `", max-age=10`,
		enc, `PrivateToken token="AAEC", token="AAEC"`, `PrivateToken token="\`, `Basic x`, "",
	} {
		f.Add(s)
	}
	keyDER, _ := hex.DecodeString(rfcKey)
	key, err := botcheck.ParseIssuerKey(keyDER)
	if err != nil {
		f.Fatal(err)
	}
	challenge, _ := hex.DecodeString(rfcChallenge)
	f.Fuzz(func(t *testing.T, header string) {
		raw, err := botcheck.ParseAuthorization(header)
		if err != nil {
			return
		}
		again, err := botcheck.ParseAuthorization(`PrivateToken token="` + base64.URLEncoding.EncodeToString(raw) + `"`)
		if err != nil || !bytes.Equal(again, raw) {
			t.Fatalf("%q read as %x, whose canonical form reads as %x, %v", header, raw, again, err)
		}
		tok, err := botcheck.ParseToken(raw)
		if err != nil {
			return
		}
		if key.Verify(tok, challenge) == nil && !bytes.Equal(raw, rfc) {
			t.Fatalf("%q verifies and is not the issuer's token", header)
		}
		pp := &botcheck.PrivacyPass{IssuerName: "issuer.example", Key: key, Spender: &spender{}, Now: func() time.Time { return time.Unix(0, 0) }}
		if v, err := pp.Verify(context.Background(), header, shop); err != nil || v.Pass {
			t.Fatalf("%q: verdict %+v, %v; no token of the RFC answers our challenge", header, v, err)
		}
	})
}
