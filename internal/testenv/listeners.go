package testenv

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// Listening counts the sockets listening on TCP port (IPv4 and IPv6), from /proc/net/tcp and
// /proc/net/tcp6.
func Listening(port int) (int, error) {
	n := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return 0, err
		}
		sc := bufio.NewScanner(file)
		sc.Scan() // the header
		want := fmt.Sprintf(":%04X", port)
		for sc.Scan() {
			// sl local_address rem_address st ...: the state 0A is LISTEN.
			fields := strings.Fields(sc.Text())
			if len(fields) > 3 && strings.HasSuffix(fields[1], want) && fields[3] == "0A" {
				n++
			}
		}
		err = sc.Err()
		file.Close()
		if err != nil {
			return 0, err
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
