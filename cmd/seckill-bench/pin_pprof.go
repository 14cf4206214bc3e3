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

	"github.com/seckilledge/seckill/bench"
)

// gatewayProfile is -gateway-pprof: the gateway's own CPU profile (Caddy's admin endpoint
// serves /debug/pprof) over the first seconds of the run, and its allocation profile at the
// end, to see what a request costs inside the gateway.
type gatewayProfile struct {
	dir     *string
	seconds *int
}

func addGatewayProfileFlags(fs *flag.FlagSet) gatewayProfile {
	return gatewayProfile{
		dir:     fs.String("gateway-pprof", "", "write the gateway's CPU profile (gateway-cpu.pprof, the first -gateway-pprof-seconds of the contestants) and allocation profile (gateway-allocs.pprof, at the end) here"),
		seconds: fs.Int("gateway-pprof-seconds", 20, "length of the gateway CPU profile"),
	}
}

// start begins the CPU profile; the returned func waits for it and takes the allocation profile.
func (g gatewayProfile) start(ctx context.Context, stack *bench.Stack, logf func(string, ...any)) func() {
	if *g.dir == "" || stack.Admin == "" {
		return func() {}
	}
	if err := os.MkdirAll(*g.dir, 0o755); err != nil {
		logf("gateway profile: %v", err)
		return func() {}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		u := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", stack.Admin, *g.seconds)
		if err := fetchTo(ctx, u, filepath.Join(*g.dir, "gateway-cpu.pprof"), time.Duration(*g.seconds+30)*time.Second); err != nil {
			logf("gateway CPU profile: %v", err)
		}
	}()
	return func() {
		wg.Wait()
		if err := fetchTo(ctx, stack.Admin+"/debug/pprof/allocs", filepath.Join(*g.dir, "gateway-allocs.pprof"), 30*time.Second); err != nil {
			logf("gateway allocation profile: %v", err)
		}
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
