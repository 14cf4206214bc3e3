package proc

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestFreePortsAreDistinct(t *testing.T) {
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] || p <= 0 {
			t.Fatalf("ports %v: duplicate or invalid %d", ports, p)
		}
		seen[p] = true
	}
}

// offered is a real loopback listener that says it is on port: the kernel offering a port
// again, as it may once the port's earlier listener is closed.
type offered struct {
	net.Listener
	port int
}

func (o offered) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: o.port} }

// offer makes the kernel's next offers the given ports, then its own choices again.
func offer(t *testing.T, ports ...int) {
	t.Helper()
	real := listenLoopback
	t.Cleanup(func() { listenLoopback = real })
	listenLoopback = func() (net.Listener, error) {
		l, err := real()
		if err != nil || len(ports) == 0 {
			return l, err
		}
		p := ports[0]
		ports = ports[1:]
		return offered{l, p}, nil
	}
}

// Two separate choices of one process (a Caddy's site, later its admin endpoint) never get the
// same port, even when the kernel offers it again: with SO_REUSEPORT Caddy would bind both
// and the admin endpoint would answer the site's requests.
func TestFreePortNeverHandsOutAPortTwiceInOneProcess(t *testing.T) {
	first, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	offer(t, first, first)
	second, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if second == first || second <= 0 {
		t.Fatalf("second port %d, first %d: handed out twice", second, first)
	}
}

// portHolderEnv makes this test binary a process that reserves ports, prints them and holds
// them until its stdin closes.
const portHolderEnv = "SECKILL_PROC_TEST_PORT_HOLDER"

func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv(portHolderEnv)); err == nil {
		ports, err := FreePorts(n)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(strings.Trim(fmt.Sprint(ports), "[]"))
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the test closes stdin
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A port another live process handed out is skipped, even when the kernel offers it (that
// process's server may not have bound it yet).
func TestFreePortSkipsThePortsOfAnotherLiveProcess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), portHolderEnv+"=3")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the holder printed no ports: %v", err)
	}
	var theirs []int
	for _, f := range strings.Fields(line) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("holder: %q", line)
		}
		theirs = append(theirs, p)
	}
	if len(theirs) != 3 {
		t.Fatalf("holder reserved %v, want 3 ports", theirs)
	}
	offer(t, theirs...)
	got, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range theirs {
		if got == p {
			t.Fatalf("FreePort = %d, a port the live process %d reserved (%v)", got, cmd.Process.Pid, theirs)
		}
	}
	// Once that process is gone its ports are free to reserve again.
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	f, err := lockPort(theirs[0])
	if err != nil {
		t.Fatalf("port %d still locked after its holder exited: %v", theirs[0], err)
	}
	f.Close()
}
