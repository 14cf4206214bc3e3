//go:build ignore

// xcaddy-build reads xcaddy.json and runs `xcaddy build` with it, installing the pinned
// xcaddy with `go install` when it is missing:
//
//	go run scripts/xcaddy-build.go [xcaddy.json]
//
// xcaddy v0.4.5 compiles with CGO_ENABLED=0 (unless CGO_ENABLED=1 is in the environment),
// -trimpath and -tags nobadger,nomysql,nopgx (all replaced by XCADDY_GO_BUILD_FLAGS when that is
// set). make build and make test's go vet use the same, so after them this build finds
// Caddy's dependencies in the build cache and compiles only this module's packages.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

type manifest struct {
	XcaddyVersion string `json:"xcaddy_version"`
	CaddyVersion  string `json:"caddy_version"`
	With          []struct {
		Module  string `json:"module"`
		Version string `json:"version"`
		Replace string `json:"replace"`
	} `json:"with"`
	Output string `json:"output"`
}

func main() {
	path := "xcaddy.json"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	b, err := os.ReadFile(path)
	if err != nil {
		fail(err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		fail(fmt.Errorf("%s: %w", path, err))
	}
	xcaddy := findXcaddy(m.XcaddyVersion)
	args := []string{"build", m.CaddyVersion}
	for _, w := range m.With {
		spec := w.Module
		if w.Version != "" {
			spec += "@" + w.Version
		}
		if w.Replace != "" {
			spec += "=" + w.Replace
		}
		args = append(args, "--with", spec)
	}
	if m.Output != "" {
		out, _ := filepath.Abs(m.Output)
		_ = os.MkdirAll(filepath.Dir(out), 0o755)
		args = append(args, "--output", out)
	}
	fmt.Fprintln(os.Stderr, "+", xcaddy, strings.Join(args, " "))
	cmd := exec.Command(xcaddy, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fail(err)
	}
}

func findXcaddy(version string) string {
	if p, err := exec.LookPath("xcaddy"); err == nil {
		return p
	}
	gobin, _ := exec.Command("go", "env", "GOPATH").Output()
	p := filepath.Join(strings.TrimSpace(string(gobin)), "bin", "xcaddy")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	fmt.Fprintln(os.Stderr, "+ go install github.com/caddyserver/xcaddy/cmd/xcaddy@"+version)
	cmd := exec.Command("go", "install", "github.com/caddyserver/xcaddy/cmd/xcaddy@"+version)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fail(err)
	}
	return p
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "xcaddy-build:", err)
	os.Exit(1)
}
