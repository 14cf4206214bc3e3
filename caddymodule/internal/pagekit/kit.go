// Package pagekit is what the pages the gateway serves itself (the waiting room's and the
// draw's) share: the operator's html/template files, checked at provision (a bad
// template fails there, with its file and line, never at request time); message catalogues
// as plain JSON files (nine languages built in, Arabic written right to left, a shop's own
// files laid over them); the language chosen from the page's ?lang= or Accept-Language, or
// fixed per site or per sale; and the Content-Security-Policy that keeps a shop's template from running any script
// but ours. It imports no Caddy: the handlers' Caddyfile glue fills a Config.
package pagekit

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"net/http"
	"os"
	"sort"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/seckilledge/seckill/caddymodule/internal/pagecsp"
)

// Config is the page options of a handler (seckill_room's and seckill_draw's `page` block).
type Config struct {
	// An html/template file for the page instead of ours (docs/room.md, "The shop's own
	// page", lists its fields). It must write {{.Script}} once and may call our parts
	// ({{template "style" .}}, {{template "main" .}}); it may hold no script of its own
	// (no <script>, no on* attribute, no javascript: URL): provision refuses it.
	Template string `json:"template,omitempty"`
	// Message catalogues of the shop: files named <language>.json (a BCP 47 tag: de.json,
	// zh-Hans.json, fr.json), or directories of such files. Their keys override ours for that
	// language; a new language gets English for the keys it lacks.
	Messages []string `json:"messages,omitempty"`
	// The page's language for every buyer (a BCP 47 tag), instead of the best match of the
	// page's ?lang= or the browser's Accept-Language among the catalogues. Default: ?lang=,
	// then Accept-Language, decides.
	Lang string `json:"lang,omitempty"`
	// Per sale (by sale id): a template and a language of its own.
	Sales map[string]SaleConfig `json:"sales,omitempty"`
	// Image sources the page may load (the CSP's img-src, e.g. "'self'" or
	// "https://cdn.shop.example" for the shop's logo). Default: none.
	ImageSources []string `json:"image_sources,omitempty"`
	// Widget is the bot challenge's widget, from the handler's challenge_provider (not a page
	// option of its own): nil for none.
	Widget *Widget `json:"-"`
}

// SaleConfig is one sale's own page options.
type SaleConfig struct {
	Template string `json:"template,omitempty"`
	Lang     string `json:"lang,omitempty"`
}

// Kind is one page of ours: the room's or the draw's.
type Kind struct {
	Name string // "room" or "draw": the first part of its message keys
	// Template is our page's own part (html/template): it defines "main", which the kit's
	// document (kit.html: "page", with "style" and the title <Name>.title) and a shop's
	// template call.
	Template string
	// Script is the page's one module script (the JavaScript client then the page's code).
	Script string
}

// Kit serves one handler's page.
type Kit struct {
	kind       Kind
	cats       map[string]map[string]entry // language -> key -> text or plural forms
	tags       []language.Tag
	matcher    language.Matcher
	site       *compiled
	sales      map[string]*compiled
	siteLang   string
	saleLang   map[string]string
	scriptHash string
	imgSrc     string
	prefix     string // the edge's routes on this site (Mount)
	orders     string
	widget     *compiledWidget
}

type compiled struct {
	t    *template.Template
	name string // the template to execute
}

// Data is what a template sees.
type Data struct {
	Kind     string   // "room" or "draw"
	Sale     string   // the sale id
	Lang     string   // the page's language (BCP 47), for <html lang>
	Dir      string   // its writing direction, "ltr" or "rtl", for <html dir>
	Variants []string // a draw's sizes
	// Prefix and OrdersPrefix are where the edge's routes are on this site (the handler's
	// prefix, the app's orders_prefix): the page's client calls them, a template may link them.
	Prefix, OrdersPrefix string
	// Script is our noscript explanation, the page's data and its one module script: write
	// it once, at the end of <body>.
	Script template.HTML
	// Style is our stylesheet (for a <style> element: {{template "style" .}} writes it).
	Style template.CSS
	msgs  map[string]entry
	p     *message.Printer
}

// T is the message key in the page's language; args are name, value pairs for its {name}
// placeholders (numbers formatted for the language). A missing key is an error, which the
// check at provision finds.
func (d Data) T(key string, args ...any) (string, error) {
	m, ok := d.msgs[key]
	if !ok {
		return "", fmt.Errorf("no message %q", key)
	}
	s := m.other()
	if m.count != "" {
		n, found := 0, false
		for i := 0; i+1 < len(args); i += 2 {
			if name, _ := args[i].(string); name == m.count {
				switch v := args[i+1].(type) {
				case int:
					n, found = v, true
				case int64:
					n, found = int(v), true
				case float64:
					n, found = int(v), v == float64(int(v))
				}
			}
		}
		if found {
			s = m.form(language.Make(d.Lang), n)
		}
	}
	for i := 0; i+1 < len(args); i += 2 {
		name, _ := args[i].(string)
		var v string
		switch n := args[i+1].(type) {
		case int, int64, float64:
			v = d.p.Sprint(n)
		default:
			v = fmt.Sprint(n)
		}
		s = strings.ReplaceAll(s, "{"+name+"}", v)
	}
	return s, nil
}

// Number is n formatted for the page's language (1,234.5; 1.234,5; ...).
func (d Data) Number(n any) string { return d.p.Sprint(n) }

// Compile is New for a handler's optional page block: nil is our page with the defaults.
func Compile(kind Kind, cfg *Config) (*Kit, error) {
	if cfg == nil {
		return New(kind, Config{})
	}
	return New(kind, *cfg)
}

// New checks and compiles a handler's page options: every template parsed and executed once
// per language (so a field or message it names that does not exist fails here), none with a
// script of its own; every catalogue read. Errors name the file and the line.
func New(kind Kind, cfg Config) (*Kit, error) {
	k := &Kit{kind: kind, sales: map[string]*compiled{}, saleLang: map[string]string{}, prefix: "/seckill", orders: "/orders"}
	if err := k.loadCatalogues(cfg.Messages); err != nil {
		return nil, err
	}
	var err error
	if k.widget, err = compileWidget(cfg.Widget); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(kind.Script))
	k.scriptHash = "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	k.imgSrc = "'none'"
	if len(cfg.ImageSources) > 0 {
		for _, s := range cfg.ImageSources {
			if !validSource(s) {
				return nil, fmt.Errorf("page: image_sources: %q is not a CSP source", s)
			}
		}
		k.imgSrc = strings.Join(cfg.ImageSources, " ")
	}
	if k.siteLang, err = k.checkLang(cfg.Lang); err != nil {
		return nil, err
	}
	if k.site, err = k.compile(cfg.Template); err != nil {
		return nil, err
	}
	for sale, sc := range cfg.Sales {
		c := k.site
		if sc.Template != "" {
			if c, err = k.compile(sc.Template); err != nil {
				return nil, err
			}
		}
		k.sales[sale] = c
		if sc.Lang != "" {
			if k.saleLang[sale], err = k.checkLang(sc.Lang); err != nil {
				return nil, fmt.Errorf("page: sale %s: %w", sale, err)
			}
		}
	}
	return k, nil
}

// checkLang is tag as one of the catalogues' languages ("" stays "").
func (k *Kit) checkLang(tag string) (string, error) {
	if tag == "" {
		return "", nil
	}
	t, err := language.Parse(tag)
	if err != nil {
		return "", fmt.Errorf("page: lang %q: %v", tag, err)
	}
	if _, ok := k.cats[t.String()]; !ok {
		return "", fmt.Errorf("page: lang %q: no message catalogue (have %s)", tag, strings.Join(k.Languages(), ", "))
	}
	return t.String(), nil
}

// Languages are the catalogues' languages, sorted.
func (k *Kit) Languages() []string {
	out := make([]string, 0, len(k.cats))
	for l := range k.cats {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// compile parses the kit's document and our page's part, then the shop's file over them (so
// it may call our parts), and checks it by running it once per language.
func (k *Kit) compile(file string) (*compiled, error) {
	base, err := template.New("page").Parse(Document)
	if err != nil {
		return nil, fmt.Errorf("page: the kit's document: %w", err)
	}
	if _, err := base.New(k.kind.Name).Parse(k.kind.Template); err != nil {
		return nil, fmt.Errorf("page: our %s template: %w", k.kind.Name, err)
	}
	c := &compiled{t: base, name: "page"}
	if file != "" {
		src, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("page: template: %w", err)
		}
		if err := refuseScript(file, string(src)); err != nil {
			return nil, err
		}
		t, err := base.New(file).Parse(string(src))
		if err != nil {
			return nil, fmt.Errorf("page: %w", err) // "template: <file>:<line>: ..."
		}
		c = &compiled{t: t, name: file}
	}
	for _, lang := range k.Languages() {
		var buf bytes.Buffer
		d := k.data(lang, "sale-1", []string{"S", "M"})
		if err := c.t.ExecuteTemplate(&buf, c.name, d); err != nil {
			return nil, fmt.Errorf("page: %w", err) // "template: <file>:<line>:<col>: executing ..."
		}
		if n := strings.Count(buf.String(), string(d.Script)); n != 1 {
			return nil, fmt.Errorf("page: template %s writes {{.Script}} %d times, want once", nameOf(file), n)
		}
		if err := refuseScript(nameOf(file)+" (as written for "+lang+")", strings.Replace(buf.String(), string(d.Script), "", 1)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func nameOf(file string) string {
	if file == "" {
		return "(ours)"
	}
	return file
}

// data is what a template sees for one page.
func (k *Kit) data(lang, sale string, variants []string) Data {
	d := Data{Kind: k.kind.Name, Sale: sale, Lang: lang, Dir: Direction(lang), Variants: variants, msgs: k.cats[lang],
		Style: template.CSS(Style), Prefix: k.prefix, OrdersPrefix: k.orders, p: message.NewPrinter(numbering(lang))}
	msgs, _ := json.Marshal(k.cats[lang])
	var b strings.Builder
	if k.widget != nil {
		// The widget and its label, in the page's language, then the provider's script.
		b.WriteString(k.widget.markup)
		b.WriteString(html.EscapeString(k.cats[lang]["common.challenge"].other()))
		b.WriteString(k.widget.after)
	}
	b.WriteString("<noscript><p class=\"sk-noscript\">")
	b.WriteString(html.EscapeString(k.cats[lang]["common.noscript"].other()))
	b.WriteString("</p></noscript>\n<div id=\"seckill-page\" hidden data-kind=\"")
	b.WriteString(html.EscapeString(k.kind.Name))
	b.WriteString("\" data-sale=\"")
	b.WriteString(html.EscapeString(sale))
	b.WriteString("\" data-lang=\"")
	b.WriteString(html.EscapeString(lang))
	b.WriteString("\" data-prefix=\"")
	b.WriteString(html.EscapeString(k.prefix))
	b.WriteString("\" data-orders=\"")
	b.WriteString(html.EscapeString(k.orders))
	b.WriteString("\" data-variants=\"")
	b.WriteString(html.EscapeString(strings.Join(variants, ",")))
	b.WriteString("\" data-messages=\"")
	b.WriteString(html.EscapeString(string(msgs)))
	b.WriteString("\"></div>\n<script type=\"module\">")
	b.WriteString(k.kind.Script)
	b.WriteString("</script>")
	d.Script = template.HTML(b.String()) //nolint:gosec // our script, fixed at build; the values are escaped above
	return d
}

// Mount tells the kit where the edge's routes are on the site (the handler's prefix, the app's
// orders_prefix): the page's client calls them there. Compile sets the defaults, /seckill and
// /orders.
func (k *Kit) Mount(prefix, orders string) { k.prefix, k.orders = prefix, orders }

// Lang is the page's language for a request: the sale's, the site's, else the best match
// among the catalogues of the page's ?lang= (a shop's storefront links to the page in the
// language its buyer picked there), else of Accept-Language (English when nothing matches).
// A ?lang= no catalogue is near (?lang=nl) leaves the choice to Accept-Language.
func (k *Kit) Lang(r *http.Request, sale string) string {
	if l := k.saleLang[sale]; l != "" {
		return l
	}
	if k.siteLang != "" {
		return k.siteLang
	}
	if q := r.URL.Query().Get("lang"); q != "" && len(q) <= 64 {
		if t, err := language.Parse(q); err == nil {
			if _, i, c := k.matcher.Match(t); c != language.No {
				return k.tags[i].String()
			}
		}
	}
	tags, _, _ := language.ParseAcceptLanguage(r.Header.Get("Accept-Language"))
	_, i, _ := k.matcher.Match(tags...)
	return k.tags[i].String()
}

// rtlScripts are the scripts written right to left (ISO 15924) that a language's likely
// script can be.
var rtlScripts = map[string]bool{"Adlm": true, "Arab": true, "Hebr": true, "Mand": true, "Nkoo": true,
	"Rohg": true, "Samr": true, "Syrc": true, "Thaa": true, "Yezi": true}

// Direction is "rtl" for a language written right to left (ar, he, fa, ur: by its script, so a
// shop's new catalogue gets it too), else "ltr".
func Direction(lang string) string {
	if s, _ := language.Make(lang).Script(); rtlScripts[s.String()] {
		return "rtl"
	}
	return "ltr"
}

// numbering is lang's tag for the gateway's number formatting, with the digits browsers'
// Intl gives the language: CLDR has Latin digits for Arabic (ar, without a region) since
// version 42, golang.org/x/text still the Arabic-Indic ones, so the page's numbers written by
// a template and by the script would differ.
func numbering(lang string) language.Tag {
	if lang == "ar" {
		return language.Make("ar-u-nu-latn")
	}
	return language.Make(lang)
}

// Serve writes the page of sale for r, with its Content-Security-Policy: our one script by
// its hash, the page's <style> elements by theirs, and frameAncestors (none when empty).
func (k *Kit) Serve(w http.ResponseWriter, r *http.Request, sale string, variants []string, frameAncestors []string) error {
	c := k.site
	if sc, ok := k.sales[sale]; ok {
		c = sc
	}
	lang := k.Lang(r, sale)
	var buf bytes.Buffer
	if err := c.t.ExecuteTemplate(&buf, c.name, k.data(lang, sale, variants)); err != nil {
		// Checked at provision for every language: only a failing writer gets here.
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Language", lang)
	h.Add("Vary", "Accept-Language") // after a Vary: Origin of seckill_cors
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", k.policy(buf.String(), frameAncestors))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(buf.Bytes())
	return err
}

// policy: nothing loads but the page itself; its one script (ours: a module holding the
// JavaScript client, then the page's code) and its <style> elements are allowed by their
// SHA-256, never by 'unsafe-inline', so markup injected into a template, or a template's own
// inline script, runs nothing; the proof of work's Web Worker comes from a blob: URL; fetch
// goes to the gateway only; no other site frames the page (clickjacking a Buy button)
// unless the shop lists its origins.
func (k *Kit) policy(page string, ancestors []string) string {
	fa := "'none'"
	if len(ancestors) > 0 {
		fa = strings.Join(ancestors, " ")
	}
	styles := styleHashes(page)
	if styles == "" {
		styles = "'none'"
	}
	script, connect, frames := k.scriptHash, "'self'", ""
	if w := k.widget; w != nil {
		// The provider's script, its frames (and hCaptcha's styles and calls): only on a page
		// with a widget.
		script += " " + w.csp["script"]
		frames = "; frame-src " + w.csp["frame"]
		if w.csp["style"] != "" {
			styles = strings.TrimPrefix(styles, "'none'") + " " + w.csp["style"]
		}
		if w.csp["connect"] != "" {
			connect += " " + w.csp["connect"]
		}
	}
	return "default-src 'none'; script-src " + script + "; style-src " + strings.TrimSpace(styles) + "; img-src " + k.imgSrc +
		"; worker-src blob:; connect-src " + connect + frames + "; base-uri 'none'; form-action 'none'; frame-ancestors " + fa
}

// ScriptHash is the CSP source of our script ('sha256-...').
func (k *Kit) ScriptHash() string { return k.scriptHash }

// styleHashes are the CSP sources of every <style> element of page.
func styleHashes(page string) string {
	var out []string
	for rest := page; ; {
		i := strings.Index(rest, "<style")
		if i < 0 {
			break
		}
		gt := strings.IndexByte(rest[i:], '>')
		j := strings.Index(rest[i:], "</style>")
		if gt < 0 || j < gt {
			break
		}
		sum := sha256.Sum256([]byte(rest[i+gt+1 : i+j]))
		out = append(out, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
		rest = rest[i+j+len("</style>"):]
	}
	return strings.Join(out, " ")
}

// validSource is a CSP source a shop may list for images: data:, or what frame-ancestors
// takes ('self', a scheme, a host).
func validSource(s string) bool {
	return s == "data:" || (s != "'none'" && pagecsp.ValidSource(s))
}

// JS is the kit's script (kit.js): the pages' shared code, between the client and the page's
// own.
//
//go:embed kit.js
var JS string

// Script is a page's one module script: the JavaScript client (first, byte for byte), the
// kit, then the page's own code.
func Script(client, page string) string { return client + "\n" + JS + "\n" + page }

// Document is the kit's template (kit.html): "page", the whole document of our pages around
// their "main", and "style", the kit's stylesheet, which a shop's template may call too.
//
//go:embed kit.html
var Document string

// Style is the kit's stylesheet (kit.css), for our pages' "style" part.
//
//go:embed kit.css
var Style string

// Message is key's text in lang, placeholders unfilled ("" when there is none; a plural
// message's "other" form): for tests and tools that check what a page says.
func (k *Kit) Message(lang, key string) string { return k.cats[lang][key].other() }

// Texts are every text of lang's catalogue (each plural form of a count), placeholders
// unfilled, sorted: for tests that check a page shows none of another language's.
func (k *Kit) Texts(lang string) []string {
	var out []string
	for _, m := range k.cats[lang] {
		if m.count == "" {
			out = append(out, m.text)
		}
		for _, s := range m.forms {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// PluralMessage is key's form for the count n in lang, placeholders unfilled (a plain text
// whatever n is).
func (k *Kit) PluralMessage(lang, key string, n int) string {
	return k.cats[lang][key].form(language.Make(lang), n)
}
