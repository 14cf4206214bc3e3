package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seckilledge/seckill/contract"
)

// RabbitMgmt reads queues through the RabbitMQ management API (the HTTP plugin), which can count
// and peek messages without consuming them.
type RabbitMgmt struct {
	// URL of the management API with credentials, e.g. http://guest:guest@127.0.0.1:16673.
	URL string
	// Vhost of the topology ("/" for the default vhost).
	Vhost  string
	Client *http.Client
}

func (r RabbitMgmt) do(ctx context.Context, method, path string, body any) ([]byte, error) {
	u, err := url.Parse(strings.TrimRight(r.URL, "/") + path)
	if err != nil {
		return nil, err
	}
	user := u.User
	u.User = nil
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if user != nil {
		pw, _ := user.Password()
		req.SetBasicAuth(user.Username(), pw)
	}
	req.Header.Set("Content-Type", "application/json")
	c := r.Client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("rabbitmq management %s %s: %s: %.200s", method, u.Path, resp.Status, b)
	}
	return b, nil
}

func (r RabbitMgmt) queuePath(queue string) string {
	v := r.Vhost
	if v == "" {
		v = "/"
	}
	return "/api/queues/" + url.PathEscape(v) + "/" + url.PathEscape(queue)
}

// QueueDepth is the number of messages in a queue (ready + unacknowledged), as the management
// API last sampled it (it refreshes every few seconds).
func (r RabbitMgmt) QueueDepth(ctx context.Context, queue string) (int, error) {
	b, err := r.do(ctx, http.MethodGet, r.queuePath(queue), nil)
	if err != nil {
		return 0, err
	}
	var q struct {
		Messages int `json:"messages"`
	}
	if err := json.Unmarshal(b, &q); err != nil {
		return 0, err
	}
	return q.Messages, nil
}

// MaxDeadLetters is the most dead letters DeadLetters reads.
const MaxDeadLetters = 100000

// DeadLetters peeks at every message of the dead-letter queue (the messages are requeued).
// It asks for messages rather than trusting the queue depth, which the management API only
// samples every few seconds.
func (r RabbitMgmt) DeadLetters(ctx context.Context) ([][]byte, error) {
	var b []byte
	var err error
	// The management API is slow to answer on a loaded machine: try again before giving up.
	for try := 0; try < 3; try++ {
		b, err = r.do(ctx, http.MethodPost, r.queuePath(contract.DeadQueue)+"/get", map[string]any{
			"count": MaxDeadLetters, "ackmode": "ack_requeue_true", "encoding": "auto", "truncate": 100000,
		})
		if err == nil || ctx.Err() != nil {
			break
		}
	}
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

// HTTPOrders is the OrderLookup of the order API at base (the gateway, which proxies /orders/,
// or the backend itself).
func HTTPOrders(base string, client *http.Client) OrderLookup {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return func(ctx context.Context, orderID, userID string) (OrderStatus, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/orders/"+url.PathEscape(orderID), nil)
		if err != nil {
			return OrderStatus{}, err
		}
		req.Header.Set("X-User-ID", userID)
		resp, err := client.Do(req)
		if err != nil {
			return OrderStatus{}, err
		}
		defer resp.Body.Close()
		var body struct {
			Status string `json:"status"`
			Reason string `json:"reason"`
			Code   string `json:"code"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		if resp.StatusCode != http.StatusOK {
			return OrderStatus{}, fmt.Errorf("GET /orders/%s: %s %s", orderID, resp.Status, body.Code)
		}
		return OrderStatus{Status: body.Status, Reason: body.Reason}, nil
	}
}
