package testenv

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// tcpListen is the state of a listening socket in /proc/net/tcp (TCP_LISTEN).
const tcpListen = 0x0A

// Listening counts the sockets listening on TCP port (IPv4 and IPv6), from /proc/net/tcp and
// /proc/net/tcp6 as procfs reads them.
func Listening(port int) (int, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		lines, err := read()
		if errors.Is(err, os.ErrNotExist) {
			continue // no IPv6
		}
		if err != nil {
			return 0, err
		}
		for _, l := range lines {
			if l.LocalPort == uint64(port) && l.St == tcpListen {
				n++
			}
		}
	}
	return n, nil
}

// WaitListening waits until exactly n sockets listen on port. Caddy's reload returns once the
// old servers have begun to shut down, not once they are gone: the old config's socket, bound
// beside the new one with SO_REUSEPORT, may still take a connection and then close with it
// queued. A test that checks what a request meets after a reload waits for the old socket to
// be closed first.
func WaitListening(t testing.TB, port, n int) {
	t.Helper()
	WaitFor(t, 10*time.Second, fmt.Sprintf("%d socket(s) listening on port %d", n, port), func() bool {
		got, err := Listening(port)
		if err != nil {
			t.Fatal(err)
		}
		return got == n
	})
}
