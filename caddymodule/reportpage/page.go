// Package reportpage is the public page of a sale's fairness report: the signed report of
// backend/report written as HTML, in the nine languages of the gateway's pages, for
// GET /seckill/{sale}/report with Accept: text/html (docs/operator.md, "The fairness
// report"). It lives beside the gateway's modules because its texts are the pages'
// catalogues (caddymodule/internal/pagekit), and it links no Caddy, so the backend, which
// serves the report, plugs it into its publisher (backend/report's Publisher.Page). The page
// is written whole on the server and runs no script: its Content-Security-Policy allows its
// one stylesheet by hash and nothing else.
package reportpage

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"
	"strings"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	"github.com/seckilledge/seckill/contract"
	rep "github.com/seckilledge/seckill/contract/report"
)

//go:embed page.html
var pageHTML string

//go:embed page.css
var pageCSS string

// Page writes reports as HTML.
type Page struct {
	kit    *pagekit.Kit
	t      *template.Template
	style  template.CSS
	policy string
}

// New reads the catalogues and compiles the page; it fails only on a catalogue or template of
// ours that does not parse, which the package's tests exercise.
func New() (*Page, error) {
	kit, err := pagekit.Catalogues()
	if err != nil {
		return nil, err
	}
	t, err := template.New("report").Parse(pageHTML)
	if err != nil {
		return nil, err
	}
	style := pagekit.Style + "\n" + pageCSS
	sum := sha256.Sum256([]byte(style))
	return &Page{kit: kit, t: t, style: template.CSS(style),
		policy: "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
			"'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"}, nil
}

// Kit is the catalogues the page speaks (its tests ask it for the texts a language shows).
func (p *Page) Kit() *pagekit.Kit { return p.kit }

// Serve writes s as the page, in the language of the request's ?lang= or Accept-Language
// (pagekit's choice). It has backend/report's Publisher.Page signature.
func (p *Page) Serve(w http.ResponseWriter, r *http.Request, s rep.Signed) {
	var report rep.Report
	if err := json.Unmarshal(s.Report, &report); err != nil {
		// The publisher serves only what it signed, which parses: a report that does not is
		// the store's fault, never the reader's.
		unavailable(w)
		return
	}
	lang := p.kit.Lang(r, report.Sale)
	v := p.view(lang, &report, s.Signature, origin(r))
	var buf bytes.Buffer
	if err := p.t.ExecuteTemplate(&buf, "page", v); err != nil {
		unavailable(w)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Language", lang)
	h.Add("Vary", "Accept, Accept-Language")
	h.Set("Content-Security-Policy", p.policy)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

func unavailable(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "5")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(contract.Refusal{Code: contract.CodeUnavailable, Message: "the report cannot be shown now"})
}

// origin is the scheme and host the reader asked (the gateway passes the Host on, and says
// the scheme in X-Forwarded-Proto), for the verify command the page shows.
func origin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	host := r.Host
	if host == "" || strings.ContainsAny(host, " \"'<>\\") {
		host = "127.0.0.1:8080"
	}
	return scheme + "://" + host
}

// Must is New for a caller that builds the page once at start-up (the backend's New): New
// reads only files embedded in this package, which its tests parse, so an error is a bug of
// the build, not of the deployment, and it panics as template.Must does.
func Must() *Page {
	p, err := New()
	if err != nil {
		panic("reportpage: " + err.Error())
	}
	return p
}
