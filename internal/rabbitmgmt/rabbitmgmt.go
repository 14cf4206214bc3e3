// Package rabbitmgmt is the small part of RabbitMQ's management HTTP API the tests and the
// benchmark use: vhosts of their own (isolation, since the contract fixes the topology's
// names), and reading a queue (its depth, type and arguments) or peeking at its messages
// without consuming them.
package rabbitmgmt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrNotFound is what a call on a vhost or queue that does not exist returns (HTTP 404).
var ErrNotFound = errors.New("rabbitmq management: not found")

// Client calls one management API. The zero HTTP client is one with a 30 s timeout.
type Client struct {
	base       string // scheme://host:port, no credentials, no trailing slash
	user, pass string
	HTTP       *http.Client
}

// New parses the API's URL, credentials included (http://guest:guest@127.0.0.1:16673); without
// credentials, guest/guest.
func New(rawURL string) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq management URL: %w", err)
	}
	if u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("rabbitmq management URL %q: want http://user:password@host:port", u.Redacted())
	}
	c := &Client{user: "guest", pass: "guest"}
	if u.User != nil {
		c.user = u.User.Username()
		c.pass, _ = u.User.Password()
	}
	u.User = nil
	c.base = strings.TrimRight(u.String(), "/")
	return c, nil
}

// User is the user the client authenticates as (the one a new vhost grants permissions to).
func (c *Client) User() string { return c.user }

// String is the API's address without credentials, for messages.
func (c *Client) String() string { return c.base }

// Do sends one call (path like /api/vhosts/x) with body encoded as JSON (none when nil) and
// returns the answer's body. Status 404 is ErrNotFound; other statuses >= 300 are errors that
// quote the answer.
func (c *Client) Do(ctx context.Context, method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(c.user, c.pass)
	req.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%s %s: %w", method, path, ErrNotFound)
	case resp.StatusCode >= 300:
		return nil, fmt.Errorf("rabbitmq management %s %s: %s: %.200s", method, path, resp.Status, b)
	}
	return b, nil
}

// CreateVhost creates vhost and gives the client's user every permission on it.
func (c *Client) CreateVhost(ctx context.Context, vhost string) error {
	if _, err := c.Do(ctx, http.MethodPut, "/api/vhosts/"+url.PathEscape(vhost), nil); err != nil {
		return err
	}
	_, err := c.Do(ctx, http.MethodPut, "/api/permissions/"+url.PathEscape(vhost)+"/"+url.PathEscape(c.user),
		map[string]string{"configure": ".*", "write": ".*", "read": ".*"})
	return err
}

// DeleteVhost deletes vhost with everything in it.
func (c *Client) DeleteVhost(ctx context.Context, vhost string) error {
	_, err := c.Do(ctx, http.MethodDelete, "/api/vhosts/"+url.PathEscape(vhost), nil)
	return err
}

// VhostExists reports whether vhost exists.
func (c *Client) VhostExists(ctx context.Context, vhost string) (bool, error) {
	_, err := c.Do(ctx, http.MethodGet, "/api/vhosts/"+url.PathEscape(vhost), nil)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// QueuePath is the API path of a queue ("" or "/" is the default vhost).
func QueuePath(vhost, queue string) string {
	if vhost == "" {
		vhost = "/"
	}
	return "/api/queues/" + url.PathEscape(vhost) + "/" + url.PathEscape(queue)
}

// Queue is what the API says of a queue. Its counts are the API's last sample (it refreshes
// every few seconds); its type and arguments are what the broker declared.
type Queue struct {
	Name      string         `json:"name"`
	Type      string         `json:"type"` // classic, quorum, stream
	Durable   bool           `json:"durable"`
	Arguments map[string]any `json:"arguments"`
	Messages  int            `json:"messages"` // ready + unacknowledged
	Consumers int            `json:"consumers"`
}

// Queue reads one queue.
func (c *Client) Queue(ctx context.Context, vhost, queue string) (Queue, error) {
	var q Queue
	b, err := c.Do(ctx, http.MethodGet, QueuePath(vhost, queue), nil)
	if err != nil {
		return q, err
	}
	err = json.Unmarshal(b, &q)
	return q, err
}

// Binding is one binding of a queue.
type Binding struct {
	Source     string `json:"source"` // the exchange ("" is the default exchange)
	RoutingKey string `json:"routing_key"`
}

// Bindings lists the bindings of a queue, the default exchange's included.
func (c *Client) Bindings(ctx context.Context, vhost, queue string) ([]Binding, error) {
	b, err := c.Do(ctx, http.MethodGet, QueuePath(vhost, queue)+"/bindings", nil)
	if err != nil {
		return nil, err
	}
	var out []Binding
	err = json.Unmarshal(b, &out)
	return out, err
}

// Peek returns the bodies of up to max messages of a queue and puts them back (they count as
// redelivered afterwards). It asks for the messages rather than trusting the sampled depth.
func (c *Client) Peek(ctx context.Context, vhost, queue string, max int) ([][]byte, error) {
	b, err := c.Do(ctx, http.MethodPost, QueuePath(vhost, queue)+"/get", map[string]any{
		"count": max, "ackmode": "ack_requeue_true", "encoding": "auto", "truncate": 100000,
	})
	if err != nil {
		return nil, err
	}
	var msgs []struct {
		Payload string `json:"payload"`
	}
	if err := json.Unmarshal(b, &msgs); err != nil {
		return nil, err
	}
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		out[i] = []byte(m.Payload)
	}
	return out, nil
}
