package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// BinDirVar names the directory of binaries already built from this tree (make test sets it to
// bin/ after make build): the tests use them instead of building their own.
const BinDirVar = "SECKILL_BIN_DIR"

// PrebuiltDir is $SECKILL_BIN_DIR when it is set, after checking that it holds every binary
// named; "" when it is not set (the caller builds).
func PrebuiltDir(names ...string) (string, error) {
	dir := os.Getenv(BinDirVar)
	if dir == "" {
		return "", nil
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return "", fmt.Errorf("%s=%s: %w (make build writes it)", BinDirVar, dir, err)
		}
	}
	return dir, nil
}

// Binaries is one build of the gateway and the backend shared by every stack a test binary
// starts (building takes most of a minute on two cores; each Start would pay it again). The
// zero value is ready; TestMain runs the tests with Run, which removes it at the end. Under
// make test ($SECKILL_BIN_DIR set) nothing is built: the binaries of make build are used.
type Binaries struct {
	once     sync.Once
	dir      string
	err      error
	prebuilt bool
}

// Dir returns the directory of the gateway and the backend, for Options.BinDir:
// $SECKILL_BIN_DIR, or else a build from the repository at root made the first time.
func (b *Binaries) Dir(root string) (string, error) {
	b.once.Do(func() {
		if b.dir, b.err = PrebuiltDir("caddy", "seckill-backend"); b.dir != "" || b.err != nil {
			b.prebuilt = true
			return
		}
		if b.dir, b.err = os.MkdirTemp("", "seckill-bin-"); b.err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			b.err = Build(ctx, root, b.dir)
		}
	})
	return b.dir, b.err
}

// Run runs a test binary's tests (m is its *testing.M) and then removes the build; it returns
// the exit code: func TestMain(m *testing.M) { os.Exit(binaries.Run(m)) }.
func (b *Binaries) Run(m interface{ Run() int }) int {
	defer b.Remove()
	return m.Run()
}

// Remove deletes the build (never $SECKILL_BIN_DIR).
func (b *Binaries) Remove() {
	if b.dir != "" && !b.prebuilt {
		_ = os.RemoveAll(b.dir)
	}
}
