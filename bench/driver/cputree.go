package driver

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
)

// procTable is one scan of /proc: each process's parent and CPU counters. Postgres forks a
// backend per connection and RabbitMQ's beam.smp starts helpers, so a server's cost is the
// cost of its whole process tree, not of one pid.
type procTable struct {
	children map[int][]int
	stat     map[int]procfs.ProcStat
}

func scanProcs() procTable {
	t := procTable{children: map[int][]int{}, stat: map[int]procfs.ProcStat{}}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return t
	}
	ps, err := fs.AllProcs()
	if err != nil {
		return t
	}
	for _, p := range ps {
		st, err := p.Stat()
		if err != nil {
			continue // exited since the directory was listed
		}
		t.stat[p.PID] = st
		t.children[st.PPID] = append(t.children[st.PPID], p.PID)
	}
	return t
}

// tree is pid and every live descendant.
func (t procTable) tree(pid int) []int {
	if _, ok := t.stat[pid]; !ok {
		return nil
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, t.children[out[i]]...)
	}
	return out
}

// treeCPU is the CPU time pid's tree has used so far: each live process's user + system time
// plus the time of the children it has reaped (cutime + cstime). A Postgres backend that exits
// during a run moves from "live child" to the postmaster's cutime, so nothing is lost or
// counted twice between two readings, as long as the root itself lives.
func (t procTable) treeCPU(pid int) time.Duration {
	var ticks float64
	for _, p := range t.tree(pid) {
		st := t.stat[p]
		ticks += float64(st.UTime) + float64(st.STime) + float64(st.CUTime) + float64(st.CSTime)
	}
	return time.Duration(ticks / userHZ * float64(time.Second))
}

// userHZ is the kernel's clock tick for /proc/<pid>/stat times: 100 on every Linux that
// procfs supports (it assumes the same).
const userHZ = 100

// ListenerPID is the pid of the process holding a listening TCP socket on 127.0.0.1:port or
// [::]:port, 0 when none is found (or /proc/<pid>/fd is not readable). It finds the pids of
// shared servers (the stack's RabbitMQ and Postgres) to count their CPU.
func ListenerPID(port int) int {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0
	}
	inodes := map[string]bool{}
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		lines, err := read()
		if err != nil {
			continue
		}
		for _, l := range lines {
			if l.LocalPort == uint64(port) && l.St == 0x0A { // TCP_LISTEN
				inodes["socket:["+strconv.FormatUint(l.Inode, 10)+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return 0
	}
	ps, err := fs.AllProcs()
	if err != nil {
		return 0
	}
	for _, p := range ps {
		dir := fmt.Sprintf("/proc/%d/fd", p.PID)
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:[") && inodes[l] {
				return p.PID
			}
		}
	}
	return 0
}
