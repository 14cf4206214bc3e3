// Package weaksecret decides whether a configured secret is too weak to guard anything: the
// backend's admin tokens (SECKILL_ADMIN_TOKEN, SECKILL_ADMIN_TOKENS) and the gateway's
// purchase-token keys (token_keys of the seckill app). Both refuse to start with a weak one:
// a guessable admin token opens every control, and a guessable key lets
// anybody mint purchase tokens.
//
// The check is a plain function of the value; it cannot measure randomness, only refuse the
// shapes that are certainly not random: short, one repeated character, a handful of distinct
// bytes, a short unit repeated, a placeholder, or a value published with the project.
package weaksecret

import (
	"errors"
	"fmt"
	"strings"
)

// MinLen is the shortest secret accepted, in bytes: 32 bytes is 128 bits at 4 bits per hex
// character, the strength of the keys the project's scripts generate.
const MinLen = 32

// MinDistinct is the fewest distinct bytes a secret may have: a random hex string of 32
// characters has about 14.
const MinDistinct = 8

// DemoTokenKey is the purchase-token key published with the demo (README, docker-compose.yml
// of older releases). The gateway accepts it only with its `demo` option.
const DemoTokenKey = "demo-token-key-change-me-0123456789"

// Published are values written in this repository's docs, scripts and configs, now or in
// earlier releases, as examples or dummies: anybody can read them, so none is a secret.
var Published = []string{
	DemoTokenKey,
	"demo-token-key",
	"demo-admin-token",
	// Makefile's COMPOSE_DUMMY_SECRETS: only for rendering the compose file.
	"compose-check-dummy-not-a-secret-0123456789",
	"compose-check-dummy",
}

// ErrWeak is the error (errors.Is) of every refusal; ErrPublished, of a published value.
var (
	ErrWeak      = errors.New("weak secret")
	ErrPublished = fmt.Errorf("%w: a value published with the project", ErrWeak)
)

// Check returns nil for a secret strong enough to use, else an error wrapping ErrWeak that says
// why (never the value itself: the error ends up in logs).
func Check(s string) error {
	t := strings.TrimSpace(s)
	if isPublished(t) {
		return ErrPublished
	}
	if len(t) != len(s) {
		// A token with spaces around it never matches what a client sends (Bearer values are
		// trimmed), and spaces count for no strength.
		return fmt.Errorf("%w: spaces around the value", ErrWeak)
	}
	if len(s) < MinLen {
		return fmt.Errorf("%w: %d bytes, want at least %d", ErrWeak, len(s), MinLen)
	}
	if n := distinct(s); n == 1 {
		return fmt.Errorf("%w: one character repeated", ErrWeak)
	} else if n < MinDistinct {
		return fmt.Errorf("%w: only %d distinct characters, want at least %d", ErrWeak, n, MinDistinct)
	}
	if p := period(s); p > 0 {
		return fmt.Errorf("%w: a unit of %d characters repeated", ErrWeak, p)
	}
	if l := strings.ToLower(s); strings.Contains(l, "changeme") || strings.Contains(l, "change-me") || strings.Contains(l, "change_me") {
		return fmt.Errorf("%w: a placeholder (change me)", ErrWeak)
	}
	return nil
}

// IsPublished reports whether s is one of the Published values or a trivial variant of one
// (other letter case, spaces around it).
func IsPublished(s string) bool { return isPublished(strings.TrimSpace(s)) }

func isPublished(t string) bool {
	for _, p := range Published {
		if strings.EqualFold(t, p) {
			return true
		}
	}
	return false
}

func distinct(s string) int {
	var seen [256]bool
	n := 0
	for i := 0; i < len(s); i++ {
		if !seen[s[i]] {
			seen[s[i]] = true
			n++
		}
	}
	return n
}

// period returns the length of the shortest unit that s repeats whole, at least twice
// ("abcdabcdabcd": 4), or 0 when s is no such repetition.
func period(s string) int {
	for p := 1; p <= len(s)/2; p++ {
		if len(s)%p == 0 && strings.Repeat(s[:p], len(s)/p) == s {
			return p
		}
	}
	return 0
}
