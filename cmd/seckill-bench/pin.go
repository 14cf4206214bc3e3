package main

import (
	"flag"
	"fmt"
	"runtime"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/scenario/crowd"
)

// pinFlags are -pin and -private-services: measure the servers apart from the load.
type pinFlags struct {
	pin, private *bool
}

func addPinFlags(fs *flag.FlagSet) pinFlags {
	return pinFlags{
		pin:     fs.Bool("pin", false, "run the load generator on the first CPU and every server process (gateway, backend, Redis, RabbitMQ, Postgres and their children) on the others"),
		private: fs.Bool("private-services", false, "start a RabbitMQ node and a Postgres cluster of the run's own (their CPU per request is then this run's alone, and -pin moves nobody else's servers)"),
	}
}

// beforeStack runs before the stack starts: with -pin, the servers the run starts are born on
// the server CPUs (driver.PinSelfToServers).
func (f pinFlags) beforeStack() error {
	if !*f.pin {
		return nil
	}
	return driver.PinSelfToServers()
}

// startPinning pins the run when -pin is set and returns what undoes it. Shared RabbitMQ and
// Postgres servers are left where they are (other users' work runs there): their CPU is still
// counted, and a note says they were not pinned.
func (f pinFlags) start(stack *driver.Stack, res *crowd.Result, logf func(string, ...any)) (func(), error) {
	if !*f.pin {
		return func() {}, nil
	}
	roots := func() []int {
		r := []int{stack.GatewayPID, stack.BackendPID, stack.RedisPID}
		if !stack.Shared {
			r = append(r, stack.RabbitPID, stack.PostgresPID)
		}
		for _, pid := range stack.Others {
			r = append(r, pid)
		}
		return r
	}
	p, err := driver.StartPinning(roots, 250*time.Millisecond)
	if err != nil {
		return nil, fmt.Errorf("-pin: %w", err)
	}
	// The runtime sized GOMAXPROCS for every CPU; on one CPU more Ps only take turns.
	procs := runtime.GOMAXPROCS(p.Load.Count())
	res.Pinned = true
	note := fmt.Sprintf("pinned: the load generator on CPU %s, the servers' process trees on CPU %s (started there, so they size their threads to it; re-applied every 250 ms to new processes and threads)",
		p.LoadCPU, p.ServerCPUs)
	if stack.Shared {
		note += "; the shared RabbitMQ and Postgres were NOT pinned (use -private-services)"
	}
	logf("%s; %d server processes pinned", note, p.Processes())
	return func() {
		p.Refresh()
		n, perr := p.Processes(), p.Err()
		p.Stop()
		runtime.GOMAXPROCS(procs)
		note += fmt.Sprintf("; %d server processes pinned over the run", n)
		if perr != nil {
			note += fmt.Sprintf(" (first failure: %v)", perr)
		}
		res.Notes = append(res.Notes, note)
	}, nil
}
