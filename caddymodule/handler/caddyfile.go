package handler

// The Caddyfile blocks of the seckill app and its handlers are parsed one way: an option takes
// exactly its arguments, a flag none, and an option nobody knows is an error that names the
// block it stands in. The app, the relay settings and every handler use these, so a typo reads
// the same wherever it is made.

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Option parses one option of a block, with d at the option's name. known is false for a
// name the block does not have.
type Option func(name string) (known bool, err error)

// ParseDirective parses a directive (or global option) that takes no argument and a block of options:
// d is at the directive's name, which is consumed.
func ParseDirective(d *caddyfile.Dispenser, what string, option Option) error {
	d.Next() // the directive's name
	return ParseBlock(d, what, option)
}

// ParseBlock parses the block that opens after d's current token, which must have no argument left.
func ParseBlock(d *caddyfile.Dispenser, what string, option Option) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		known, err := option(d.Val())
		if err != nil {
			return err
		}
		if !known {
			return d.Errf("unrecognized %s option '%s'", what, d.Val())
		}
	}
	return nil
}

// Flag is an option without argument: it sets *dst.
func Flag(d *caddyfile.Dispenser, dst *bool) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	*dst = true
	return nil
}

// StringArg reads the one argument of an option.
func StringArg(d *caddyfile.Dispenser, dst *string) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	*dst = d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// IntArg reads an option's one argument, an integer.
func IntArg(d *caddyfile.Dispenser, dst *int) error {
	return parsed(d, dst, "an integer", strconv.Atoi)
}

// FloatArg reads an option's one argument, a number.
func FloatArg(d *caddyfile.Dispenser, dst *float64) error {
	return parsed(d, dst, "a number", func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
}

// DurationArg reads an option's one argument, a Caddy duration (1s, 250ms, 1d).
func DurationArg(d *caddyfile.Dispenser, dst *caddy.Duration) error {
	return parsed(d, dst, "a duration", func(s string) (caddy.Duration, error) {
		v, err := caddy.ParseDuration(s)
		return caddy.Duration(v), err
	})
}

func parsed[T any](d *caddyfile.Dispenser, dst *T, what string, parse func(string) (T, error)) error {
	var s string
	if err := StringArg(d, &s); err != nil {
		return err
	}
	v, err := parse(s)
	if err != nil {
		return d.Errf("'%s' is not %s", s, what)
	}
	*dst = v
	return nil
}
