package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP from a loopback port of its own to a server while it is up; Cut closes
// every connection through it and refuses new ones until Restore: the server going away and
// coming back, as the processes connected through the proxy see it, while the server itself
// and everyone else's connections to it stay as they are. A test of one client's outage on a
// shared server (a vhost of its own on the shared RabbitMQ) uses it instead of booting a
// private server it would stop and start again.
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	up     bool
	conns  []net.Conn
}

// NewProxy starts a proxy to target (host:port), up, until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, up: true}
	t.Cleanup(func() { ln.Close(); p.Cut() })
	go p.serve()
	return p
}

// Addr is the proxy's host:port, to give the clients instead of the server's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if !p.up {
			p.mu.Unlock()
			c.Close()
			continue
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(u, c); u.Close() }()
		go func() { _, _ = io.Copy(c, u); c.Close() }()
	}
}

// Cut closes every connection through the proxy and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up = false
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Restore accepts and forwards connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up = true
}
