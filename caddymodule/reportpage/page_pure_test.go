package reportpage

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	rep "github.com/seckilledge/seckill/contract/report"
)

// sampleEvidence is a small room sale: two pre-queued places and one arrival; the first
// admitted takes his token 40 ms after his turn, the second after 1.8 s; both buy, and a third
// order is cancelled unpaid.
const sampleEvidence = `q:0:AAAAAAAAAAAAAAAAAAAAAA
q:0:BBBBBBBBBBBBBBBBBBBBBB
q:1:CCCCCCCCCCCCCCCCCCCCCC
a:1800000000000:2:AAAAAAAAAAAAAAAAAAAAAA
t:1800000000040:1800000120000:AAAAAAAAAAAAAAAAAAAAAA
a:1800000000001:2:BBBBBBBBBBBBBBBBBBBBBB
t:1800000001800:1800000120001:BBBBBBBBBBBBBBBBBBBBBB
o:1800000000050:paid:1:AAAAAAAAAAAAAAAAAAAAAA:
o:1800000002500:created:1:BBBBBBBBBBBBBBBBBBBBBB:
o:1800000003000:cancelled:1:CCCCCCCCCCCCCCCCCCCCCC:unpaid
`

// sampleReport is a report signed over sampleEvidence as the backend builds one, and its key.
func sampleReport(t testing.TB, demo bool) (rep.Signed, rep.Key) {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	r := &rep.Report{Version: rep.Version, Sale: "drop-7", Mode: "room", BuiltAt: "2027-01-15T09:00:30.000Z",
		Timeline: rep.Timeline{PrequeueFrom: "2027-01-15T08:30:00.000Z", Starts: "2027-01-15T09:00:00.000Z", Ends: "2027-01-15T09:00:05.000Z"},
		Figures:  rep.Figures{Units: 2},
		Checks: rep.Checks{Permutation: rep.Result{Result: rep.Pass, Detail: "the seed opens the commitment"},
			Beacon: rep.Result{Result: rep.NotApplicable, Detail: "a sale without a draw names no beacon"}},
		Evidence: rep.Digest([]byte(sampleEvidence)), DemoKey: demo, Flagged: &rep.Flagged{Count: 1}}
	rep.Compute([]byte(sampleEvidence), 2).Apply(r)
	s, err := rep.Sign(r, priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, rep.Key{Kid: rep.KidOf(priv.Public().(ed25519.PublicKey))}
}

func serve(t *testing.T, p *Page, s rep.Signed, accept string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "https://shop.example/seckill/drop-7/report", nil)
	req.Header.Set("Accept-Language", accept)
	req.Header.Set("X-Forwarded-Proto", "https")
	w := httptest.NewRecorder()
	p.Serve(w, req, s)
	return w
}

// The page says what the signed report says: its figures, its checks' results, every speed
// class, its moments, the key that signed it and the command that checks it, in the reader's
// language, with a policy that runs no script.
func TestTheReportPageShowsTheSignedFiguresKeyAndVerifyCommand(t *testing.T) {
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	s, key := sampleReport(t, false)
	w := serve(t, p, s, "de-DE,de;q=0.9")
	body := w.Body.String()
	if w.Code != 200 || w.Header().Get("Content-Language") != "de" || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	csp := w.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") || !strings.Contains(csp, "style-src 'sha256-") {
		t.Errorf("policy %q", csp)
	}
	// The policy names the page's one stylesheet by its hash (a stale hash leaves the page
	// unstyled: the phone's layout would not hold).
	open, end := strings.Index(body, "<style>"), strings.Index(body, "</style>")
	sum := sha256.Sum256([]byte(body[open+len("<style>") : end]))
	if h := "style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, h) {
		t.Errorf("policy %q does not name the page's stylesheet (%s)", csp, h)
	}
	kit := p.Kit()
	for _, want := range []string{
		`<html lang="de" dir="ltr">`,
		kit.Message("de", "report.figure.admitted"),
		kit.Message("de", "report.result.pass"),
		kit.Message("de", "report.result.not_applicable"),
		kit.Message("de", "report.class.under_250ms"),
		kit.Message("de", "report.class.1s_to_5s"),
		kit.Message("de", "report.figure.flagged"),
		"2 Stück wurden gekauft.",
		"3 Personen haben sich angestellt.",
		"50\u00a0%", // each of the two classes that bought holds half of the units
		"<code>cancelled:unpaid</code>",
		`<dd id="sk-kid">` + key.Kid + `</dd>`,
		"seckill-bench verify-report -url https://shop.example -sale drop-7",
		`datetime="2027-01-15T09:00:00.000Z"`,
		`href="/seckill/drop-7/report?format=json"`,
		`href="/seckill/drop-7/report/evidence"`,
		`href="/.well-known/seckill-report-keys"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the German page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script") || strings.Contains(body, kit.Message("de", "report.demo_key")) {
		t.Errorf("the page has a script or the demo key's warning:\n%s", body)
	}
	if w := serve(t, p, func() rep.Signed { s, _ := sampleReport(t, true); return s }(), "ar"); !strings.Contains(w.Body.String(), kit.Message("ar", "report.demo_key")) ||
		!strings.Contains(w.Body.String(), `dir="rtl"`) {
		t.Errorf("the Arabic page of a demo-signed report lacks the warning or the direction")
	}
}

// A report the page cannot read is the store's fault: 503 unavailable with its JSON code,
// never a broken page or another 5xx.
func TestAnUnreadableReportIsUnavailableNotABrokenPage(t *testing.T) {
	p := Must()
	w := serve(t, p, rep.Signed{Report: json.RawMessage(`[1,2]`)}, "en")
	var got struct{ Code string }
	if w.Code != http.StatusServiceUnavailable || json.Unmarshal(w.Body.Bytes(), &got) != nil || got.Code != "unavailable" {
		t.Errorf("%d %s", w.Code, w.Body)
	}
}
