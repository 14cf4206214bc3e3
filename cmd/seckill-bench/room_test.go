package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/bench/scenario/room"
	"github.com/seckilledge/seckill/internal/invariants"
)

func fairRun(fastPlain, slowPlain, fastRoom, slowRoom int) *room.FairnessResult {
	ok := &invariants.Report{Checks: []invariants.Check{{N: 1, Verdict: invariants.Pass}}}
	sale := func(inRoom bool, fast, slow int) *room.FairnessSale {
		s := &room.FairnessSale{Room: inRoom, Stock: fast + slow, Verify: ok,
			Fast: room.Population{Buyers: 500, Won: fast}, Slow: room.Population{Buyers: 500, Won: slow}}
		if fast > 0 {
			s.Ratio = float64(slow) / float64(fast)
		}
		return s
	}
	return &room.FairnessResult{Buyers: 500, RoomRate: 5, Without: sale(false, fastPlain, slowPlain), With: sale(true, fastRoom, slowRoom)}
}

func TestFairnessTableReportsMedianAndPooledRatios(t *testing.T) {
	var b bytes.Buffer
	fairnessMarkdown(&b, []*room.FairnessResult{fairRun(100, 0, 50, 50), fairRun(90, 10, 60, 40), fairRun(100, 0, 40, 60)})
	out := b.String()
	for _, want := range []string{
		"without the room 0.00, with the room 1.00", // medians of 0, 0.11, 0 and 1, 0.67, 1.5
		"without the room slow 10 / fast 290 units (0.03), with the room slow 150 / fast 150 (1.00)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestRoomRefusesUnknownFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"room", "-no-such-flag"}, &out, &errOut); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
}

func TestLastUnitsPresenceVariants(t *testing.T) {
	v, err := presenceVariants("off, default,7s,2m")
	if err != nil {
		t.Fatal(err)
	}
	want := []presenceVariant{{"off", "presence_window off"}, {"default", ""},
		{"7s", "refresh 1s 5.5s\npresence_window 7s"}, {"2m0s", "presence_window 2m0s"}}
	if len(v) != len(want) {
		t.Fatalf("%d variants, want %d: %+v", len(v), len(want), v)
	}
	for i := range want {
		if v[i] != want[i] {
			t.Errorf("variant %d: %+v, want %+v", i, v[i], want[i])
		}
	}
	// The room refuses a window shorter than refresh_max + summary_interval + 1s, and
	// refresh_max cannot go below refresh_min's 1s.
	if _, err := presenceVariants("2s"); err == nil {
		t.Error("a 2s window was taken: it leaves refresh_max below 1s")
	}
	if _, err := presenceVariants("soon"); err == nil {
		t.Error("a window that is no duration was taken")
	}
}

func TestTheLastUnitsCaddyfileGetsTheLinesInsideTheRoomBlock(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "Caddyfile")
	if _, err := caddyfileWithRoomLines(filepath.Join("..", "..", "bench", "fairness.Caddyfile"), "refresh 1s 5.5s\npresence_window 7s", dst); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if want := "\t\tseckill_room {\n\t\t\trefresh 1s 5.5s\n\t\t\tpresence_window 7s\n\t\t\tuser {http.request.header.X-User-ID}\n"; !strings.Contains(string(b), want) {
		t.Fatalf("the room block does not start with the lines:\n%s", b)
	}
	if _, err := caddyfileWithRoomLines(dst+".none", "", dst); err == nil {
		t.Error("a missing Caddyfile was taken")
	}
	noRoom := filepath.Join(t.TempDir(), "plain")
	os.WriteFile(noRoom, []byte(":8080 {\n\trespond ok\n}\n"), 0o644)
	if _, err := caddyfileWithRoomLines(noRoom, "presence_window off", dst); err == nil {
		t.Error("a Caddyfile without a room block was taken: the run would measure nothing it names")
	}
}

func TestLastUnitsTableSaysWhetherTheTargetWasMet(t *testing.T) {
	var b bytes.Buffer
	lastUnitsMarkdown(&b, []*room.LastUnitsResult{
		{Variant: "off", Caddy: "presence_window off", Waiters: 1200, Absent: 600, Units: 120, Sold: 117, FirstS: 2, LastS: 90, Ratio: 45},
		{Variant: "7s", Caddy: "refresh 1s 5.5s\npresence_window 7s", Units: 120, Sold: 120, AllSold: true, FirstS: 2, LastS: 3, Ratio: 1.5},
		{Variant: "default", Units: 120, Sold: 100, FirstS: 2},
	})
	out := b.String()
	for _, want := range []string{
		"| off | `presence_window off` | 117 / 120 | 2.0 s | >= 90.0 s | 45.00 | missed |",
		"| 7s | `refresh 1s 5.5s; presence_window 7s` | 120 / 120 | 2.0 s | 3.0 s | 1.50 | met |",
		"| default | `(none)` | 100 / 120 | 2.0 s | not reached |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestScaleTableReportsCommandsPerPollAndTheGateways(t *testing.T) {
	var b bytes.Buffer
	scaleMarkdown(&b, &room.ScaleResult{Waiters: 100000, Gateways: 2, Polls: 1000, PollsPS: 50, RedisCommands: 400, CommandsPerPoll: 0.4,
		FromMemory: 900, FromMemoryShare: 0.9, RoomChecks: "PASS", AllChecks: "PASS", Answers: map[string]int64{"waiting": 990, "admitted": 10},
		GatewayMem: []room.GatewayMemory{{URL: "http://a", PID: 7, RSSKiB: 2048, HWMKiB: 4096, PollsFromMemory: 450}}})
	out := b.String()
	for _, want := range []string{
		"| 1000 | 50 | 0.4000 | 0.0000 | 90.0 % | 4.0 |", // 400 commands over the 100 polls that reached Redis
		"| PASS | PASS | missed |",
		"Answers: admitted 10, waiting 990.",
		"| http://a | 7 | 2.0 MiB | 4.0 MiB | 450 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}
