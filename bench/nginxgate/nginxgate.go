// Package nginxgate is seckill-bench's peer: the gate a shop writes by hand when it has no edge
// of its own, Debian's nginx with lua-nginx-module (libnginx-mod-http-lua) in front of Redis.
// Its handler (seckill_peer.lua) speaks RESP over ngx.socket.tcp with nginx's keepalive pool
// and decides each purchase with ONE EVALSHA of peer_gate.lua (already bought? stock? DECR,
// HSET buyer, XADD outbox), then answers in JSON as the edge does (202 with an order id, 409
// sold_out / already_bought). seckill-bench runs it side by side with Caddy's `respond` and
// the full edge, on the same Redis, pinned as the other servers are (docs/bench.md, "The
// peer").
//
// The package starts one nginx in a prefix directory of its own (its config, Lua files, pid,
// error log and temp dirs: nothing in /etc/nginx or /var is used), on a loopback port.
package nginxgate

import (
	"bytes"
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"text/template"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/internal/proc"
)

//go:embed peer_gate.lua
var script string

//go:embed seckill_peer.lua
var handler string

//go:embed nginx.conf.tmpl
var confText string

var conf = template.Must(template.New("nginx.conf").Parse(confText))

// Script is the Redis script of the peer's decision; SHA is its SHA1, the digest EVALSHA names.
var (
	Script = script
	SHA    = func() string { h := sha1.Sum([]byte(script)); return hex.EncodeToString(h[:]) }()
)

// DefaultModules is where Debian's nginx packages put their dynamic modules.
const DefaultModules = "/usr/lib/nginx/modules"

// Install is what to install when Available fails.
const Install = "apt-get install -y nginx libnginx-mod-http-lua"

// Options say how to start the peer.
type Options struct {
	// Dir is nginx's prefix directory (created; default: a temp dir). Its nginx.conf, Lua files,
	// error.log and pid file are written there.
	Dir string
	// RedisAddr is host:port of the Redis the gate decides on.
	RedisAddr string
	// Port is the loopback port to listen on (0: a free one).
	Port int
	// Workers is nginx's worker_processes (0: 1). seckill-bench gives it the number of CPUs the
	// servers run on, as Go's GOMAXPROCS sizes the gateway.
	Workers int
	// Nginx is the nginx binary (default: nginx on PATH, else /usr/sbin/nginx).
	Nginx string
	// Modules is the directory of ndk_http_module.so and ngx_http_lua_module.so (default
	// DefaultModules).
	Modules string
}

// Available reports whether nginx and its Lua module are installed, with what to install when
// they are not.
func Available(o Options) error {
	bin, mods := o.binary(), o.modules()
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("nginx is not installed (%v): %s", err, Install)
	}
	for _, m := range []string{"ndk_http_module.so", "ngx_http_lua_module.so"} {
		if _, err := os.Stat(filepath.Join(mods, m)); err != nil {
			return fmt.Errorf("nginx's Lua module is not installed (%v): %s", err, Install)
		}
	}
	return nil
}

func (o Options) binary() string {
	if o.Nginx != "" {
		return o.Nginx
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	return "/usr/sbin/nginx"
}

func (o Options) modules() string {
	if o.Modules != "" {
		return o.Modules
	}
	return DefaultModules
}

// Server is a running peer.
type Server struct {
	// URL is its base URL (http://127.0.0.1:port); purchases go to URL + BuyPath(sale).
	URL string
	// Dir is its prefix directory; Log its error log.
	Dir, Log string
	p        *proc.Process
}

// PID is the nginx master's process id (its workers are its children).
func (s *Server) PID() int { return s.p.PID() }

// Close stops nginx (SIGTERM to its process group, then SIGKILL after 5 s).
func (s *Server) Close() {
	if s.p != nil {
		s.p.Stop(5 * time.Second)
	}
}

// BuyPath is the peer's purchase route of a sale.
func BuyPath(sale string) string { return "/peer/" + sale + "/buy" }

// ReturnPath is a route that answers 200 from nginx alone (no Lua, no Redis): nginx's floor.
const ReturnPath = "/return"

// Keys are the peer's Redis keys of a sale (one hash tag, so one Cluster slot).
func Keys(sale string) (stock, buyers, outbox string) {
	t := "peer:{" + sale + "}:"
	return t + "stock", t + "buyers", t + "outbox"
}

// Prepare puts a sale of stock units in Redis for the peer (its keys emptied first) and loads
// the script, so the first purchase does not pay the SCRIPT LOAD.
func Prepare(ctx context.Context, rdb redis.UniversalClient, sale string, stock int) error {
	k1, k2, k3 := Keys(sale)
	if err := rdb.Del(ctx, k1, k2, k3).Err(); err != nil {
		return err
	}
	if err := rdb.Set(ctx, k1, stock, 0).Err(); err != nil {
		return err
	}
	sha, err := rdb.ScriptLoad(ctx, Script).Result()
	if err != nil {
		return err
	}
	if sha != SHA {
		return fmt.Errorf("redis gave the peer's script the digest %s, not %s", sha, SHA)
	}
	return nil
}

type confData struct {
	Dir, Modules, RedisHost, SHA string
	RedisPort, Port, Workers     int
}

// Config renders nginx.conf for these options (Dir and Port already decided).
func Config(o Options) (string, error) {
	host, port, err := net.SplitHostPort(o.RedisAddr)
	if err != nil {
		return "", fmt.Errorf("redis address %q: %w", o.RedisAddr, err)
	}
	rp, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("redis address %q: %w", o.RedisAddr, err)
	}
	if host == "" || host == "localhost" {
		host = "127.0.0.1" // ngx.socket.tcp would need a resolver for a name
	}
	w := o.Workers
	if w <= 0 {
		w = 1
	}
	var b bytes.Buffer
	err = conf.Execute(&b, confData{Dir: o.Dir, Modules: o.modules(), RedisHost: host, SHA: SHA, RedisPort: rp, Port: o.Port, Workers: w})
	return b.String(), err
}

// Start writes the prefix directory and starts nginx, and waits until it answers.
func Start(ctx context.Context, o Options) (*Server, error) {
	if err := Available(o); err != nil {
		return nil, err
	}
	if o.RedisAddr == "" {
		return nil, errors.New("nginxgate: no Redis address")
	}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "seckill-peer-")
		if err != nil {
			return nil, err
		}
		o.Dir = d
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir = dir
	if o.Port == 0 {
		if o.Port, err = proc.FreePort(); err != nil {
			return nil, err
		}
	}
	c, err := Config(o)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "tmp"), 0o755); err != nil {
		return nil, err
	}
	for name, body := range map[string]string{"nginx.conf": c, "peer_gate.lua": script, "seckill_peer.lua": handler} {
		if err := os.WriteFile(filepath.Join(o.Dir, name), []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	log := filepath.Join(o.Dir, "error.log")
	_ = os.Remove(log)
	p, err := proc.Start(proc.Spec{Path: o.binary(), Args: []string{"-p", o.Dir, "-c", filepath.Join(o.Dir, "nginx.conf"), "-e", log},
		Log: filepath.Join(o.Dir, "stdout.log"), DeathSignal: syscall.SIGTERM})
	if err != nil {
		return nil, err
	}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", o.Port), Dir: o.Dir, Log: log, p: p}
	if err := proc.WaitReady(ctx, "nginx (the peer)", p, log, 30*time.Second, proc.HTTPReady(s.URL+"/healthz")); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}
