package proc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// A port is chosen free and handed to a server that binds it later, so two choices must never
// meet: Caddy binds every listener with SO_REUSEPORT, so a second Caddy listener on a port
// already bound does not fail, it shares it. A Caddy whose admin endpoint (127.0.0.1:P) and
// one of its sites (:P) got the same port starts cleanly, and the kernel gives every loopback
// connection to P to the more specific address, the admin endpoint, which answers 404 to all
// of the site's requests; a second Caddy process on P takes connections from the first.
//
// FreePort therefore reserves what it hands out, for the life of the process: this process
// never hands out a port twice, and while it lives no other process that uses FreePort (every
// test binary, seckill-bench, seckill-chaos) hands out that port either. The reservation across
// processes is an exclusive flock on a file named after the port in PortLockDir, kept open
// until the process exits (the kernel drops the lock then, also after a crash). The kernel
// chooses the candidates (bind to port 0): a port some other program holds is never offered.

// PortLockDir holds one lock file per port reserved by a live process of this user (only
// processes of the same user can share a port through SO_REUSEPORT).
var PortLockDir = filepath.Join(os.TempDir(), "seckill-ports-"+strconv.Itoa(os.Getuid()))

var reserved struct {
	sync.Mutex
	ports map[int]*os.File // the lock file of each port this process handed out
}

// listenLoopback asks the kernel for a free loopback port (a variable so a test can offer
// the same port again, as the kernel may).
var listenLoopback = func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// maxCandidates bounds the ports FreePort tries before it gives up.
const maxCandidates = 256

// FreePort returns a loopback TCP port that was free a moment ago and that no FreePort of
// this or another live process has handed out (see above).
func FreePort() (int, error) {
	reserved.Lock()
	defer reserved.Unlock()
	if reserved.ports == nil {
		reserved.ports = map[int]*os.File{}
	}
	if err := os.MkdirAll(PortLockDir, 0o700); err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	// The candidates' listeners stay open until one is chosen, so the kernel offers a new
	// port each time instead of the one just refused.
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range maxCandidates {
		l, err := listenLoopback()
		if err != nil {
			return 0, err
		}
		held = append(held, l)
		p := l.Addr().(*net.TCPAddr).Port
		if _, mine := reserved.ports[p]; mine {
			continue
		}
		f, err := lockPort(p)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			continue // another live process handed it out
		}
		if err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		reserved.ports[p] = f
		return p, nil
	}
	return 0, fmt.Errorf("free port: %d candidates in a row were already handed out", maxCandidates)
}

// lockPort takes the exclusive lock of port's file without waiting (EWOULDBLOCK when another
// process holds it) and returns the open file that holds the lock.
func lockPort(port int) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(PortLockDir, strconv.Itoa(port)), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// FreePorts returns n distinct free loopback ports, each reserved as FreePort's.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for len(ports) < n {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ports = append(ports, p)
	}
	return ports, nil
}
