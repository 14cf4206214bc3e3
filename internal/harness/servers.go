package harness

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/seckilledge/seckill/internal/proc"
)

// startServers starts the private servers the options ask for: Redis, then Postgres while
// RabbitMQ (the slow one) comes up.
func (s *Stack) startServers(ctx context.Context, o Options, id string) error {
	if o.PrivateRedis {
		port, err := proc.FreePort()
		if err != nil {
			return err
		}
		// maxclients: a chaos run's buyers reconnect in waves after a fault.
		durability := proc.AOFEverySec
		if o.RedisNoAOF {
			durability = []string{"--appendonly", "no"}
		}
		rs, err := proc.NewRedis(filepath.Join(o.Dir, "redis"), port, append(append([]string{}, durability...), "--maxclients", "10000")...)
		if err != nil {
			return err
		}
		rs.Log = filepath.Join(s.LogDir, "redis.log")
		rs.StartTimeout = 20 * time.Second
		s.onClose(func() { _ = rs.Kill() }) // its data is thrown away
		if err := rs.Start(ctx); err != nil {
			return err
		}
		s.Redis, s.RedisAddr = rs, rs.Addr
	}
	if !o.PrivateServices {
		return nil
	}

	r, err := proc.NewRabbit(filepath.Join(o.Dir, "rabbitmq"), o.Name+id)
	if err != nil {
		return err
	}
	mport := 0
	if o.Management {
		if mport, err = withManagement(r, filepath.Join(o.Dir, "rabbitmq")); err != nil {
			return err
		}
	}
	r.StartTimeout = 180 * time.Second
	s.onClose(func() { _ = r.Stop(context.Background()) })
	rabbitUp := make(chan error, 1)
	go func() { rabbitUp <- r.Start(ctx) }()
	err = s.startPostgres(ctx, o.Name)
	if rerr := <-rabbitUp; err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	s.Rabbit, s.AMQPURL, s.MgmtURL = r, r.AMQPURL(), ""
	if mport == 0 {
		return nil
	}
	// The management listener comes up after AMQP: wait for it, the run creates its vhost there.
	s.MgmtURL = "http://guest:guest@127.0.0.1:" + strconv.Itoa(mport)
	return proc.WaitReady(ctx, "RabbitMQ management API", nil, r.Log, 120*time.Second, func(ctx context.Context) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.MgmtURL+"/api/overview", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// startPostgres starts a private Postgres. It runs as the postgres user, who must reach its
// directory: a fresh one under the system temp dir, not inside Dir (which may sit under an
// unreadable home). Its log is kept in LogDir.
func (s *Stack) startPostgres(ctx context.Context, name string) error {
	dir, err := os.MkdirTemp("", "seckill-"+name+"-pg-")
	if err != nil {
		return err
	}
	port, err := proc.FreePort()
	if err != nil {
		return err
	}
	pg, err := proc.NewPostgres(dir, port)
	if err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	pg.StartTimeout = 120 * time.Second
	s.onClose(func() {
		_ = pg.Kill() // immediate: the data is thrown away
		if b, err := os.ReadFile(pg.Log); err == nil {
			_ = os.WriteFile(filepath.Join(s.LogDir, "postgres.log"), b, 0o644)
		}
		_ = os.RemoveAll(dir)
	})
	if err := pg.Start(ctx); err != nil {
		return err
	}
	s.Postgres = pg
	return nil
}

// withManagement enables the management plugin of a private node (configured in dir) on a
// free port, and returns the port.
func withManagement(r *proc.Rabbit, dir string) (int, error) {
	mport, err := proc.FreePort()
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, "enabled_plugins"), []byte("[rabbitmq_management].\n"), 0o644); err != nil {
		return 0, err
	}
	conf, err := os.OpenFile(filepath.Join(dir, "rabbitmq.conf"), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	_, err = fmt.Fprintf(conf, "management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = %d\n", mport)
	if cerr := conf.Close(); err == nil {
		err = cerr
	}
	return mport, err
}
