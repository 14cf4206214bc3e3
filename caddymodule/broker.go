package caddymodule

import (
	"context"
	"errors"
	"math"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/zap"
)

// brokerPool holds one RabbitMQ connection per URL, shared across config reloads.
var brokerPool = caddy.NewUsagePool()

// AMQPConfig configures the RabbitMQ connection of the outbox relay.
type AMQPConfig struct {
	// AMQP URL, e.g. amqp://user:pass@host:5672/vhost. Placeholders are resolved at load
	// ({env.SECKILL_AMQP_URL}). Default: the SECKILL_AMQP_URL environment variable, else
	// amqp://guest:guest@127.0.0.1:5672/.
	URL string `json:"url,omitempty"`

	// Delay between reconnection attempts while the broker is unreachable. Default 1s.
	ReconnectInterval caddy.Duration `json:"reconnect_interval,omitempty"`
}

func (c *AMQPConfig) resolve(repl *caddy.Replacer) {
	c.URL = repl.ReplaceAll(c.URL, "")
	if c.URL == "" {
		c.URL = envOr("SECKILL_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
	}
	if c.ReconnectInterval == 0 {
		c.ReconnectInterval = caddy.Duration(time.Second)
	}
}

// ErrBrokerDown is returned by WaitConnection when no connection could be had in time.
var ErrBrokerDown = errors.New("seckill: rabbitmq unreachable")

// Broker is the shared RabbitMQ connection. It connects only once something uses it (the
// relay calls Use), reconnects by itself (amqp091-go's connection recovery, and a redial loop
// behind it for when recovery gives up), and is closed when the last config using it unloads.
type Broker struct {
	cfg    AMQPConfig
	logger *zap.Logger

	conn    atomic.Pointer[amqp.Connection]
	used    sync.Once
	started atomic.Bool
	stop    chan struct{}
	stopped sync.Once
	dials   atomic.Int64
	socket  atomic.Pointer[corkConn] // the latest connection's socket (recovery redials)
}

// NewBroker is a broker outside a Caddy config (tools and benchmarks): it connects on first
// use; Destruct closes it.
func NewBroker(url string, logger *zap.Logger) *Broker {
	return newBroker(&AMQPConfig{URL: url, ReconnectInterval: caddy.Duration(time.Second)}, logger)
}

func newBroker(cfg *AMQPConfig, logger *zap.Logger) *Broker {
	return &Broker{cfg: *cfg, logger: logger, stop: make(chan struct{})}
}

// start is called by App.Start; it only arms the broker. The connection is made on Use.
func (b *Broker) start() { b.started.Store(true) }

// Use starts the connection supervisor (once). Safe to call from several handlers.
func (b *Broker) Use() {
	b.used.Do(func() { go b.supervise() })
}

func (b *Broker) supervise() {
	interval := time.Duration(b.cfg.ReconnectInterval)
	for {
		if c := b.conn.Load(); c == nil || c.IsClosed() {
			if c != nil {
				b.logger.Warn("rabbitmq connection lost, redialing")
			}
			b.dial()
		}
		select {
		case <-b.stop:
			return
		case <-time.After(interval):
		}
	}
}

func (b *Broker) dial() {
	b.dials.Add(1)
	conn, err := amqp.DialConfig(b.cfg.URL, amqp.Config{
		Heartbeat:  5 * time.Second,
		Properties: amqp.Table{"connection_name": "seckill-gateway"},
		Dial: func(network, addr string) (net.Conn, error) {
			c, err := amqp.DefaultDial(30*time.Second)(network, addr)
			if err != nil {
				return nil, err
			}
			cc := &corkConn{Conn: c}
			b.socket.Store(cc)
			return cc, nil
		},
		Recovery: &amqp.Recovery{
			ReconnectionConfig: &amqp.ReconnectionConfig{
				MaxRetryCount: math.MaxInt32,
				RetryInterval: time.Duration(b.cfg.ReconnectInterval),
			},
			// The relay declares its topology itself on every (re)connect.
			TopologyRecoveryMode: amqp.TopologyRecoveryDisabled,
		},
	})
	if err != nil {
		brokerUp.Set(0)
		b.logger.Debug("rabbitmq dial failed", zap.String("url", redacted(b.cfg.URL)), zap.Error(err))
		return
	}
	b.conn.Store(conn)
	brokerUp.Set(1)
	b.logger.Info("rabbitmq connected", zap.String("url", redacted(b.cfg.URL)))
}

// Cork holds back what is written on the connection until uncork is called, which sends it in
// one write. The relay corks around a round of publishes: amqp091-go flushes every message
// with a write of its own, and one write per round instead of one per message saves a system
// call per message here and lets RabbitMQ read the round in a few reads. Only for short
// stretches that wait for nothing from the broker (a corked RPC waits until uncork).
func (b *Broker) Cork() (uncork func()) {
	c := b.socket.Load()
	if c == nil {
		return func() {}
	}
	c.cork()
	return c.uncork
}

// corkConn is a connection's socket that can hold writes back (Broker.Cork).
type corkConn struct {
	net.Conn
	mu     sync.Mutex
	corked int
	buf    []byte
}

// corkLimit bounds what a cork holds: beyond it, writes go out (a round of messages is far
// below it).
const corkLimit = 1 << 20

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked == 0 {
		return c.Conn.Write(p)
	}
	c.buf = append(c.buf, p...)
	if len(c.buf) >= corkLimit {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked++
	c.mu.Unlock()
}

func (c *corkConn) uncork() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked > 0 {
		c.corked--
	}
	if c.corked == 0 && len(c.buf) > 0 {
		if err := c.flushLocked(); err != nil {
			// amqp091-go believes these bytes were sent: a dead socket makes its reader fail,
			// which shuts the connection down (and recovery redials).
			_ = c.Conn.Close()
		}
	}
}

func (c *corkConn) flushLocked() error {
	_, err := c.Conn.Write(c.buf)
	if cap(c.buf) > corkLimit {
		c.buf = nil
	} else {
		c.buf = c.buf[:0]
	}
	return err
}

// Connection returns the live connection, or nil while the broker is unreachable.
func (b *Broker) Connection() *amqp.Connection {
	if c := b.conn.Load(); c != nil && !c.IsClosed() {
		return c
	}
	return nil
}

// WaitConnection waits until a live connection exists or ctx ends.
func (b *Broker) WaitConnection(ctx context.Context) (*amqp.Connection, error) {
	b.Use()
	for {
		if c := b.Connection(); c != nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, ErrBrokerDown
		case <-b.stop:
			return nil, ErrBrokerDown
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Destruct closes the connection when the last config using it is unloaded.
func (b *Broker) Destruct() error {
	b.stopped.Do(func() { close(b.stop) })
	if c := b.conn.Load(); c != nil {
		// Close waits for the broker's close-ok, which a connection in the middle of
		// amqp091's automatic recovery may never get: do not let it hang a config unload.
		done := make(chan error, 1)
		go func() { done <- c.Close() }()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			return errors.New("seckill: closing the rabbitmq connection timed out")
		}
	}
	return nil
}

func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable url)"
	}
	return u.Redacted()
}
