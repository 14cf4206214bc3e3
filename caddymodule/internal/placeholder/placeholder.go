// Package placeholder reads the handlers' per-request values (a zone's key, the sale, the user,
// the token) the way Caddy's replacer would, resolved once at provision: a value that is one
// request header, one path segment or one replacer variable (such as {http.auth.user.id}) is
// read directly, without parsing the template or boxing the value on every request; anything
// else goes through Caddy's replacer.
package placeholder

import (
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// Value is a provisioned template.
type Value struct {
	tpl    string
	kind   kind
	header string // canonical header name (kindHeader)
	seg    int    // path segment (kindSegment)
	name   string // replacer key (kindVar)
}

type kind uint8

const (
	kindTemplate kind = iota // anything: repl.ReplaceAll
	kindLiteral              // no placeholder at all
	kindHeader               // {http.request.header.X}
	kindSegment              // {http.request.uri.path.N}
	kindVar                  // one other placeholder: repl.Get
)

// Compile resolves tpl once.
func Compile(tpl string) Value {
	v := Value{tpl: tpl}
	name, ok := single(tpl)
	switch {
	case !strings.ContainsAny(tpl, "{}"):
		v.kind = kindLiteral
	case !ok:
		v.kind = kindTemplate
	case strings.HasPrefix(name, "http.request.header."):
		v.kind, v.header = kindHeader, textproto.CanonicalMIMEHeaderKey(name[len("http.request.header."):])
	case strings.HasPrefix(name, "http.request.uri.path."):
		n, err := strconv.Atoi(name[len("http.request.uri.path."):])
		if err != nil || n < 0 {
			v.kind = kindTemplate
			break
		}
		v.kind, v.seg = kindSegment, n
	default:
		v.kind, v.name = kindVar, name
	}
	return v
}

// Template is the template as configured.
func (v Value) Template() string { return v.tpl }

// Get is the value of v for r: what repl.ReplaceAll(template, "") gives.
func (v Value) Get(r *http.Request, repl *caddy.Replacer) string {
	switch v.kind {
	case kindLiteral:
		return v.tpl
	case kindHeader:
		// Several fields join with ",", as the replacer does (no allocation for one).
		return strings.Join(r.Header[v.header], ",")
	case kindSegment:
		return segment(r.URL.Path, v.seg)
	case kindVar:
		if repl == nil {
			return ""
		}
		x, ok := repl.Get(v.name)
		if !ok || x == nil {
			return ""
		}
		if s, ok := x.(string); ok {
			return s
		}
		return caddy.ToString(x)
	}
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	return repl.ReplaceAll(v.tpl, "")
}

// segment is the n-th segment of path (0 the first after the leading "/"), "" past the last:
// the replacer's {http.request.uri.path.N}, without splitting the path.
func segment(path string, n int) string {
	path = strings.TrimPrefix(path, "/")
	for ; n > 0; n-- {
		i := strings.IndexByte(path, '/')
		if i < 0 {
			return ""
		}
		path = path[i+1:]
	}
	if i := strings.IndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return path
}

// single is the name of the one placeholder tpl consists of (false if it is anything else,
// escaped, or a {file.*} one, which the replacer reads its own way).
func single(tpl string) (string, bool) {
	if len(tpl) < 3 || tpl[0] != '{' || tpl[len(tpl)-1] != '}' {
		return "", false
	}
	name := tpl[1 : len(tpl)-1]
	if strings.ContainsAny(name, "{}\\:") || strings.HasPrefix(name, "file.") || strings.HasPrefix(name, "env.") {
		return "", false
	}
	return name, true
}
