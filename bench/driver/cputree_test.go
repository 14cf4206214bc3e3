package driver

import (
	"net"
	"os"
	"testing"
)

func TestListenerPIDFindsTheProcessHoldingThePort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if got := ListenerPID(port); got != os.Getpid() {
		t.Fatalf("ListenerPID(%d) = %d, want this process %d", port, got, os.Getpid())
	}
	ln.Close()
	if got := ListenerPID(port); got != 0 {
		t.Fatalf("after the listener closed: ListenerPID = %d, want 0", got)
	}
}

func TestCommandCostsArePerRequestAndCostliestFirst(t *testing.T) {
	before := map[string]cmdStat{"evalsha": {calls: 100, usec: 1000}, "get": {calls: 10, usec: 10}}
	after := map[string]cmdStat{"evalsha": {calls: 300, usec: 5000}, "get": {calls: 410, usec: 410}, "ping": {calls: 0}}
	got := commandCosts(before, after, 100)
	if len(got) != 2 || got[0].Command != "evalsha" || got[1].Command != "get" {
		t.Fatalf("got %+v, want evalsha then get (ping did not run)", got)
	}
	if e := got[0]; e.CallsPerReq != 2 || e.UsecPerCall != 20 || e.UsecPerRequest != 40 {
		t.Fatalf("evalsha %+v: want 2 calls per request of 20 µs, 40 µs per request", e)
	}
	if g := got[1]; g.CallsPerReq != 4 || g.UsecPerCall != 1 {
		t.Fatalf("get %+v: want 4 calls per request of 1 µs", g)
	}
}
