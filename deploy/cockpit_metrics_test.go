//go:build integration

package deploy

import (
	"net/url"
	"os"
	"regexp"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"
)

// The cockpit shows refusals only when SECKILL_GATEWAY_METRICS names the gateways' metrics:
// make run and the compose stack both set it, each to an address its backend can
// reach and that serves seckill_gate_decisions_total.
func TestMakeRunAndComposeGiveTheCockpitTheGatewaysMetrics(t *testing.T) {
	t.Run("MakeRun", func(t *testing.T) {
		script, err := os.ReadFile("../scripts/run.sh")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^export SECKILL_GATEWAY_METRICS=\$\{SECKILL_GATEWAY_METRICS:-([^}]+)\}$`).FindSubmatch(script)
		if m == nil {
			t.Fatal("scripts/run.sh does not export SECKILL_GATEWAY_METRICS (with the environment's value first)")
		}
		// make run's gateway serves /metrics on its admin endpoint: the demo Caddyfile's `admin`.
		caddyfile, err := os.ReadFile(demoCaddyfile)
		if err != nil {
			t.Fatal(err)
		}
		admin := regexp.MustCompile(`(?m)^\s*admin (\S+)$`).FindSubmatch(caddyfile)
		if admin == nil {
			t.Fatal("the demo Caddyfile has no admin address")
		}
		u, err := url.Parse(string(m[1]))
		if err != nil || u.Scheme != "http" || u.Host != string(admin[1]) || u.Path != "/metrics" {
			t.Fatalf("run.sh sets SECKILL_GATEWAY_METRICS=%s, want http://%s/metrics (the Caddyfile's admin endpoint)", m[1], admin[1])
		}
	})

	t.Run("Compose", func(t *testing.T) {
		b, err := os.ReadFile("../docker-compose.yml")
		if err != nil {
			t.Fatal(err)
		}
		var compose struct {
			Services map[string]struct {
				Environment map[string]string `yaml:"environment"`
				NetworkMode string            `yaml:"network_mode"`
				Command     []string          `yaml:"command"`
				Volumes     []string          `yaml:"volumes"`
			} `yaml:"services"`
		}
		if err := yaml.Unmarshal(b, &compose); err != nil {
			t.Fatalf("docker-compose.yml: %v", err)
		}
		v := compose.Services["backend"].Environment["SECKILL_GATEWAY_METRICS"]
		if v == "" {
			t.Fatal("docker-compose.yml does not give the backend SECKILL_GATEWAY_METRICS")
		}
		u, err := url.Parse(v)
		if err != nil || u.Scheme != "http" {
			t.Fatalf("SECKILL_GATEWAY_METRICS=%q is not an http URL", v)
		}
		// The gateway's own /metrics is on its loopback admin endpoint, which the backend cannot
		// reach: the URL is Prometheus's federation endpoint, Prometheus living in the
		// gateway's network namespace (so the gateway's name reaches it) and scraping it.
		if u.Hostname() != "gateway" || u.Port() != "9090" || u.Path != "/federate" {
			t.Fatalf("SECKILL_GATEWAY_METRICS=%q: want Prometheus's /federate at gateway:9090", v)
		}
		if !slices.Contains(u.Query()["match[]"], "seckill_gate_decisions_total") {
			t.Fatalf("SECKILL_GATEWAY_METRICS=%q does not federate seckill_gate_decisions_total", v)
		}
		prom, ok := compose.Services["prometheus"]
		if !ok || prom.NetworkMode != "service:gateway" {
			t.Fatalf("Prometheus is not in the gateway's network namespace: %+v", prom)
		}
		cfg, err := os.ReadFile("prometheus.yml")
		if err != nil {
			t.Fatal(err)
		}
		var scrape struct {
			ScrapeConfigs []struct {
				JobName        string `yaml:"job_name"`
				MetricsPath    string `yaml:"metrics_path"`
				ScrapeInterval string `yaml:"scrape_interval"`
				StaticConfigs  []struct {
					Targets []string `yaml:"targets"`
				} `yaml:"static_configs"`
			} `yaml:"scrape_configs"`
		}
		if err := yaml.Unmarshal(cfg, &scrape); err != nil {
			t.Fatalf("prometheus.yml: %v", err)
		}
		for _, job := range scrape.ScrapeConfigs {
			if job.JobName != "gateway" {
				continue
			}
			if len(job.StaticConfigs) == 0 || !slices.Contains(job.StaticConfigs[0].Targets, "127.0.0.1:2019") || job.MetricsPath != "/metrics" {
				t.Fatalf("prometheus.yml's gateway job does not scrape the gateway's admin /metrics: %+v", job)
			}
			// The cockpit shows counts per second: a slower scrape shows as bursts and gaps.
			if job.ScrapeInterval != "1s" {
				t.Fatalf("prometheus.yml scrapes the gateway every %q, want 1s for the cockpit's per-second rates", job.ScrapeInterval)
			}
			return
		}
		t.Fatal("prometheus.yml has no gateway job")
	})
}
