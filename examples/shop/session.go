package shop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/seckilledge/seckill/contract"
)

// CookieName is the session cookie on a plain-http shop (make run's http://localhost:8088);
// the gateway's seckill_identity reads the same name.
const CookieName = "seckill_session"

// SecureCookieName is the session cookie of a shop whose public URL is https. The __Host-
// prefix makes the browser refuse the cookie unless it is Secure, has Path=/ and no Domain, so
// neither a sibling subdomain nor a plain-http page can set or shadow the session.
// Browsers honour the prefix only on secure origins, hence the plain name on http. A gateway in
// front of such a shop reads this name (seckill_identity's cookie).
const SecureCookieName = "__Host-" + CookieName

// Audience is the session's aud: the flash-sale edge.
const Audience = "seckill"

// ErrSession: the session token is missing, malformed, forged, foreign or expired.
var ErrSession = errors.New("shop: no valid session")

// Sessions signs and checks the shop's session tokens: ES256 JWTs whose sub is the user.
type Sessions struct {
	key    *ecdsa.PrivateKey
	kid    string
	issuer string
	ttl    time.Duration
	signer jose.Signer
}

// NewSessions signs with key (P-256) as issuer; tokens last ttl.
func NewSessions(key *ecdsa.PrivateKey, issuer string, ttl time.Duration) (*Sessions, error) {
	if key == nil || key.Curve != elliptic.P256() {
		return nil, errors.New("shop: the session key must be an EC P-256 key (ES256)")
	}
	// The key id is the key's RFC 7638 thumbprint: stable for a key, different for the next one.
	tp, err := (&jose.JSONWebKey{Key: &key.PublicKey}).Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	kid := base64.RawURLEncoding.EncodeToString(tp)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, err
	}
	return &Sessions{key: key, kid: kid, issuer: issuer, ttl: ttl, signer: signer}, nil
}

// KeyID is the kid of the signing key.
func (s *Sessions) KeyID() string { return s.kid }

// Issue returns a session token for user, issued at now.
func (s *Sessions) Issue(user string, now time.Time) (string, error) {
	if !contract.ValidID(user) {
		return "", fmt.Errorf("shop: user %q: want 1-64 of [A-Za-z0-9_-]", user)
	}
	return jwt.Signed(s.signer).Claims(jwt.Claims{
		Issuer:   s.issuer,
		Subject:  user,
		Audience: jwt.Audience{Audience},
		IssuedAt: jwt.NewNumericDate(now),
		Expiry:   jwt.NewNumericDate(now.Add(s.ttl)),
	}).Serialize()
}

// User returns the user of a session token the shop issued, valid at now.
func (s *Sessions) User(token string, now time.Time) (string, error) {
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return "", ErrSession
	}
	var c jwt.Claims
	if err := tok.Claims(&s.key.PublicKey, &c); err != nil {
		return "", ErrSession
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: s.issuer, AnyAudience: jwt.Audience{Audience}, Time: now}, 0); err != nil {
		return "", ErrSession
	}
	if !contract.ValidID(c.Subject) {
		return "", ErrSession
	}
	return c.Subject, nil
}

// JWKS is the public key set the shop publishes at /.well-known/jwks.json. During a key
// rotation a real shop lists the old key next to the new one until the last session signed
// with the old one has expired.
func (s *Sessions) JWKS() jose.JSONWebKeySet {
	return jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &s.key.PublicKey, KeyID: s.kid, Algorithm: string(jose.ES256), Use: "sig"}}}
}

// LoadOrCreateKey reads a P-256 private key (PEM: PKCS #8 or SEC 1) from path; when the file
// does not exist it makes a key and writes it there (mode 600). An empty path makes a key in
// memory only.
func LoadOrCreateKey(path string) (*ecdsa.PrivateKey, error) {
	if path != "" {
		b, err := os.ReadFile(path)
		if err == nil {
			return parseKey(b)
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return key, nil
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		f.Close()
		return nil, err
	}
	return key, f.Close()
}

func parseKey(b []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("shop: the key file holds no PEM block")
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("shop: key file: %w", err)
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("shop: the key file must hold an EC P-256 key (ES256)")
	}
	return ec, nil
}
