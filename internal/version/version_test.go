package version

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// semver is MAJOR.MINOR.PATCH with an optional pre-release, as SemVer 2.0.0 writes it.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$`)

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// Every copy of the version that cannot import this package says the same as Version: the
// chart (its version and the appVersion its images default to), the JavaScript package, the
// API description and the changelog's newest release.
func TestEveryArtifactCarriesTheOneVersion(t *testing.T) {
	if !semver.MatchString(Version) {
		t.Fatalf("Version %q is not MAJOR.MINOR.PATCH[-pre]", Version)
	}
	var chart struct {
		Version    string `yaml:"version"`
		AppVersion string `yaml:"appVersion"`
	}
	readYAML(t, "../../deploy/helm/seckill/Chart.yaml", &chart)
	var api struct {
		Info struct {
			Version string `yaml:"version"`
		} `yaml:"info"`
	}
	readYAML(t, "../../docs/openapi.yaml", &api)
	b, err := os.ReadFile("../../clients/js/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ where, got string }{
		{"deploy/helm/seckill/Chart.yaml version", chart.Version},
		{"deploy/helm/seckill/Chart.yaml appVersion", chart.AppVersion},
		{"clients/js/package.json version", pkg.Version},
		{"docs/openapi.yaml info.version", api.Info.Version},
	} {
		if c.got != Version {
			t.Errorf("%s is %q, internal/version says %q", c.where, c.got, Version)
		}
	}
}

// CHANGELOG.md's sections are "Unreleased" or a SemVer; the newest released one is Version
// (a release bumps Version and names its section in the same commit).
func TestChangelogsNewestReleaseIsTheVersion(t *testing.T) {
	b, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`(?m)^## \[([^\]]+)\](.*)$`)
	all := heading.FindAllStringSubmatch(string(b), -1)
	if len(all) == 0 {
		t.Fatal("CHANGELOG.md has no ## [version] section")
	}
	newest := ""
	for _, h := range all {
		switch {
		case h[1] == "Unreleased":
		case semver.MatchString(h[1]):
			if !regexp.MustCompile(`^ - \d{4}-\d{2}-\d{2}$`).MatchString(h[2]) {
				t.Errorf("section [%s]: want %q, got %q", h[1], "## ["+h[1]+"] - YYYY-MM-DD", h[0])
			}
			if newest == "" {
				newest = h[1]
			}
		default:
			t.Errorf("section %q is neither Unreleased nor a SemVer", h[0])
		}
	}
	if newest != "" && newest != Version {
		t.Errorf("the newest release in CHANGELOG.md is %s, internal/version says %s", newest, Version)
	}
	if newest == "" && !strings.Contains(string(b), "## [Unreleased]") {
		t.Error("CHANGELOG.md has neither a release nor an Unreleased section")
	}
}

func TestBuildStringNamesVersionModuleAndCommit(t *testing.T) {
	b := Build{Version: "1.2.3", ModuleVersion: "v1.2.3", Commit: "0123456789abcdef0123", Modified: true, Go: "go1.26.0"}
	if got, want := b.String("seckill-backend"), "seckill-backend 1.2.3 (module v1.2.3, commit 0123456789ab+modified, go1.26.0)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := (Build{Version: "1.2.3", Go: "go1.26.0"}).String("x"); got != "x 1.2.3 (module unknown, commit unknown, go1.26.0)" {
		t.Errorf("got %q", got)
	}
	if r := Read(); r.Version != Version || r.Go == "" {
		t.Errorf("Read() = %+v", r)
	}
}
