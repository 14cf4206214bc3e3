package botcheck_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/botcheck"
	"github.com/seckilledge/seckill/caddymodule/botcheck/botchecktest"
)

// RFC 9578 appendix A.2, test vector 1: an issuer key, a TokenChallenge and a token of type
// 0x0002 answering it.
const (
	rfcKey = "30820152303d06092a864886f70d01010a3030a00d300b0609608648016503040202a11a301806092a864886f70d0101" +
		"08300b0609608648016503040202a2030201300382010f003082010a0282010100cb1aed6b6a95f5b1ce013a4cfcab25" +
		"b94b2e64a23034e4250a7eab43c0df3a8c12993af12b111908d4b471bec31d4b6c9ad9cdda90612a2ee903523e6de5a2" +
		"24d6b02f09e5c374d0cfe01d8f529c500a78a2f67908fa682b5a2b430c81eaf1af72d7b5e794fc98a3139276879757ce" +
		"453b526ef9bf6ceb99979b8423b90f4461a22af37aab0cf5733f7597abe44d31c732db68a181c6cbbe607d8c0e52e065" +
		"5fd9996dc584eca0be87afbcd78a337d17b1dba9e828bbd81e291317144e7ff89f55619709b096cbb9ea474cead264c2" +
		"073fe49740c01f00e109106066983d21e5f83f086e2e823c879cd43cef700d2a352a9babd612d03cad02db134b7e225a" +
		"5f0203010001"
	rfcChallenge = "0002000e6973737565722e6578616d706c65208e7acc900e393381e8810b7c9e4a68b5163f1f880ab6688a6ffe780923" +
		"609e88000e6f726967696e2e6578616d706c65"
	rfcToken = "0002aa72019d1f951df197021ce63876fe8b0a02dc1c31a12b0a2dd1508d07827f055969f643b4cfda5196d4aa86aeb5" +
		"368834f4f06de46950ed435b3b81bd036d44ca572f8982a9ca248a3056186322d93ca147266121ddeb5632c07f1f71cd" +
		"2708bc6a21b533d07294b5e900faf5537dd3eb33cee4e08c9670d1e5358fd184b0e00c637174f5206b14c7bb0e724ebf" +
		"6b56271e5aa2ed94c051c4a433d302b23bc52460810d489fb050f9de5c868c6c1b06e3849fd087629f704cc724bc0d09" +
		"84d5c339686fcdd75f9a9cdd25f37f855f6f4c584d84f716864f546b696d620c5bd41a811498de84ff9740ba3003ba24" +
		"22d26b91eb745c084758974642a42078201543246ddb58030ea8e722376aa82484dca9610a8fb7e018e396165462e17a" +
		"03e40ea7e128c090a911ecc708066cb201833010c1ebd4e910fc8e27a1be467f78671836a508257123a45e4e0ae2180a" +
		"434bd1037713466347a8ebe46439d3da1970"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPrivacyPassVerifiesTheRFCTestVector(t *testing.T) {
	key, err := botcheck.ParseIssuerKey(unhex(t, rfcKey))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(botcheck.EncodeIssuerKey(key.Public), unhex(t, rfcKey)) {
		t.Error("EncodeIssuerKey does not give the RFC's encoding of its key")
	}
	tok, err := botcheck.ParseToken(unhex(t, rfcToken))
	if err != nil {
		t.Fatal(err)
	}
	if err := key.Verify(tok, unhex(t, rfcChallenge)); err != nil {
		t.Fatalf("the RFC's token: %v", err)
	}
	// The RFC's challenge is ours in form: its fields give back its bytes.
	raw := unhex(t, rfcChallenge)
	c := botcheck.Challenge{IssuerName: "issuer.example", RedemptionContext: raw[19:51], OriginInfo: "origin.example"}
	if !bytes.Equal(c.Marshal(), raw) {
		t.Errorf("Challenge.Marshal\n%x, want\n%x", c.Marshal(), raw)
	}
	// One bit changed anywhere in the token, and it is no longer the issuer's.
	for _, at := range []int{2, 40, 70, 97, 98, 353} {
		b := unhex(t, rfcToken)
		b[at] ^= 1
		bad, err := botcheck.ParseToken(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := key.Verify(bad, raw); err == nil {
			t.Errorf("a token changed at byte %d verifies", at)
		}
	}
}

func TestIssuerKeysInAnotherFormAreRefused(t *testing.T) {
	der := unhex(t, rfcKey)
	for name, b := range map[string][]byte{
		"empty":     nil,
		"truncated": der[:len(der)-1],
		"trailing":  append(bytes.Clone(der), 0),
		"salt 32":   bytes.Replace(bytes.Clone(der), []byte{0xa2, 0x03, 0x02, 0x01, 0x30}, []byte{0xa2, 0x03, 0x02, 0x01, 0x20}, 1),
		"rsaEncryption": bytes.Replace(bytes.Clone(der), []byte{0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a},
			[]byte{0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01}, 1),
	} {
		if _, err := botcheck.ParseIssuerKey(b); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// spender is an in-memory Spender for the pure tests (the Redis one is tested against Redis
// in botcheckcaddy).
type spender struct {
	mu    sync.Mutex
	spent map[string]time.Duration
	err   error
}

func (s *spender) Spend(_ context.Context, sale string, nonce [32]byte, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false, s.err
	}
	k := sale + "/" + hex.EncodeToString(nonce[:])
	if _, ok := s.spent[k]; ok {
		return false, nil
	}
	if s.spent == nil {
		s.spent = map[string]time.Duration{}
	}
	s.spent[k] = ttl
	return true, nil
}

var (
	issuerOnce sync.Once
	issuer     *botchecktest.Issuer
	stranger   *botchecktest.Issuer
)

// issuers are made once: an RSA-2048 key takes a while.
func issuers(t *testing.T) (*botchecktest.Issuer, *botchecktest.Issuer) {
	issuerOnce.Do(func() {
		issuer = botchecktest.NewIssuer(t, "issuer.example")
		stranger = botchecktest.NewIssuer(t, "issuer.example")
	})
	return issuer, stranger
}

func TestPrivacyPassTokensPassOnceForTheirHostAndSale(t *testing.T) {
	iss, other := issuers(t)
	now := time.Date(2026, 12, 7, 10, 30, 0, 0, time.UTC)
	sp := &spender{}
	pp := &botcheck.PrivacyPass{IssuerName: iss.Name, Key: iss.Key, Window: time.Hour, Spender: sp, Now: func() time.Time { return now }}
	check := botcheck.Check{Verifier: pp}
	ctx := context.Background()
	run := func(token string, b botcheck.Binding) (botcheck.Outcome, string) {
		o, v, err := check.Run(ctx, token, b)
		if err != nil {
			t.Fatal(err)
		}
		return o, v.Reason
	}

	good := iss.Token(t, pp.ChallengeAt(shop, now))
	if o, r := run(botchecktest.Authorization(good), shop); o != botcheck.Passed {
		t.Fatalf("a good token: %v (%s)", o, r)
	}
	if o, r := run(botchecktest.Authorization(good), shop); o != botcheck.Failed || r != "spent" {
		t.Fatalf("the same token again: %v (%s), want failed (spent)", o, r)
	}
	if ttl := sp.spent["s1/"+hex.EncodeToString(good[2:34])]; ttl != 2*time.Hour {
		t.Errorf("the nonce is kept %v, want two windows", ttl)
	}
	// The bare base64url (the JSON protocol's header), unpadded, is the same token.
	bare := iss.Token(t, pp.ChallengeAt(shop, now))
	if o, r := run(base64.RawURLEncoding.EncodeToString(bare), shop); o != botcheck.Passed {
		t.Fatalf("a bare token: %v (%s)", o, r)
	}

	otherSale := shop
	otherSale.Sale = "s2"
	otherHost := shop
	otherHost.Host = "evil.example"
	for _, tc := range []struct {
		name   string
		token  []byte
		b      botcheck.Binding
		reason string
	}{
		{"another sale's", iss.Token(t, pp.ChallengeAt(otherSale, now)), shop, "foreign"},
		{"another host's", iss.Token(t, pp.ChallengeAt(otherHost, now)), shop, "foreign"},
		{"two windows old", iss.Token(t, pp.ChallengeAt(shop, now.Add(-2*time.Hour))), shop, "foreign"},
		{"another issuer's", iss.Token(t, botcheck.Challenge{IssuerName: "other.example", RedemptionContext: pp.ChallengeAt(shop, now).RedemptionContext, OriginInfo: "shop.example"}), shop, "foreign"},
		{"another key's", other.Token(t, pp.ChallengeAt(shop, now)), shop, "unknown_key"},
	} {
		if o, r := run(botchecktest.Authorization(tc.token), tc.b); o != botcheck.Failed || r != tc.reason {
			t.Errorf("%s token: %v (%s), want failed (%s)", tc.name, o, r, tc.reason)
		}
	}
	// The last window's token is still good (a challenge fetched just before the turn).
	if o, r := run(botchecktest.Authorization(iss.Token(t, pp.ChallengeAt(shop, now.Add(-time.Hour)))), shop); o != botcheck.Passed {
		t.Errorf("last window's token: %v (%s)", o, r)
	}
	// Forged: another key's signature under our key id.
	forged := other.Token(t, pp.ChallengeAt(shop, now))
	copy(forged[66:98], iss.Key.ID[:])
	if o, r := run(botchecktest.Authorization(forged), shop); o != botcheck.Failed || r != "forged" {
		t.Errorf("forged token: %v (%s)", o, r)
	}
	for _, junk := range []string{"PrivateToken", "PrivateToken token=", "Bearer abc", "PrivateToken token=\"!!\"", "AAAA"} {
		if o, r := run(junk, shop); o != botcheck.Failed || r != "malformed" {
			t.Errorf("%q: %v (%s), want failed (malformed)", junk, o, r)
		}
	}
	// A forged token never reaches the spender: only tokens of the issuer are recorded.
	if n := len(sp.spent); n != 3 {
		t.Errorf("%d nonces spent, want 3 (the three good tokens)", n)
	}
}

func TestPrivacyPassWithoutItsSpenderIsUnavailable(t *testing.T) {
	iss, _ := issuers(t)
	sp := &spender{err: errors.New("redis down")}
	pp := &botcheck.PrivacyPass{IssuerName: iss.Name, Key: iss.Key, Spender: sp}
	tok := botchecktest.Authorization(iss.Token(t, pp.ChallengeAt(shop, time.Now())))
	if o, _, err := (botcheck.Check{Verifier: pp}).Run(context.Background(), tok, shop); o != botcheck.Unavailable || err == nil {
		t.Fatalf("outcome %v, err %v; want unavailable", o, err)
	}
	if o, _, _ := (botcheck.Check{Verifier: pp, FailOpen: true}).Run(context.Background(), tok, shop); o != botcheck.Unchecked {
		t.Fatalf("fail open: outcome %v, want unchecked", o)
	}
}

func TestPrivacyPassChallengeHeaderAsksForWhatVerifyTakes(t *testing.T) {
	iss, _ := issuers(t)
	now := time.Date(2026, 12, 7, 10, 45, 0, 0, time.UTC)
	pp := &botcheck.PrivacyPass{IssuerName: iss.Name, Key: iss.Key, Window: time.Hour, Spender: &spender{}, Now: func() time.Time { return now }}
	h := pp.WWWAuthenticate(shop)
	want := `PrivateToken challenge="` + base64.URLEncoding.EncodeToString(pp.ChallengeAt(shop, now).Marshal()) +
		`", token-key="` + iss.TokenKey() + `", max-age="4500"`
	if h != want {
		t.Fatalf("WWW-Authenticate\n%s\nwant\n%s", h, want)
	}
}

func TestAuthorizationParsingFollowsTheAuthParamGrammar(t *testing.T) {
	for in, want := range map[string]string{
		`PrivateToken token="AAEC"`:                       "000102",
		`privatetoken Token=AAEC`:                         "000102",
		`PrivateToken realm="x", token="AAE=", max-age=9`: "0001",
		`PrivateToken token = "AA\EC"`:                    "000102",
		`AAEC`:                                            "000102",
		`  AAE=  `:                                        "0001",
	} {
		got, err := botcheck.ParseAuthorization(in)
		if err != nil || hex.EncodeToString(got) != want {
			t.Errorf("%s: %x, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{``, `PrivateToken`, `PrivateToken realm=x`, `PrivateToken token="AAEC`,
		`PrivateToken token="AAEC", token="AAEC"`, `PrivateToken token=AAEC junk`, `Basic AAEC`,
		`PrivateToken token=A+/C`, `PrivateToken token=""`, `PrivateToken =AAEC`} {
		if got, err := botcheck.ParseAuthorization(in); err == nil {
			t.Errorf("%s: parsed as %x", in, got)
		}
	}
}

// BenchmarkPrivacyPassVerify is the gateway's CPU per Privacy Pass entry: parse, the RSA-2048
// PSS verification, the challenge digests (the spend in Redis is not in it).
func BenchmarkPrivacyPassVerify(b *testing.B) {
	iss := botchecktest.NewIssuer(b, "issuer.example")
	now := time.Date(2026, 12, 7, 10, 30, 0, 0, time.UTC)
	pp := &botcheck.PrivacyPass{IssuerName: iss.Name, Key: iss.Key, Spender: freshSpender{}, Now: func() time.Time { return now }}
	tok := botchecktest.Authorization(iss.Token(b, pp.ChallengeAt(shop, now)))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if v, err := pp.Verify(ctx, tok, shop); err != nil || !v.Pass {
			b.Fatal(v, err)
		}
	}
}

// freshSpender calls every nonce fresh: the benchmark measures the check alone.
type freshSpender struct{}

func (freshSpender) Spend(context.Context, string, [32]byte, time.Duration) (bool, error) {
	return true, nil
}
