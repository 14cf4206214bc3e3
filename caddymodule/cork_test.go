package caddymodule

import (
	"bytes"
	"io"
	"net"
	"testing"
)

// countingConn records each write it is given.
type countingConn struct {
	net.Conn
	writes [][]byte
	closed bool
	fail   error
}

func (c *countingConn) Write(p []byte) (int, error) {
	if c.fail != nil {
		return 0, c.fail
	}
	c.writes = append(c.writes, append([]byte(nil), p...))
	return len(p), nil
}

func (c *countingConn) Close() error { c.closed = true; return nil }

func TestCorkedWritesLeaveTogetherAndInOrderAtUncork(t *testing.T) {
	raw := &countingConn{}
	c := &corkConn{Conn: raw}
	_, _ = c.Write([]byte("before "))
	c.cork()
	for _, s := range []string{"one ", "two ", "three"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("corked write: %d, %v", n, err)
		}
	}
	if len(raw.writes) != 1 {
		t.Fatalf("%d writes reached the socket while corked", len(raw.writes)-1)
	}
	c.uncork()
	if len(raw.writes) != 2 || !bytes.Equal(raw.writes[1], []byte("one two three")) {
		t.Fatalf("writes after uncork: %q", raw.writes)
	}
	_, _ = c.Write([]byte(" after"))
	if len(raw.writes) != 3 {
		t.Fatalf("an uncorked write was held back: %q", raw.writes)
	}
}

func TestAFailedUncorkClosesTheSocket(t *testing.T) {
	raw := &countingConn{}
	c := &corkConn{Conn: raw}
	c.cork()
	_, _ = c.Write([]byte("lost"))
	raw.fail = io.ErrClosedPipe
	c.uncork()
	if !raw.closed {
		t.Fatal("the bytes amqp091-go believes sent were lost, yet the socket stays open")
	}
}
