package proc

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// Server is a service a fault test may stop cleanly, kill and start again: a private Redis,
// RabbitMQ or Postgres, a gateway, a backend. Every Server is the caller's own (private ports,
// private data): nothing shared with other users of the machine is ever stopped.
type Server struct {
	Name string
	// Addr is what clients dial (host:port).
	Addr string
	// Log is the process's log file.
	Log string
	// StartTimeout bounds Start's wait for Ready (default 90 s).
	StartTimeout time.Duration

	// Spawn starts the process. It returns nil for a service that daemonizes (pg_ctl), which
	// Stop and Kill must then reach through StopFn and KillFn.
	Spawn func(ctx context.Context) (*Process, error)
	// Ready reports whether the service answers.
	Ready func(ctx context.Context) bool
	// StopFn stops cleanly (default: SIGTERM to the process group, SIGKILL after 30 s).
	StopFn func(ctx context.Context) error
	// KillFn kills without notice (default: SIGKILL to the process group).
	KillFn func() error

	mu sync.Mutex
	p  *Process
}

// Process is the running process (nil when stopped or daemonized).
func (s *Server) Process() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// PID is the process id of the running process (0 when stopped or daemonized).
func (s *Server) PID() int {
	if p := s.Process(); p != nil && !p.Exited() {
		return p.PID()
	}
	return 0
}

// Running reports whether the spawned process is alive.
func (s *Server) Running() bool {
	p := s.Process()
	return p != nil && !p.Exited()
}

// Start starts the process and waits until it answers.
func (s *Server) Start(ctx context.Context) error {
	p, err := s.Spawn(ctx)
	if err != nil {
		return fmt.Errorf("start %s: %w", s.Name, err)
	}
	s.mu.Lock()
	s.p = p
	s.mu.Unlock()
	timeout := s.StartTimeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	return WaitReady(ctx, s.Name+" on "+s.Addr, p, s.Log, timeout, s.Ready)
}

// Stop asks the service to shut down cleanly and waits for it.
func (s *Server) Stop(ctx context.Context) error {
	p := s.Process()
	var err error
	if s.StopFn != nil {
		err = s.StopFn(ctx)
		if p != nil && !p.Wait(30*time.Second) {
			p.Kill()
		}
	} else if p != nil {
		p.Stop(30 * time.Second)
	}
	s.forget(p)
	return err
}

// Kill kills the service without notice and waits for the process to be gone.
func (s *Server) Kill() error {
	p := s.Process()
	var err error
	if s.KillFn != nil {
		err = s.KillFn()
		if p != nil && !p.Wait(10*time.Second) {
			p.Kill()
		}
	} else if p != nil {
		p.Kill()
	}
	s.forget(p)
	return err
}

// Signal signals the process group of the running process.
func (s *Server) Signal(sig syscall.Signal) {
	if p := s.Process(); p != nil {
		p.Signal(sig)
	}
}

func (s *Server) forget(p *Process) {
	s.mu.Lock()
	if s.p == p {
		s.p = nil
	}
	s.mu.Unlock()
	s.waitPortFree(15 * time.Second)
}

// waitPortFree waits until nothing listens on the server's address any more, so that a Start
// right after a Stop or a Kill can bind it. The process waited on may not be the last one
// holding the socket: RabbitMQ's start script exits before the Erlang VM it started has closed
// its listener, and a restart in that gap failed with eaddrinuse (TestPrivateRabbitRestarts,
// under a loaded make test). Bounded: a port that stays taken is the next Start's error to report.
func (s *Server) waitPortFree(timeout time.Duration) {
	if s.Addr == "" {
		return
	}
	deadline := time.Now().Add(timeout)
	for {
		l, err := net.Listen("tcp", s.Addr)
		if err == nil {
			_ = l.Close()
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
