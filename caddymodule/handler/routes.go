package handler

import (
	"fmt"
	"strings"
)

// Route names one endpoint of a handler that serves several: the end of the request's path
// that selects it, and the endpoint's name (its metrics label and log field).
type Route struct {
	Suffix, Endpoint string
}

// Routes routes the requests of a handler that serves several endpoints on one route (the
// waiting room's /room, /room/prequeue, /challenge and /queue; the draw's /draw,
// /draw/challenge and /challenge) by the end of the path, as the site's routes matched it. One
// router for every such handler: the room and the draw each had a switch of their own. It
// allocates nothing: it runs before every answer of those handlers, polls included.
type Routes []Route

// NewRoutes returns the routes in order. The first suffix that matches wins, so a suffix that
// ends with an earlier one could never match (/challenge before /draw/challenge): NewRoutes
// panics on it, so the mistake stops the handler's package from initialising.
func NewRoutes(routes ...Route) Routes {
	for i, r := range routes {
		if !strings.HasPrefix(r.Suffix, "/") || r.Endpoint == "" {
			panic(fmt.Sprintf("handler routes: %q -> %q: a suffix starts with / and names an endpoint", r.Suffix, r.Endpoint))
		}
		for _, earlier := range routes[:i] {
			if strings.HasSuffix(r.Suffix, earlier.Suffix) {
				panic(fmt.Sprintf("handler routes: %q is shadowed by %q listed before it", r.Suffix, earlier.Suffix))
			}
		}
	}
	return Routes(routes)
}

// Match returns the endpoint whose suffix ends path (a trailing slash ignored); ok is false
// when none does.
func (rs Routes) Match(path string) (endpoint string, ok bool) {
	path = strings.TrimSuffix(path, "/")
	for _, r := range rs {
		if strings.HasSuffix(path, r.Suffix) {
			return r.Endpoint, true
		}
	}
	return "", false
}
