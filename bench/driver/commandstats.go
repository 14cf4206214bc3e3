package driver

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// CommandCost is one Redis command's share of a run, from INFO commandstats: how often it ran
// per completed request and how long Redis spent in it (Redis's own usec accounting; for
// EVALSHA this includes the commands the script ran).
type CommandCost struct {
	Command        string  `json:"command"`
	CallsPerReq    float64 `json:"calls_per_request"`
	UsecPerCall    float64 `json:"usec_per_call"`
	UsecPerRequest float64 `json:"usec_per_request"`
}

type cmdStat struct{ calls, usec float64 }

// commandStats reads INFO commandstats (nil when Redis does not answer).
func commandStats(ctx context.Context, rdb redis.UniversalClient) map[string]cmdStat {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil
	}
	out := map[string]cmdStat{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var st cmdStat
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				st.calls = f
			case "usec":
				st.usec = f
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = st
	}
	return out
}

// commandCosts is what ran between two readings, per completed request, costliest first.
func commandCosts(before, after map[string]cmdStat, requests int) []CommandCost {
	if before == nil || after == nil || requests == 0 {
		return nil
	}
	var out []CommandCost
	for name, a := range after {
		if name == "info" {
			continue // the benchmark's own readings of commandstats and persistence
		}
		b := before[name]
		calls, usec := a.calls-b.calls, a.usec-b.usec
		if calls <= 0 {
			continue
		}
		out = append(out, CommandCost{Command: name, CallsPerReq: calls / float64(requests), UsecPerCall: usec / calls,
			UsecPerRequest: usec / float64(requests)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UsecPerRequest > out[j].UsecPerRequest })
	return out
}
