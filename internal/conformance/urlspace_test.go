package conformance

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	_ "github.com/seckilledge/seckill/caddymodule/gate" // seckill_gate, and the app it reads
)

// loadGate provisions and validates a config with the seckill app (app) and one seckill_gate
// (gate), as `caddy validate` does: no network.
func loadGate(app, gate map[string]any) error {
	app["redis"] = map[string]any{"addrs": []string{"127.0.0.1:1"}}
	gate["handler"] = "seckill_gate"
	cfg := map[string]any{
		"admin": map[string]any{"disabled": true},
		"apps": map[string]any{
			"seckill": app,
			"http": map[string]any{"servers": map[string]any{"s": map[string]any{
				"listen": []string{"127.0.0.1:0"},
				"routes": []any{map[string]any{"handle": []any{gate}}},
			}}},
		},
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	var c caddy.Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	return caddy.Validate(&c)
}

// A handler inherits the app's prefix or sets its own; a bad one, the app's or a handler's,
// stops the config at load with the option named.
func TestABadPrefixOfTheAppOrOfAHandlerFailsTheLoad(t *testing.T) {
	if err := loadGate(map[string]any{"prefix": "/shop-api/drop"}, map[string]any{}); err != nil {
		t.Errorf("the app's prefix: %v", err)
	}
	if err := loadGate(map[string]any{}, map[string]any{"prefix": "/edge"}); err != nil {
		t.Errorf("the handler's own prefix: %v", err)
	}
	for _, c := range []struct {
		app, gate map[string]any
		want      string
	}{
		{map[string]any{"prefix": "/shop-api/drop/"}, map[string]any{}, "seckill: prefix"},
		{map[string]any{"orders_prefix": "orders"}, map[string]any{}, "seckill: orders_prefix"},
		{map[string]any{}, map[string]any{"prefix": "/edge/*"}, "seckill_gate: prefix"},
	} {
		if err := loadGate(c.app, c.gate); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("app %v gate %v: %v, want %q", c.app, c.gate, err, c.want)
		}
	}
}
