package nginxgate

import (
	"strings"
	"testing"
)

func TestConfigNamesTheRedisTheScriptAndThePrefix(t *testing.T) {
	c, err := Config(Options{Dir: "/x/peer", RedisAddr: "localhost:6390", Port: 8123, Workers: 2, Modules: "/m"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"worker_processes 2;", "listen 127.0.0.1:8123", "load_module /m/ngx_http_lua_module.so;",
		`init("127.0.0.1", 6390, "` + SHA + `", "/x/peer/peer_gate.lua")`, "pid /x/peer/nginx.pid;",
		`lua_package_path "/x/peer/?.lua;;";`,
	} {
		if !strings.Contains(c, want) {
			t.Errorf("nginx.conf lacks %q:\n%s", want, c)
		}
	}
	if _, err := Config(Options{Dir: "/x", RedisAddr: "no-port"}); err == nil {
		t.Error("a Redis address without a port was accepted")
	}
}

func TestAvailableSaysWhatToInstall(t *testing.T) {
	for _, o := range []Options{{Nginx: "/nonexistent/nginx"}, {Nginx: "/bin/sh", Modules: t.TempDir()}} {
		err := Available(o)
		if err == nil || !strings.Contains(err.Error(), Install) {
			t.Errorf("Available(%+v) = %v, want an error naming %q", o, err, Install)
		}
	}
}
