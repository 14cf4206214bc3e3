package harness

import (
	"context"
	"os"
	"sync"
	"time"
)

// Binaries is one build of the gateway and the backend shared by every stack a test binary
// starts (building takes most of a minute on two cores; each Start would pay it again). The
// zero value is ready; TestMain runs the tests with Run, which removes it at the end.
type Binaries struct {
	once sync.Once
	dir  string
	err  error
}

// Dir builds the binaries from the repository at root the first time and returns their
// directory, for Options.BinDir.
func (b *Binaries) Dir(root string) (string, error) {
	b.once.Do(func() {
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

// Remove deletes the build.
func (b *Binaries) Remove() {
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}
