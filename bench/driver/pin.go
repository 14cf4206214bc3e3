package driver

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Pinner keeps the load generator (this process) on one CPU and the servers' process trees on
// the others, so that what a server costs per request is measured apart from the load. Linux
// affinity is per thread: every thread of a process is set, and threads created later inherit
// the affinity of the thread that creates them. Servers fork during a run (a Postgres backend
// per connection), so the trees are walked again every interval; a fork inherits its parent's
// affinity anyway once the parent is pinned.
type Pinner struct {
	Load, Servers unix.CPUSet
	// LoadCPU and ServerCPUs name the sets for reports ("0", "1").
	LoadCPU, ServerCPUs string

	roots func() []int
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	mu     sync.Mutex
	pinned map[int]bool // server tasks set so far
	err    error
}

// allowed is the CPU set this process was allowed when pinning was first asked for (before
// PinSelfToServers narrowed it).
var allowed = sync.OnceValues(func() (unix.CPUSet, error) {
	var all unix.CPUSet
	err := unix.SchedGetaffinity(0, &all)
	return all, err
})

// SplitCPUs gives the first CPU of this process's allowed set to the load and the rest to the
// servers. It needs at least two allowed CPUs.
func SplitCPUs() (load, servers unix.CPUSet, loadName, serverNames string, err error) {
	all, err := allowed()
	if err != nil {
		return load, servers, "", "", err
	}
	first := true
	for c := 0; c < 1024; c++ {
		if !all.IsSet(c) {
			continue
		}
		if first {
			load.Set(c)
			loadName, first = strconv.Itoa(c), false
			continue
		}
		servers.Set(c)
		if serverNames != "" {
			serverNames += ","
		}
		serverNames += strconv.Itoa(c)
	}
	if servers.Count() == 0 {
		return load, servers, "", "", errors.New("pinning needs at least two CPUs")
	}
	return load, servers, loadName, serverNames, nil
}

// StartPinning pins this process to the load CPU and the trees of roots() to the server CPUs,
// now and every interval until Stop.
func StartPinning(roots func() []int, interval time.Duration) (*Pinner, error) {
	load, servers, ln, sn, err := SplitCPUs()
	if err != nil {
		return nil, err
	}
	p := &Pinner{Load: load, Servers: servers, LoadCPU: ln, ServerCPUs: sn, roots: roots,
		stop: make(chan struct{}), done: make(chan struct{}), pinned: map[int]bool{}}
	if err := pinTasks(os.Getpid(), &p.Load); err != nil {
		return nil, fmt.Errorf("pin the load generator: %w", err)
	}
	p.Refresh()
	go func() {
		defer close(p.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.Refresh()
			}
		}
	}()
	return p, nil
}

// PinSelfToServers moves this process to the server CPUs until StartPinning: the servers the
// run starts from now on are born there and size themselves to those CPUs (Go's GOMAXPROCS,
// Erlang's scheduler count, both read at start), as on a machine of that many cores, instead
// of running more threads than they have CPUs.
func PinSelfToServers() error {
	_, servers, _, _, err := SplitCPUs()
	if err != nil {
		return err
	}
	return pinTasks(os.Getpid(), &servers)
}

// Refresh pins every task of every server tree now (and this process's new threads).
func (p *Pinner) Refresh() {
	_ = pinTasks(os.Getpid(), &p.Load)
	table := scanProcs()
	for _, root := range p.roots() {
		for _, pid := range table.tree(root) {
			err := pinTasks(pid, &p.Servers)
			p.mu.Lock()
			if err == nil {
				p.pinned[pid] = true
			} else if p.err == nil && !errors.Is(err, unix.ESRCH) {
				p.err = fmt.Errorf("pin %d: %w", pid, err)
			}
			p.mu.Unlock()
		}
	}
}

// Processes is how many server processes have been pinned so far.
func (p *Pinner) Processes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pinned)
}

// Err is the first failure to pin a live server process (nil: all pinned).
func (p *Pinner) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Stop ends the refreshes and gives this process every CPU back; the servers stay pinned
// (they are stopped by the run that started them).
func (p *Pinner) Stop() {
	p.once.Do(p.stopOnce)
}

func (p *Pinner) stopOnce() {
	close(p.stop)
	<-p.done
	var all unix.CPUSet
	for c := 0; c < 1024; c++ {
		if p.Load.IsSet(c) || p.Servers.IsSet(c) {
			all.Set(c)
		}
	}
	_ = pinTasks(os.Getpid(), &all)
}

// pinTasks sets the affinity of every thread of pid.
func pinTasks(pid int, set *unix.CPUSet) error {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return unix.ESRCH
	}
	var first error
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) && first == nil {
			first = err
		}
	}
	return first
}

// Affinity is the CPU set of one thread (tid; a pid is its main thread), for tests and checks.
func Affinity(tid int) (unix.CPUSet, error) {
	var s unix.CPUSet
	err := unix.SchedGetaffinity(tid, &s)
	return s, err
}
