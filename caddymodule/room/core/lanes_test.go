package core

import (
	"math"
	"testing"
)

var shareLanes = []Lane{{Name: "members", Kind: LaneClaim, Share: 0.5, Claim: "member"}, {Name: "invited", Kind: LaneInvitation, Share: 0.2},
	{Name: "public", Kind: LanePublic, Share: 0.3}}

// simulate runs steps of the given budgets over lanes with backlog waiters each, as
// room_queue.lua does (every admission granted is taken: nobody absent), and returns each
// lane's admissions.
func simulate(mode string, lanes []Lane, backlog []int64, budgets []int64) []int64 {
	credit := make([]float64, len(lanes))
	got := make([]int64, len(lanes))
	for _, b := range budgets {
		a := ApportionLanes(mode, lanes, credit, backlog, b)
		step := make([]int64, len(lanes))
		for i := range lanes {
			step[i] = a.Own[i] + a.Extra[i]
		}
		SettleLanes(mode, credit, a, backlog, step)
		for i := range lanes {
			backlog[i] -= step[i]
			got[i] += step[i]
		}
	}
	return got
}

// With every lane backlogged, the admissions follow the shares to within one admission per
// lane, whatever the step sizes (1 admission a step, where a naive floor would starve the
// small lanes, or uneven ones).
func TestApportionLanesFollowsTheSharesExactly(t *testing.T) {
	for _, budgets := range [][]int64{repeat(1, 1000), repeat(3, 333), {7, 1, 2, 9, 4, 1, 1, 30, 5, 2, 8, 1, 1, 1, 3, 17, 6, 4}} {
		var total int64
		for _, b := range budgets {
			total += b
		}
		got := simulate(LaneModeShare, shareLanes, []int64{1e6, 1e6, 1e6}, budgets)
		var sum int64
		for i, l := range shareLanes {
			sum += got[i]
			if want := float64(total) * l.Share; math.Abs(float64(got[i])-want) > 1.0+1e-9 {
				t.Errorf("budgets %v: lane %s admitted %d, want %.1f ± 1", budgets[:3], l.Name, got[i], want)
			}
		}
		if sum != total {
			t.Errorf("admitted %d, budget %d: a step left admissions unused", sum, total)
		}
	}
}

// A lane with nobody waiting passes its share on (the sale never idles), and banks at most
// one admission meanwhile: when its waiters come, it does not take a burst of past shares.
func TestApportionLanesPassesAnIdleShareOnWithoutBanking(t *testing.T) {
	lanes := shareLanes
	credit := make([]float64, 3)
	backlog := []int64{1000, 0, 1000}
	for range 100 {
		a := ApportionLanes(LaneModeShare, lanes, credit, backlog, 10)
		step := []int64{a.Own[0] + a.Extra[0], a.Own[1] + a.Extra[1], a.Own[2] + a.Extra[2]}
		if step[0]+step[1]+step[2] != 10 {
			t.Fatalf("a step admitted %v of 10 with waiters left", step)
		}
		if step[1] != 0 {
			t.Fatalf("the empty lane got %d", step[1])
		}
		SettleLanes(LaneModeShare, credit, a, backlog, step)
	}
	if credit[1] > 1 {
		t.Fatalf("the idle lane banked %.2f admissions, want at most 1", credit[1])
	}
	// Its waiters arrive: the next step gives it its share, not the 200 it skipped.
	backlog[1] = 1000
	a := ApportionLanes(LaneModeShare, lanes, credit, backlog, 10)
	if a.Own[1] > 3 {
		t.Fatalf("the returning lane took %d of 10, want about its share of 2", a.Own[1])
	}
}

// Mode priority: the first lane with waiters takes everything; the next only what is left.
func TestApportionLanesInPriorityMode(t *testing.T) {
	a := ApportionLanes(LaneModePrio, shareLanes, make([]float64, 3), []int64{4, 100, 100}, 10)
	if a.Own[0] != 4 || a.Own[1] != 6 || a.Own[2] != 0 {
		t.Fatalf("priority split %v, want [4 6 0]", a.Own)
	}
}

func TestLaneOfPicksInvitationThenClaimThenPublic(t *testing.T) {
	_, lanes := ParseLanes("share,members:claim:0.5:member,invited:invitation:0.2:,public:public:0.3:")
	for _, c := range []struct {
		claims []string
		code   string
		want   string
		ok     bool
	}{
		{nil, "", "public", true},
		{[]string{"gold", "member"}, "", "members", true},
		{[]string{"member"}, "CODE", "invited", true},
		{[]string{"other"}, "", "public", true},
	} {
		l, ok := LaneOf(lanes, c.claims, c.code)
		if ok != c.ok || l.Name != c.want {
			t.Errorf("LaneOf(%v, %q) = %s %v, want %s %v", c.claims, c.code, l.Name, ok, c.want, c.ok)
		}
	}
	_, noInvitation := ParseLanes("priority,members:claim::member,public:public::")
	if _, ok := LaneOf(noInvitation, nil, "CODE"); ok {
		t.Fatal("a code in a room without an invitation lane was taken")
	}
	if m, l := ParseLanes("share,bad"); m != "" || l != nil {
		t.Fatalf("a malformed field parsed: %q %v", m, l)
	}
}

func repeat(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
