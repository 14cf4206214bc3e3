package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
)

// gatewayProfile is -gateway-pprof: the gateway's own CPU profile over each contestant's rush
// (Caddy's admin endpoint serves /debug/pprof), and its allocation profile at the end, to see
// what a request costs inside the gateway.
type gatewayProfile struct {
	dir     *string
	seconds *int
	wg      sync.WaitGroup
}

func addGatewayProfileFlags(fs *flag.FlagSet) *gatewayProfile {
	return &gatewayProfile{
		dir:     fs.String("gateway-pprof", "", "write the gateway's CPU profile over each rush (gateway-cpu-<kind>.pprof) and its allocation profile at the end (gateway-allocs.pprof) here"),
		seconds: fs.Int("gateway-pprof-seconds", 8, "length of each CPU profile, from the start of the rush (keep it within -duration)"),
	}
}

// around is the crowd.Options.AroundRush of -gateway-pprof (nil without it).
func (g *gatewayProfile) around(ctx context.Context, stack *driver.Stack, logf func(string, ...any)) func(string) func() {
	if *g.dir == "" || stack.Admin == "" {
		return nil
	}
	if err := os.MkdirAll(*g.dir, 0o755); err != nil {
		logf("gateway profile: %v", err)
		return nil
	}
	return func(kind string) func() {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			u := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", stack.Admin, *g.seconds)
			if err := fetchTo(ctx, u, filepath.Join(*g.dir, "gateway-cpu-"+kind+".pprof"), time.Duration(*g.seconds+30)*time.Second); err != nil {
				logf("gateway CPU profile: %v", err)
			}
		}()
		return func() {}
	}
}

// finish waits for the CPU profiles and takes the allocation profile.
func (g *gatewayProfile) finish(ctx context.Context, stack *driver.Stack, logf func(string, ...any)) {
	if *g.dir == "" || stack.Admin == "" {
		return
	}
	g.wg.Wait()
	if err := fetchTo(ctx, stack.Admin+"/debug/pprof/allocs", filepath.Join(*g.dir, "gateway-allocs.pprof"), 30*time.Second); err != nil {
		logf("gateway allocation profile: %v", err)
	}
}

func fetchTo(ctx context.Context, u, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
