package invariants

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/rabbitmgmt"
)

// RabbitMgmt reads queues through the RabbitMQ management API (the HTTP plugin), which can count
// and peek messages without consuming them.
type RabbitMgmt struct {
	// URL of the management API with credentials (stackenv.DefaultAMQPMgmtURL on the stack).
	URL string
	// Vhost of the topology ("/" for the default vhost).
	Vhost  string
	Client *http.Client
}

func (r RabbitMgmt) client() (*rabbitmgmt.Client, error) {
	c, err := rabbitmgmt.New(r.URL)
	if err != nil {
		return nil, err
	}
	c.HTTP = r.Client
	return c, nil
}

// QueueDepth is the number of messages in a queue (ready + unacknowledged), as the management
// API last sampled it (it refreshes every few seconds).
func (r RabbitMgmt) QueueDepth(ctx context.Context, queue string) (int, error) {
	c, err := r.client()
	if err != nil {
		return 0, err
	}
	q, err := c.Queue(ctx, r.Vhost, queue)
	return q.Messages, err
}

// MaxDeadLetters is the most dead letters DeadLetters reads.
const MaxDeadLetters = 100000

// DeadLetters peeks at every message of the dead-letter queue (the messages are requeued).
// It asks for messages rather than trusting the queue depth, which the management API only
// samples every few seconds.
func (r RabbitMgmt) DeadLetters(ctx context.Context) ([][]byte, error) {
	c, err := r.client()
	if err != nil {
		return nil, err
	}
	var out [][]byte
	// The management API is slow to answer on a loaded machine: try again before giving up.
	for try := 0; try < 3; try++ {
		out, err = c.Peek(ctx, r.Vhost, contract.DeadQueue, MaxDeadLetters)
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	return out, err
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
