package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/nginxgate"
	"github.com/seckilledge/seckill/bench/scenario/crowd"
)

// onePassFlags are the comparison's instruments: the peer (nginx + lua gate) and the capacity search
// under a latency objective (docs/bench.md, "The peer" and "Capacity under an SLO").
type onePassFlags struct {
	peerDir                                *string
	sloP99, sloProbe                       *time.Duration
	sloStart, sloMin, sloMax, sloTolerance *float64
	sloProbes                              *int
	sloConns                               *int
}

func addOnePassFlags(fs *flag.FlagSet) onePassFlags {
	d := crowd.DefaultSLO()
	return onePassFlags{
		peerDir:      fs.String("peer-dir", "", "nginx prefix directory of the peer (-only peer, nginx-return; default: <out>/peer)"),
		sloP99:       fs.Duration("slo-p99", d.P99, "the latency objective of -only slo: the p99 a rate must keep"),
		sloProbe:     fs.Duration("slo-probe-duration", 5*time.Second, "length of each open-model probe of the SLO search"),
		sloStart:     fs.Float64("slo-start", d.Start, "first arrival rate (per s) the SLO search probes; it doubles or halves from there, then bisects"),
		sloMin:       fs.Float64("slo-min", d.Min, "lowest rate the SLO search probes"),
		sloMax:       fs.Float64("slo-max", d.Max, "highest rate the SLO search probes"),
		sloTolerance: fs.Float64("slo-tolerance", d.Tolerance, "the SLO search stops when the highest pass and the lowest fail are this close (0.1: 10 %)"),
		sloProbes:    fs.Int("slo-probes", d.MaxProbes, "most probes per contestant of the SLO search"),
		sloConns:     fs.Int("slo-conns", 3000, "most requests in flight in an SLO probe"),
	}
}

func (f onePassFlags) slo() crowd.SLOOptions {
	o := crowd.DefaultSLO()
	o.P99, o.Start, o.Min, o.Max, o.Tolerance, o.MaxProbes = *f.sloP99, *f.sloStart, *f.sloMin, *f.sloMax, *f.sloTolerance, *f.sloProbes
	return o
}

// startPeer starts the peer's nginx on the stack's Redis, with as many workers as this process
// has CPUs now (under -pin, before the pinning starts: the server CPUs, where nginx is then
// born), and adds it to the process trees the run counts and pins.
func startPeer(ctx context.Context, f onePassFlags, out string, stack *driver.Stack) (*nginxgate.Server, error) {
	dir := *f.peerDir
	if dir == "" {
		dir = filepath.Join(out, "peer")
	}
	workers := 1
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() > 0 {
		workers = set.Count()
	}
	s, err := nginxgate.Start(ctx, nginxgate.Options{Dir: dir, RedisAddr: stack.RedisAddr, Workers: workers})
	if err != nil {
		return nil, fmt.Errorf("the peer (nginx + lua gate): %w", err)
	}
	if stack.Others == nil {
		stack.Others = map[string]int{}
	}
	stack.Others[crowd.PeerProcess] = s.PID()
	return s, nil
}
