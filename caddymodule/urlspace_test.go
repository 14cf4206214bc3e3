package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/seckilledge/seckill/caddymodule/handler"
)

// The app's URL space is today's paths unless the shop picks its own, and a prefix the
// handlers could not place a sale after fails at load, naming the option.
func TestTheAppsURLSpaceDefaultsToTodaysPathsAndRefusesABadPrefix(t *testing.T) {
	var a App
	if err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser("seckill {\n\tredis {\n\t\taddrs 127.0.0.1:6379\n\t}\n}")); err != nil {
		t.Fatal(err)
	}
	a.AMQP = new(AMQPConfig)
	if got := a.URLSpace(); got != (handler.URLSpace{Prefix: "/seckill", OrdersPrefix: "/orders"}) {
		t.Errorf("default URL space %+v", got)
	}
	if err := a.Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}

	var b App
	if err := b.UnmarshalCaddyfile(caddyfile.NewTestDispenser("seckill {\n\tredis {\n\t\taddrs 127.0.0.1:6379\n\t}\n\tprefix /shop-api/drop\n\torders_prefix /shop-api/drop/orders\n}")); err != nil {
		t.Fatal(err)
	}
	b.AMQP = new(AMQPConfig)
	if got := b.URLSpace(); got != (handler.URLSpace{Prefix: "/shop-api/drop", OrdersPrefix: "/shop-api/drop/orders"}) {
		t.Errorf("URL space %+v", got)
	}
	if err := b.Validate(); err != nil {
		t.Errorf("a chosen URL space: %v", err)
	}
	for _, c := range []struct{ prefix, orders, want string }{
		{"/shop-api/drop/", "", "seckill: prefix"},
		{"shop", "", "seckill: prefix"},
		{"/seckill/*", "", "seckill: prefix"},
		{"", "/a/../orders", "seckill: orders_prefix"},
	} {
		b.Prefix, b.OrdersPrefix = c.prefix, c.orders
		if err := b.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("prefix %q orders_prefix %q: %v, want %q", c.prefix, c.orders, err, c.want)
		}
	}
}
