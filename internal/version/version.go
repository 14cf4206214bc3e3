// Package version is the product's version, written in one place: the binaries print it
// (`seckill-backend -version`, `caddy seckill-version`), and version_test.go holds the
// copies that cannot import Go (the chart's version and appVersion, the JavaScript package's
// version, docs/openapi.yaml's info.version, CHANGELOG.md's newest section) to it. `make
// release` reads it from here. The version follows Semantic Versioning over the public surface
// docs/versioning.md defines.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release this tree builds: MAJOR.MINOR.PATCH, no leading "v" (the git tag
// and the Go module version are "v" + Version).
const Version = "0.1.0"

// commit is the revision `make release` stamps in (-ldflags -X ...version.commit=...), for the
// builds where the toolchain records none (-buildvcs=false, a tree without .git).
var commit string

// Module is the Go module path the product is published as.
const Module = "github.com/seckilledge/seckill"

// Build is what a binary knows about how it was built.
type Build struct {
	// Version is the product's version (the constant above).
	Version string
	// ModuleVersion is the version the Go toolchain recorded for the seckill module: "(devel)"
	// in a build from a checkout, the tag (v0.1.0) or a pseudo-version when a program (xcaddy's
	// Caddy) required the module at a version; "" when there is no build information.
	ModuleVersion string
	// Commit and Modified are the VCS revision of a build from a checkout ("" when unknown) and
	// whether its work tree had uncommitted changes.
	Commit   string
	Modified bool
	// Go is the toolchain's version.
	Go string
}

// Read returns this binary's Build.
func Read() Build {
	b := Build{Version: Version, Go: runtime.Version(), Commit: commit}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if info.Main.Path == Module {
		b.ModuleVersion = info.Main.Version
	}
	for _, dep := range info.Deps {
		if dep.Path == Module {
			b.ModuleVersion = dep.Version
		}
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the one line a binary's version flag prints, e.g.
// "seckill-backend 0.1.0 (module (devel), commit 1e9aa1e4c0de, go1.26.0)".
func (b Build) String(program string) string {
	commit := b.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit == "" {
		commit = "unknown"
	} else if b.Modified {
		commit += "+modified"
	}
	mod := b.ModuleVersion
	if mod == "" {
		mod = "unknown"
	}
	return fmt.Sprintf("%s %s (module %s, commit %s, %s)", program, b.Version, mod, commit, b.Go)
}
