package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Stack is the system under test: where the gateway, the backend and the ceiling answer, and
// the services behind them. Either Start made it (its own processes on free ports, its own
// RabbitMQ vhost and Postgres database) or the user described running processes.
type Stack struct {
	Gateway    string // base URL of the gateway, e.g. http://127.0.0.1:8080
	Backend    string // base URL of the backend's admin listener (admin API, baselines, metrics)
	Ceiling    string // base URL of a Caddy site that only does `respond` ("" if none)
	Admin      string // base URL of the gateway's Caddy admin endpoint ("" if unknown)
	AdminToken string
	RedisAddr  string
	PGURL      string // the database the backend writes
	MgmtURL    string // RabbitMQ management API (with credentials)
	Vhost      string // RabbitMQ vhost of the topology
	// Process ids for peak memory and CPU per request (0 when unknown).
	GatewayPID, BackendPID, RedisPID int
	// Logs of started processes.
	LogDir string

	cleanup []func()
}

// Close stops what Start started and removes the vhost and database it created.
func (s *Stack) Close() {
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
	s.cleanup = nil
}

// StartOptions say how to start a private stack.
type StartOptions struct {
	// Root is the repository root (for `go build` and the default Caddyfile).
	Root string
	// BinDir holds caddy and seckill-backend; when empty, they are built into a temp dir.
	BinDir string
	// Caddyfile is the gateway configuration template (default Root/Caddyfile). Its `:8080`
	// site address and its admin address are rewritten to free ports, and a ceiling site with
	// a bare `respond` is appended.
	Caddyfile string
	// ExtraGlobal is inserted into the Caddyfile's global options block (e.g. trusted_proxies).
	ExtraGlobal string
	// RedisAddr is the Redis to use, unless PrivateRedis.
	RedisAddr string
	// PrivateRedis starts a redis-server of the run's own on a free port (append-only file,
	// fsync every second, like the stack's), so that no other gateway's outbox relay on a shared
	// Redis can pick up this run's orders, and this run's relay none of theirs.
	PrivateRedis bool
	AMQPURL      string // broker URL (any vhost: Start puts its own vhost in it)
	MgmtURL      string
	PGAdminURL   string // maintenance database URL, to create the bench database
	AdminToken   string
	TokenKey     string
	// Env is extra environment for both processes (KEY=value).
	Env []string
	// LogDir receives gateway.log and backend.log (default: a temp dir).
	LogDir string
}

// TrustLoopbackProxy is the global option the load generator needs: it runs on loopback and
// says who each simulated client is with X-Forwarded-For, so {client_ip} (what per-IP throttle
// zones key on) is the simulated client, as behind a real load balancer.
const TrustLoopbackProxy = `	servers {
		trusted_proxies static 127.0.0.1/32 ::1/128
		client_ip_headers X-Forwarded-For
	}`

// FreePort returns a loopback port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Build compiles the gateway and the backend into dir.
func Build(ctx context.Context, root, dir string) error {
	for _, b := range [][2]string{{"caddy", "./cmd/caddy"}, {"seckill-backend", "./cmd/seckill-backend"}} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, b[0]), b[1])
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	return nil
}

var (
	siteRe  = regexp.MustCompile(`(?m)^:8080\s*\{`)
	adminRe = regexp.MustCompile(`(?m)^(\s*)admin\s+\S+`)
)

// GatewayConfig rewrites a Caddyfile for private ports: the :8080 site moves to gw, the admin
// endpoint to admin, and a ceiling site answering with a bare `respond` is added on ceil.
func GatewayConfig(src string, gw, admin, ceil int, extraGlobal string) (string, error) {
	if !siteRe.MatchString(src) {
		return "", errors.New("the Caddyfile has no `:8080 {` site to move")
	}
	out := siteRe.ReplaceAllString(src, ":"+strconv.Itoa(gw)+" {")
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
	// The ceiling: the same Caddy process and listener setup, no seckill handler, no Redis.
	out += fmt.Sprintf("\n# seckill-bench: the ceiling, Caddy's plain respond.\n:%d {\n\trespond \"ok\" 200\n}\n", ceil)
	return out, nil
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

// Start builds (unless BinDir is set) and starts a backend and a gateway on free ports with a
// fresh RabbitMQ vhost and Postgres database, and waits until both answer.
func Start(ctx context.Context, o StartOptions) (_ *Stack, err error) {
	s := &Stack{AdminToken: o.AdminToken, RedisAddr: o.RedisAddr, MgmtURL: o.MgmtURL}
	defer func() {
		if err != nil {
			s.Close() // what was started so far
		}
	}()
	tmp, err := os.MkdirTemp("", "seckill-bench-")
	if err != nil {
		return nil, err
	}
	s.cleanup = append(s.cleanup, func() { _ = os.RemoveAll(tmp) })
	s.LogDir = o.LogDir
	if s.LogDir == "" {
		s.LogDir = tmp
	}
	if err := os.MkdirAll(s.LogDir, 0o755); err != nil {
		return nil, err
	}
	bin := o.BinDir
	if bin == "" {
		bin = tmp
		if err := Build(ctx, o.Root, bin); err != nil {
			return nil, err
		}
	}
	id := strconv.FormatInt(time.Now().UnixNano()%1e12, 36)

	if o.PrivateRedis {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(tmp, "redis")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		rpid, stop, exited, err := startProc("redis-server", []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--dir", dir, "--appendonly", "yes", "--appendfsync", "everysec", "--save", ""}, os.Environ(), filepath.Join(s.LogDir, "redis.log"))
		if err != nil {
			return nil, err
		}
		s.cleanup = append(s.cleanup, stop)
		s.RedisPID = rpid
		s.RedisAddr = fmt.Sprintf("127.0.0.1:%d", port)
		if err := waitRedis(ctx, s.RedisAddr, exited); err != nil {
			return nil, err
		}
		o.RedisAddr = s.RedisAddr
	}

	// RabbitMQ: a vhost of our own, so no other consumer drains our queue and theirs is untouched.
	s.Vhost = "bench-" + id
	mg := mgmtClient(o.MgmtURL)
	if err := mg.call(ctx, http.MethodPut, "/api/vhosts/"+s.Vhost, ""); err != nil {
		return nil, fmt.Errorf("create RabbitMQ vhost: %w", err)
	}
	s.cleanup = append(s.cleanup, func() { _ = mg.call(context.Background(), http.MethodDelete, "/api/vhosts/"+s.Vhost, "") })
	if err := mg.call(ctx, http.MethodPut, "/api/permissions/"+s.Vhost+"/"+mg.user, `{"configure":".*","write":".*","read":".*"}`); err != nil {
		return nil, fmt.Errorf("grant vhost permissions: %w", err)
	}
	au, err := url.Parse(o.AMQPURL)
	if err != nil {
		return nil, fmt.Errorf("AMQP URL: %w", err)
	}
	au.Path = "/" + s.Vhost
	amqpURL := au.String()

	// Postgres: a database of our own.
	db := "bench_" + id
	admin, err := pgx.Connect(ctx, o.PGAdminURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE "+db)
	_ = admin.Close(ctx)
	if err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	s.cleanup = append(s.cleanup, func() {
		c, err := pgx.Connect(context.Background(), o.PGAdminURL)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
			_ = c.Close(context.Background())
		}
	})
	pu, _ := url.Parse(o.PGAdminURL)
	pu.Path = "/" + db
	s.PGURL = pu.String()

	ports := make([]int, 5)
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			return nil, err
		}
	}
	bport, gport, aport, cport, baport := ports[0], ports[1], ports[2], ports[3], ports[4]
	s.Backend = fmt.Sprintf("http://127.0.0.1:%d", baport)
	s.Gateway = fmt.Sprintf("http://127.0.0.1:%d", gport)
	s.Ceiling = fmt.Sprintf("http://127.0.0.1:%d", cport)
	s.Admin = fmt.Sprintf("http://127.0.0.1:%d", aport)

	env := append(os.Environ(),
		"SECKILL_REDIS_ADDR="+o.RedisAddr, "SECKILL_AMQP_URL="+amqpURL, "SECKILL_PG_URL="+s.PGURL,
		"SECKILL_ADMIN_TOKEN="+o.AdminToken, "SECKILL_TOKEN_KEY="+o.TokenKey, "SECKILL_BASELINES=1",
		fmt.Sprintf("SECKILL_BACKEND_LISTEN=127.0.0.1:%d", bport), fmt.Sprintf("SECKILL_BACKEND_ADMIN_LISTEN=127.0.0.1:%d", baport),
		fmt.Sprintf("SECKILL_BACKEND=127.0.0.1:%d", bport))
	env = append(env, o.Env...)

	pid, stop, exited, err := startProc(filepath.Join(bin, "seckill-backend"), nil, env, filepath.Join(s.LogDir, "backend.log"))
	if err != nil {
		return nil, err
	}
	s.BackendPID = pid
	s.cleanup = append(s.cleanup, stop)
	if err := waitHTTP(ctx, s.Backend+"/healthz", filepath.Join(s.LogDir, "backend.log"), exited); err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}

	cf := o.Caddyfile
	if cf == "" {
		cf = filepath.Join(o.Root, "Caddyfile")
	}
	src, err := os.ReadFile(cf)
	if err != nil {
		return nil, err
	}
	conf, err := GatewayConfig(string(src), gport, aport, cport, o.ExtraGlobal)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cf, err)
	}
	confPath := filepath.Join(tmp, "Caddyfile")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	pid, stop, exited, err = startProc(filepath.Join(bin, "caddy"), []string{"run", "--config", confPath, "--adapter", "caddyfile"},
		env, filepath.Join(s.LogDir, "gateway.log"))
	if err != nil {
		return nil, err
	}
	s.GatewayPID = pid
	s.cleanup = append(s.cleanup, stop)
	if err := waitHTTP(ctx, s.Ceiling+"/", filepath.Join(s.LogDir, "gateway.log"), exited); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return s, nil
}

func startProc(path string, args, env []string, logPath string) (int, func(), <-chan struct{}, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return 0, nil, nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return 0, nil, nil, fmt.Errorf("start %s: %w", path, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done); logf.Close() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	return cmd.Process.Pid, stop, done, nil
}

func waitHTTP(ctx context.Context, u, logPath string, exited <-chan struct{}) error {
	deadline := time.Now().Add(60 * time.Second)
	c := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("the process exited before %s answered; log tail:\n%s", u, LogTail(logPath))
		default:
		}
		if resp, err := c.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer within 60 s; log tail:\n%s", u, LogTail(logPath))
}

// LogTail is the last 3 000 bytes of a log file, for error messages about a process.
func LogTail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

func waitRedis(ctx context.Context, addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("redis-server on %s exited", addr)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_, _ = c.Write([]byte("PING\r\n"))
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			b := make([]byte, 7)
			n, _ := c.Read(b)
			c.Close()
			if string(b[:n]) == "+PONG\r\n" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("redis-server on %s did not answer", addr)
}

type mgmt struct {
	base, user, pass string
}

func mgmtClient(raw string) mgmt {
	u, err := url.Parse(raw)
	if err != nil {
		return mgmt{base: raw}
	}
	m := mgmt{user: "guest", pass: "guest"}
	if u.User != nil {
		m.user = u.User.Username()
		m.pass, _ = u.User.Password()
	}
	u.User = nil
	m.base = strings.TrimRight(u.String(), "/")
	return m
}

func (m mgmt) call(ctx context.Context, method, path, body string) error {
	req, err := http.NewRequestWithContext(ctx, method, m.base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.SetBasicAuth(m.user, m.pass)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return nil
}

// ProcCPU is the CPU time a process has used so far (user + system), 0 if unknown.
func ProcCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields after its closing parenthesis are
	// fixed: utime and stime are the 12th and 13th of them, in clock ticks (100 per second on
	// Linux, USER_HZ).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond
}

// PeakRSS is a process's peak resident memory (VmHWM) in KiB, 0 if unknown.
func PeakRSS(pid int) int { return int(procStatusKB(pid, "VmHWM")) }

// procStatusKB reads one KiB-valued field (VmRSS, VmHWM, ...) of /proc/<pid>/status, 0 if unknown.
func procStatusKB(pid int, field string) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb
		}
	}
	return 0
}
