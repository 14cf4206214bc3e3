package handlertest

import (
	"encoding/json"
	"fmt"
)

// Config is a test gateway's Caddy JSON: the admin endpoint off, the tests' log level
// (LogLevel), the seckill app's settings (seckill: redis, token_keys, ...) and the HTTP servers
// by name.
func Config(seckill map[string]any, servers map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{
		"admin":   map[string]any{"disabled": true},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"level": LogLevel()}}},
		"apps":    map[string]any{"seckill": seckill, "http": map[string]any{"servers": servers}},
	})
	return b
}

// Server is a test server: listening on 127.0.0.1:port, without automatic HTTPS, with routes.
func Server(port int, routes ...any) map[string]any {
	return map[string]any{
		"listen":          []string{fmt.Sprintf("127.0.0.1:%d", port)},
		"automatic_https": map[string]any{"disable": true},
		"routes":          routes,
	}
}
