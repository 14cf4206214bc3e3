package chaos

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/seckilledge/seckill/internal/proc"
)

// Proc is one process of the run that the schedule may stop cleanly, kill with SIGKILL and
// start again: a private Redis, RabbitMQ or Postgres, a gateway, a backend (internal/proc
// supervises them). Every Proc is the run's own: nothing shared with other users of the
// machine is ever stopped.
type Proc struct {
	*proc.Server
	// ctl runs the server's control tool (rabbitmqctl), for faults that are not a stop.
	ctl func(timeout time.Duration, args ...string) error
}

// newProgram is a gateway or backend of the run: path with args, logging to log.
func newProgram(name, addr, log, path string, args, env []string, readyURL string) *Proc {
	s := &proc.Server{Name: name, Addr: addr, Log: log, Ready: proc.HTTPReady(readyURL)}
	s.Spawn = func(context.Context) (*proc.Process, error) {
		return proc.Start(proc.Spec{Path: path, Args: args, Env: env, Log: log})
	}
	return &Proc{Server: s}
}

// newRedis is a private redis-server with the stack's durability settings (proc.AOFEverySec).
// A clean stop (SIGTERM) makes Redis write and fsync the AOF before it exits; a kill does not
// (see docs/chaos.md for what that can cost).
func newRedis(dir string) (*Proc, error) {
	port, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	s, err := proc.NewRedis(dir, port, append(proc.AOFEverySec, "--maxclients", "10000")...)
	if err != nil {
		return nil, err
	}
	return &Proc{Server: s}, nil
}

// newPostgres is a private Postgres 15 cluster under dir: Stop is a fast shutdown, Kill an
// immediate one (no checkpoint: crash recovery at the next start).
func newPostgres(dir string) (*Proc, error) {
	port, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	s, err := proc.NewPostgres(dir, port)
	if err != nil {
		return nil, err
	}
	return &Proc{Server: s}, nil
}

// pgURL is the URL of database db on a private Postgres.
func pgURL(p *Proc, db string) string { return proc.PGURL(p.Server, db) }

// newRabbit is a private RabbitMQ node (proc.NewRabbit): Stop is `rabbitmqctl stop`.
func newRabbit(dir, name string) (*Proc, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	r, err := proc.NewRabbit(dir, name)
	if err != nil {
		return nil, err
	}
	return &Proc{Server: r.Server, ctl: r.Ctl}, nil
}

// amqpURL is the URL of a private RabbitMQ's default vhost.
func amqpURL(p *Proc) string { return "amqp://guest:guest@" + p.Addr + "/" }
