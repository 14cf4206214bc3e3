package conformance

import (
	"os"
	"slices"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// The Helm chart's gateways (deploy/helm) run the chart's files/Caddyfile.production, with the
// metrics site the chart appends (deploy/helm's tests hold the rendered Caddyfile to exactly
// that). Parsed as Caddy parses it (comments gone, snippets expanded), its global `servers`
// block believes X-Forwarded-For only from the listed proxies and right to left:
// trusted_proxies with trusted_proxies_strict.
func TestTheChartsCaddyfileTrustsOnlyTheListedProxiesAndStrictly(t *testing.T) {
	src, err := os.ReadFile("../../deploy/helm/seckill/files/Caddyfile.production")
	if err != nil {
		t.Fatal(err)
	}
	src = append(src, "\n# Added by the Helm chart\n:2020 {\n\tmetrics\n}\n"...)
	blocks, err := caddyfile.Parse("Caddyfile", src)
	if err != nil {
		t.Fatalf("the chart's Caddyfile does not parse: %v", err)
	}
	if len(blocks) == 0 || len(blocks[0].Keys) != 0 {
		t.Fatal("the chart's Caddyfile has no global options block")
	}
	var opts []string
	for _, seg := range blocks[0].Segments {
		if seg.Directive() == "servers" {
			for _, tok := range seg {
				opts = append(opts, tok.Text)
			}
		}
	}
	if !slices.Contains(opts, "trusted_proxies_strict") || !slices.Contains(opts, "trusted_proxies") {
		t.Errorf("the gateways' servers options %v: want trusted_proxies with trusted_proxies_strict", opts)
	}
}
