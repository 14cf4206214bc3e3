package handlertest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/proc"
	"github.com/seckilledge/seckill/internal/testenv"
)

// LogLevel is the log level of the test gateways: ERROR, or SECKILL_TEST_LOG (e.g. DEBUG) to
// investigate.
func LogLevel() string {
	if l := os.Getenv("SECKILL_TEST_LOG"); l != "" {
		return l
	}
	return "ERROR"
}

// caddyMu serialises the in-process gateways: Caddy is a process-wide singleton.
var caddyMu sync.Mutex

// StartCaddy runs cfg (Caddy JSON) in this process until the test ends and waits until base
// (http://host:port of one of its servers) answers /healthz.
func StartCaddy(t testing.TB, cfg []byte, base string) {
	t.Helper()
	caddyMu.Lock()
	if err := caddy.Load(cfg, true); err != nil {
		caddyMu.Unlock()
		t.Fatalf("load caddy config: %v", err)
	}
	t.Cleanup(func() {
		_ = caddy.Stop()
		caddyMu.Unlock()
	})
	WaitListening(t, base)
}

// Base is the URL of a test gateway's server on port: http://127.0.0.1:port.
func Base(port int) string { return fmt.Sprintf("http://127.0.0.1:%d", port) }

// Start is StartCaddy of cfg for its server on port: it returns that server's base URL.
func Start(t testing.TB, port int, cfg []byte) string {
	t.Helper()
	base := Base(port)
	StartCaddy(t, cfg, base)
	return base
}

// WaitListening waits until base answers /healthz (any status).
func WaitListening(t testing.TB, base string) {
	t.Helper()
	testenv.WaitFor(t, 20*time.Second, "the gateway at "+base+" to listen", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary is cmd/caddy, for gateways that must be other processes (killed, restarted, or a
// second instance): make build's under make test ($SECKILL_BIN_DIR), else built once per test
// process.
func Binary(t testing.TB) string {
	t.Helper()
	testenv.NeedsServices(t, "a built cmd/caddy")
	buildOnce.Do(func() {
		if dir, err := harness.PrebuiltDir("caddy"); dir != "" || err != nil {
			binPath, buildErr = filepath.Join(dir, "caddy"), err
			return
		}
		dir, err := os.MkdirTemp("", "seckill-test-caddy")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "caddy")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/seckilledge/seckill/cmd/caddy").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build caddy: %v", buildErr)
	}
	return binPath
}

// Gateway is a gateway running as a subprocess (its own process group).
type Gateway struct {
	proc *proc.Process
	Base string
}

// StartGateway runs cfg in a Caddy subprocess until the test ends (or Kill) and waits until
// base answers /healthz. A failed test logs the end of the gateway's log.
func StartGateway(t testing.TB, cfg []byte, base string) *Gateway {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "caddy.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "caddy.log")
	p, err := proc.Start(proc.Spec{Path: bin, Args: []string{"run", "--config", cfgPath}, Log: logPath,
		Env: append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)})
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{proc: p, Base: base}
	t.Cleanup(func() {
		g.Kill()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("gateway %s, last log lines:\n%s", base, b)
		}
	})
	if err := proc.WaitReady(context.Background(), "gateway "+base, p, logPath, 20*time.Second,
		proc.HTTPReady(base+"/healthz")); err != nil {
		t.Fatal(err)
	}
	return g
}

// Kill sends SIGKILL to the gateway's process group: no shutdown, no flush.
func (g *Gateway) Kill() {
	if g.proc != nil {
		g.proc.Kill()
		g.proc = nil
	}
}

// RedisCluster starts a private 3-master Redis Cluster for the test and returns its seeds and
// a client of it, closed when the test ends.
func RedisCluster(t testing.TB) ([]string, *redis.ClusterClient) {
	t.Helper()
	seeds := testenv.StartRedisCluster(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds})
	t.Cleanup(func() { _ = rdb.Close() })
	return seeds, rdb
}

// Parallel runs f(i) for i in [0, n) all at once, released together.
func Parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f(i)
		}()
	}
	close(start)
	wg.Wait()
}
