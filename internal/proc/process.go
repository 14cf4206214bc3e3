// Package proc supervises the processes that tests, seckill-bench and seckill-chaos start:
// each in a process group of its own (so a signal reaches the helpers it forks), logging to a
// file, dying with its parent, waited on by one goroutine. Server adds what fault tests need
// on top: stop, kill and start the same service again. Private Redis, Postgres and RabbitMQ
// servers are built here once (servers.go); /proc figures come from prometheus/procfs.
package proc

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Spec says how to start one process.
type Spec struct {
	Path string
	Args []string
	// Env is the whole environment (nil: this process's).
	Env []string
	// Log receives stdout and stderr, appended: a restarted process continues its log.
	// Empty: both are discarded.
	Log string
	// DeathSignal is what the child gets when this process dies (default SIGKILL), so nothing
	// outlives a crashed test or benchmark.
	DeathSignal syscall.Signal
}

// Process is one started process.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
	// Log is the log file of the process ("" when discarded).
	Log string
}

// Start starts the process in a process group of its own.
func Start(s Spec) (*Process, error) {
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Env = s.Env
	sig := s.DeathSignal
	if sig == 0 {
		sig = syscall.SIGKILL
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
	var logf *os.File
	if s.Log != "" {
		f, err := os.OpenFile(s.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(f, "\n%s%s at %s\n", StartMarker, filepath.Base(s.Path), time.Now().UTC().Format(time.RFC3339Nano))
		cmd.Stdout, cmd.Stderr, logf = f, f, f
	}
	err := cmd.Start()
	if logf != nil {
		logf.Close() // the child has its own copy of the descriptor
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Path, err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{}), Log: s.Log}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal signals the whole process group, so helpers the process forked get it too.
func (p *Process) Signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	_ = p.cmd.Process.Signal(sig)
}

// Wait waits up to d for the process to exit; true when it did.
func (p *Process) Wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// Stop sends SIGTERM and waits up to grace for a clean exit, then kills.
func (p *Process) Stop(grace time.Duration) {
	p.Signal(syscall.SIGTERM)
	if !p.Wait(grace) {
		p.Kill()
	}
}

// Kill sends SIGKILL (no shutdown, no flush) and waits for the process to be gone.
func (p *Process) Kill() {
	p.Signal(syscall.SIGKILL)
	<-p.done
}

// WaitReady polls ready every interval until it is true. It gives up with the log's tail when
// the process exits first (p may be nil for a daemonized process), when timeout passes, or when
// ctx ends.
func WaitReady(ctx context.Context, name string, p *Process, log string, timeout time.Duration, ready func(context.Context) bool) error {
	deadline := time.Now().Add(timeout)
	for !ready(ctx) {
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited before it answered; log tail:\n%s", name, LogTail(log))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %v; log tail:\n%s", name, timeout, LogTail(log))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// LogTail is the last 3 000 bytes of a log file, for error messages about a process.
func LogTail(path string) string {
	if path == "" {
		return "(no log)"
	}
	b, _ := os.ReadFile(path)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// StartMarker opens the lines Start appends to a log at each start, so a reader can find
// where the latest run of the process begins.
const StartMarker = "=== start "

// HTTPReady is a Ready check: a GET of u answered with a status below 500.
func HTTPReady(u string) func(context.Context) bool {
	client := &http.Client{Timeout: time.Second}
	return func(ctx context.Context) bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return false
		}
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode < 500
	}
}
