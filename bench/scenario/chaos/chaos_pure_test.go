package chaos_test

import (
	"testing"
	"time"

	"github.com/seckilledge/seckill/bench/scenario/chaos"
)

func TestParseScheduleReadsKindTimeDowntimeAndInstance(t *testing.T) {
	s, err := chaos.ParseSchedule("gateway-kill@4s+3s#2, redis-kill@30s+1500ms, gateway-kill@1s+2s#1^redis-kill")
	if err != nil {
		t.Fatal(err)
	}
	want := chaos.Schedule{
		{Kind: chaos.GatewayKill, At: 4 * time.Second, Down: 3 * time.Second, Target: 1},
		{Kind: chaos.RedisKill, At: 30 * time.Second, Down: 1500 * time.Millisecond},
		{Kind: chaos.GatewayKill, At: time.Second, Down: 2 * time.Second, Target: 0, After: chaos.RedisKill},
	}
	if len(s) != len(want) || s[0] != want[0] || s[1] != want[1] || s[2] != want[2] {
		t.Fatalf("got %+v, want %+v", s, want)
	}
	for _, bad := range []string{"gateway-kill", "nuke@1s", "redis-stop@soon", "consumer-kill@1s+1s#0", "gateway-kill@1s^later"} {
		if _, err := chaos.ParseSchedule(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}
