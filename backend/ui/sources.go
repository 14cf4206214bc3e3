package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/seckilledge/seckill/contract"
)

// Where the live page reads what the backend does not hold itself: the gateways' Prometheus
// endpoints (accepted and refused purchases per sale and reason) and RabbitMQ's management
// API (queue and dead-letter depth). Both are optional: without them the page derives what it
// can from Redis and Postgres.

// cockpitSources is the page's configuration, read from the environment when the routes are
// mounted.
type cockpitSources struct {
	// SECKILL_GATEWAY_METRICS: comma-separated URLs of the gateways' /metrics.
	gateways []string
	// SECKILL_AMQP_MGMT_URL: RabbitMQ's management API (credentials in the URL); the vhost is
	// the path of SECKILL_AMQP_URL ("/" when it has none).
	mgmt  string
	vhost string
	// reg is the backend's own registry (consumer throughput, 202-to-row lag).
	reg    *prometheus.Registry
	client *http.Client
}

func cockpitSourcesFromEnv(reg *prometheus.Registry) *cockpitSources {
	c := &cockpitSources{mgmt: strings.TrimRight(os.Getenv("SECKILL_AMQP_MGMT_URL"), "/"), vhost: "/", reg: reg,
		client: &http.Client{Timeout: 800 * time.Millisecond}}
	for _, u := range strings.Split(os.Getenv("SECKILL_GATEWAY_METRICS"), ",") {
		if u = strings.TrimSpace(u); u != "" {
			c.gateways = append(c.gateways, u)
		}
	}
	if u, err := url.Parse(os.Getenv("SECKILL_AMQP_URL")); err == nil && len(u.Path) > 1 {
		c.vhost = strings.TrimPrefix(u.Path, "/")
	}
	return c
}

// gateCounts sums seckill_gate_decisions_total over every gateway: sale -> outcome -> count.
// ok is false when no gateway is configured; unreachable gateways are listed in down.
func (c *cockpitSources) gateCounts(ctx context.Context) (counts map[string]map[string]float64, down []string, ok bool) {
	if len(c.gateways) == 0 {
		return nil, nil, false
	}
	counts = map[string]map[string]float64{}
	for _, u := range c.gateways {
		fams, err := c.scrape(ctx, u)
		if err != nil {
			down = append(down, u)
			continue
		}
		f := fams["seckill_gate_decisions_total"]
		if f == nil {
			continue
		}
		for _, m := range f.GetMetric() {
			sale, outcome := label(m, "sale"), label(m, "outcome")
			if counts[sale] == nil {
				counts[sale] = map[string]float64{}
			}
			// Untyped: the same counter federated by Prometheus (/federate drops the types;
			// docker-compose.yml reads the gateway's counters that way).
			counts[sale][outcome] += m.GetCounter().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return counts, down, true
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func (c *cockpitSources) scrape(ctx context.Context, u string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// QueueDepths are RabbitMQ's counts of the winners' queue and its dead-letter queue.
type QueueDepths struct {
	Ready     int64   `json:"ready"`
	Unacked   int64   `json:"unacked"`
	Dead      int64   `json:"dead"`
	AckRate   float64 `json:"ack_rate"`
	Available bool    `json:"available"`
}

// queues reads the depths from the management API (Available false without it).
func (c *cockpitSources) queues(ctx context.Context) QueueDepths {
	var q QueueDepths
	if c.mgmt == "" {
		return q
	}
	var main, dead struct {
		Ready        int64 `json:"messages_ready"`
		Unacked      int64 `json:"messages_unacknowledged"`
		Messages     int64 `json:"messages"`
		MessageStats struct {
			AckDetails struct {
				Rate float64 `json:"rate"`
			} `json:"ack_details"`
		} `json:"message_stats"`
	}
	if c.mgmtGet(ctx, contract.Queue, &main) != nil || c.mgmtGet(ctx, contract.DeadQueue, &dead) != nil {
		return q
	}
	return QueueDepths{Ready: main.Ready, Unacked: main.Unacked, Dead: dead.Messages, AckRate: main.MessageStats.AckDetails.Rate, Available: true}
}

func (c *cockpitSources) mgmtGet(ctx context.Context, queue string, out any) error {
	u, err := url.Parse(c.mgmt + "/api/queues/" + url.PathEscape(c.vhost) + "/" + url.PathEscape(queue))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		req.SetBasicAuth(u.User.Username(), pw)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("management API: %s", resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// backendCounters reads the backend's own consumer counter and lag histogram (totals).
type backendCounters struct {
	consumed, lagSum, lagCount float64
}

func (c *cockpitSources) backend() backendCounters {
	var b backendCounters
	if c.reg == nil {
		return b
	}
	fams, err := c.reg.Gather()
	if err != nil {
		return b
	}
	for _, f := range fams {
		switch f.GetName() {
		case "seckill_backend_messages_consumed_total":
			for _, m := range f.GetMetric() {
				b.consumed += m.GetCounter().GetValue()
			}
		case "seckill_backend_order_lag_seconds":
			for _, m := range f.GetMetric() {
				b.lagSum += m.GetHistogram().GetSampleSum()
				b.lagCount += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return b
}
