//go:build ignore

// release builds what a release publishes into one folder (`make release`; docs/versioning.md):
//
//	go run scripts/release.go [-out dist] [-platforms linux/amd64,linux/arm64]
//
// The binaries (caddy with the seckill modules, seckill-backend, seckillctl) named
// <name>-<version>-<os>-<arch>, static (CGO_ENABLED=0), -trimpath, the commit stamped in; the
// Helm chart packaged by Helm's own code (seckill-<version>.tgz, as `helm package` writes it);
// the JavaScript package as `npm pack` writes it; the API description
// (openapi-<version>.yaml); and SHA256SUMS over all of them, in `sha256sum -c` form. The
// version is internal/version's; the folder is emptied first.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/seckilledge/seckill/internal/version"
)

var binaries = []struct{ name, pkg string }{
	{"caddy", "./cmd/caddy"},
	{"seckill-backend", "./cmd/seckill-backend"},
	{"seckillctl", "./cmd/seckillctl"},
}

func main() {
	out := flag.String("out", "dist", "the folder to write (emptied first)")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated GOOS/GOARCH pairs to build the binaries for")
	flag.Parse()
	if err := run(*out, strings.Split(*platforms, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(out string, platforms []string) error {
	v := version.Version
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	commit, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return fmt.Errorf("git rev-parse HEAD: %w", err)
	}
	ldflags := "-s -w -X github.com/seckilledge/seckill/internal/version.commit=" + strings.TrimSpace(string(commit))
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok {
			return fmt.Errorf("platform %q: want GOOS/GOARCH", p)
		}
		for _, b := range binaries {
			name := fmt.Sprintf("%s-%s-%s-%s", b.name, v, goos, goarch)
			fmt.Println("build", name)
			cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", filepath.Join(abs, name), b.pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("go build %s for %s: %w", b.pkg, p, err)
			}
		}
	}

	ch, err := loader.Load("deploy/helm/seckill")
	if err != nil {
		return fmt.Errorf("the chart: %w", err)
	}
	if ch.Metadata.Version != v || ch.Metadata.AppVersion != v {
		return fmt.Errorf("the chart is %s (app %s), the release %s", ch.Metadata.Version, ch.Metadata.AppVersion, v)
	}
	path, err := chartutil.Save(ch, abs)
	if err != nil {
		return fmt.Errorf("packaging the chart: %w", err)
	}
	fmt.Println("chart", filepath.Base(path))

	pack := exec.Command("npm", "pack", "--pack-destination", abs)
	pack.Dir = "clients/js"
	pack.Stdout, pack.Stderr = os.Stdout, os.Stderr
	if err := pack.Run(); err != nil {
		return fmt.Errorf("npm pack clients/js: %w", err)
	}

	if err := copyFile("docs/openapi.yaml", filepath.Join(abs, "openapi-"+v+".yaml")); err != nil {
		return err
	}
	return sums(abs)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// sums writes SHA256SUMS: one "<hex>  <name>" line per file, sorted by name.
func sums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && e.Name() != "SHA256SUMS" {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), n)
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644)
}
