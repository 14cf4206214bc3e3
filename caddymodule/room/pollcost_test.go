//go:build integration

package room

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// monitor counts, through Redis's MONITOR, the commands clients send (not those a script runs
// inside, which MONITOR marks "lua") that name key. Each such command is one round trip of its
// own or part of a pipeline: an upper bound of the round trips. A command naming marker sets
// marked: Redis runs commands in order, so every command sent before the marker is counted
// by then.
type monitor struct {
	conn   net.Conn
	count  atomic.Int64
	marked atomic.Bool
	ready  chan struct{}
	done   chan struct{}
}

func startMonitor(t *testing.T, key, marker string) *monitor {
	t.Helper()
	conn, err := net.DialTimeout("tcp", testenv.RedisAddr(), 5*time.Second)
	if err != nil {
		t.Fatalf("redis: %v", err)
	}
	m := &monitor{conn: conn, ready: make(chan struct{}), done: make(chan struct{})}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(m.done)
		r := bufio.NewReaderSize(conn, 1<<20)
		first := true
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if first { // +OK: MONITOR is on
				first = false
				close(m.ready)
				continue
			}
			if strings.Contains(line, " lua]") {
				continue
			}
			switch {
			case strings.Contains(line, `"`+marker+`"`):
				m.marked.Store(true)
			case strings.Contains(line, `"`+key+`"`):
				m.count.Add(1)
			}
		}
	}()
	select {
	case <-m.ready:
	case <-time.After(5 * time.Second):
		t.Fatal("MONITOR did not start")
	}
	t.Cleanup(func() { conn.Close(); <-m.done })
	return m
}

// The room's settings are read once per cache_ttl, not per poll; front_window makes every poll
// ask Redis, whose cost this measures.
var pollCostGateway = gateway(gatewayConfig{Room: map[string]any{"cache_ttl": "10m", "front_window": "10s"}})

func TestAPollCostsOneRedisRoundTrip(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	r := newRoom(t, rdb, 10, -time.Second, time.Hour, roomArgs{Rate: "0.001"})
	gw := pollCostGateway.Base(t)
	a := enter(t, gw, r.Sale, "alice", nil)
	if a.Status != 200 || a.State != "waiting" {
		t.Fatalf("enter: %d %s", a.Status, a.Raw)
	}
	poll(t, gw, r.Sale, "alice", a.Ticket) // the script is loaded, the settings cached

	marker := "seckill:{sale:" + r.Sale + "}:room:marker"
	m := startMonitor(t, contract.RoomKey(r.Sale), marker)
	const polls = 25
	for i := range polls {
		p := poll(t, gw, r.Sale, "alice", a.Ticket)
		if p.Status != 200 || p.State != "waiting" {
			t.Fatalf("poll %d: %d %s", i, p.Status, p.Raw)
		}
	}
	testenv.WaitFor(t, 10*time.Second, "the monitor to see a marker sent after the polls", func() bool {
		rdb.Exists(context.Background(), marker)
		return m.marked.Load()
	})
	if got := m.count.Load(); got != polls {
		t.Fatalf("%d polls sent %d commands naming the room to Redis, want exactly one each (one EVALSHA)", polls, got)
	}
}
