package bench

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

// privateServices starts a RabbitMQ node (with its management API, which the run uses for its
// vhost and the dead-letter check) and a Postgres cluster of the run's own under dir, so that
// their CPU per request counts this run's work only and pinning them touches nobody else's
// servers. It fills o's URLs and s's pids and cleanups.
func privateServices(ctx context.Context, s *Stack, o *StartOptions, dir, id string) error {
	// Postgres runs as the postgres user: it must reach its directory inside the run's temp dir.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	pgPort, err := proc.FreePort()
	if err != nil {
		return err
	}
	pg, err := proc.NewPostgres(filepath.Join(dir, "postgres"), pgPort)
	if err != nil {
		return err
	}
	pg.StartTimeout = 120 * time.Second
	s.cleanup = append(s.cleanup, func() { _ = pg.Stop(context.Background()) })
	if err := pg.Start(ctx); err != nil {
		return err
	}
	o.PGAdminURL = proc.PGURL(pg, "postgres")
	s.PostgresPID = ListenerPID(pgPort) // pg_ctl daemonizes: the postmaster holds the port

	r, err := proc.NewRabbit(filepath.Join(dir, "rabbit"), "bench-"+id)
	if err != nil {
		return err
	}
	mport, err := proc.FreePort()
	if err != nil {
		return err
	}
	rdir := filepath.Join(dir, "rabbit")
	if err := os.WriteFile(filepath.Join(rdir, "enabled_plugins"), []byte("[rabbitmq_management].\n"), 0o644); err != nil {
		return err
	}
	conf, err := os.OpenFile(filepath.Join(rdir, "rabbitmq.conf"), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(conf, "management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = %d\n", mport)
	if cerr := conf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	r.StartTimeout = 180 * time.Second
	s.cleanup = append(s.cleanup, func() { _ = r.Stop(context.Background()) })
	if err := r.Start(ctx); err != nil {
		return err
	}
	o.AMQPURL = r.AMQPURL()
	o.MgmtURL = "http://guest:guest@127.0.0.1:" + strconv.Itoa(mport)
	s.MgmtURL = o.MgmtURL
	s.RabbitPID = r.PID() // rabbitmq-server's script; beam.smp is in its tree
	// The management listener comes up after AMQP: wait for it, the run creates its vhost there.
	deadline := time.Now().Add(120 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, o.MgmtURL+"/api/overview", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("RabbitMQ management API on port %d did not answer (log %s)", mport, r.Log)
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}
