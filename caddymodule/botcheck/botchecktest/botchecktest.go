// Package botchecktest is what the bot challenge's tests stand on: a Privacy Pass issuer (a
// blind RSA key made in the test, and tokens of type 0x0002 made the way a client makes them
// with an issuer: blind, sign, finalize; RFC 9578 section 6, with circl's blind RSA) and a
// stand-in siteverify server. Nothing here is for production.
package botchecktest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cloudflare/circl/blindsign/blindrsa"

	"github.com/seckilledge/seckill/caddymodule/botcheck"
)

// WidgetScript is a stand-in for Turnstile's widget script, for a test to serve as the
// provider's widget_script_url: it fills the token field inside each widget element with
// "human", as Turnstile's does once solved, 300 ms after the page loads. Nothing reaches the
// internet.
const WidgetScript = `for (const el of document.querySelectorAll(".cf-turnstile")) {
  const f = document.createElement("input");
  f.type = "hidden"; f.name = "cf-turnstile-response"; f.value = "human";
  setTimeout(() => el.appendChild(f), 300);
}`

// WidgetServer serves WidgetScript (at any path) until the test ends.
func WidgetServer(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write([]byte(WidgetScript))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Turnstile is a Turnstile challenge_provider for a page's test, with nothing reaching the
// internet: a stand-in siteverify that knows the token "human" (action "enter", hostname
// 127.0.0.1) and a stand-in widget script (WidgetServer). Provider is the handler's
// challenge_provider, naming both.
type Turnstile struct {
	Siteverify *Siteverify
	Script     *httptest.Server
	Provider   map[string]any
}

// NewTurnstile starts the stand-ins, until the test ends.
func NewTurnstile(t testing.TB) Turnstile {
	t.Helper()
	sv := NewSiteverify(t, "test-secret", map[string]Answer{
		"human": {Body: `{"success":true,"hostname":"127.0.0.1","action":"enter"}`},
	})
	script := WidgetServer(t)
	return Turnstile{Siteverify: sv, Script: script, Provider: map[string]any{
		"name": "turnstile", "site_key": "site-key-1", "secret": "test-secret", "verify_url": sv.URL, "action": "enter",
		"widget_script_url": script.URL + "/turnstile.js"}}
}

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

// Answer is how a stand-in siteverify server answers one token.
type Answer struct {
	// Status is the HTTP status (0: 200).
	Status int
	// Body is the JSON answer.
	Body string
	// Hang never answers: the client's deadline must end the call.
	Hang bool
}

// Siteverify is a stand-in siteverify server: nothing reaches the internet. A token it was
// given an Answer for gets it; any other `{"success":false,"error-codes":["invalid-input-response"]}`,
// and a request with another secret `invalid-input-secret`. It counts the calls and keeps
// the last form.
type Siteverify struct {
	*httptest.Server
	Calls atomic.Int64

	mu   sync.Mutex
	last url.Values
}

// NewSiteverify starts a stand-in for the site's secret, closed when the test ends.
func NewSiteverify(t testing.TB, secret string, answers map[string]Answer) *Siteverify {
	t.Helper()
	s := &Siteverify{}
	release := make(chan struct{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Calls.Add(1)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			http.Error(w, "not a form post", http.StatusBadRequest)
			return
		}
		_ = r.ParseForm()
		s.mu.Lock()
		s.last = r.PostForm
		s.mu.Unlock()
		if r.PostFormValue("secret") != secret {
			fmt.Fprint(w, `{"success":false,"error-codes":["invalid-input-secret"]}`)
			return
		}
		a, ok := answers[r.PostFormValue("response")]
		switch {
		case !ok:
			fmt.Fprint(w, `{"success":false,"error-codes":["invalid-input-response"]}`)
		case a.Hang:
			select {
			case <-r.Context().Done():
			case <-release:
			}
		default:
			if a.Status != 0 {
				w.WriteHeader(a.Status)
			}
			fmt.Fprint(w, a.Body)
		}
	}))
	t.Cleanup(func() { close(release); s.Close() })
	return s
}

// Last is the form of the last request ("" values before any).
func (s *Siteverify) Last() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}
