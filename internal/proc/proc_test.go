package proc

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

func TestCPUTimeReadsThisProcess(t *testing.T) {
	start := CPUTime(os.Getpid())
	// The loop runs until the kernel has counted 300 ms of this process's CPU (getrusage), not
	// for 300 ms of the clock: on a loaded machine the clock's 300 ms may hold almost none.
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	from, giveUp := rusage(), time.Now().Add(time.Minute)
	x := 0
	for rusage()-from < 300*time.Millisecond {
		for range 100000 {
			x++
		}
		if time.Now().After(giveUp) {
			t.Fatal("the busy loop got less than 300 ms of CPU in a minute")
		}
	}
	if used := CPUTime(os.Getpid()) - start; used <= 0 || x == 0 {
		t.Fatalf("a busy loop of 300ms of CPU used %v of CPU by /proc", used)
	}
	if CPUTime(0) != 0 || CPUTime(1<<30) != 0 {
		t.Fatal("an unknown process must read as 0")
	}
}

func TestRSSReadsThisProcess(t *testing.T) {
	rss, peak := RSS(os.Getpid()), PeakRSS(os.Getpid())
	if rss <= 0 || peak < rss {
		t.Fatalf("RSS %d, peak %d: want 0 < RSS <= peak", rss, peak)
	}
	if RSS(0) != 0 || PeakRSS(1<<30) != 0 {
		t.Fatal("an unknown process must read as 0")
	}
	if mem, _ := Machine(); mem <= rss {
		t.Fatalf("machine memory %d is not above this process's RSS %d", mem, rss)
	}
}

// alive reports whether pid runs: a zombie (dead, not yet reaped) does not.
func alive(pid int) bool {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return false
	}
	st, err := p.Stat()
	return err == nil && st.State != "Z"
}

// The fault tests rely on a kill reaching what the process forked (runuser's postgres, the
// Erlang VM behind rabbitmq-server): the whole process group goes.
func TestKillEndsTheWholeProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	p, err := Start(Spec{Path: "sh", Args: []string{"-c", "sleep 300 & echo $! > " + pidFile + "; wait"}, Log: filepath.Join(dir, "log")})
	if err != nil {
		t.Fatal(err)
	}
	var child int
	err = WaitReady(context.Background(), "sh", p, p.Log, 10*time.Second, func(context.Context) bool {
		b, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return child > 0
	})
	if err != nil {
		t.Fatal(err)
	}
	if !alive(child) {
		t.Fatal("the forked child is not running before the kill")
	}
	p.Kill()
	if !p.Exited() {
		t.Fatal("Kill returned before the process exited")
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(child) {
		if time.Now().After(deadline) {
			t.Fatalf("the forked child %d outlived the kill of its group", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWaitReadyGivesUpWithTheLogWhenTheProcessExits(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	p, err := Start(Spec{Path: "sh", Args: []string{"-c", "echo cannot bind port; exit 3"}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = WaitReady(context.Background(), "server", p, log, time.Minute, func(context.Context) bool { return false })
	if err == nil || !strings.Contains(err.Error(), "cannot bind port") || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("err = %v, want the exit and the log's tail", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("WaitReady waited for its timeout after the process had exited")
	}
	if b, _ := os.ReadFile(log); !strings.Contains(string(b), StartMarker+"sh at ") {
		t.Fatalf("the log lacks the start marker:\n%s", b)
	}
}
