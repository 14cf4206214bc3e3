package crowd

import "testing"

func TestCrowdIsReproducibleAndHasEveryKindOfClick(t *testing.T) {
	c := Crowd{Users: 100, Repeaters: 0.5, Bots: 2, BotHits: 10, Replays: 5, Forged: 5, Late: 3, Seed: 1}
	p := c.Cast("r-")
	a, b := c.Rush(p), c.Rush(p)
	kinds := map[string]int{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("the same seed gave two different rushes")
		}
		kinds[a[i].Kind]++
		if a[i].Kind == KindReplay && a[i].TokenOf == a[i].User {
			t.Fatal("a replay presents the user's own token")
		}
	}
	if kinds[KindCrowd] != 100 || kinds[KindBot] != 20 || kinds[KindReplay] != 5 || kinds[KindForged] != 5 || kinds[KindRepeat] < 50 {
		t.Fatalf("kinds %v", kinds)
	}
	if len(p.Late) != 3 || p.IPs[p.Users[0]] == p.IPs[p.Users[1]] {
		t.Fatalf("cast %v", p.Late)
	}
}
