package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"testing"

	rep "github.com/seckilledge/seckill/contract/report"
	"github.com/seckilledge/seckill/internal/invariants"
)

// laneEvidence is a room's evidence with lanes: each lane's pre-queue ranked by the seed,
// then the admissions alternating between the lanes, each in its lane's order.
func laneEvidence(seed []byte) string {
	var b strings.Builder
	lanes := map[string][]string{}
	for _, lane := range []string{"members", "invited", "public"} {
		var ids []string
		for i := range 6 {
			ids = append(ids, fmt.Sprintf("%s-entry-%02d", lane, i))
		}
		sort.Slice(ids, func(i, j int) bool {
			return bytes.Compare(invariants.RoomRank(seed, ids[i]), invariants.RoomRank(seed, ids[j])) < 0
		})
		lanes[lane] = ids
		for _, id := range ids {
			fmt.Fprintf(&b, "q:0:%s:%s\n", id, lane)
		}
	}
	ms := 1_000
	for i := range 6 {
		for _, lane := range []string{"members", "invited", "public"} {
			ms++
			fmt.Fprintf(&b, "a:%d:100:%s\n", ms, lanes[lane][i])
		}
	}
	return b.String()
}

func laneCheck(evidence, commitment, seed string) rep.Result {
	return PermutationCheck(commitment, seed, rep.Compute([]byte(evidence), 100))
}

// The offline check verifies every lane: the published evidence passes; a lane's pre-queue
// out of the seed's order, an entry moved to another lane, or an admission out of its lane's
// order fails it.
func TestThePermutationCheckVerifiesEveryLane(t *testing.T) {
	seed := sha256.Sum256([]byte("lanes"))
	commit := sha256.Sum256(seed[:])
	seedHex, commitHex := hex.EncodeToString(seed[:]), hex.EncodeToString(commit[:])
	good := laneEvidence(seed[:])
	if r := laneCheck(good, commitHex, seedHex); r.Result != rep.Pass || !strings.Contains(r.Detail, "3 lanes") {
		t.Fatalf("the published evidence: %s %s, want pass over 3 lanes", r.Result, r.Detail)
	}
	c := rep.Compute([]byte(good), 100)
	if c.LaneAdmitted["members"] != 6 || c.LaneAdmitted["invited"] != 6 || c.LaneAdmitted["public"] != 6 {
		t.Fatalf("admissions by lane %v, want 6 each", c.LaneAdmitted)
	}
	lines := strings.SplitAfter(good, "\n")
	// 1. Two places of the invitation lane swapped: its pre-queue is out of the seed's order
	// (and its admissions out of its order).
	swapped := append([]string{}, lines...)
	swapped[6], swapped[7] = swapped[7], swapped[6]
	// 2. An entry of the members lane published in the public lane.
	moved := strings.Replace(good, "q:0:members-entry-03:members\n", "q:0:members-entry-03:public\n", 1)
	// 3. Two admissions of one lane in the wrong order.
	adm := append([]string{}, lines...)
	adm[18], adm[21] = adm[21], adm[18]
	for name, ev := range map[string]string{"swapped places": strings.Join(swapped, ""), "moved lane": moved, "admission order": strings.Join(adm, "")} {
		if ev == good {
			t.Fatalf("%s: the alteration changed nothing", name)
		}
		if r := laneCheck(ev, commitHex, seedHex); r.Result != rep.Fail {
			t.Errorf("%s: %s %s, want fail", name, r.Result, r.Detail)
		}
	}
}
