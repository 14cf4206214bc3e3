// Package botchecktest is a Privacy Pass issuer for tests: a blind RSA key made in the test,
// and tokens of type 0x0002 made the way a client makes them with an issuer (blind, sign,
// finalize; RFC 9578 section 6), with circl's blind RSA. Nothing here is for production.
package botchecktest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cloudflare/circl/blindsign/blindrsa"

	"github.com/seckilledge/seckill/caddymodule/botcheck"
)

// Issuer is a test issuer with its own RSA-2048 key.
type Issuer struct {
	Name   string
	Secret *rsa.PrivateKey
	Key    *botcheck.IssuerKey
}

// NewIssuer makes an issuer named name with a fresh key.
func NewIssuer(t testing.TB, name string) *Issuer {
	t.Helper()
	sk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	key, err := botcheck.ParseIssuerKey(botcheck.EncodeIssuerKey(&sk.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return &Issuer{Name: name, Secret: sk, Key: key}
}

// TokenKey is the issuer's key as its directory publishes it (base64url, padded).
func (i *Issuer) TokenKey() string { return base64.URLEncoding.EncodeToString(i.Key.Encoded) }

// Token makes a token answering challenge, as its raw bytes: the client's blinding, the
// issuer's blind signature, the client's finalization.
func (i *Issuer) Token(t testing.TB, challenge botcheck.Challenge) []byte {
	t.Helper()
	return i.TokenFor(t, challenge.Marshal())
}

// Answer is what a client sends back for a WWW-Authenticate value naming a PrivateToken
// challenge: the Authorization value with a fresh token of this issuer for it.
func (i *Issuer) Answer(t testing.TB, wwwAuthenticate string) string {
	t.Helper()
	_, rest, ok := strings.Cut(wwwAuthenticate, `challenge="`)
	enc, _, ok2 := strings.Cut(rest, `"`)
	challenge, err := base64.URLEncoding.DecodeString(enc)
	if !ok || !ok2 || err != nil {
		t.Fatalf("no PrivateToken challenge in %q", wwwAuthenticate)
	}
	return Authorization(i.TokenFor(t, challenge))
}

// TokenFor makes a token answering the TokenChallenge of these bytes.
func (i *Issuer) TokenFor(t testing.TB, challenge []byte) []byte {
	t.Helper()
	var nonce [32]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(challenge)
	input := binary.BigEndian.AppendUint16(nil, botcheck.TokenTypeBlindRSA)
	input = append(input, nonce[:]...)
	input = append(input, digest[:]...)
	input = append(input, i.Key.ID[:]...)
	client, err := blindrsa.NewClient(blindrsa.SHA384PSSDeterministic, &i.Secret.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	prepared, err := client.Prepare(rand.Reader, input)
	if err != nil {
		t.Fatal(err)
	}
	blinded, state, err := client.Blind(rand.Reader, prepared)
	if err != nil {
		t.Fatal(err)
	}
	blindSig, err := blindrsa.NewSigner(i.Secret).BlindSign(blinded)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := client.Finalize(state, blindSig)
	if err != nil {
		t.Fatal(err)
	}
	return append(input, auth...)
}

// Authorization is the Authorization value that presents token (RFC 9577 section 2.2.1).
func Authorization(token []byte) string {
	return `PrivateToken token="` + base64.URLEncoding.EncodeToString(token) + `"`
}
