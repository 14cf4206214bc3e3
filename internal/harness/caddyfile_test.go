package harness

import (
	"os"
	"strings"
	"testing"
)

func TestGatewayConfigMovesTheSiteAndAdminAndAddsTheCeiling(t *testing.T) {
	src := "# comment\n{\n\tadmin 127.0.0.1:2019\n\tmetrics\n}\n\n:8080 {\n\trespond \"x\"\n}\n"
	out, err := GatewayConfig(src, 1001, 1002, 1003, TrustLoopbackProxy)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"admin 127.0.0.1:1002", ":1001 {", ":1003 {\n\trespond \"ok\" 200", "trusted_proxies static 127.0.0.1/32"} {
		if !strings.Contains(out, want) {
			t.Errorf("config lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "8080") || strings.Contains(out, "2019") {
		t.Errorf("a default port is left:\n%s", out)
	}
	if strings.Index(out, "trusted_proxies") > strings.Index(out, ":1001 {") {
		t.Errorf("the extra global options are not in the global block:\n%s", out)
	}
	// A Caddyfile with its own `servers` option gets the extra lines inside it (Caddy refuses
	// two `servers` options for the same listeners).
	out, err = GatewayConfig("{\n\tservers {\n\t\ttimeouts {\n\t\t\tidle 1m\n\t\t}\n\t}\n}\n:8080 {\n}\n", 1, 2, 3, TrustLoopbackProxy)
	if err != nil || strings.Count(out, "servers") != 1 || !strings.Contains(out, "trusted_proxies") || !strings.Contains(out, "idle 1m") {
		t.Fatalf("servers options not merged: %v\n%s", err, out)
	}
	// Without a global block, one is created for the admin address.
	out, err = GatewayConfig(":8080 {\n}\n", 1, 2, 3, "")
	if err != nil || !strings.HasPrefix(out, "{\n\tadmin 127.0.0.1:2\n}") {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := GatewayConfig("example.com {\n}\n", 1, 2, 3, ""); err == nil {
		t.Fatal("a Caddyfile without the :8080 site was accepted")
	}
}

// The root Caddyfile has two sites: :8080 (header identity, what the benchmarks load) and :8088
// (the sample shop behind the gateway). Each rewrite keeps the one it is for, whole.
func TestTheBenchmarksDropTheShopSiteAndTheShopTestKeepsOnlyIt(t *testing.T) {
	src := "{\n\tadmin 127.0.0.1:2019\n}\n\n:8080 {\n\thandle {\n\t\trespond \"demo\"\n\t}\n}\n\n# the shop\n:8088 {\n\troute {\n\t\trespond \"shop\"\n\t}\n}\n"
	out, err := GatewayConfig(src, 1001, 1002, 1003, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "8088") || strings.Contains(out, "shop\"") || !strings.Contains(out, ":1001 {\n\thandle {\n\t\trespond \"demo\"\n\t}\n}") {
		t.Fatalf("GatewayConfig:\n%s", out)
	}
	out, err = ShopGatewayConfig(src, 2001, 2002)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "8080") || strings.Contains(out, "demo") || !strings.Contains(out, "admin 127.0.0.1:2002") ||
		!strings.Contains(out, ":2001 {\n\troute {\n\t\trespond \"shop\"\n\t}\n}\n") {
		t.Fatalf("ShopGatewayConfig:\n%s", out)
	}
	if _, err := ShopGatewayConfig(":8080 {\n}\n", 1, 2); err == nil {
		t.Fatal("a Caddyfile without the :8088 site was accepted")
	}

	// The shipped file: the benchmarks' gateway has no session check, the shop's no header
	// identity.
	root, err := os.ReadFile("../../Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	out, err = GatewayConfig(string(root), 1001, 1002, 1003, "")
	if err != nil || strings.Contains(out, "\tseckill_identity") || strings.Contains(out, ":8088 {") || !strings.Contains(out, "{http.request.header.X-User-ID}") {
		t.Fatalf("GatewayConfig of the root Caddyfile (%v):\n%s", err, out)
	}
	out, err = ShopGatewayConfig(string(root), 2001, 2002)
	if err != nil || !strings.Contains(out, "\tseckill_identity") || strings.Contains(out, ":8080 {") || strings.Contains(out, "{http.request.header.X-User-ID}") ||
		!strings.Contains(out, "handle_errors") || strings.Count(out, "seckill_gate") != 1 {
		t.Fatalf("ShopGatewayConfig of the root Caddyfile (%v):\n%s", err, out)
	}
}

func TestWithGateRelayTunesTheGateBlockNotAComment(t *testing.T) {
	src := "# seckill_gate { is mentioned here\n:8080 {\n\thandle @buy {\n\t\tseckill_gate {\n\t\t\trequire_token\n\t\t}\n\t}\n}\n"
	out, err := withGateRelay(src, "claim_min_idle 5s")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "seckill_gate {\n\t\t\trelay {\n\t\t\t\tclaim_min_idle 5s\n\t\t\t}\n\t\t\trequire_token") {
		t.Fatalf("relay block not in the gate block:\n%s", out)
	}
	if _, err := withGateRelay(":8080 {\n}\n", "x"); err == nil {
		t.Fatal("a Caddyfile without seckill_gate was accepted")
	}
}

// The production files place their site and admin endpoint with SECKILL_SITE and
// SECKILL_CADDY_ADMIN: the rewrite moves them all the same.
func TestGatewayConfigMovesTheProductionFilesSite(t *testing.T) {
	for _, f := range []string{"../../deploy/Caddyfile.production", "../../deploy/Caddyfile.production-session"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, err := GatewayConfig(string(src), 1001, 1002, 1003, "")
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, want := range []string{"\n:1001 {", "admin 127.0.0.1:1002", ":1003 {"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: config lacks %q", f, want)
			}
		}
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "#") && strings.Contains(line, "SECKILL_SITE") || strings.Contains(line, "{$SECKILL_CADDY_ADMIN") {
				t.Errorf("%s: left to the environment: %s", f, line)
			}
		}
	}
}
