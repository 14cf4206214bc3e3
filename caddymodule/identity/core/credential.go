package core

import (
	"net/http"
	"strings"
)

// Credential reads the session token a request carries: the bearer token of its
// Authorization header, else its session cookie (when cookie is not empty). Two Authorization
// headers, or the cookie twice, are refused (Ambiguous): a proxy and the client, or a
// sub-domain that planted a second cookie, disagree about who this is, and picking one would
// let the wrong side win. A token over MaxToken bytes is refused (TooLarge) before anything
// parses it.
func Credential(r *http.Request, cookie string) (string, Outcome) {
	switch auth := r.Header["Authorization"]; len(auth) {
	case 0:
	case 1:
		// RFC 6750 2.1: "Bearer" then one space; the scheme is case-insensitive. Another scheme
		// (Basic for a staging password) is not ours: the cookie may still be.
		if len(auth[0]) > 7 && strings.EqualFold(auth[0][:7], "bearer ") {
			return sized(strings.TrimSpace(auth[0][7:]))
		}
	default:
		return "", Ambiguous
	}
	if cookie == "" {
		return "", Missing
	}
	var token string
	found := 0
	for _, c := range r.CookiesNamed(cookie) {
		if found++; found > 1 {
			return "", Ambiguous
		}
		token = c.Value
	}
	if found == 0 {
		return "", Missing
	}
	return sized(token)
}

func sized(token string) (string, Outcome) {
	switch {
	case token == "":
		return "", Missing
	case len(token) > MaxToken:
		return "", TooLarge
	}
	return token, Verified
}
