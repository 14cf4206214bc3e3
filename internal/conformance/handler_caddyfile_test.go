package conformance

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/seckilledge/seckill/caddymodule/handler"
)

// directiveOpts is what a made-up directive "thing" reads with the handlers' option parsers.
type directiveOpts struct {
	s    string
	n    int
	f    float64
	d    caddy.Duration
	flag bool
	sub  struct{ n int }
}

func parseThing(src string) (directiveOpts, error) {
	var o directiveOpts
	d := caddyfile.NewTestDispenser(src)
	err := handler.ParseDirective(d, "thing", func(name string) (bool, error) {
		switch name {
		case "s":
			return true, handler.StringArg(d, &o.s)
		case "n":
			return true, handler.IntArg(d, &o.n)
		case "f":
			return true, handler.FloatArg(d, &o.f)
		case "d":
			return true, handler.DurationArg(d, &o.d)
		case "flag":
			return true, handler.Flag(d, &o.flag)
		case "sub":
			return true, handler.ParseBlock(d, "sub", func(name string) (bool, error) {
				if name == "n" {
					return true, handler.IntArg(d, &o.sub.n)
				}
				return false, nil
			})
		}
		return false, nil
	})
	return o, err
}

func TestEveryOptionTakesExactlyItsArguments(t *testing.T) {
	o, err := parseThing("thing {\n s a\n n 3\n f 1.5\n d 250ms\n flag\n sub {\n  n 7\n }\n}")
	if err != nil {
		t.Fatal(err)
	}
	if o.s != "a" || o.n != 3 || o.f != 1.5 || time.Duration(o.d) != 250*time.Millisecond || !o.flag || o.sub.n != 7 {
		t.Fatalf("parsed %+v", o)
	}
	for src, want := range map[string]string{
		"thing extra":                   "wrong argument count",
		"thing {\n s\n}":                "wrong argument count",
		"thing {\n s a b\n}":            "wrong argument count",
		"thing {\n n three\n}":          "'three' is not an integer",
		"thing {\n f x\n}":              "'x' is not a number",
		"thing {\n d soon\n}":           "'soon' is not a duration",
		"thing {\n flag yes\n}":         "wrong argument count",
		"thing {\n bogus 1\n}":          "unrecognized thing option 'bogus'",
		"thing {\n sub {\n  m 1\n }\n}": "unrecognized sub option 'm'",
	} {
		if _, err := parseThing(src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error containing %q", src, err, want)
		}
	}
}
