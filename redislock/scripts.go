package redislock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The package carries its own scripts, so it stands alone: import it, nothing else to load.
// Each runs by EVALSHA, falling back to EVAL on NOSCRIPT. Their headers document KEYS, ARGV
// and replies.
var (
	//go:embed acquire.lua
	acquireSrc string
	//go:embed refresh.lua
	refreshSrc string
	//go:embed release.lua
	releaseSrc string

	acquireScript = redis.NewScript(acquireSrc)
	refreshScript = redis.NewScript(refreshSrc)
	releaseScript = redis.NewScript(releaseSrc)
)
