//go:build integration

package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/backend"
)

// make run's sample shop gets a shop token and a webhook secret of its own, random, kept across
// runs, added to a secrets file made before the shop existed; and the backend accepts the tokens
// run.sh gives it: the admin token as admin, the shop token as shop.
func TestRunMakesTheShopTokenAndWebhookSecretAndTheBackendAcceptsThem(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "env")
	if err := os.WriteFile(env, []byte("export SECKILL_REDIS_ADDR=127.0.0.1:16379\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runScript(t, dir, "secrets")
	first := exported(t, env)
	hex := regexp.MustCompile(`^[0-9a-f]+$`)
	shop, hook := first["SECKILL_SHOP_TOKEN"], first["SECKILL_WEBHOOK_SECRETS"]
	if len(shop) != 48 || !hex.MatchString(shop) || shop == first["SECKILL_ADMIN_TOKEN"] {
		t.Fatalf("shop token %q: want 24 random bytes in hex, not the admin token", shop)
	}
	if len(hook) != 64 || !hex.MatchString(hook) {
		t.Fatalf("webhook secret %q: want 32 random bytes in hex", hook)
	}

	// A secrets file from before the shop: the shop's secrets are added, the others kept.
	secrets := filepath.Join(dir, "secrets.env")
	b, err := os.ReadFile(secrets)
	if err != nil {
		t.Fatal(err)
	}
	var old []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "SECKILL_SHOP_TOKEN") && !strings.Contains(line, "SECKILL_WEBHOOK_SECRETS") {
			old = append(old, line)
		}
	}
	if err := os.WriteFile(secrets, []byte(strings.Join(old, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	runScript(t, dir, "secrets")
	runScript(t, dir, "secrets")
	again := exported(t, env)
	if again["SECKILL_TOKEN_KEY"] != first["SECKILL_TOKEN_KEY"] || again["SECKILL_ADMIN_TOKEN"] != first["SECKILL_ADMIN_TOKEN"] {
		t.Fatal("adding the shop's secrets changed the others")
	}
	if again["SECKILL_SHOP_TOKEN"] == "" || again["SECKILL_WEBHOOK_SECRETS"] == "" || again["SECKILL_SHOP_TOKEN"] == shop {
		t.Fatalf("an older secrets file did not get new shop secrets: %v", again)
	}

	// The backend's SECKILL_ADMIN_TOKENS, as run.sh's start computes it, next to
	// SECKILL_ADMIN_TOKEN.
	script, err := os.ReadFile("../scripts/run.sh")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^export SECKILL_ADMIN_TOKENS=.*$`).Find(script)
	if line == nil {
		t.Fatal("scripts/run.sh does not export SECKILL_ADMIN_TOKENS for the backend")
	}
	cmd := exec.Command("bash", "-c", "own_tokens=; "+string(line)+`; printf %s "$SECKILL_ADMIN_TOKENS"`)
	cmd.Env = append(os.Environ(), "SECKILL_SHOP_TOKEN="+again["SECKILL_SHOP_TOKEN"])
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := backend.ParseTokens(string(out), again["SECKILL_ADMIN_TOKEN"])
	if err != nil {
		t.Fatalf("the backend refuses run.sh's tokens %q: %v", out, err)
	}
	if who, ok := tokens.Lookup(again["SECKILL_SHOP_TOKEN"]); !ok || who.Role != backend.RoleShop {
		t.Fatalf("the shop token is %+v %v, want role shop", who, ok)
	}
	if who, ok := tokens.Lookup(again["SECKILL_ADMIN_TOKEN"]); !ok || who.Role != backend.RoleAdmin {
		t.Fatalf("the admin token is %+v %v, want role admin", who, ok)
	}
}
