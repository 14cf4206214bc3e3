//go:build integration

package draw

import (
	"os"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// TestMain runs the package's tests with one chromium for all the browser tests
// (pagetest.Main: each test still has a profile of its own) and one Caddy for all the
// in-process gateways (gateways), stopped once they are done.
func TestMain(m *testing.M) {
	code := pagetest.Main(m)
	gateways.Stop()
	os.Exit(code)
}

// gateways are the package's in-process gateways, one Caddy for all of them (Caddy is one
// per process): each test that needs its own settings declares its gateway (gateway) as a
// package variable, and the tests of a gateway are kept apart by their sales' ids, so they
// run side by side.
var gateways = &handlertest.Pool{App: func(testing.TB) map[string]any { return appConfig(testenv.RedisAddr()) }}

// plainGateway is a gateway of the pool with the handler's test defaults.
var plainGateway = gateway(gatewayConfig{})

// gateway declares a gateway of the pool with c's settings (a second server when c.Two): call
// it from a package variable's initialiser. Its Base is its server's URL (Two: both servers'),
// the pool loaded at the first call.
func gateway(c gatewayConfig) *handlertest.PoolGateway { return gateways.Add(c.Two, c.servers) }
