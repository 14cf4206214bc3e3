//go:build integration

package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/seckilledge/seckill/internal/testenv"
)

func adapt(t *testing.T, src string) []byte {
	t.Helper()
	out, _, err := caddyfile.Adapter{ServerType: httpcaddyfile.ServerType{}}.Adapt([]byte(src), nil)
	if err != nil {
		t.Fatalf("adapt: %v", err)
	}
	return out
}

// validate provisions cfg as `caddy validate` does: no listener, no network I/O.
func validate(t *testing.T, cfg []byte) error {
	t.Helper()
	var c caddy.Config
	if err := json.Unmarshal(cfg, &c); err != nil {
		t.Fatal(err)
	}
	return caddy.Validate(&c)
}

// The published demo token key (scripts/run.sh, docker-compose.yml) signs tokens anybody can
// forge: the app refuses it unless the config says it is a demo.
func TestTheDemoTokenKeyIsRefusedUnlessDemoIsSet(t *testing.T) {
	t.Setenv("SECKILL_TEST_TOKEN_KEY", DemoTokenKey)
	const base = "{\n seckill {\n token_keys {\n k1 {env.SECKILL_TEST_TOKEN_KEY}\n }\n %s }\n}\n"
	err := validate(t, adapt(t, fmt.Sprintf(base, "")))
	if err == nil || !strings.Contains(err.Error(), "demo") {
		t.Fatalf("the demo key was accepted without `demo` (err %v)", err)
	}
	if err := validate(t, adapt(t, fmt.Sprintf(base, "demo\n"))); err != nil {
		t.Fatalf("with `demo`: %v", err)
	}
	// Any other key needs no flag.
	t.Setenv("SECKILL_TEST_TOKEN_KEY", "a-key-of-our-own-a-key-of-our-own-0123")
	if err := validate(t, adapt(t, fmt.Sprintf(base, ""))); err != nil {
		t.Fatalf("an ordinary key: %v", err)
	}
}

// A purchase-token key anybody can guess lets anybody mint tokens: provisioning fails with an
// error that names the key and says why, never the secret.
func TestTheGatewayRefusesAWeakTokenKey(t *testing.T) {
	const base = "{\n seckill {\n token_keys {\n k1 {env.SECKILL_TEST_TOKEN_KEY}\n }\n %s }\n}\n"
	for _, tc := range []struct{ name, key, opt, why string }{
		{"all zeros", strings.Repeat("0", 64), "", "one character repeated"},
		{"few distinct bytes", strings.Repeat("ab-", 12), "", "distinct"},
		{"a unit repeated", strings.Repeat("k7Qp-2vX", 5), "", "repeated"},
		{"the demo key in upper case", strings.ToUpper(DemoTokenKey), "", "demo"},
		{"the demo key in upper case, even in a demo", strings.ToUpper(DemoTokenKey), "demo\n", "demo"},
		{"the compose dummy", "compose-check-dummy-not-a-secret-0123456789", "", "published"},
		{"a placeholder", "please-change-me-before-production-42", "", "placeholder"},
	} {
		t.Setenv("SECKILL_TEST_TOKEN_KEY", tc.key)
		err := validate(t, adapt(t, fmt.Sprintf(base, tc.opt)))
		if err == nil || !strings.Contains(err.Error(), `token key "k1"`) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: provisioning gave %v, want a refusal of k1 saying %q", tc.name, err, tc.why)
		} else if strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: the error shows the key: %v", tc.name, err)
		}
	}
	t.Setenv("SECKILL_TEST_TOKEN_KEY", "3f9c1e0b7a52d4e86c0f1a9b2e7d5c3046a8b1f9e2d7c0a5b3f6e1d8c9a4b7e2")
	if err := validate(t, adapt(t, fmt.Sprintf(base, ""))); err != nil {
		t.Fatalf("a random key: %v", err)
	}
}

func TestTheNamespaceMustBeAValidID(t *testing.T) {
	if err := validate(t, []byte(`{"apps":{"seckill":{"namespace":"no spaces"}}}`)); err == nil {
		t.Fatal("namespace with a space accepted")
	}
	if err := validate(t, []byte(`{"apps":{"seckill":{"namespace":"staging-2"}}}`)); err != nil {
		t.Fatal(err)
	}
}

// `url {env.SECKILL_AMQP_URL}` is resolved by the app when it loads: the broker connects with
// the URL from the environment, while the config Caddy keeps (and serves on /config/, and
// autosaves: the same bytes) holds only the placeholder, never the password.
func TestTheAMQPURLIsReadFromTheEnvironmentAtRunTime(t *testing.T) {
	vhost := testenv.RabbitVhost(t)
	t.Setenv("SECKILL_TEST_AMQP_URL", vhost)
	admin := testenv.FreePort(t)
	src := fmt.Sprintf(`{
	admin 127.0.0.1:%d
	seckill {
		redis {
			addrs %s
		}
		amqp {
			url {env.SECKILL_TEST_AMQP_URL}
		}
		relay {
			served_only
		}
		namespace %s
	}
}
`, admin, testenv.RedisAddr(), testenv.ID("amqp-url-test-"))
	cfg := adapt(t, src)
	if strings.Contains(string(cfg), vhost) || !strings.Contains(string(cfg), "{env.SECKILL_TEST_AMQP_URL}") {
		t.Fatalf("adapted config must hold the placeholder, not the URL: %s", cfg)
	}
	if err := caddy.Load(cfg, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = caddy.Stop() })

	get := func(path string) string {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", admin, path))
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// The relay uses the broker, which dials the URL from the environment.
	testenv.WaitFor(t, 20*time.Second, "the broker to connect with the URL from the environment", func() bool {
		var s Status
		return json.Unmarshal([]byte(get("/seckill/status")), &s) == nil && s.AMQP.Connected
	})
	served := get("/config/")
	if served == "" || strings.Contains(served, vhost) || strings.Contains(served, "guest:guest@") {
		t.Fatalf("/config/ must not reveal the AMQP URL: %s", served)
	}
	if !strings.Contains(served, "{env.SECKILL_TEST_AMQP_URL}") {
		t.Fatalf("/config/ lost the placeholder: %s", served)
	}
	var st Status
	raw := get("/seckill/status")
	if err := json.Unmarshal([]byte(raw), &st); err != nil || strings.Contains(raw, "guest:guest@") {
		t.Fatalf("/seckill/status: %v %s", err, raw)
	}
	// The connection is the environment's URL (its vhost), not a default.
	if want := vhost[strings.LastIndex(vhost, "/"):]; !strings.HasSuffix(st.AMQP.URL, want) {
		t.Fatalf("status amqp url %q is not the environment's (vhost %s)", st.AMQP.URL, want)
	}
}
