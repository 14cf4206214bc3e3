//go:build integration

package redislock

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The package's own scripts: each documents its KEYS, ARGV and reply in its header, and
// compiles in Redis.
func TestTheEmbeddedScriptsAreDocumentedAndCompile(t *testing.T) {
	rdb := testenv.Redis(t)
	for name, s := range map[string]struct {
		src    string
		script *redis.Script
	}{
		"acquire.lua": {acquireSrc, acquireScript},
		"refresh.lua": {refreshSrc, refreshScript},
		"release.lua": {releaseSrc, releaseScript},
	} {
		header := s.src
		if i := strings.Index(header, "\nlocal "); i > 0 {
			header = header[:i]
		}
		for _, want := range []string{"KEYS", "ARGV", "Returns"} {
			if !strings.Contains(header, want) {
				t.Errorf("%s: header does not mention %s", name, want)
			}
		}
		if err := s.script.Load(context.Background(), rdb).Err(); err != nil {
			t.Errorf("%s does not compile: %v", name, err)
		}
	}
}
