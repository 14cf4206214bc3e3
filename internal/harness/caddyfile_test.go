package harness

import (
	"os"
	"regexp"
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
		!strings.Contains(out, "handle_errors") || strings.Count(out, "\tseckill_gate ") != 1 { // one gate in the site (the global order lines name it too)
		t.Fatalf("ShopGatewayConfig of the root Caddyfile (%v):\n%s", err, out)
	}
}

// The harness's relay settings go into the seckill global option's relay block, after the
// Caddyfile's own (so they win), or into a new one; never into a comment or a site.
func TestWithAppRelayTunesTheSeckillOptionsRelayBlock(t *testing.T) {
	own := "# seckill { relay { is mentioned here\n{\n\tseckill {\n\t\tredis {\n\t\t\taddrs {env.R}\n\t\t}\n\t\trelay {\n\t\t\tpoll_interval 100ms\n\t\t}\n\t}\n}\n:8080 {\n\tseckill_gate {\n\t\trequire_token\n\t}\n}\n"
	out, err := withAppRelay(own, "claim_min_idle 5s")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\t\trelay {\n\t\t\tpoll_interval 100ms\n\t\t\tclaim_min_idle 5s\n\t\t}\n\t}\n}\n:8080") {
		t.Fatalf("relay settings not at the end of the app's relay block:\n%s", out)
	}
	none := "{\n\tseckill {\n\t\tdemo\n\t}\n}\n:8080 {\n\tseckill_gate\n}\n"
	if out, err = withAppRelay(none, "claim_min_idle 5s"); err != nil || !strings.Contains(out, "\tseckill {\n\t\trelay {\n\t\t\tclaim_min_idle 5s\n\t\t}\n\t\tdemo\n") {
		t.Fatalf("no relay block added to the seckill option (%v):\n%s", err, out)
	}
	// The shipped Caddyfile: its one relay block gets the setting.
	root, err := os.ReadFile("../../Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	if out, err = withAppRelay(string(root), "claim_min_idle 5s"); err != nil || strings.Count(out, "relay {") != strings.Count(string(root), "relay {") ||
		!regexp.MustCompile(`\n\t\trelay \{\n(\t\t\t[^\n]*\n)*\t\t\tclaim_min_idle 5s\n\t\t\}\n`).MatchString(out) {
		t.Fatalf("the root Caddyfile's relay block did not get the setting (%v):\n%s", err, out)
	}
	for _, bad := range []string{":8080 {\n}\n", "{\n\tservers {\n\t}\n}\n:8080 {\n}\n", "{\n\tseckill {\n\t\tdemo\n"} {
		if _, err := withAppRelay(bad, "x"); err == nil {
			t.Errorf("%q: accepted without a seckill global option", bad)
		}
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
