//go:build integration

package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The compose file's RabbitMQ users (deploy/rabbitmq/init.sh), imported into the real broker:
// each service can do its job and no more. Both declare the topology and nothing outside it;
// the gateway publishes orders; the backend consumes them but cannot publish orders.
func TestComposeRabbitMQUsersCanDoTheirJobAndNoMore(t *testing.T) {
	vhostURL := testenv.RabbitVhost(t)
	u, err := url.Parse(vhostURL)
	if err != nil {
		t.Fatal(err)
	}
	vhost := strings.TrimPrefix(u.Path, "/")

	cmd := exec.Command("sh", "rabbitmq/init.sh", "--print")
	cmd.Env = append(os.Environ(), "SECKILL_AMQP_VHOST="+vhost, "SECKILL_AMQP_ADMIN_PASSWORD=admin-pw",
		"SECKILL_AMQP_GATEWAY_PASSWORD=gateway-\"pw\\", "SECKILL_AMQP_BACKEND_PASSWORD=backend-pw")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("init.sh --print: %v", err)
	}
	var defs struct {
		Users       []map[string]any `json:"users"`
		Vhosts      []map[string]any `json:"vhosts"`
		Permissions []map[string]any `json:"permissions"`
	}
	if err := json.Unmarshal(out, &defs); err != nil {
		t.Fatalf("init.sh printed no JSON: %v\n%s", err, out)
	}
	// Users are global on a broker: give these test-unique names.
	suffix := "-" + testenv.ID("")
	passwords := map[string]string{}
	for _, usr := range defs.Users {
		name := usr["name"].(string)
		passwords[name] = usr["password"].(string)
		usr["name"] = name + suffix
		t.Cleanup(func() { _, _ = testenv.RabbitMgmt(http.MethodDelete, "/api/users/"+name+suffix, "") })
	}
	for _, p := range defs.Permissions {
		p["user"] = p["user"].(string) + suffix
	}
	if passwords["seckill-gateway"] != `gateway-"pw\` {
		t.Fatalf("the gateway's password did not survive JSON quoting: %q", passwords["seckill-gateway"])
	}
	body, _ := json.Marshal(defs)
	if _, err := testenv.RabbitMgmt(http.MethodPost, "/api/definitions", string(body)); err != nil {
		t.Fatalf("import the definitions: %v", err)
	}

	dial := func(user string) *amqp.Connection {
		t.Helper()
		v := *u
		v.User = url.UserPassword(user+suffix, passwords[user])
		conn, err := amqp.Dial(v.String())
		if err != nil {
			t.Fatalf("%s cannot connect: %v", user, err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}
	channel := func(conn *amqp.Connection) *amqp.Channel {
		t.Helper()
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	refused := func(err error) bool {
		var ae *amqp.Error
		return errors.As(err, &ae) && ae.Code == amqp.AccessRefused
	}

	// The gateway: topology, then a confirmed publish.
	gw := dial("seckill-gateway")
	ch := channel(gw)
	if err := contract.DeclareTopology(ch); err != nil {
		t.Fatalf("the gateway cannot declare the topology: %v", err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conf, err := ch.PublishWithDeferredConfirmWithContext(ctx, contract.Exchange, contract.RoutingPrefix+"s1", true, false,
		amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte(`{"order_id":"o1","sale_id":"s1","user_id":"u1","accepted_at":"2026-01-01T00:00:00Z"}`)})
	if err != nil {
		t.Fatalf("the gateway cannot publish: %v", err)
	}
	if ok, err := conf.WaitContext(ctx); err != nil || !ok {
		t.Fatalf("the gateway's publish was not confirmed: %v %v", ok, err)
	}
	if _, err := channel(gw).QueueDeclare("not-seckill", false, true, false, false, nil); !refused(err) {
		t.Fatalf("the gateway may declare a queue outside the topology (err %v)", err)
	}

	// The backend: topology, then it receives the gateway's order; it cannot publish orders.
	be := dial("seckill-backend")
	ch = channel(be)
	if err := contract.DeclareTopology(ch); err != nil {
		t.Fatalf("the backend cannot declare the topology: %v", err)
	}
	deliveries, err := ch.Consume(contract.Queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatalf("the backend cannot consume: %v", err)
	}
	select {
	case d := <-deliveries:
		_ = d.Ack(false)
	case <-ctx.Done():
		t.Fatal("the backend never received the gateway's order")
	}
	pub := channel(be)
	closed := pub.NotifyClose(make(chan *amqp.Error, 1))
	_ = pub.PublishWithContext(ctx, contract.Exchange, contract.RoutingPrefix+"s1", false, false, amqp.Publishing{Body: []byte("{}")})
	select {
	case e := <-closed:
		if e == nil || e.Code != amqp.AccessRefused {
			t.Fatalf("the backend's publish closed the channel with %v, want access refused", e)
		}
	case <-ctx.Done():
		t.Fatal("the backend may publish orders")
	}
}
