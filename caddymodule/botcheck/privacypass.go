package botcheck

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cloudflare/circl/blindsign/blindrsa"
)

// Privacy Pass, the publicly verifiable kind: the client fetched a token from an issuer it
// trusts (who attested it, e.g. the device's platform), blindly, so the issuer never sees
// where it is spent; we check the issuer's RSA signature on it with the issuer's public key
// (no call to anyone), that it answers the challenge of this host and sale, and spend its
// nonce once. RFC 9577 (the PrivateToken HTTP authentication scheme) and RFC 9578 section 6
// (token type 0x0002, blind RSA 2048, RSABSSA-SHA384-PSS-Deterministic).

// TokenTypeBlindRSA is the token type checked here (RFC 9578 section 8.2.2).
const TokenTypeBlindRSA = 0x0002

// Sizes of the token type 0x0002: Nk (the authenticator, an RSA-2048 signature), the token
// (type, nonce, challenge digest, key id, authenticator) and its signed part.
const (
	authenticatorLen = 256
	tokenInputLen    = 2 + 32 + 32 + 32
	tokenLen         = tokenInputLen + authenticatorLen
)

// DefaultContextWindow is PrivacyPass.Window's default.
const DefaultContextWindow = time.Hour

// Errors of a token that is not good. PrivacyPass.Verify turns them into Verdict.Reason.
var (
	ErrMalformed  = errors.New("privacy pass: malformed token")
	ErrUnknownKey = errors.New("privacy pass: token of another issuer key")
	ErrForeign    = errors.New("privacy pass: token made for another challenge")
	ErrForged     = errors.New("privacy pass: the authenticator does not verify")
)

// OIDs of the issuer key's encoding (RFC 9578 section 6.5, RFC 4055).
var (
	oidRSASSAPSS = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 10}
	oidMGF1      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 8}
	oidSHA384    = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 2}
)

type spki struct {
	Algorithm pkix.AlgorithmIdentifier
	PublicKey asn1.BitString
}

type pssParams struct {
	Hash       pkix.AlgorithmIdentifier `asn1:"explicit,tag:0"`
	MGF        pkix.AlgorithmIdentifier `asn1:"explicit,tag:1"`
	SaltLength int                      `asn1:"explicit,tag:2"`
}

// IssuerKey is an issuer's public key for tokens of type 0x0002.
type IssuerKey struct {
	// ID is the token_key_id: SHA-256 of the key's encoding.
	ID [32]byte
	// Encoded is the key as the issuer publishes it (its directory's token-key): a DER
	// SubjectPublicKeyInfo with the RSASSA-PSS algorithm (SHA-384, MGF1 SHA-384, salt 48).
	Encoded []byte
	// Public is the RSA key.
	Public   *rsa.PublicKey
	verifier blindrsa.Verifier
}

// ParseIssuerKey reads an issuer key from its encoding (DER; the issuer directory's
// token-key, base64url-decoded). Only the encoding RFC 9578 prescribes is taken, since the
// key id is the hash of it: a key given in another form would name no token.
func ParseIssuerKey(der []byte) (*IssuerKey, error) {
	var s spki
	rest, err := asn1.Unmarshal(der, &s)
	if err != nil || len(rest) != 0 {
		return nil, errors.New("privacy pass: the issuer key is not a DER SubjectPublicKeyInfo")
	}
	if !s.Algorithm.Algorithm.Equal(oidRSASSAPSS) {
		return nil, errors.New("privacy pass: the issuer key's algorithm is not id-RSASSA-PSS (RFC 9578 section 6.5)")
	}
	var p pssParams
	if rest, err := asn1.Unmarshal(s.Algorithm.Parameters.FullBytes, &p); err != nil || len(rest) != 0 {
		return nil, errors.New("privacy pass: the issuer key's RSASSA-PSS parameters are malformed")
	}
	var mgfHash pkix.AlgorithmIdentifier
	if _, err := asn1.Unmarshal(p.MGF.Parameters.FullBytes, &mgfHash); err != nil ||
		!p.Hash.Algorithm.Equal(oidSHA384) || !p.MGF.Algorithm.Equal(oidMGF1) ||
		!mgfHash.Algorithm.Equal(oidSHA384) || p.SaltLength != 48 {
		return nil, errors.New("privacy pass: the issuer key is not for SHA-384, MGF1 SHA-384, salt 48")
	}
	pub, err := x509.ParsePKCS1PublicKey(s.PublicKey.RightAlign())
	if err != nil {
		return nil, fmt.Errorf("privacy pass: the issuer key: %w", err)
	}
	if pub.N.BitLen() != 8*authenticatorLen {
		return nil, fmt.Errorf("privacy pass: the issuer key has %d bits; token type 2 is RSA-2048", pub.N.BitLen())
	}
	v, err := blindrsa.NewVerifier(blindrsa.SHA384PSSDeterministic, pub)
	if err != nil {
		return nil, err
	}
	return &IssuerKey{ID: sha256.Sum256(der), Encoded: bytes.Clone(der), Public: pub, verifier: v}, nil
}

// EncodeIssuerKey is the encoding of an RSA public key that RFC 9578 section 6.5 prescribes
// (what ParseIssuerKey reads): for a test issuer, or an issuer that hands out bare keys.
func EncodeIssuerKey(pub *rsa.PublicKey) []byte {
	sha384 := pkix.AlgorithmIdentifier{Algorithm: oidSHA384}
	hashDER, _ := asn1.Marshal(sha384)
	params, _ := asn1.Marshal(pssParams{
		Hash:       sha384,
		MGF:        pkix.AlgorithmIdentifier{Algorithm: oidMGF1, Parameters: asn1.RawValue{FullBytes: hashDER}},
		SaltLength: 48,
	})
	key := x509.MarshalPKCS1PublicKey(pub)
	der, _ := asn1.Marshal(spki{
		Algorithm: pkix.AlgorithmIdentifier{Algorithm: oidRSASSAPSS, Parameters: asn1.RawValue{FullBytes: params}},
		PublicKey: asn1.BitString{Bytes: key, BitLength: 8 * len(key)},
	})
	return der
}

// Token is a token of type 0x0002 (RFC 9577 section 2.2).
type Token struct {
	Nonce           [32]byte
	ChallengeDigest [32]byte
	KeyID           [32]byte
	Authenticator   []byte
	// input is the signed part: type, nonce, challenge digest, key id.
	input []byte
}

// ParseToken reads a token's bytes. Only type 0x0002 is known; any other is malformed here.
func ParseToken(b []byte) (Token, error) {
	if len(b) != tokenLen || binary.BigEndian.Uint16(b) != TokenTypeBlindRSA {
		return Token{}, ErrMalformed
	}
	var t Token
	copy(t.Nonce[:], b[2:34])
	copy(t.ChallengeDigest[:], b[34:66])
	copy(t.KeyID[:], b[66:98])
	t.Authenticator = bytes.Clone(b[tokenInputLen:])
	t.input = bytes.Clone(b[:tokenInputLen])
	return t, nil
}

// Verify checks that the token is the issuer's (its key id and authenticator) and answers
// challenge (the TokenChallenge's bytes, Challenge.Marshal). It does not spend it.
func (k *IssuerKey) Verify(t Token, challenge []byte) error {
	if t.KeyID != k.ID {
		return ErrUnknownKey
	}
	if t.ChallengeDigest != sha256.Sum256(challenge) {
		return ErrForeign
	}
	if k.verifier.Verify(t.input, t.Authenticator) != nil {
		return ErrForged
	}
	return nil
}

// Challenge is a TokenChallenge of type 0x0002 (RFC 9577 section 2.1).
type Challenge struct {
	// IssuerName is the issuer's server name ("issuer.example").
	IssuerName string
	// RedemptionContext is empty or 32 bytes.
	RedemptionContext []byte
	// OriginInfo is the origin names the token may be spent at, comma-separated, or empty.
	OriginInfo string
}

// Marshal is the challenge's bytes, whose SHA-256 a token answering it carries.
func (c Challenge) Marshal() []byte {
	b := make([]byte, 0, 2+2+len(c.IssuerName)+1+len(c.RedemptionContext)+2+len(c.OriginInfo))
	b = binary.BigEndian.AppendUint16(b, TokenTypeBlindRSA)
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.IssuerName)))
	b = append(b, c.IssuerName...)
	b = append(b, byte(len(c.RedemptionContext)))
	b = append(b, c.RedemptionContext...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.OriginInfo)))
	return append(b, c.OriginInfo...)
}

// Spender spends a token's nonce once across every gateway (Redis SET NX in the glue).
// fresh is false when it was spent before; an error means it could not be told.
type Spender interface {
	Spend(ctx context.Context, sale string, nonce [32]byte, ttl time.Duration) (fresh bool, err error)
}

// PrivacyPass checks Privacy Pass tokens of one issuer. A token answers a challenge this
// gateway makes: the issuer's name, this host as the only origin (a token fetched for
// another site is not spent here), and a redemption context derived from the host, the sale
// and the time window (a token fetched for another sale, or more than one window ago, is
// foreign). Within that, each token is spent once.
type PrivacyPass struct {
	// IssuerName is the issuer's server name, as its challenge names it.
	IssuerName string
	// Key is the issuer's public key.
	Key *IssuerKey
	// Window is how long a challenge's redemption context lasts; a token is accepted in
	// its window and the next. It bounds how far ahead tokens can be fetched and how long a
	// spent nonce is kept. Default DefaultContextWindow.
	Window time.Duration
	// Spender spends the nonces.
	Spender Spender
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

func (p *PrivacyPass) window() time.Duration {
	if p.Window <= 0 {
		return DefaultContextWindow
	}
	return p.Window
}

func (p *PrivacyPass) now() time.Time {
	if p.Now == nil {
		return time.Now()
	}
	return p.Now()
}

// ChallengeAt is the challenge of b's host and sale in the window of t.
func (p *PrivacyPass) ChallengeAt(b Binding, t time.Time) Challenge {
	return p.challengeIn(b, t.UnixNano()/int64(p.window()))
}

func (p *PrivacyPass) challengeIn(b Binding, window int64) Challenge {
	h := sha256.New()
	h.Write([]byte("seckill privacy pass redemption context v1\x00"))
	h.Write([]byte(strings.ToLower(b.Host)))
	h.Write([]byte{0})
	h.Write([]byte(b.Sale))
	h.Write([]byte{0})
	_ = binary.Write(h, binary.BigEndian, window)
	return Challenge{IssuerName: p.IssuerName, RedemptionContext: h.Sum(nil), OriginInfo: strings.ToLower(b.Host)}
}

// WWWAuthenticate is the WWW-Authenticate value that asks for a token now (RFC 9577
// section 2.1.1): the challenge, the issuer's key and how many seconds it stays accepted.
func (p *PrivacyPass) WWWAuthenticate(b Binding) string {
	now := p.now()
	w := p.window()
	left := w - time.Duration(now.UnixNano()%int64(w)) + w
	return `PrivateToken challenge="` + base64.URLEncoding.EncodeToString(p.ChallengeAt(b, now).Marshal()) +
		`", token-key="` + base64.URLEncoding.EncodeToString(p.Key.Encoded) +
		`", max-age="` + strconv.Itoa(int(left/time.Second)) + `"`
}

// Verify checks a token (an Authorization value "PrivateToken token=...", or the token's
// base64url alone) for b, and spends it.
func (p *PrivacyPass) Verify(ctx context.Context, token string, b Binding) (Verdict, error) {
	raw, err := ParseAuthorization(token)
	if err != nil {
		return Verdict{Reason: "malformed"}, nil
	}
	t, err := ParseToken(raw)
	if err != nil {
		return Verdict{Reason: "malformed"}, nil
	}
	w := p.now().UnixNano() / int64(p.window())
	err = p.Key.Verify(t, p.challengeIn(b, w).Marshal())
	if errors.Is(err, ErrForeign) {
		err = p.Key.Verify(t, p.challengeIn(b, w-1).Marshal())
	}
	switch {
	case errors.Is(err, ErrUnknownKey):
		return Verdict{Reason: "unknown_key"}, nil
	case errors.Is(err, ErrForeign):
		return Verdict{Reason: "foreign"}, nil
	case err != nil:
		return Verdict{Reason: "forged"}, nil
	}
	fresh, err := p.Spender.Spend(ctx, b.Sale, t.Nonce, 2*p.window())
	if err != nil {
		return Verdict{}, fmt.Errorf("privacy pass: spending the token: %w", err)
	}
	if !fresh {
		return Verdict{Reason: "spent"}, nil
	}
	return Verdict{Pass: true, Score: 1}, nil
}

// ParseAuthorization reads the token out of an Authorization value of the PrivateToken
// scheme (RFC 9577 section 2.2.1: `PrivateToken token="<base64url>"`, other parameters
// ignored), or out of the token's base64url alone (the JSON protocol's header and the page's
// form may carry either). Padding is optional.
func ParseAuthorization(v string) ([]byte, error) {
	v = strings.TrimSpace(v)
	scheme, params, hasParams := v, "", false
	if i := strings.IndexAny(v, " \t"); i >= 0 {
		scheme, params, hasParams = v[:i], v[i+1:], true
	}
	var token string
	switch {
	case strings.EqualFold(scheme, "PrivateToken"):
		if !hasParams {
			return nil, ErrMalformed
		}
		var err error
		if token, err = tokenParam(params); err != nil {
			return nil, err
		}
	case !strings.ContainsAny(v, " \t,\""):
		token = v
	default:
		return nil, ErrMalformed
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(strings.TrimRight(token, "="))
	if err != nil || len(b) == 0 {
		return nil, ErrMalformed
	}
	return b, nil
}

// tokenParam finds the one "token" parameter in an auth-param list (RFC 9110 section 11.2):
// name BWS "=" BWS ( token / quoted-string ), separated by commas.
func tokenParam(s string) (string, error) {
	var token string
	found := false
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			break
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return "", ErrMalformed
		}
		name := strings.TrimRight(s[:eq], " \t")
		if name == "" || strings.ContainsAny(name, " \t,\"") {
			return "", ErrMalformed
		}
		s = strings.TrimLeft(s[eq+1:], " \t")
		var value string
		if strings.HasPrefix(s, `"`) {
			var ok bool
			if value, s, ok = quoted(s); !ok {
				return "", ErrMalformed
			}
		} else {
			end := strings.IndexAny(s, " \t,")
			if end < 0 {
				end = len(s)
			}
			value, s = s[:end], s[end:]
			if value == "" {
				return "", ErrMalformed
			}
		}
		if strings.EqualFold(name, "token") {
			if found {
				return "", ErrMalformed
			}
			token, found = value, true
		}
		s = strings.TrimLeft(s, " \t")
		if s != "" && s[0] != ',' {
			return "", ErrMalformed
		}
	}
	if !found {
		return "", ErrMalformed
	}
	return token, nil
}

// quoted reads the quoted-string at the start of s (RFC 9110 section 5.6.4), returning its
// value and what follows.
func quoted(s string) (value, rest string, ok bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), s[i+1:], true
		case '\\':
			if i+1 == len(s) {
				return "", "", false
			}
			i++
			b.WriteByte(s[i])
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}

var (
	_ Verifier   = (*PrivacyPass)(nil)
	_ Challenger = (*PrivacyPass)(nil)
)
