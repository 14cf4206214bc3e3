package harness

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var (
	siteRe = regexp.MustCompile(`(?m)^:8080\s*\{`)
	// envSiteRe is the production Caddyfiles' site, which SECKILL_SITE places (default :8080).
	envSiteRe  = regexp.MustCompile(`(?m)^\{\$SECKILL_SITE(:[^}]*)?\}\s*\{`)
	shopSiteRe = regexp.MustCompile(`(?m)^:8088\s*\{`)
	adminRe    = regexp.MustCompile(`(?m)^(\s*)admin\s+\S+`)
)

// dropSite removes the site block whose first line re matches: from that line to the first
// line after it that is a lone `}` (the shipped Caddyfiles close each site at column 0).
func dropSite(src string, re *regexp.Regexp) string {
	loc := re.FindStringIndex(src)
	if loc == nil {
		return src
	}
	end := strings.Index(src[loc[1]:], "\n}\n")
	if end < 0 {
		return src[:loc[0]]
	}
	rest := src[loc[1]+end+3:]
	if strings.HasSuffix(src[:loc[0]], "\n\n") {
		rest = strings.TrimPrefix(rest, "\n") // no double blank line where the site was
	}
	return src[:loc[0]] + rest
}

// GatewayConfig rewrites a Caddyfile for private ports: the :8080 site (or the production
// files' {$SECKILL_SITE} one) moves to gw, the admin
// endpoint to admin, and a ceiling site answering with a bare `respond` is added on ceil. The
// root Caddyfile's :8088 site (the sample shop behind the gateway, make run) is dropped: it
// needs the shop, and the benchmarks and tests of :8080 must not bind a fixed port.
func GatewayConfig(src string, gw, admin, ceil int, extraGlobal string) (string, error) {
	site := siteRe
	if !site.MatchString(src) {
		if site = envSiteRe; !site.MatchString(src) {
			return "", errors.New("the Caddyfile has no `:8080 {` or `{$SECKILL_SITE} {` site to move")
		}
	}
	src = dropSite(src, shopSiteRe)
	out := site.ReplaceAllString(src, ":"+strconv.Itoa(gw)+" {")
	global := "\tadmin 127.0.0.1:" + strconv.Itoa(admin)
	if adminRe.MatchString(out) {
		out = adminRe.ReplaceAllString(out, "${1}admin 127.0.0.1:"+strconv.Itoa(admin))
		global = ""
	}
	if extraGlobal != "" {
		if merged, ok := mergeServers(out, extraGlobal); ok {
			out = merged
		} else {
			global += "\n" + extraGlobal
		}
	}
	if global != "" {
		if i := globalBlock(out); i >= 0 {
			out = out[:i+1] + "\n" + global + "\n" + out[i+1:]
		} else {
			out = "{\n" + global + "\n}\n\n" + out
		}
	}
	return out + ceilingSite(ceil), nil
}

// ceilingSite is a site on port that only does `respond`: the same Caddy process and listener
// setup as the gateway, no seckill handler, no Redis (the benchmarks' ceiling; the harness
// waits for it).
func ceilingSite(port int) string {
	return fmt.Sprintf("\n# seckill-bench: the ceiling, Caddy's plain respond.\n:%d {\n\trespond \"ok\" 200\n}\n", port)
}

// ShopGatewayConfig rewrites the root Caddyfile to serve only its :8088 site (the sample shop
// behind the gateway) on port site, with the admin endpoint on admin: the :8080 site is dropped.
// The shop, the backend and the rest come from the environment as in make run (SECKILL_SHOP,
// SECKILL_SHOP_PUBLIC_URL, SECKILL_BACKEND, ...).
func ShopGatewayConfig(src string, site, admin int) (string, error) {
	if !shopSiteRe.MatchString(src) {
		return "", errors.New("the Caddyfile has no `:8088 {` site to move")
	}
	out := dropSite(src, siteRe)
	out = shopSiteRe.ReplaceAllString(out, ":"+strconv.Itoa(site)+" {")
	if !adminRe.MatchString(out) {
		return "", errors.New("the Caddyfile has no admin option to move")
	}
	return adminRe.ReplaceAllString(out, "${1}admin 127.0.0.1:"+strconv.Itoa(admin)), nil
}

// serversRe finds a `servers {` global option (the shipped Caddyfiles set timeouts there).
var serversRe = regexp.MustCompile(`(?m)^\s*servers\s*\{[ \t]*\n`)

// mergeServers puts the lines of an extra `servers { ... }` option into the Caddyfile's own
// `servers {` block: Caddy refuses two `servers` options for the same listeners.
func mergeServers(src, extra string) (string, bool) {
	lines := strings.Split(strings.TrimRight(extra, "\n"), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "servers {" || strings.TrimSpace(lines[len(lines)-1]) != "}" {
		return "", false
	}
	loc := serversRe.FindStringIndex(src)
	if loc == nil || globalBlock(src) < 0 || loc[0] < globalBlock(src) {
		return "", false
	}
	inner := strings.Join(lines[1:len(lines)-1], "\n") + "\n"
	return src[:loc[1]] + inner + src[loc[1]:], true
}

// globalBlock is the offset of the `{` opening the global options block, or -1: the block
// must be the first thing after comments and blank lines.
func globalBlock(src string) int {
	off := 0
	for _, line := range strings.SplitAfter(src, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case t == "{":
			return off + strings.Index(line, "{")
		default:
			return -1
		}
		off += len(line)
	}
	return -1
}

// withAppRelay adds relay settings (body, e.g. "claim_min_idle 5s") to the seckill global
// option of a Caddyfile: at the end of its `relay { ... }` block, so they win over the
// Caddyfile's own, or in a new one. seckill_gate's own relay block is gone: the
// relay is the app's.
func withAppRelay(src, body string) (string, error) {
	g := globalBlock(src)
	if g < 0 {
		return "", fmt.Errorf("no global options block to add relay settings to")
	}
	loc := seckillOptionRe.FindStringIndex(src[g:])
	if loc == nil {
		return "", fmt.Errorf("no `seckill {` global option to add relay settings to")
	}
	open := g + loc[1]
	end := blockEnd(src, open)
	if end < 0 {
		return "", fmt.Errorf("the `seckill {` global option is not closed")
	}
	if r := relayBlockRe.FindStringIndex(src[open:end]); r != nil {
		if rend := blockEnd(src, open+r[1]); rend >= 0 {
			return src[:rend] + "\t\t\t" + body + "\n" + src[rend:], nil
		}
	}
	return src[:open] + "\t\trelay {\n\t\t\t" + body + "\n\t\t}\n" + src[open:], nil
}

// blockEnd is the offset of the start of the line holding the `}` that closes the block whose
// body starts at from, or -1. Braces inside the block (placeholders, nested blocks) balance.
func blockEnd(src string, from int) int {
	depth := 1
	for i := from; i < len(src); i++ {
		switch src[i] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return strings.LastIndexByte(src[:i], '\n') + 1
			}
		}
	}
	return -1
}

var (
	seckillOptionRe = regexp.MustCompile(`(?m)^[ \t]*seckill[ \t]*\{[ \t]*\n`)
	relayBlockRe    = regexp.MustCompile(`(?m)^[ \t]*relay[ \t]*\{[ \t]*\n`)
)
