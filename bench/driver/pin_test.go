package driver

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startTree starts sh running script and returns it; the test ends it.
func startTree(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// waitChildren waits until pid has n live descendants and returns the tree.
func waitChildren(t *testing.T, pid, n int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tree := scanProcs().tree(pid)
		if len(tree) >= n+1 {
			return tree
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d has %d descendants, want %d", pid, len(tree)-1, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPinningPutsTheServerTreeAndItsLaterChildrenOnTheServerCPUs(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("pinning needs two CPUs")
	}
	// A parent with one child now, and another child forked after the pinning began.
	cmd := exec.Command("sh", "-c", "sleep 60 & read x; sleep 60 & wait")
	fork, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	srv := cmd
	before := waitChildren(t, srv.Process.Pid, 1)
	p, err := StartPinning(func() []int { return []int{srv.Process.Pid} }, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	for _, pid := range before {
		s, err := Affinity(pid)
		if err != nil || s != p.Servers {
			t.Fatalf("server process %d: affinity %v (%v), want the server CPUs %s", pid, cpus(s), err, p.ServerCPUs)
		}
	}
	self, _ := Affinity(0)
	if self != p.Load {
		t.Fatalf("this thread runs on %v, want the load CPU %s", cpus(self), p.LoadCPU)
	}
	if _, err := fork.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	after := waitChildren(t, srv.Process.Pid, 2)
	for _, pid := range after {
		s, _ := Affinity(pid)
		if s != p.Servers {
			t.Fatalf("process %d forked after pinning runs on %v, want %s", pid, cpus(s), p.ServerCPUs)
		}
	}
	if p.Err() != nil {
		t.Fatal(p.Err())
	}
	p.Stop() // and again by the defer: Stop is idempotent
	if s, _ := Affinity(0); s.Count() < 2 {
		t.Fatalf("after Stop this process still runs on %v only", cpus(s))
	}
}

func cpus(s unix.CPUSet) string {
	var out []string
	for c := 0; c < 64; c++ {
		if s.IsSet(c) {
			out = append(out, strconv.Itoa(c))
		}
	}
	return strings.Join(out, ",")
}

func TestTreeCPUKeepsTheTimeOfChildrenThatExited(t *testing.T) {
	// The child (this test binary as a helper) burns 0.3 s of CPU and exits; the parent reaps it
	// and lives on, like a postmaster after a backend's connection closed.
	dir := t.TempDir()
	srv := startTree(t, "BENCH_BURN_HELPER=1 '"+os.Args[0]+"' -test.run=TestBurnHelper; touch "+dir+"/done; sleep 60")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if exec.Command("test", "-e", dir+"/done").Run() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never finished")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := scanProcs().treeCPU(srv.Process.Pid); got < 290*time.Millisecond {
		t.Fatalf("tree CPU %v after a child burned 0.3 s and was reaped, want >= 0.3 s", got)
	}
}

// TestBurnHelper is the child of the test above: it burns 0.3 s of CPU time, then exits.
func TestBurnHelper(t *testing.T) {
	if os.Getenv("BENCH_BURN_HELPER") != "1" {
		return
	}
	var ru syscall.Rusage
	x := 0
	for {
		for i := 0; i < 1e6; i++ {
			x += i
		}
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		if used >= 300*time.Millisecond {
			os.Exit(x & 0)
		}
	}
}

func TestServersStartedAfterPinSelfToServersAreBornOnTheServerCPUs(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("pinning needs two CPUs")
	}
	_, servers, _, _, err := SplitCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if err := PinSelfToServers(); err != nil {
		t.Fatal(err)
	}
	// Give this process every CPU back whatever happens (StartPinning would move it to the load CPU).
	t.Cleanup(func() {
		p, err := StartPinning(func() []int { return nil }, time.Hour)
		if err == nil {
			p.Stop()
		}
	})
	srv := startTree(t, "sleep 60")
	if s, _ := Affinity(srv.Process.Pid); s != servers {
		t.Fatalf("a server started after PinSelfToServers runs on %v, want %v", cpus(s), cpus(servers))
	}
}
