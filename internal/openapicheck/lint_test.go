//go:build integration

package openapicheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/internal/npmtools"
)

// redoclyLint runs `redocly lint` on doc with the repository's redocly.yaml and returns its
// output and whether it passed (exit status 0: no error).
func redoclyLint(t *testing.T, bin, doc string) (string, bool) {
	t.Helper()
	config, err := filepath.Abs(filepath.Join(root, "redocly.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "lint", "--config", config, "--format", "stylish", doc)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("redocly: %v", err)
		}
	}
	return string(out), err == nil
}

var redoclyProblem = regexp.MustCompile(`(?m)^\s+\d+:\d+\s+(error|warning)\s+(\S+)`)

// Redocly's recommended ruleset (the repository's redocly.yaml) finds no error in
// docs/openapi.yaml: the buyer's session and the admin token are security schemes, every
// operation has a success and a refusal. A document with an undefined security scheme is
// refused, so the check can fail. The warnings left are logged (the live page's form posts
// answer 303, not 2xx).
func TestRedoclysRecommendedRulesFindNoErrorInTheDocument(t *testing.T) {
	bin, _ := npmtools.Need(t, "redocly")
	doc, err := filepath.Abs(DefaultPath())
	if err != nil {
		t.Fatal(err)
	}
	out, ok := redoclyLint(t, bin, doc)
	if !ok {
		t.Fatalf("redocly lint docs/openapi.yaml found errors:\n%s", out)
	}
	for _, m := range redoclyProblem.FindAllStringSubmatch(out, -1) {
		if m[1] == "error" {
			t.Errorf("redocly: %s", m[0])
		} else {
			t.Logf("redocly warning: %s", strings.TrimSpace(m[0]))
		}
	}

	src, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(src), "security: [{sessionBearer: []}, {sessionCookie: []}, {userHeader: []}]", "security: [{buyerSession: []}]", 1)
	if broken == string(src) {
		t.Fatal("the buyer operations' security line is not in the document: update this test")
	}
	bad := filepath.Join(t.TempDir(), "openapi.yaml")
	if err := os.WriteFile(bad, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, ok := redoclyLint(t, bin, bad); ok || !strings.Contains(out, "security-defined") {
		t.Fatalf("an undefined security scheme passed redocly lint:\n%s", out)
	}
}
