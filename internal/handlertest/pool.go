package handlertest

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/seckilledge/seckill/internal/testenv"
)

// Pool is the in-process gateways of a test package, all in one Caddy config: Caddy is a
// process-wide singleton, so tests that each load a gateway of their own run one at a time
// (StartCaddy holds the process's Caddy for the test's life), while tests of a pool's
// gateways share one load and run side by side (t.Parallel), kept apart by their own sale
// ids. Each gateway is declared once, as a package variable (Pool.Add), so the whole config
// is known when the first test asks for a gateway: the pool is loaded then, once, and stops
// when the package's tests end (Stop, from TestMain). A gateway's handlers are instances of
// their own, with their own caches and views, as another test's gateway's were.
type Pool struct {
	// App is the seckill app's config of every gateway of the pool (the app is one per
	// Caddy); tb is the pool's own, for what the config needs set up (a vhost), released
	// by Stop.
	App func(tb testing.TB) map[string]any

	mu       sync.Mutex
	gateways []*PoolGateway
	loaded   bool
	err      string
	cleanups []func()
}

// PoolGateway is one gateway of a Pool: one server, or two (the second as a second gateway's,
// with handler instances of its own).
type PoolGateway struct {
	pool    *Pool
	servers int
	// build is the gateway's servers on port (and port2, 0 for a gateway of one server),
	// named as it likes (the pool prefixes the names); tb is the pool's.
	build func(tb testing.TB, port, port2 int) map[string]any
	ports []int
}

// Add declares a gateway of one server, or two when two, built by build (called when the
// pool is loaded, with the pool's own testing.TB and the servers' ports, port2 0 for one
// server): call it from a package variable's initialiser, before any test runs.
func (p *Pool) Add(two bool, build func(tb testing.TB, port, port2 int) map[string]any) *PoolGateway {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loaded {
		panic("handlertest.Pool.Add after the pool was loaded: declare every gateway as a package variable")
	}
	n := 1
	if two {
		n = 2
	}
	g := &PoolGateway{pool: p, servers: n, build: build}
	p.gateways = append(p.gateways, g)
	return g
}

// Bases loads the pool at its first call (every gateway declared, in one Caddy config) and
// returns the base URLs of g's servers, in order.
func (g *PoolGateway) Bases(t testing.TB) []string {
	t.Helper()
	g.pool.load(t)
	bases := make([]string, len(g.ports))
	for i, port := range g.ports {
		bases[i] = Base(port)
	}
	return bases
}

// Base is the base URL of g's first server.
func (g *PoolGateway) Base(t testing.TB) string {
	t.Helper()
	return g.Bases(t)[0]
}

// Two is the base URLs of g's two servers (a gateway added with two).
func (g *PoolGateway) Two(t testing.TB) (string, string) {
	t.Helper()
	b := g.Bases(t)
	if len(b) != 2 {
		t.Fatalf("a gateway of %d servers asked for two", len(b))
	}
	return b[0], b[1]
}

// Load loads the pool (at its first call): for a test that needs what the pool's App set up
// (its vhost) before it asks for a gateway.
func (p *Pool) Load(t testing.TB) {
	t.Helper()
	p.load(t)
}

func (p *Pool) load(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loaded {
		p.loaded = true
		tb := &poolTB{TB: t, pool: p}
		// A failure here is every test's: the first one fails with it, and so do the others.
		func() {
			defer func() {
				if r := recover(); r != nil {
					p.err = fmt.Sprint(r)
				}
			}()
			p.err = tb.start()
		}()
	}
	if p.err != "" {
		t.Fatalf("the package's gateways: %s", p.err)
	}
}

// start builds and loads the config; it returns why it could not.
func (tb *poolTB) start() string {
	p := tb.pool
	servers := map[string]any{}
	var bases []string
	// A free port is free when asked, not taken: two asks may get the same one, which one
	// config cannot listen on twice.
	taken := map[int]bool{}
	for i, g := range p.gateways {
		g.ports = make([]int, g.servers)
		for j := range g.ports {
			for g.ports[j] == 0 || taken[g.ports[j]] {
				g.ports[j] = testenv.FreePort(tb)
			}
			taken[g.ports[j]] = true
			bases = append(bases, Base(g.ports[j]))
		}
		port2 := 0
		if len(g.ports) == 2 {
			port2 = g.ports[1]
		}
		for name, srv := range g.build(tb, g.ports[0], port2) {
			servers[fmt.Sprintf("p%d-%s", i, name)] = srv
		}
	}
	if tb.failed != "" {
		return tb.failed
	}
	if len(bases) == 0 {
		return "no gateway declared"
	}
	StartCaddy(tb, Config(p.App(tb), servers), bases[0])
	for _, b := range bases[1:] {
		WaitListening(tb, b)
	}
	return tb.failed
}

// Stop stops the pool's gateways (when they were loaded) and releases what their config
// needed: TestMain calls it once the package's tests are done.
func (p *Pool) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		p.cleanups[i]()
	}
	p.cleanups = nil
}

// poolTB is the testing.TB the pool is built with: the first test that asks reports what
// goes wrong while it is built, and what the build sets up is released by Stop, not at that
// test's end.
type poolTB struct {
	testing.TB
	pool   *Pool
	failed string
}

func (tb *poolTB) Cleanup(f func()) { tb.pool.cleanups = append(tb.pool.cleanups, f) }

func (tb *poolTB) TempDir() string {
	dir, err := os.MkdirTemp("", "seckill-pool")
	if err != nil {
		tb.Fatalf("temp dir: %v", err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// Fatalf and Fatal end the build (in the goroutine of the test that asked) with the reason.
func (tb *poolTB) Fatalf(format string, args ...any) {
	tb.failed = fmt.Sprintf(format, args...)
	panic(tb.failed)
}

func (tb *poolTB) Fatal(args ...any) {
	tb.failed = fmt.Sprint(args...)
	panic(tb.failed)
}

func (tb *poolTB) Errorf(format string, args ...any) { tb.failed = fmt.Sprintf(format, args...) }

func (tb *poolTB) Error(args ...any) { tb.failed = fmt.Sprint(args...) }
