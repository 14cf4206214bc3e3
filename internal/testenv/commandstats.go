package testenv

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// RedisCommands is how many times the Redis at rdb has run each command (INFO commandstats;
// a script's own calls count under their names), the INFO that reads them and the commands
// named in skip apart. Counts of a private server (StartRedis) are one test's alone.
func RedisCommands(t testing.TB, rdb *redis.Client, skip ...string) map[string]int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
next:
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd || name == "info" {
			continue
		}
		for _, s := range skip {
			if name == s {
				continue next
			}
		}
		_, rest, _ = strings.Cut(rest, "calls=")
		v, _, _ := strings.Cut(rest, ",")
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("commandstats line %q", line)
		}
		out[name] = n
	}
	return out
}
