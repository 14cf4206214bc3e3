package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/seckilledge/seckill/internal/handlertest"
)

// The compose file demands every secret instead of defaulting it, and no secret is written into
// it; the shipped Caddyfiles read theirs at run time, so Caddy's /config/ never shows them.
func TestShippedFilesHoldNoSecrets(t *testing.T) {
	compose, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"SECKILL_TOKEN_KEY", "SECKILL_ADMIN_TOKEN", "SECKILL_PG_PASSWORD",
		"SECKILL_AMQP_GATEWAY_PASSWORD", "SECKILL_AMQP_BACKEND_PASSWORD", "SECKILL_AMQP_ADMIN_PASSWORD"} {
		if !bytes.Contains(compose, []byte("${"+v+":?")) {
			t.Errorf("docker-compose.yml does not require %s (${%s:?...})", v, v)
		}
		if bytes.Contains(compose, []byte("${"+v+":-")) || bytes.Contains(compose, []byte("${"+v+"-")) {
			t.Errorf("docker-compose.yml gives %s a default", v)
		}
	}
	if bytes.Contains(compose, []byte("guest:guest")) {
		t.Error("docker-compose.yml still uses RabbitMQ's guest account")
	}

	// {$VAR} is taken from the environment when the file is adapted, exactly as `caddy run
	// --adapter caddyfile` does; {env.VAR} is read at run time.
	const key, amqpURL = "0123456789abcdef0123456789abcdef-not-in-config", "amqp://gw:pw-not-in-config@127.0.0.1:5672/"
	t.Setenv("SECKILL_TOKEN_KEY", key)
	t.Setenv("SECKILL_AMQP_URL", amqpURL)
	if len(handlertest.ShippedCaddyfiles) != 3 {
		t.Fatalf("shipped Caddyfiles %v: the root one and deploy's two", handlertest.ShippedCaddyfiles)
	}
	for _, f := range handlertest.ShippedCaddyfiles {
		src, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, err := handlertest.Adapt(src)
		if err != nil {
			t.Fatalf("adapt %s: %v", f, err)
		}
		for _, secret := range []string{key, "pw-not-in-config"} {
			if bytes.Contains(cfg, []byte(secret)) {
				t.Errorf("%s: the adapted config holds a secret from the environment", f)
			}
		}
		for _, ph := range []string{"{env.SECKILL_TOKEN_KEY}", "{env.SECKILL_AMQP_URL}"} {
			if !bytes.Contains(cfg, []byte(ph)) {
				t.Errorf("%s: the adapted config does not read %s at run time", f, ph)
			}
		}
	}
}
